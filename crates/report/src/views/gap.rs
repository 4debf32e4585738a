//! The views of `hugewise bench gap`: per kernel, GAP's time, hugewise's, their ratio with its
//! interval, PageRank's iteration counts and whether both verified.

use std::fmt::Write;

use hugewise_results::gapbench::{GapBenchReport, GapKernel};

use crate::fmt::{ns, ratio_ci};
use crate::table::Table;

fn verdict(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    }
}

/// The median counts, and each side's range over the rounds where it moved: a Gauss-Seidel
/// sweep on two threads stops after 4 iterations in one round and 5 in another, which the
/// median alone hides.
fn iterations(k: &GapKernel) -> String {
    let range = |f: &dyn Fn(&hugewise_results::gapbench::GapSample) -> Option<u32>| {
        moved(k.samples.iter().filter_map(f))
    };
    match (k.gap_iterations, k.hugewise_iterations) {
        (None, None) => "-".into(),
        (g, h) => format!(
            "{}{} / {}{}{}",
            g.map_or("-".into(), |x| x.to_string()),
            range(&|s| s.gap_iterations),
            h.map_or("-".into(), |x| x.to_string()),
            range(&|s| s.hugewise_iterations),
            if k.gap_capped() { " (GAP capped)" } else { "" }
        ),
    }
}

/// ` (lo–hi)` when the counts differ, nothing when they are all one count or none.
fn moved(counts: impl Iterator<Item = u32>) -> String {
    let v: Vec<u32> = counts.collect();
    match (v.iter().min(), v.iter().max()) {
        (Some(lo), Some(hi)) if lo != hi => format!(" ({lo}–{hi})"),
        _ => String::new(),
    }
}

fn cells(k: &GapKernel) -> [String; 6] {
    let med = |s: &Option<hugewise_results::stats::Summary>| {
        s.as_ref().map_or("-".into(), |s| ns(s.median))
    };
    [
        k.kernel.clone(),
        med(&k.gap_ns),
        med(&k.hugewise_ns),
        k.ratio.map_or("-".into(), |r| {
            ratio_ci(r, k.ratio_ci95, k.samples.len(), 2)
        }),
        iterations(k),
        format!(
            "{} / {}",
            verdict(k.gap_verified),
            verdict(k.hugewise_verified)
        ),
    ]
}

const HEADER: [&str; 6] = [
    "kernel",
    "GAP (median)",
    "hugewise (median)",
    "GAP / hugewise [95% CI]",
    "iterations GAP / hugewise",
    "verified GAP / hugewise",
];

fn preamble(r: &GapBenchReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "GAP ({}) against hugewise on {}: {} vertices, {} {} edges; {}; {} rounds{}; \
         {}",
        r.gap_dir,
        r.input,
        r.vertices,
        r.edges,
        if r.directed { "directed" } else { "undirected" },
        crate::fmt::threads(r.threads, &r.threads_bound_to),
        r.rounds,
        crate::fmt::stopped(r.stopped),
        match r.hugewise_trials {
            Some(n) if n == r.gap_trials => format!(
                "each side runs {n} trial(s) a round from the same source and times its last"
            ),
            Some(n) => format!(
                "GAP runs {} trial(s) a round and hugewise {n}, each timing its last",
                r.gap_trials
            ),
            None => format!(
                "GAP runs {} trial(s) a round and its last is timed; hugewise one, after a \
                 warm-up at the start",
                r.gap_trials
            ),
        },
    );
    for c in &r.converted {
        let _ = writeln!(
            o,
            "{} {}",
            if c.written { "converted to" } else { "reused" },
            c.path
        );
    }
    o
}

fn notes(r: &GapBenchReport) -> String {
    let mut o = String::new();
    for k in &r.kernels {
        let _ = writeln!(
            o,
            "{}: GAP ran `{} {}`; hugewise {}",
            k.kernel,
            k.kernel,
            k.gap_args.join(" "),
            k.spec
        );
        for n in &k.notes {
            let _ = writeln!(o, "{}: {n}", k.kernel);
        }
        if let Some(e) = &k.hugewise_verify_error {
            let _ = writeln!(o, "{}: hugewise's verifier: {e}", k.kernel);
        }
    }
    o.push_str("Above 1: hugewise is faster (the median of per-round ratios).\n");
    o
}

/// The terminal view.
pub fn text(r: &GapBenchReport) -> String {
    let mut t = Table::new(HEADER);
    for k in &r.kernels {
        t.row(cells(k));
    }
    format!("{}{}{}", preamble(r), t.render(), notes(r))
}

/// A Markdown table, for BENCHMARKS.md.
pub fn markdown(r: &GapBenchReport) -> String {
    let mut t = Table::new(HEADER);
    for k in &r.kernels {
        t.row(cells(k));
    }
    format!("{}\n{}\n{}", preamble(r), t.markdown(), notes(r))
}

#[cfg(test)]
mod tests {
    use super::moved;

    #[test]
    fn a_count_that_moved_between_rounds_shows_its_range() {
        // Two threads' Gauss-Seidel: 4 iterations in five rounds, 5 in one.
        assert_eq!(moved([4, 4, 4, 4, 5, 4].into_iter()), " (4–5)");
        assert_eq!(moved([4, 4].into_iter()), "");
        assert_eq!(moved(std::iter::empty()), "");
    }
}
