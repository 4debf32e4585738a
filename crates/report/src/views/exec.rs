//! The terminal view of `hugewise exec`: what each allocation taken over got.

use std::fmt::Write;

use hugewise_results::bloat::BloatReport;
use hugewise_results::exec::{ExecAllocation, ExecBenchReport, ExecReport, ProfileReport};
use hugewise_results::packing::PackingReport;

use crate::fmt::{bytes, ns, pct, ratio_ci};
use crate::table::Table;

fn opt_bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), bytes)
}

/// The command on one line, cut after 60 characters.
fn command_line(argv: &[String]) -> String {
    let line = argv.join(" ").replace('\n', " ");
    match line.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line,
    }
}

fn ended(r: &ExecReport) -> String {
    match (r.exit_code, r.signal) {
        (Some(c), _) => format!("exited {c}"),
        (None, Some(s)) => format!("was ended by signal {s}"),
        (None, None) => "ended".into(),
    }
}

/// `hugewise exec`: totals per policy, each process, and the largest allocations (every one
/// with `all`).
pub fn exec(r: &ExecReport, all: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "hugewise exec: {} {} after {}; rules {} for allocations from {}",
        command_line(&r.command),
        ended(r),
        ns(r.wall_ns as f64),
        r.rules,
        bytes(r.min_size_bytes),
    );
    if let Some(p) = &r.promote {
        let t = &p.totals;
        let _ = writeln!(
            out,
            "promotion daemon ({}, budget {}): {} chunk(s) promoted, {} split back{}, {} refused; \
             {} huge at the end; {} of a core",
            p.policy,
            p.budget.as_deref().unwrap_or("-"),
            t.promoted,
            t.demoted,
            if t.released > 0 {
                format!(" ({} partly freed, released)", t.released)
            } else {
                String::new()
            },
            t.promote_failed,
            opt_bytes(t.huge_bytes_final),
            t.daemon_core_share.map_or_else(|| "-".into(), pct),
        );
    }
    if let Some(e) = &r.promote_error {
        let _ = writeln!(out, "the promotion daemon stopped early: {e}");
    }
    let totals = r.totals();
    if r.processes.is_empty() {
        let _ = writeln!(
            out,
            "no process loaded the preload library: the program, and whatever it started, was \
             statically linked or cleared LD_PRELOAD; `hugewise promote -- CMD` works from \
             outside instead"
        );
    } else if totals.is_empty() {
        let _ = writeln!(
            out,
            "no allocation of {} or more was taken over: the program made none, or its \
             allocator is not glibc's (see below)",
            bytes(r.min_size_bytes)
        );
    } else {
        let mut t = Table::new([
            "policy",
            "allocations",
            "asked",
            "peak resident",
            "peak huge",
            "huge share",
        ]);
        for p in &totals {
            t.row([
                p.policy.clone(),
                p.count.to_string(),
                bytes(p.requested_bytes),
                bytes(p.peak_resident_bytes),
                bytes(p.peak_huge_bytes),
                if p.peak_resident_bytes > 0 {
                    pct(p.peak_huge_bytes as f64 / p.peak_resident_bytes as f64)
                } else {
                    "-".into()
                },
            ]);
        }
        out.push('\n');
        out.push_str(&t.render());
        let unobserved: u64 = totals.iter().map(|p| p.unobserved).sum();
        if unobserved > 0 {
            let _ = writeln!(
                out,
                "({unobserved} allocation(s) lived less than one reading apart \
                 (--interval {}): their backing was not seen)",
                ns(r.interval_ns as f64)
            );
        }
    }
    let idle: Vec<_> = r
        .processes
        .iter()
        .filter(|p| {
            p.allocations.is_empty() && p.fallbacks == 0 && !p.rules_refused && !p.sites_missing
        })
        .collect();
    for p in r
        .processes
        .iter()
        .filter(|p| !idle.iter().any(|q| q.pid == p.pid))
    {
        let mut notes = Vec::new();
        if p.allocator != "glibc" {
            notes.push(
                "its allocator is not glibc's: its allocations stay with it, and only the \
                 large mappings it makes are adopted"
                    .to_string(),
            );
        }
        if p.sites_missing {
            notes.push(
                "some call sites the rules name are not in the program as loaded: was the \
                 placement made for another build of it? (profile it again)"
                    .into(),
            );
        }
        if p.rules_refused {
            notes.push("the library could not read the rules: nothing was taken over".into());
        }
        if p.fallbacks > 0 {
            notes.push(format!(
                "{} allocation(s) left to the program's allocator (last refusal: {})",
                p.fallbacks,
                p.last_fallback_error.as_deref().unwrap_or("-")
            ));
        }
        if p.unlogged > 0 {
            notes.push(format!(
                "{} allocation(s) not logged (log full)",
                p.unlogged
            ));
        }
        let _ = writeln!(
            out,
            "\nprocess {}: {} allocation(s) taken over, peak RSS {}, of it in huge pages {}{}",
            p.pid,
            p.allocations.len(),
            opt_bytes(p.peak_rss_bytes),
            opt_bytes(p.peak_anon_huge_bytes),
            if notes.is_empty() {
                String::new()
            } else {
                format!("\n  {}", notes.join("\n  "))
            }
        );
    }
    if !idle.is_empty() {
        let foreign = idle.iter().filter(|p| p.allocator != "glibc").count();
        let _ = writeln!(
            out,
            "\n{} more process(es) took nothing over{}",
            idle.len(),
            if foreign > 0 {
                format!(" ({foreign} with an allocator other than glibc's)")
            } else {
                String::new()
            }
        );
    }
    let mut list: Vec<(i32, &ExecAllocation)> = r
        .processes
        .iter()
        .flat_map(|p| p.allocations.iter().map(move |a| (p.pid, a)))
        .collect();
    if list.is_empty() {
        return out;
    }
    let shown = if all { list.len() } else { list.len().min(10) };
    // An arena asks for nothing itself: it ranks by what it came to hold.
    list.sort_by_key(|(_, a)| {
        std::cmp::Reverse(a.requested_bytes.max(a.peak_resident_bytes.unwrap_or(0)))
    });
    let mut t = Table::new([
        "pid", "size", "via", "name", "policy", "rule", "advice", "born", "lived", "resident",
        "huge",
    ]);
    for (pid, a) in list.iter().take(shown) {
        t.row([
            pid.to_string(),
            if a.origin == "arena" {
                "-".into()
            } else {
                bytes(a.requested_bytes)
            },
            a.origin.clone(),
            a.name
                .clone()
                .or_else(|| a.site.clone())
                .unwrap_or_else(|| "-".into()),
            a.policy.clone(),
            a.rule.map_or_else(|| "-".into(), |i| (i + 1).to_string()),
            a.advice_error.clone().unwrap_or_else(|| "ok".into()),
            ns(a.born_ns as f64),
            a.lifetime_ns
                .map_or_else(|| "to the end".into(), |l| ns(l as f64)),
            opt_bytes(a.peak_resident_bytes),
            opt_bytes(a.peak_huge_bytes),
        ]);
    }
    let _ = writeln!(
        out,
        "\n{} allocation(s){}:",
        shown,
        if shown < list.len() {
            format!(" of {}, the largest (--all lists every one)", list.len())
        } else {
            String::new()
        }
    );
    out.push_str(&t.render());
    out
}

fn speedup(
    v: Option<f64>,
    ci: Option<hugewise_results::stats::MedianInterval>,
    n: usize,
) -> String {
    v.map_or_else(|| "1 (baseline)".into(), |x| ratio_ci(x, ci, n, 2))
}

fn bench_rows(r: &ExecBenchReport) -> Vec<[String; 8]> {
    r.variants
        .iter()
        .map(|v| {
            let metric = v.metric_s.as_ref();
            [
                v.label.clone(),
                ns(v.wall_ns.median),
                format!("{:.1}%", v.wall_ns.mad_rel * 100.0),
                speedup(v.speedup_vs_first, v.speedup_vs_first_ci95, v.wall_ns.n),
                metric.map_or_else(|| "-".into(), |m| ns(m.median * 1e9)),
                metric.map_or_else(|| "-".into(), |m| format!("{:.1}%", m.mad_rel * 100.0)),
                match (metric, v.metric_speedup_vs_first) {
                    (None, _) => "-".into(),
                    (Some(m), s) => speedup(s, v.metric_speedup_vs_first_ci95, m.n),
                },
                v.huge_bytes
                    .map_or_else(|| "-".into(), |h| bytes(h.round() as u64)),
            ]
        })
        .collect()
}

const BENCH_HEADER: [&str; 8] = [
    "variant",
    "wall (median)",
    "spread",
    "speedup [95% CI]",
    "own time (median)",
    "spread",
    "speedup [95% CI]",
    "huge bytes",
];

/// `hugewise bench exec`.
pub fn bench(r: &ExecBenchReport) -> String {
    let mut t = Table::new(BENCH_HEADER);
    for row in bench_rows(r) {
        t.row(row);
    }
    format!(
        "{} rounds{} of {}, allocations from {}; speedup = first variant's time / this one's, \
         median over rounds\n\n{}",
        r.rounds,
        crate::fmt::stopped(r.stopped),
        command_line(&r.command),
        bytes(r.min_size_bytes),
        t.render()
    )
}

/// `hugewise bench exec --markdown`.
pub fn bench_markdown(r: &ExecBenchReport) -> String {
    let mut t = Table::new(BENCH_HEADER);
    for row in bench_rows(r) {
        t.row(row);
    }
    t.markdown()
}

fn opt_summary_bytes(s: Option<&hugewise_results::stats::Summary>) -> String {
    s.map_or_else(|| "-".into(), |s| bytes(s.median.round() as u64))
}

fn ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

/// A ratio with its 95 % interval (`0.88 [0.85–1.07]`); alone where `rounds` is 0.
fn ratio_in(
    v: Option<f64>,
    ci: Option<hugewise_results::stats::MedianInterval>,
    rounds: usize,
) -> String {
    match v {
        Some(x) if rounds > 0 => format!("{x:.2} {}", crate::fmt::interval(ci, rounds, 2)),
        _ => ratio(v),
    }
}

/// `hugewise bench bloat`.
pub fn bloat(r: &BloatReport) -> String {
    format!("{}{}", bloat_caption(r), bloat_table(r).render())
}

/// `hugewise bench bloat --markdown`.
pub fn bloat_markdown(r: &BloatReport) -> String {
    format!("{}{}", bloat_caption(r), bloat_table(r).markdown())
}

fn bloat_caption(r: &BloatReport) -> String {
    // A file saved before the rounds' own bloat shares were kept gives the median bloat over
    // always's median bloat, which one round's odd `never` run moves far more.
    let old_bloat = r
        .variants
        .iter()
        .any(|v| v.bloat_vs_always.is_some() && v.bloat_share_rounds.is_none());
    let daemon = if r.variants.iter().any(|v| v.daemon_core_share.is_some()) {
        "; daemon CPU: the promotion daemon's CPU time over its session, a share of one core, \
         median over the rounds"
    } else {
        ""
    };
    format!(
        "{}: {} keys of {} B, {}% deleted and filled again, {} clients, pipeline {}, {} rounds{}\n\
         (throughput: geometric mean over the phases; bloat: memory charged at the end minus \
         THP never's, same round; {}{daemon})\n\n",
        r.server_version,
        r.keys,
        r.value_bytes,
        (r.delete_share * 100.0).round(),
        r.clients,
        r.pipeline,
        r.rounds,
        crate::fmt::stopped(r.stopped),
        if old_bloat {
            "the ratios to always: medians of the rounds' own, with their 95 % interval, [n<6] \
             where fewer than 6 rounds gave one; a bloat / always without either: the median \
             bloat over always's median bloat, as this file was saved before the rounds' own \
             shares were kept"
        } else {
            "the ratios to always: medians of the rounds' own, with their 95 % interval, [n<6] \
             where fewer than 6 rounds gave one"
        }
    )
}

fn bloat_table(r: &BloatReport) -> Table {
    let phases: Vec<String> = r
        .variants
        .first()
        .map(|v| v.rps.iter().map(|(n, _)| format!("{n} rps")).collect())
        .unwrap_or_default();
    let mut header = vec!["variant".to_string()];
    header.extend(phases.iter().cloned());
    header.extend(
        [
            "rps (geomean)",
            "read p99",
            "charged at end",
            "bloat",
            "rps / always",
            "bloat / always",
        ]
        .map(String::from),
    );
    // The daemon's share of a core, where a variant ran one and the file kept it.
    let daemons = r.variants.iter().any(|v| v.daemon_core_share.is_some());
    if daemons {
        header.push("daemon CPU".into());
    }
    let mut t = Table::new(header);
    for v in &r.variants {
        let mut row = vec![v.label.clone()];
        row.extend(v.rps.iter().map(|(_, x)| format!("{x:.0}")));
        row.push(format!("{:.0}", v.rps_geomean.median));
        row.push(
            v.read_p99_ms
                .as_ref()
                .map_or_else(|| "-".into(), |s| format!("{:.2} ms", s.median)),
        );
        row.push(opt_summary_bytes(v.final_charged_bytes.as_ref()));
        row.push(v.bloat_bytes.map_or_else(
            || "-".into(),
            |b| {
                if b < 0.0 {
                    format!("-{}", bytes((-b).round() as u64))
                } else {
                    bytes(b.round() as u64)
                }
            },
        ));
        // `always` against itself has no interval to give.
        let (rounds, shares) = if v.label == "always" {
            (0, 0)
        } else {
            let n = r.rounds as usize;
            // A file from before the shares were kept: a ratio of medians, no interval.
            (n, v.bloat_share_rounds.map_or(0, |k| k as usize))
        };
        row.push(ratio_in(
            v.throughput_vs_always,
            v.throughput_vs_always_ci95,
            rounds,
        ));
        row.push(ratio_in(v.bloat_vs_always, v.bloat_vs_always_ci95, shares));
        if daemons {
            row.push(v.daemon_core_share.map_or_else(|| "-".into(), pct));
        }
        t.row(row);
    }
    t
}

/// `hugewise profile`: the call sites, hottest first, and what the placement gives each.
pub fn profile(r: &ProfileReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "hugewise profile: {} {} after {}; {} call site(s) seen, accessed share read every {}",
        command_line(&r.run.command),
        ended(&r.run),
        ns(r.run.wall_ns as f64),
        r.sites.len(),
        ns(r.run.interval_ns as f64),
    );
    if r.sites.is_empty() {
        return out;
    }
    let mut t = Table::new([
        "site",
        "kind",
        "peak resident",
        "accessed per reading",
        "placement",
    ]);
    const SHOWN: usize = 15;
    for s in r.sites.iter().take(SHOWN) {
        t.row([
            s.site.clone(),
            match s.allocations {
                Some(n) => format!("{} x{n}", s.kind),
                None => s.kind.clone(),
            },
            bytes(s.peak_resident_bytes),
            s.accessed_share.map_or_else(|| "-".into(), pct),
            s.placement.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    out.push('\n');
    out.push_str(&t.render());
    if r.sites.len() > SHOWN {
        let _ = writeln!(out, "({} more site(s), colder)", r.sites.len() - SHOWN);
    }
    let in_arena: u64 = r
        .sites
        .iter()
        .filter(|s| s.placement.as_deref() == Some("arena"))
        .map(|s| s.peak_resident_bytes)
        .sum();
    let arena_sites = r
        .sites
        .iter()
        .filter(|s| s.placement.as_deref() == Some("arena"))
        .count();
    let _ = writeln!(
        out,
        "\nhot arena: {arena_sites} site(s), {} of {}; sites at least {} accessed per reading \
         count as hot",
        bytes(in_arena),
        bytes(r.hot_arena_bytes),
        pct(r.min_accessed_share),
    );
    if r.kdamonds > 0 {
        let _ = writeln!(
            out,
            "warning: {} DAMON thread(s) (kdamond) ran beside the profile; DAMON clears the same \
             accessed bits, so the shares above read low and a hot site may fall under {}",
            r.kdamonds,
            pct(r.min_accessed_share),
        );
    }
    if let Some(f) = &r.placement_file {
        let _ = writeln!(
            out,
            "placement written to {f}: run `hugewise exec --placement {f} -- {}`",
            command_line(&r.run.command)
        );
    }
    out
}

fn packing_caption(r: &PackingReport) -> String {
    let arena: Vec<&str> = r
        .profile
        .sites
        .iter()
        .filter(|s| s.placement.as_deref() == Some("arena"))
        .map(|s| s.site.as_str())
        .collect();
    format!(
        "{}: {} rounds{}, time {}; hot arena from the profile: {} ({} site(s): {})\n\n",
        command_line(&r.command),
        r.rounds,
        crate::fmt::stopped(r.stopped),
        r.metric
            .as_deref()
            .map_or_else(|| "wall".to_string(), |m| format!("the program's {m}")),
        bytes(
            r.profile
                .sites
                .iter()
                .filter(|s| s.placement.as_deref() == Some("arena"))
                .map(|s| s.peak_resident_bytes)
                .sum()
        ),
        arena.len(),
        if arena.is_empty() {
            "none was hot".to_string()
        } else {
            arena.join(", ")
        },
    )
}

fn packing_table(r: &PackingReport) -> Table {
    let mut t = Table::new([
        "variant",
        "THP",
        "time (median)",
        "spread",
        "speedup vs 4k [95% CI]",
        "huge bytes",
        "huge / thp-all",
    ]);
    for v in &r.variants {
        let time = v
            .metric_s
            .as_ref()
            .map_or(v.wall_ns.median / 1e9, |m| m.median);
        let spread = v.metric_s.as_ref().map_or(v.wall_ns.mad_rel, |m| m.mad_rel);
        t.row([
            v.label.clone(),
            v.thp.clone(),
            format!("{time:.3} s"),
            format!("±{}", pct(spread)),
            v.speedup_vs_4k.map_or_else(
                || "-".into(),
                |x| ratio_ci(x, v.speedup_vs_4k_ci95, v.wall_ns.n, 2),
            ),
            v.huge_bytes.map_or_else(|| "-".into(), |h| bytes(h as u64)),
            v.huge_share_of_thp_all.map_or_else(|| "-".into(), pct),
        ]);
    }
    t
}

/// `hugewise bench packing`.
pub fn packing(r: &PackingReport) -> String {
    format!("{}{}", packing_caption(r), packing_table(r).render())
}

/// `hugewise bench packing --markdown`.
pub fn packing_markdown(r: &PackingReport) -> String {
    format!("{}{}", packing_caption(r), packing_table(r).markdown())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_results::Saved;

    #[test]
    fn a_bloat_file_from_before_the_rounds_shares_says_its_ratio_is_of_medians() {
        let text = include_str!("../../../results/tests/fixtures/bench-bloat.json");
        let mut r = Saved::<BloatReport>::from_json(text)
            .expect("the saved bloat bench")
            .result;
        assert!(r.variants.iter().all(|v| v.bloat_share_rounds.is_none()));
        let old = bloat(&r);
        assert!(
            old.contains("median bloat over always's median bloat"),
            "{old}"
        );
        // The old ratio is printed bare: it has no interval at any number of rounds.
        let mega = old.lines().find(|l| l.starts_with("exec:")).expect("a row");
        assert!(mega.trim_end().ends_with("-0.01"), "{mega}");
        // One variant from a newer file is enough for the caption to explain both.
        r.variants[2].bloat_share_rounds = Some(1);
        assert!(bloat(&r).contains("median bloat over always's median bloat"));
        for v in &mut r.variants {
            v.bloat_share_rounds = Some(1);
        }
        let new = bloat(&r);
        assert!(!new.contains("median bloat over always's"), "{new}");
        assert!(new.contains("medians of the rounds' own"), "{new}");
        // The daemon's share of a core gets a column where a variant kept one.
        assert!(!new.contains("daemon CPU"), "{new}");
        r.variants[2].daemon_core_share = Some(0.015);
        let with = bloat(&r);
        assert!(
            with.contains("daemon CPU: the promotion daemon's"),
            "{with}"
        );
        let last = |prefix: &str| {
            let l = with.lines().find(|l| l.starts_with(prefix)).expect("a row");
            l.split_whitespace().last().map(String::from)
        };
        assert_eq!(last("never").as_deref(), Some("-"), "{with}");
        assert_eq!(last("exec:").as_deref(), Some("1.5%"), "{with}");
    }

    #[test]
    fn a_profile_beside_a_kdamond_warns_that_its_shares_read_low() {
        let text = include_str!("../../../results/tests/fixtures/profile.json");
        let mut r = Saved::<ProfileReport>::from_json(text)
            .expect("the saved profile")
            .result;
        r.kdamonds = 0;
        assert!(!profile(&r).contains("kdamond"));
        r.kdamonds = 1;
        let out = profile(&r);
        assert!(
            out.contains("warning: 1 DAMON thread(s) (kdamond) ran beside the profile"),
            "{out}"
        );
    }
}
