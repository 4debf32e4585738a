//! Views of a study: its plan (what `--dry-run` prints), the table of its `pages` runs, and its
//! headlines set against the seeds' numbers.

use std::fmt::Write;

use hugewise_results::faultlat::FaultlatReport;
use hugewise_results::pagebench::PagesReport;
use hugewise_results::study::{Headline, Metric, StudyPlan, Work};
use hugewise_results::swapstudy::SwapStudy;

use crate::fmt::{duration, pct};
use crate::table::Table;
use crate::views::busy_of;
use crate::views::run::variant_label;

/// One line saying what a run does.
pub fn work_line(w: &Work) -> String {
    match w {
        Work::Pages {
            graph,
            kernel,
            variants,
            rounds,
        } => format!(
            "{kernel} on {graph}: {} ({rounds} rounds)",
            variants
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(" / ")
        ),
        Work::Curve {
            graph,
            kernel,
            policies,
            budgets,
            reorder,
            max_iters,
            phys,
        } => format!(
            "{kernel} on {graph}{}{}: simulated {} at {} budgets{}",
            reorder
                .as_ref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default(),
            max_iters
                .map(|n| format!(", {n} iteration{}", if n == 1 { "" } else { "s" }))
                .unwrap_or_default(),
            policies.join(", "),
            budgets.len(),
            phys.as_ref()
                .map(|p| format!(", physical memory {p}"))
                .unwrap_or_default()
        ),
        Work::Promote {
            graph,
            kernel,
            bytes,
            reads,
            rounds,
            budget_share,
            compact,
            interval_ms: _,
        } => match graph {
            Some(g) => format!(
                "promotion arms, {} on {g}, {reads} trials, budget {}, --compact {compact} \
                 ({rounds} rounds)",
                kernel.as_deref().unwrap_or("pr"),
                pct(*budget_share)
            ),
            None => format!(
                "promotion arms, hot spot over {}, {reads} reads, budget {}, --compact \
                 {compact} ({rounds} rounds)",
                crate::fmt::bytes(*bytes),
                pct(*budget_share)
            ),
        },
        Work::FaultBench {
            size_bytes,
            rounds,
            policy,
            fault_waits,
        } => format!(
            "4 KiB faults over {}: alone, beside the {policy} daemon paced at {}% of the faults, \
             and unpaced ({rounds} rounds)",
            crate::fmt::bytes(*size_bytes),
            fault_waits * 100.0
        ),
        Work::Swap {
            graph,
            kernel,
            pages,
            reorder,
            shares,
            factors,
            page_cluster,
            trials,
        } => format!(
            "{kernel} on {graph} ({pages}{}{}): memory {} x overcommit {} ({trials} trials each)",
            reorder
                .as_ref()
                .map(|m| format!(", reorder {m}"))
                .unwrap_or_default(),
            page_cluster
                .map(|n| format!(", page-cluster {n}"))
                .unwrap_or_default(),
            shares
                .iter()
                .map(|s| pct(*s))
                .collect::<Vec<_>>()
                .join(" / "),
            factors.join(" / ")
        ),
        Work::Bloat {
            keys,
            value_bytes,
            delete_share,
            variants,
            rounds,
        } => format!(
            "redis-server, {keys} keys of {value_bytes} B, {} deleted and refilled: {} \
             ({rounds} rounds)",
            pct(*delete_share),
            variants.join(" / ")
        ),
        Work::Packing {
            records,
            hops,
            hot_arena_bytes,
            rounds,
        } => format!(
            "packing: {records} hot records among as many cold, {hops} hops; 4k / thp-always / \
             thp-all / packed-4k / packed, hot arena up to {} ({rounds} rounds)",
            crate::fmt::bytes(*hot_arena_bytes)
        ),
        Work::Faultlat {
            size_bytes,
            policy,
            then_collapse,
        } => format!(
            "fault latency, {} {policy}{}",
            crate::fmt::bytes(*size_bytes),
            if *then_collapse { " then collapse" } else { "" }
        ),
    }
}

/// The plan: every run with its machine shape and estimated time.
pub fn plan(p: &StudyPlan) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "study   {}{}{}: {}",
        p.preset,
        if p.quick { " (quick)" } else { "" },
        p.scale.map_or(String::new(), |s| format!(" (kron:{s})")),
        p.question
    );
    let _ = writeln!(o, "figures {}", p.reproduces);
    let _ = writeln!(
        o,
        "runs    {}, {} threads, {} rounds each; about {} in all\n",
        p.runs.len(),
        p.threads,
        p.repeat,
        duration(p.estimate_s)
    );
    let mut t = Table::new(["#", "run", "machine", "work", "estimate"]);
    for (i, r) in p.runs.iter().enumerate() {
        t.row([
            (i + 1).to_string(),
            r.id.clone(),
            r.shape.describe(),
            work_line(&r.work),
            duration(r.estimate_s),
        ]);
    }
    o.push_str(&t.render());
    o
}

/// A metric's value as its headline shows it.
pub fn metric_value(m: &Metric, v: f64) -> String {
    match m {
        Metric::Speedup { .. }
        | Metric::SpeedupOver { .. }
        | Metric::OvercommitGain { .. }
        | Metric::Slowdown { .. }
        | Metric::PackingSpeedup { .. } => format!("{v:.2}x"),
        Metric::ThroughputVsAlways { .. } | Metric::BloatVsAlways { .. } => format!("{v:.2}"),
        Metric::ShareOfIdeal { .. }
        | Metric::HugeShare { .. }
        | Metric::SimShareOfIdeal { .. }
        | Metric::PackingHugeShare { .. }
        | Metric::CompactionCpuShare { .. } => pct(v),
        Metric::PromoteReach90 { .. } => format!("{v:.1} s"),
        Metric::PromoteSpeedupVsUnfragmented { .. } | Metric::SimPagesPerBlock { .. } => {
            format!("{v:.2}")
        }
        Metric::FaultTailVsAlone { .. } => format!("{v:.2}x"),
    }
}

/// How far this machine's number is from the paper's (`+0.12×`, `−8.5 pp`), and whether it
/// is at or above it; `None` when either is missing.
pub fn gap(h: &Headline) -> Option<(String, bool)> {
    let d = h.measured? - h.claim.paper_value?;
    let sign = if d >= 0.0 { "+" } else { "−" };
    let text = match h.claim.metric {
        Metric::Speedup { .. }
        | Metric::SpeedupOver { .. }
        | Metric::OvercommitGain { .. }
        | Metric::Slowdown { .. }
        | Metric::PackingSpeedup { .. }
        | Metric::FaultTailVsAlone { .. } => format!("{sign}{:.2}×", d.abs()),
        Metric::ThroughputVsAlways { .. }
        | Metric::BloatVsAlways { .. }
        | Metric::PromoteSpeedupVsUnfragmented { .. }
        | Metric::SimPagesPerBlock { .. } => {
            format!("{sign}{:.2}", d.abs())
        }
        Metric::PromoteReach90 { .. } => format!("{sign}{:.1} s", d.abs()),
        _ => format!("{sign}{:.1} pp", d.abs() * 100.0),
    };
    let met = if h.claim.metric.lower_is_better() {
        d <= 0.0
    } else {
        d >= 0.0
    };
    Some((text, met))
}

/// What a headline measured here, or why it has no value.
pub fn headline_value(x: &Headline) -> String {
    match (x.measured, &x.claim.metric) {
        (Some(v), m) => metric_value(m, v),
        (None, Metric::ShareOfIdeal { .. }) if x.runs > 0 => format!(
            "none: the ideal gains < {:.0} % or its interval reaches 1",
            hugewise_results::study::MIN_IDEAL_GAIN * 100.0
        ),
        (None, _) => "not measured".into(),
    }
}

/// A headline's interval as its tables show it: the widest of its runs' 95 % intervals in the
/// metric's unit, `simulated` for a simulated figure (deterministic), `-` when its runs give
/// none.
pub fn interval_text(h: &Headline) -> String {
    match (&h.interval, &h.claim.metric) {
        (Some(i), m) => format!("[{}, {}]", metric_value(m, i.lo), metric_value(m, i.hi)),
        (None, Metric::SimShareOfIdeal { .. }) if h.measured.is_some() => "simulated".into(),
        (None, _) => "-".into(),
    }
}

/// A headline's scale as its tables show it: the inputs, with `!` after a scale far below the
/// paper's.
pub fn scale_text(h: &Headline) -> String {
    match &h.scale {
        Some(s) if s.far_below_paper => format!("{} !", s.text),
        Some(s) => s.text.clone(),
        None => "-".into(),
    }
}

/// What the interval and scale columns mean, and for each headline whose scale is far below
/// its paper's, the paper's inputs (numbered as the table's rows).
pub fn headline_legend(h: &[Headline]) -> String {
    let mut o = format!(
        "interval: the widest of the runs' 95 % intervals of the median (simulated figures \
         have none); scale: the inputs the runs used, ! when the smallest has {}x fewer \
         vertices than the paper's smallest input or fewer, where its arrays can fit TLB reaches \
         the paper's overflowed\n",
        hugewise_results::scale::FAR_BELOW
    );
    for (i, x) in h.iter().enumerate() {
        if let (Some(s), Some(p)) = (&x.scale, &x.claim.paper_scale) {
            if s.far_below_paper {
                let _ = writeln!(o, "! {}. {} against the paper's {}", i + 1, s.text, p.text);
            }
        }
    }
    o
}

/// The headlines: each claim, what was measured here with its interval and scale, the paper's
/// number, and why they may differ.
pub fn headlines(h: &[Headline]) -> String {
    let mut t = Table::new([
        "headline", "here", "interval", "scale", "paper", "source", "runs",
    ]);
    let mut gaps = String::new();
    for (i, x) in h.iter().enumerate() {
        t.row([
            format!("{}. {}", i + 1, x.claim.what),
            headline_value(x),
            interval_text(x),
            scale_text(x),
            x.claim.paper_text.clone(),
            x.claim.source.clone(),
            x.runs.to_string(),
        ]);
        if !x.claim.gap.is_empty() {
            let _ = writeln!(gaps, "{}. {}", i + 1, x.claim.gap);
        }
    }
    let mut o = t.render();
    o.push('\n');
    o.push_str(&headline_legend(h));
    if !gaps.is_empty() {
        o.push_str("\nwhy here may differ from the paper:\n");
        o.push_str(&gaps);
    }
    o
}

/// One row per `pages` run and variant: median time, speedup, huge share; a `*` marks a
/// variant with a sample timed while the machine was busy.
pub fn pages_table(runs: &[(&str, &PagesReport)]) -> String {
    let mut t = Table::new([
        "run",
        "layout",
        "median",
        "speedup [95% CI]",
        "spread",
        "huge share",
    ]);
    let mut any_busy = 0;
    for (id, r) in runs {
        for (v, s) in r.summary.iter().enumerate() {
            let (busy, _) = busy_of(
                r.samples
                    .iter()
                    .filter(|x| x.variant == v)
                    .map(|x| &x.quiet),
            );
            any_busy += busy;
            t.row([
                if v == 0 {
                    id.to_string()
                } else {
                    String::new()
                },
                format!("{}{}", variant_label(s), if busy > 0 { " *" } else { "" }),
                crate::fmt::ns(s.kernel_ns.median),
                s.speedup_vs_first
                    .map(|x| crate::fmt::ratio_ci(x, s.speedup_vs_first_ci95, s.kernel_ns.n, 2))
                    .unwrap_or_else(|| "baseline".into()),
                pct(s.kernel_ns.mad_rel),
                pct(s.huge_footprint_share),
            ]);
        }
    }
    let mut o = t.render();
    if any_busy > 0 {
        o.push_str(
            "* a sample of this layout was timed while other processes kept the CPUs busy\n",
        );
    }
    o
}

/// One row per fault-latency run: faults, percentiles, what collapsing cost, the huge share.
pub fn faultlat_table(runs: &[(&str, &FaultlatReport)]) -> String {
    let mut t = Table::new([
        "run",
        "faults",
        "p50",
        "p99",
        "p99.9",
        "max",
        "collapse p50",
        "huge share",
    ]);
    for (id, r) in runs {
        let l = &r.fault_latency;
        let ns = |v: u64| crate::fmt::ns(v as f64);
        t.row([
            id.to_string(),
            r.faults.to_string(),
            ns(l.p50_ns),
            ns(l.p99_ns),
            ns(l.p999_ns),
            ns(l.max_ns),
            r.collapse
                .as_ref()
                .map(|c| ns(c.latency.p50_ns))
                .unwrap_or_else(|| "-".into()),
            pct(r
                .collapse
                .as_ref()
                .map_or(&r.backing, |c| &c.backing)
                .huge_share()),
        ]);
    }
    t.render()
}

/// `swap` runs: each memory share at each overcommit factor, its time against all of the
/// footprint in memory and against factor 1 at the same share, and where the time went.
pub fn swap_table(runs: &[(&str, &SwapStudy)]) -> String {
    let mut t = Table::new([
        "run",
        "memory",
        "factor",
        "median",
        "slowdown vs all in memory",
        "speedup vs x1",
        "page-ins/s (run)",
        "queue (run)",
        "idle+iowait (run)",
        "huge share",
    ]);
    let x = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.2}x"));
    for (id, r) in runs {
        let base = r.baseline_s();
        for (i, p) in r.points.iter().enumerate() {
            let run_id = if i == 0 {
                id.to_string()
            } else {
                String::new()
            };
            let Some(run) = &p.run else {
                t.row([
                    run_id,
                    pct(p.share),
                    p.factor.clone(),
                    format!("failed: {}", p.error.as_deref().unwrap_or("?")),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
                continue;
            };
            let factor = match (&run.overcommit, p.exploring_s()) {
                (Some(c), Some(e)) => format!(
                    "{} (chose {} after {:.1} s exploring)",
                    p.factor, c.chosen, e
                ),
                (Some(c), None) => format!("{} (never settled; best {})", p.factor, c.chosen),
                (None, _) => p.factor.clone(),
            };
            let med = p.median_s();
            let x1 = r.point(p.share, "1").and_then(|q| q.median_s());
            let sum = run.telemetry.as_ref().map(|t| &t.summary);
            t.row([
                run_id,
                pct(p.share),
                factor,
                med.map_or_else(|| "-".into(), |m| crate::fmt::ns(m * 1e9)),
                // Slower than all in memory: the time's multiple.
                x(med.zip(base).map(|(m, b)| m / b)),
                x(med.zip(x1).map(|(m, b)| b / m)),
                sum.and_then(|s| s.page_ins_per_s)
                    .map_or_else(|| "-".into(), |v| format!("{v:.0}")),
                sum.and_then(|s| s.mean_queue_depth)
                    .map_or_else(|| "-".into(), |v| format!("{v:.1}")),
                sum.and_then(|s| s.cpu.as_ref())
                    .map_or_else(|| "-".into(), |c| pct(c.idle_share + c.iowait_share)),
                pct(run.huge_footprint_share),
            ]);
        }
    }
    t.render()
}

/// What `hugewise study` prints when its runs are done: the tables of plan `plan`'s runs in
/// `c` (pages, fault latency, swap, bloat, packing) and its headlines.
pub fn finished(c: &hugewise_results::collection::Collection, plan: usize) -> String {
    use hugewise_results::AnyResult;
    let runs = c.runs_of(plan);
    let ids: Vec<String> = runs.iter().map(|e| e.run_id()).collect();
    // The runs of one kind, with their ids.
    fn rows<'a, T>(
        runs: &[&'a hugewise_results::collection::Entry],
        ids: &'a [String],
        pick: impl Fn(&'a AnyResult) -> Option<&'a T>,
    ) -> Vec<(&'a str, &'a T)> {
        runs.iter()
            .zip(ids)
            .filter_map(|(e, id)| Some((id.as_str(), pick(&e.result)?)))
            .collect()
    }
    let mut o = String::new();
    let pages = rows(&runs, &ids, |r| match r {
        AnyResult::Pages(s) => Some(&s.result),
        _ => None,
    });
    if !pages.is_empty() {
        let _ = writeln!(o, "{}", pages_table(&pages));
    }
    let faults = rows(&runs, &ids, |r| match r {
        AnyResult::Faultlat(s) => Some(&s.result),
        _ => None,
    });
    if !faults.is_empty() {
        let _ = writeln!(o, "{}", faultlat_table(&faults));
    }
    let swaps = rows(&runs, &ids, |r| match r {
        AnyResult::Swap(s) => Some(&s.result),
        _ => None,
    });
    if !swaps.is_empty() {
        let _ = writeln!(o, "{}", swap_table(&swaps));
    }
    for (_, r) in rows(&runs, &ids, |r| match r {
        AnyResult::BenchBloat(s) => Some(&s.result),
        _ => None,
    }) {
        let _ = writeln!(o, "{}", crate::views::exec::bloat(r));
    }
    for (_, r) in rows(&runs, &ids, |r| match r {
        AnyResult::BenchPacking(s) => Some(&s.result),
        _ => None,
    }) {
        let _ = writeln!(o, "{}", crate::views::exec::packing(r));
    }
    let _ = writeln!(o, "{}", headlines(&c.headlines(plan)));
    o
}
