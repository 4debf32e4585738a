//! Views of `hugewise promote` sessions and of `hugewise bench promote`.

use std::fmt::Write;

use hugewise_results::promote::{
    Action, ActionKind, Compaction, Interval, PromoteBenchReport, PromoteBenchWorkload,
    PromoteReport, Shaping,
};
use hugewise_results::stats::BootstrapInterval;

use crate::fmt::{bytes, ns, pct, pct_ci, ratio_ci};
use crate::table::Table;

/// One line for an interval of the daemon, as the live summary shows it.
pub fn interval_line(iv: &Interval) -> String {
    format!(
        "t={:>6.1}s  targets {}  huge {} of {} budget  +{} -{}{} failed {}{}  samples {}{}{}  cpu {}",
        iv.t_ms / 1e3,
        iv.targets,
        bytes(iv.huge_bytes_after),
        bytes(iv.budget_bytes),
        iv.promoted,
        iv.demoted,
        if iv.released > 0 {
            format!(" released {}", iv.released)
        } else {
            String::new()
        },
        iv.failed,
        if iv.compaction.is_some() {
            "  compacted"
        } else {
            ""
        },
        iv.samples,
        if iv.samples_lost > 0 {
            format!(" ({} lost)", iv.samples_lost)
        } else {
            String::new()
        },
        match iv.sample_thinning {
            Some(k) if k > 1 => format!(" (asking 1/{k})"),
            _ => String::new(),
        },
        ns(iv.cpu_ns as f64)
    )
}

/// One line for an action.
pub fn action_line(a: &Action) -> String {
    format!(
        "t={:>8.1}ms  pid {}  {} {:#x}+{}  {}  {}{}{}",
        a.t_ms,
        a.pid,
        match a.kind {
            ActionKind::Promote => "promote",
            ActionKind::Demote => "demote",
            ActionKind::Release => "release",
        },
        a.start,
        bytes(a.len_bytes),
        a.outcome,
        ns(a.latency_ns as f64),
        a.huge_bytes_after
            .map(|h| format!("  huge after {}", bytes(h)))
            .unwrap_or_default(),
        if a.tried_again { "  (tried again)" } else { "" }
    )
}

/// One line for a compaction the daemon made: when, how long, its CPU time, what moved and
/// what it freed (free 2 MiB blocks and the unusable free space index before and after).
pub fn compaction_line(c: &Compaction) -> String {
    format!(
        "t={:>8.1}ms  compact {}  aim {}  took {} (cpu {})  moved {}  2 MiB blocks free {} -> {}  \
         unusable index {:.3} -> {:.3}{}",
        c.t_ms,
        if c.lever == "node" {
            format!(
                "node {}",
                c.nodes
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )
        } else {
            format!("by vm.{} (every node)", c.lever)
        },
        bytes(c.aim_bytes),
        ns(c.wall_ns as f64),
        ns(c.cpu_ns as f64),
        c.migrated_bytes.map(bytes).unwrap_or_else(|| "-".into()),
        c.before.free_2m_blocks,
        c.after.free_2m_blocks,
        c.before.unusable_index,
        c.after.unusable_index,
        c.error
            .as_ref()
            .map(|e| format!("  failed: {e}"))
            .unwrap_or_default()
    )
}

/// Why the kernel refused an action, as its outcome names it, for a reader of the text.
fn why(outcome: &str) -> &'static str {
    match outcome {
        "EINVAL" => {
            "the memory is marked MADV_NOHUGEPAGE (a `base` page policy or rule, or the \
             program's own advice), which the kernel will not collapse"
        }
        "EAGAIN" => "pages were busy (just faulted, or being migrated)",
        "ENOMEM" => "no free 2 MiB block, even after compaction",
        "EBUSY" => "pages were pinned or locked",
        "ok" => "the kernel said yes, but the backing did not read back as asked",
        "gone" => "the process had exited",
        _ => "",
    }
}

/// The actions that did not do what was asked, counted by reason, one line each (empty when
/// all did): a count of failures alone leaves the reader to open the JSON.
pub fn failures(actions: &[Action]) -> String {
    let mut by: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
    for a in actions.iter().filter(|a| !a.succeeded() && !a.tried_again) {
        let kind = match a.kind {
            ActionKind::Promote => "promotion",
            ActionKind::Demote => "demotion",
            ActionKind::Release => "release",
        };
        *by.entry((kind, a.outcome.as_str())).or_default() += 1;
    }
    let mut o = String::new();
    for ((kind, outcome), n) in by {
        let reason = why(outcome);
        let _ = writeln!(
            o,
            "  {n} {kind}{} failed: {}{}{}",
            if n == 1 { "" } else { "s" },
            outcome,
            if reason.is_empty() { "" } else { ": " },
            reason
        );
    }
    o
}

/// `hugewise promote`: what the session did.
pub fn session(r: &PromoteReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} {} on pid {}{}{}",
        r.mode,
        r.policy,
        r.pids
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        r.budget
            .as_ref()
            .map(|b| format!(", budget {b}"))
            .unwrap_or_default(),
        r.interval_ms
            .map(|i| format!(", every {i} ms"))
            .unwrap_or_default()
    );
    // How the daemon was set to weigh its collapses (absent for a plan).
    let mut how = r
        .compact
        .as_ref()
        .map(|c| format!("compaction {c}"))
        .unwrap_or_default();
    how += &paced(r.fault_waits);
    how += &walk(r.walk_ns);
    how += &niced(r.nice);
    let how = how.trim_start_matches(", ");
    if !how.is_empty() {
        let _ = writeln!(o, "{how}");
    }
    if let Some(cmd) = &r.command {
        let _ = writeln!(
            o,
            "command `{}`{}",
            cmd.join(" "),
            r.command_exit
                .map(|c| format!(" exited with {c}"))
                .unwrap_or_default()
        );
    }
    if !r.sampled_pids.is_empty() {
        let _ = writeln!(o, "access samples from pid {:?}", r.sampled_pids);
    }
    let t = &r.totals;
    let mut tab = Table::new(["", "value"]);
    tab.row([
        "promoted (read back huge)".to_string(),
        t.promoted.to_string(),
    ]);
    tab.row([
        "promotions refused or not huge".to_string(),
        t.promote_failed.to_string(),
    ]);
    tab.row([
        "demoted (read back split)".to_string(),
        t.demoted.to_string(),
    ]);
    if let Some(n) = t.swaps {
        tab.row([
            "of which gave their place to a hotter chunk".to_string(),
            n.to_string(),
        ]);
    }
    if t.released > 0 {
        tab.row([
            "partly freed huge pages released".to_string(),
            t.released.to_string(),
        ]);
    }
    tab.row([
        "huge at the end".to_string(),
        t.huge_bytes_final.map(bytes).unwrap_or_else(|| "-".into()),
    ]);
    tab.row([
        "MADV_COLLAPSE p50 / p99".to_string(),
        match (t.collapse_p50_ns, t.collapse_p99_ns) {
            (Some(a), Some(b)) => format!("{} / {}", ns(a as f64), ns(b as f64)),
            _ => "-".into(),
        },
    ]);
    tab.row([
        "budget reached after".to_string(),
        t.reach_budget_ms
            .map(|m| format!("{:.1} s", m / 1e3))
            .unwrap_or_else(|| "-".into()),
    ]);
    if let Some(n) = t.paced {
        tab.row([
            "collapses put off while the program faulted".to_string(),
            n.to_string(),
        ]);
    }
    if let Some(n) = t.held_back {
        tab.row([
            "collapses held back after refusals in a row".to_string(),
            n.to_string(),
        ]);
    }
    tab.row([
        "daemon CPU (share of one core)".to_string(),
        match (t.daemon_cpu_ns, t.daemon_core_share) {
            (Some(c), Some(s)) => format!("{} ({})", ns(c as f64), pct(s)),
            _ => "-".into(),
        },
    ]);
    if let Some(mode) = &r.compact {
        tab.row([
            format!("compactions (--compact {mode})"),
            match (t.compactions, t.compaction_cpu_ns, t.compaction_core_share) {
                (Some(n), Some(c), Some(s)) => {
                    format!("{n}, CPU {} ({} of a core)", ns(c as f64), pct(s))
                }
                _ => "0".into(),
            },
        ]);
    }
    tab.row([
        "wall time".to_string(),
        format!("{:.1} s", r.wall_ns as f64 / 1e9),
    ]);
    o.push_str(&tab.render());
    let failed = failures(&r.actions);
    if !failed.is_empty() {
        o.push_str("why actions failed:\n");
        o.push_str(&failed);
    }
    let compactions: Vec<&Compaction> = r
        .intervals
        .iter()
        .filter_map(|iv| iv.compaction.as_ref())
        .collect();
    if !compactions.is_empty() {
        o.push_str("compactions:\n");
        for c in compactions {
            let _ = writeln!(o, "  {}", compaction_line(c));
            let _ = writeln!(o, "    why: {}", c.why);
        }
    }
    // Why the daemon did not compact for refused collapses: each reason (its head, before the
    // first `:`) once, with how many intervals gave it and the numbers of the first.
    let mut declined: Vec<(&str, usize)> = Vec::new();
    let head = |w: &str| w.split(':').next().unwrap_or_default().to_string();
    for why in r
        .intervals
        .iter()
        .filter_map(|iv| iv.compaction_declined.as_deref())
    {
        match declined.iter_mut().find(|(w, _)| head(w) == head(why)) {
            Some(d) => d.1 += 1,
            None => declined.push((why, 1)),
        }
    }
    for (why, n) in declined {
        let _ = writeln!(
            o,
            "not compacted ({n} interval{}, the first said) {why}",
            if n == 1 { "" } else { "s" }
        );
    }
    for note in r.intervals.iter().flat_map(|iv| &iv.notes) {
        let _ = writeln!(o, "note: {}", note);
    }
    if !r.gone.is_empty() {
        let _ = writeln!(o, "exited while managed: {:?}", r.gone);
    }
    if r.cancelled {
        o.push_str("stopped by the user\n");
    }
    o
}

/// `hugewise bench promote`: each workload's table, then one line per workload to compare.
pub fn bench(r: &PromoteBenchReport) -> String {
    let mut o = String::new();
    for w in &r.workloads {
        o.push_str(&bench_workload(w));
        o.push('\n');
    }
    if r.stopped == Some(hugewise_results::stats::Stopped::Interrupted) {
        o.push_str(
            "stopped by a signal (Ctrl-C): the workloads above are those it reached; any asked \
             for after them did not run\n\n",
        );
    }
    if r.workloads.len() > 1 {
        let mut t = Table::new([
            "workload",
            "ideal",
            "plan",
            "plan / ideal",
            "plan saving",
            "daemon",
            "daemon / ideal",
            "daemon saving",
            "plan huge",
        ]);
        let p = |v: Option<f64>| v.map(pct).unwrap_or_else(|| "-".into());
        let saving = |v: Option<f64>, ci: Option<BootstrapInterval>, n| {
            v.map(|x| crate::fmt::pct_bounds(x, ci.map(|i| (i.lo, i.hi)), n))
                .unwrap_or_else(|| "-".into())
        };
        for w in &r.workloads {
            let n = rounds_run(w);
            let x = |v: Option<f64>, ci| {
                v.map(|x| ratio_ci(x, ci, n, 2))
                    .unwrap_or_else(|| "-".into())
            };
            t.row([
                label(w),
                x(w.ideal_speedup, w.ideal_speedup_ci95),
                x(w.plan_speedup, w.plan_speedup_ci95),
                p(w.plan_share_of_ideal),
                saving(
                    w.plan_share_of_ideal_saving,
                    w.plan_share_of_ideal_saving_ci95,
                    n,
                ),
                x(w.daemon_speedup, w.daemon_speedup_ci95),
                p(w.daemon_share_of_ideal),
                saving(
                    w.daemon_share_of_ideal_saving,
                    w.daemon_share_of_ideal_saving_ci95,
                    n,
                ),
                p(w.huge_footprint_share),
            ]);
        }
        o.push_str(&t.render());
    }
    o
}

/// An arm against the ideal: its per-round share of the ideal's gain, its time over the
/// ideal's and its share of the ideal's saving, `-` where they do not apply.
fn against_ideal(s: &hugewise_results::promote::PromoteBenchArm) -> [String; 3] {
    let dash = || "-".to_string();
    [
        s.share_of_ideal
            .map(|x| pct_ci(x, s.share_of_ideal_ci95, s.time.n))
            .unwrap_or_else(dash),
        s.time_vs_ideal
            .map(|x| {
                format!(
                    "{x:.2} {}",
                    crate::fmt::interval(s.time_vs_ideal_ci95, s.time.n, 2)
                )
            })
            .unwrap_or_else(dash),
        s.share_of_ideal_saving
            .map(|x| {
                crate::fmt::pct_bounds(
                    x,
                    s.share_of_ideal_saving_ci95.map(|i| (i.lo, i.hi)),
                    s.time.n,
                )
            })
            .unwrap_or_else(dash),
    ]
}

/// Rounds that ran the base arm: how many ratios each median had at most.
fn rounds_run(w: &PromoteBenchWorkload) -> usize {
    w.samples
        .iter()
        .filter(|s| s.arm == hugewise_results::promote::Arm::Base)
        .count()
}

/// The time column's head: what each arm's time is.
fn unit_head(r: &PromoteBenchWorkload) -> String {
    if r.unit == PromoteBenchWorkload::SECONDS {
        "kernel s per trial (median)".into()
    } else {
        format!("{} (median)", r.unit)
    }
}

/// How the daemon's collapses were paced by the workload's faults, for the header line.
fn paced(fault_waits: Option<f64>) -> String {
    match fault_waits {
        None => String::new(),
        Some(w) if w >= 1.0 => ", its collapses not paced by the faults".into(),
        Some(w) => format!(
            ", its collapses holding up at most {:.2}% of the faults",
            w * 100.0
        ),
    }
}

fn niced(nice: Option<i32>) -> String {
    nice.map(|n| format!(", its thread at nice {n}"))
        .unwrap_or_default()
}

fn walk(walk_ns: Option<f64>) -> String {
    walk_ns
        .map(|ns| format!(", a page walk taken to cost {ns} ns"))
        .unwrap_or_default()
}

/// A workload's name in a table of several: its shaped entry marked so.
pub(crate) fn label(w: &PromoteBenchWorkload) -> String {
    match w.shaped {
        Some(_) => format!("{} (shaped)", w.workload),
        None => w.workload.clone(),
    }
}

/// What the shaped machine was, and the shaped arms set against the unshaped ones.
fn shaped_machine(sh: &Shaping) -> String {
    let mut o = String::new();
    let n = sh.rounds.len();
    let _ = write!(
        o,
        "On a shaped machine ({}), made before each round's shaped arms and given back after \
         them",
        sh.describe()
    );
    let range = |v: Vec<f64>, f: &dyn Fn(f64) -> String| -> Option<String> {
        let lo = v.iter().copied().reduce(f64::min)?;
        let hi = v.iter().copied().reduce(f64::max)?;
        Some(if f(lo) == f(hi) {
            f(lo)
        } else {
            format!("{}–{}", f(lo), f(hi))
        })
    };
    let gib = |b: f64| format!("{:.1} GiB", b / (1u64 << 30) as f64);
    if let (Some(secs), Some(avail), Some(buddy), Some(unusable)) = (
        range(sh.rounds.iter().map(|r| r.seconds).collect(), &|x| {
            format!("{x:.0} s")
        }),
        range(
            sh.rounds
                .iter()
                .map(|r| r.memory.available() as f64)
                .collect(),
            &gib,
        ),
        range(
            sh.rounds
                .iter()
                .map(|r| r.memory.buddy_free_bytes as f64)
                .collect(),
            &gib,
        ),
        range(
            sh.rounds.iter().map(|r| r.memory.unusable_share).collect(),
            &pct,
        ),
    ) {
        let _ = write!(
            o,
            ": shaping took {secs} a round and left {avail} available, {buddy} free in the \
             buddy allocator's lists, {unusable} of it in blocks under 2 MiB"
        );
    }
    if let Some(before) = range(
        sh.rounds
            .iter()
            .filter_map(|r| r.unshaped_unusable_share)
            .collect(),
        &pct,
    ) {
        let _ = write!(o, " (unshaped: {before} in blocks under 2 MiB)");
    }
    if let Some(b) = sh.listed_bytes {
        let _ = write!(
            o,
            "; before the first round {} of free memory the kernel had not yet listed was put \
             in its lists",
            bytes(b)
        );
    }
    let reached: Vec<bool> = sh
        .rounds
        .iter()
        .filter_map(|r| r.fragment_reached)
        .collect();
    if !reached.is_empty() {
        let _ = write!(
            o,
            "; the fragmentation level reached in {} of {} rounds",
            reached.iter().filter(|&&r| r).count(),
            reached.len()
        );
    }
    o.push_str(".\n");
    let mut warned: Vec<&str> = sh
        .rounds
        .iter()
        .flat_map(|r| r.warnings.iter().map(String::as_str))
        .collect();
    warned.sort_unstable();
    warned.dedup();
    for w in warned {
        let _ = writeln!(o, "warning (shaping): {w}");
    }
    let x = |v: Option<f64>, ci| {
        v.map(|v| ratio_ci(v, ci, n, 2))
            .unwrap_or_else(|| "-".into())
    };
    let _ = writeln!(
        o,
        "Shaped over unshaped, same rounds: daemon's speedup {} (of its gain kept: {}), \
         ideal's (THP at fault) {}; the 4 KiB arm ran {} as fast shaped, the daemon {}.\n",
        x(
            sh.daemon_speedup_vs_unshaped,
            sh.daemon_speedup_vs_unshaped_ci95
        ),
        sh.daemon_gain_vs_unshaped
            .map(|g| pct_ci(g, sh.daemon_gain_vs_unshaped_ci95, n))
            .unwrap_or_else(|| "-".into()),
        x(
            sh.ideal_speedup_vs_unshaped,
            sh.ideal_speedup_vs_unshaped_ci95
        ),
        x(
            sh.base_speedup_vs_unshaped,
            sh.base_speedup_vs_unshaped_ci95
        ),
        x(
            sh.daemon_time_speedup_vs_unshaped,
            sh.daemon_time_speedup_vs_unshaped_ci95
        ),
    );
    o
}

fn bench_workload(r: &PromoteBenchWorkload) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: {}; plan and daemon within {} of the {} ({} chunk{}); daemon every {} ms on \
         one sample in {}{}{}{}\n",
        r.workload,
        r.describe(),
        pct(r.budget_share),
        if r.graph.is_some() {
            "footprint"
        } else {
            "region"
        },
        r.plan_chunks,
        if r.plan_chunks == 1 { "" } else { "s" },
        r.interval_ms,
        r.sample_every,
        paced(r.fault_waits),
        walk(r.walk_ns),
        niced(r.nice)
    );
    if let Some(sh) = &r.shaped {
        o.push_str(&shaped_machine(sh));
    }
    let stopped = crate::fmt::stopped(r.stopped);
    if !stopped.is_empty() {
        let _ = writeln!(o, "{} rounds{stopped}\n", rounds_run(r));
    }
    let median_head = unit_head(r);
    let mut t = Table::new([
        "arm",
        median_head.as_str(),
        "min",
        "max",
        "spread (MAD)",
        "speedup vs base [95% CI]",
        "share of ideal",
        "time / ideal",
        "saving share",
        "huge",
    ]);
    for s in &r.summary {
        let n = &s.time;
        let [share, vs_ideal, saving] = against_ideal(s);
        t.row([
            s.arm.name().to_string(),
            format!("{:.2}", n.median),
            format!("{:.2}", n.min),
            format!("{:.2}", n.max),
            pct(n.mad_rel),
            s.speedup_vs_base
                .map(|x| ratio_ci(x, s.speedup_vs_base_ci95, n.n, 2))
                .unwrap_or_else(|| "(baseline)".into()),
            share,
            vs_ideal,
            saving,
            pct(s.huge_footprint_share),
        ]);
    }
    o.push_str(&t.render());
    let busy = r
        .samples
        .iter()
        .filter(|s| s.quiet.is_some_and(|q| q.others_busy_share > 0.10))
        .count();
    o.push_str(
        "spread (MAD): median absolute deviation from the median, relative to it; share of \
         ideal: (speedup - 1) / (ideal speedup - 1), median over rounds; time / ideal: median \
         over rounds; saving share: (base - arm) / (base - ideal) from the medians of times \
         over the ideal's, which no round where the ideal gained little can swing, its 95 % \
         interval a bootstrap over whole rounds\n",
    );
    if busy > 0 {
        let _ = writeln!(
            o,
            "warning: {busy} of {} runs started while other processes used over 10 % of the CPUs",
            r.samples.len()
        );
    }
    let daemon: Vec<_> = r
        .samples
        .iter()
        .filter(|s| s.daemon_cpu_ns.is_some())
        .collect();
    if !daemon.is_empty() {
        let cpu = r.daemon_cpu_share.map(pct).unwrap_or_default();
        let steady = r
            .daemon_steady_cpu_share
            .map(pct)
            .unwrap_or_else(|| "-".into());
        let mut line = match (r.reach_budget_ms, r.settled_ms) {
            (None, Some(settled)) => format!(
                "daemon: stayed below its budget, last promotion after {:.1} s (median), CPU {cpu} \
                 of one core over the run, {steady} after its last promotion (medians)",
                settled / 1e3
            ),
            _ => format!(
                "daemon: budget reached after {} (median), CPU {cpu} of one core over the run, \
                 {steady} once the budget was reached (medians)",
                r.reach_budget_ms
                    .map(|m| format!("{:.1} s", m / 1e3))
                    .unwrap_or_else(|| "never".into())
            ),
        };
        let mut swaps: Vec<u32> = daemon
            .iter()
            .filter_map(|s| s.demotions.and_then(|(_, sw)| sw))
            .collect();
        swaps.sort_unstable();
        if let (Some(lo), Some(hi)) = (swaps.first(), swaps.last()) {
            let n = swaps.len();
            let median = f64::from(swaps[(n - 1) / 2] + swaps[n / 2]) / 2.0;
            let range = if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}–{hi}")
            };
            let _ = write!(
                line,
                "; {range} swaps a run (a huge chunk split to give its place to a hotter one; \
                 median {median})"
            );
        }
        let _ = writeln!(o, "{line}");
        if let Some(mode) = &r.compact {
            let _ = writeln!(
                o,
                "compaction (--compact {mode}): {} a run, {} of one core; 90 % of the budget \
                 after {} (medians)",
                r.daemon_compactions
                    .map(|n| format!("{n:.0}"))
                    .unwrap_or_else(|| "-".into()),
                r.daemon_compaction_cpu_share
                    .map(pct)
                    .unwrap_or_else(|| "-".into()),
                r.reach_90_ms
                    .map(|m| format!("{:.1} s", m / 1e3))
                    .unwrap_or_else(|| "never".into())
            );
        }
    }
    if let Some(line) = hot_chunks_line(r) {
        let _ = writeln!(o, "{line}");
    }
    if let Some(line) = tail_line(r) {
        let _ = writeln!(o, "{line}");
    }
    let mut declined: Vec<u32> = r.samples.iter().filter_map(|s| s.not_worth).collect();
    declined.sort_unstable();
    if let (Some(lo), Some(hi)) = (declined.first(), declined.last()) {
        let range = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        };
        let _ = writeln!(
            o,
            "daemon: {range} candidate(s) a run passed over, their walks past what the TLB \
             holds not worth a collapse (counted at every look)"
        );
    }
    let mut lat: Vec<u64> = r
        .samples
        .iter()
        .flat_map(|s| s.collapse_ns.iter().copied())
        .collect();
    lat.sort_unstable();
    if !lat.is_empty() {
        let _ = writeln!(
            o,
            "MADV_COLLAPSE of one 2 MiB chunk: p50 {}, p99 {} over {} calls",
            ns(lat[lat.len() / 2] as f64),
            ns(lat[(lat.len() * 99 / 100).min(lat.len() - 1)] as f64),
            lat.len()
        );
    }
    o
}

/// The plan and the daemon over the second half of the reads alone, past the daemon's ramp:
/// what the daemon costs once its chunks are huge, apart from how long it took to make them
/// so. `None` for results without the halves' times.
fn tail_line(r: &PromoteBenchWorkload) -> Option<String> {
    use hugewise_results::promote::Arm;
    let parts: Vec<String> = [Arm::Plan, Arm::Daemon]
        .into_iter()
        .filter_map(|arm| {
            let s = r.summary.iter().find(|s| s.arm == arm)?;
            let vs = s.tail_time_vs_ideal?;
            let ci = crate::fmt::interval(s.tail_time_vs_ideal_ci95, s.time.n, 2);
            let saving = s
                .tail_share_of_ideal_saving
                .map(|x| format!(", saving share {}", pct(x)))
                .unwrap_or_default();
            Some(format!("{} {vs:.2} {ci}{saving}", arm.name()))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "second half of the reads alone (the daemon's ramp over), time / ideal: {}",
            parts.join("; ")
        )
    })
}

/// Where each arm's huge pages were when the clock stopped: how many of the plan's chunks (the
/// hottest) were huge, as a range over rounds; `None` for results without the count.
fn hot_chunks_line(r: &PromoteBenchWorkload) -> Option<String> {
    use hugewise_results::promote::Arm;
    let parts: Vec<String> = [Arm::Ideal, Arm::Plan, Arm::Daemon]
        .into_iter()
        .filter_map(|arm| {
            let mut n: Vec<u32> = r
                .samples
                .iter()
                .filter(|s| s.arm == arm)
                .filter_map(|s| s.hot_chunks_huge)
                .collect();
            n.sort_unstable();
            let (lo, hi) = (n.first()?, n.last()?);
            Some(if lo == hi {
                format!("{} {lo}", arm.name())
            } else {
                format!("{} {lo}–{hi}", arm.name())
            })
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "hot chunks huge when the clock stopped (of the plan's {}, the profile's hottest): {}",
            r.plan_chunks,
            parts.join(", ")
        )
    })
}

/// One round's arms side by side: the base's time, every other arm's speedup over it and, for
/// the plan and the daemon, their share of the ideal's gain; then what the daemon did.
fn rounds_markdown(r: &PromoteBenchWorkload) -> String {
    use hugewise_results::promote::Arm;
    let mut o = format!(
        "| round (order) | base ({}) | ideal | plan | daemon | daemon: promotions, splits (swaps), budget reached |\n|---|---:|---:|---:|---:|---:|\n",
        r.unit
    );
    let mut rounds: Vec<u32> = r.samples.iter().map(|s| s.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    for round in rounds {
        let get = |a: Arm| r.samples.iter().find(|s| s.round == round && s.arm == a);
        let base = get(Arm::Base).map(|s| s.time);
        let ideal = get(Arm::Ideal).and_then(|s| Some(base? / s.time));
        let arm = |a: Arm| {
            let Some(x) = get(a).and_then(|s| Some(base? / s.time)) else {
                return "-".to_string();
            };
            match (a, ideal) {
                (Arm::Plan | Arm::Daemon, Some(i)) if i > 1.0 => {
                    format!("{x:.2}x ({})", pct((x - 1.0) / (i - 1.0)))
                }
                _ => format!("{x:.2}x"),
            }
        };
        let daemon = get(Arm::Daemon).map_or_else(
            || "-".to_string(),
            |s| {
                let p = s.promotions.map_or("-".into(), |(ok, _)| ok.to_string());
                let d = match s.demotions {
                    Some((n, Some(sw))) => format!("{n} ({sw})"),
                    Some((n, None)) => n.to_string(),
                    None => "-".into(),
                };
                let reach = match (s.reach_budget_ms, s.settled_ms) {
                    (Some(m), _) => format!("{:.1} s", m / 1e3),
                    (None, Some(m)) => format!("never (last promotion {:.1} s)", m / 1e3),
                    (None, None) => "never".into(),
                };
                format!("{p}, {d}, {reach}")
            },
        );
        let _ = writeln!(
            o,
            "| {round} ({}) | {} | {} | {} | {} | {daemon} |",
            order_label(r, round),
            base.map_or("-".into(), |b| format!("{b:.2}")),
            ideal.map_or("-".into(), |x| format!("{x:.2}x")),
            arm(Arm::Plan),
            arm(Arm::Daemon),
        );
    }
    o
}

/// The arms' order in `round` as run, by letter (A base, B ideal, C plan, D daemon).
fn order_label(r: &PromoteBenchWorkload, round: u32) -> String {
    use hugewise_results::promote::Arm;
    r.samples
        .iter()
        .filter(|s| s.round == round)
        .map(|s| match s.arm {
            Arm::Base => "A",
            Arm::Ideal => "B",
            Arm::Plan => "C",
            Arm::Daemon => "D",
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Markdown tables of a `bench promote` result, for BENCHMARKS.md: one per workload.
pub fn bench_markdown(r: &PromoteBenchReport) -> String {
    let mut o = String::new();
    for (i, w) in r.workloads.iter().enumerate() {
        if r.workloads.len() > 1 {
            let _ = writeln!(o, "{}**{}**\n", if i > 0 { "\n" } else { "" }, label(w));
        }
        if let Some(sh) = &w.shaped {
            o.push_str(&shaped_machine(sh));
            o.push('\n');
        }
        o.push_str(&bench_markdown_workload(w));
    }
    o
}

fn bench_markdown_workload(r: &PromoteBenchWorkload) -> String {
    let mut o = format!(
        "| arm | {} | min | max | speedup vs base (median of per-round ratios) [95% CI] | share of ideal | time / ideal | share of the ideal's saving | huge share |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        unit_head(r)
    );
    for s in &r.summary {
        let n = &s.time;
        let [share, vs_ideal, saving] = against_ideal(s);
        let _ = writeln!(
            o,
            "| {} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} |",
            s.arm.name(),
            n.median,
            n.min,
            n.max,
            s.speedup_vs_base
                .map(|x| ratio_ci(x, s.speedup_vs_base_ci95, n.n, 2))
                .unwrap_or_else(|| "baseline".into()),
            share,
            vs_ideal,
            saving,
            pct(s.huge_footprint_share)
        );
    }
    o.push('\n');
    o.push_str(&rounds_markdown(r));
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_results::promote::{Arm, PromoteBenchSample};

    fn sample(round: u32, arm: Arm, time: f64) -> PromoteBenchSample {
        PromoteBenchSample::timed(round, arm, time)
    }

    /// An arm's summary over `n` rounds with every figure empty, for a test to fill.
    fn summary_of(arm: Arm, n: usize) -> hugewise_results::promote::PromoteBenchArm {
        let time = hugewise_results::stats::Summary {
            n,
            median: 1.0,
            min: 1.0,
            max: 1.0,
            mean: 1.0,
            mad_rel: 0.0,
        };
        hugewise_results::promote::PromoteBenchArm::timed(arm, time)
    }

    #[test]
    fn each_round_shows_its_own_ratios_and_what_the_daemon_did() {
        let mut daemon = sample(0, Arm::Daemon, 90.0);
        daemon.promotions = Some((210, 0));
        daemon.demotions = Some((160, Some(29)));
        daemon.reach_budget_ms = Some(9_100.0);
        let mut late = sample(1, Arm::Daemon, 100.0);
        late.demotions = Some((3, None));
        late.settled_ms = Some(1_250.0);
        let w = PromoteBenchWorkload {
            samples: vec![
                sample(0, Arm::Base, 100.0),
                sample(0, Arm::Ideal, 80.0),
                sample(0, Arm::Plan, 84.0),
                daemon,
                // Round 1: the ideal lost, so no share of it is shown.
                late,
                sample(1, Arm::Plan, 95.0),
                sample(1, Arm::Ideal, 101.0),
                sample(1, Arm::Base, 100.0),
            ],
            ..Default::default()
        };
        let t = rounds_markdown(&w);
        let rows: Vec<&str> = t.lines().skip(2).collect();
        // 100 / 80 = 1.25x; the plan 100 / 84 = 1.19x, (0.190 / 0.25) = 76 % of the gain;
        // the daemon 1.11x, 44 %.
        assert_eq!(
            rows[0],
            "| 0 (A B C D) | 100.00 | 1.25x | 1.19x (76.2%) | 1.11x (44.4%) | 210, 160 (29), 9.1 s |"
        );
        assert_eq!(
            rows[1],
            "| 1 (D C B A) | 100.00 | 0.99x | 1.05x | 1.00x | -, 3, never (last promotion 1.2 s) |"
        );
        assert_eq!(rows.len(), 2);
    }

    #[test]
    fn speedups_show_their_interval_and_the_header_why_the_rounds_stopped() {
        use hugewise_results::promote::PromoteBenchArm;
        use hugewise_results::stats::{MedianInterval, Stopped};
        let arm = |arm, speedup_vs_base, speedup_vs_base_ci95| PromoteBenchArm {
            speedup_vs_base,
            speedup_vs_base_ci95,
            ..summary_of(arm, 6)
        };
        let ci = MedianInterval {
            lo: 1.18,
            hi: 1.44,
            coverage: 0.96875,
        };
        let mut w = PromoteBenchWorkload {
            stopped: Some(Stopped::Narrow),
            samples: (0..6).map(|r| sample(r, Arm::Base, 100.0)).collect(),
            summary: vec![
                arm(Arm::Base, None, None),
                arm(Arm::Ideal, Some(1.31), Some(ci)),
                arm(Arm::Plan, Some(1.2), None),
            ],
            ..Default::default()
        };
        let text = bench_workload(&w);
        assert!(text.contains("1.31x [1.18–1.44]"), "{text}");
        // Six rounds but no interval kept: a file from before intervals.
        assert!(text.contains("1.20x [-]"), "{text}");
        assert!(
            text.contains("6 rounds, until the intervals were as narrow as --until asked"),
            "{text}"
        );
        w.stopped = Some(Stopped::Rounds);
        assert!(!bench_workload(&w).contains("until"));
    }

    #[test]
    fn a_session_shows_each_compaction_and_why_others_were_declined() {
        use hugewise_results::promote::{FreeBlocks, Totals};
        let c = Compaction {
            t_ms: 1500.0,
            why: "3 collapses refused".into(),
            aim_bytes: 6 << 20,
            lever: "node".into(),
            nodes: vec![0],
            wall_ns: 80_000_000,
            cpu_ns: 40_000_000,
            migrated_bytes: Some(64 << 20),
            before: FreeBlocks {
                free_bytes: 1 << 30,
                free_2m_blocks: 2,
                unusable_index: 0.5,
            },
            after: FreeBlocks {
                free_bytes: 1 << 30,
                free_2m_blocks: 300,
                unusable_index: 0.125,
            },
            error: None,
        };
        let declined = |why: &str| Interval {
            compaction_declined: Some(why.into()),
            ..Interval::default()
        };
        let r = PromoteReport {
            mode: "daemon".into(),
            policy: "pcc".into(),
            budget: Some("4%".into()),
            interval_ms: Some(1000),
            compact: Some("auto".into()),
            fault_waits: Some(0.0002),
            walk_ns: Some(45.0),
            nice: Some(19),
            pids: vec![7],
            sampled_pids: vec![],
            command: None,
            command_exit: None,
            gone: vec![],
            cancelled: false,
            wall_ns: 4_000_000_000,
            totals: Totals {
                promoted: 0,
                promote_failed: 3,
                demoted: 0,
                released: 0,
                swaps: None,
                huge_bytes_final: None,
                collapse_p50_ns: None,
                collapse_p99_ns: None,
                daemon_cpu_ns: None,
                daemon_core_share: None,
                reach_budget_ms: None,
                paced: None,
                held_back: Some(12),
                compactions: Some(1),
                compaction_cpu_ns: Some(40_000_000),
                compaction_core_share: Some(0.01),
            },
            actions: vec![],
            intervals: vec![
                declined("over its share of a core: 30 ms"),
                declined("over its share of a core: 31 ms"),
                Interval {
                    compaction: Some(c),
                    ..Interval::default()
                },
                declined("free blocks suffice: 4 free"),
            ],
        };
        let text = session(&r);
        assert_eq!(
            text.lines().nth(1),
            Some(
                "compaction auto, its collapses holding up at most 0.02% of the faults, a page \
                 walk taken to cost 45 ns, its thread at nice 19"
            ),
            "{text}"
        );
        assert!(text.contains("compactions (--compact auto)"), "{text}");
        assert!(text.contains("1, CPU 40.00 ms (1.0% of a core)"), "{text}");
        assert!(text.contains("compact node 0  aim 6 MiB"), "{text}");
        assert!(text.contains("2 MiB blocks free 2 -> 300"), "{text}");
        assert!(text.contains("unusable index 0.500 -> 0.125"), "{text}");
        assert!(text.contains("why: 3 collapses refused"), "{text}");
        assert!(
            text.lines().any(
                |l| l.starts_with("collapses held back after refusals in a row")
                    && l.trim_end().ends_with(" 12")
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "not compacted (2 intervals, the first said) over its share of a core: 30 ms"
            ),
            "{text}"
        );
        assert!(text.contains("not compacted (1 interval, the first said) free blocks"));
        assert!(interval_line(&r.intervals[2]).contains("compacted"));
    }

    #[test]
    fn the_summary_gives_the_daemons_swaps_a_run() {
        let daemon = |round, swaps| {
            let mut s = sample(round, Arm::Daemon, 60.0);
            s.daemon_cpu_ns = Some(1);
            s.demotions = Some((200, Some(swaps)));
            s
        };
        let w = PromoteBenchWorkload {
            samples: vec![daemon(0, 81), daemon(1, 18), daemon(2, 62), daemon(3, 24)],
            ..Default::default()
        };
        let text = bench_workload(&w);
        // 18, 24, 62, 81: the median halfway between 24 and 62.
        assert!(text.contains("; 18–81 swaps a run"), "{text}");
        assert_eq!(text.matches("daemon:").count(), 1, "one line: {text}");
        assert!(text.contains("median 43)"), "{text}");
    }

    #[test]
    fn the_summary_says_how_many_hot_chunks_each_arm_had_huge() {
        let hot = |round, arm, n| {
            let mut s = sample(round, arm, 60.0);
            s.hot_chunks_huge = Some(n);
            s
        };
        let mut w = PromoteBenchWorkload {
            plan_chunks: 163,
            samples: vec![
                hot(0, Arm::Ideal, 0),
                hot(1, Arm::Ideal, 0),
                hot(0, Arm::Plan, 163),
                hot(1, Arm::Plan, 163),
                hot(0, Arm::Daemon, 150),
                hot(1, Arm::Daemon, 162),
            ],
            ..Default::default()
        };
        let text = bench_workload(&w);
        assert!(
            text.contains(
                "hot chunks huge when the clock stopped (of the plan's 163, the profile's \
                 hottest): ideal 0, plan 163, daemon 150–162"
            ),
            "{text}"
        );
        for s in &mut w.samples {
            s.hot_chunks_huge = None;
        }
        assert!(!bench_workload(&w).contains("hot chunks"));
    }

    #[test]
    fn the_second_half_of_the_reads_is_set_against_the_ideals_apart() {
        let timed = |round, arm, tail| {
            let mut s = sample(round, arm, tail);
            s.tail_time = Some(tail);
            s
        };
        let mut w = PromoteBenchWorkload {
            samples: vec![
                timed(0, Arm::Base, 200.0),
                timed(0, Arm::Ideal, 100.0),
                timed(0, Arm::Plan, 100.0),
                timed(0, Arm::Daemon, 125.0),
                timed(1, Arm::Base, 180.0),
                timed(1, Arm::Ideal, 90.0),
                timed(1, Arm::Plan, 99.0),
                timed(1, Arm::Daemon, 119.0),
            ],
            summary: [Arm::Base, Arm::Ideal, Arm::Plan, Arm::Daemon]
                .into_iter()
                .map(|a| summary_of(a, 2))
                .collect(),
            ..Default::default()
        };
        w.fill_vs_ideal();
        // Over the ideal, by hand: base 2.0 and 2.0; plan 1.0 and 1.1 (median 1.05); daemon
        // 1.25 and 1.3222 (median 1.2861). Saving shares: (2 - 1.05) / (2 - 1) = 95 %,
        // (2 - 1.2861) / 1 = 71.4 %.
        let text = bench_workload(&w);
        assert!(
            text.contains(
                "second half of the reads alone (the daemon's ramp over), time / ideal: plan \
                 1.05 [n<6], saving share 95.0%; daemon 1.29 [n<6], saving share 71.4%"
            ),
            "{text}"
        );
        for s in &mut w.samples {
            s.tail_time = None;
        }
        for a in &mut w.summary {
            a.tail_time_vs_ideal = None;
        }
        w.fill_vs_ideal();
        assert!(!bench_workload(&w).contains("second half"));
    }

    #[test]
    fn the_share_of_the_ideals_saving_has_a_bootstrap_interval_over_whole_rounds() {
        // Six rounds: the base twice the ideal's time in each, the plan 1.0, 1.1 or 1.2 times
        // it, two rounds each. The share is (2 - 1.1) / (2 - 1) = 90 %. A resample's median
        // of the plan's times is 1.2 when four or more of its six draws are the 1.2 rounds
        // (each a third): P = (15 * 4 + 6 * 2 + 1) / 729 = 10 %, past the 2.5 % tail, so the
        // interval's low end is (2 - 1.2) / 1 = 80 % and by symmetry its high end 100 %.
        let plan = [1.0, 1.0, 1.1, 1.1, 1.2, 1.2];
        let mut samples = Vec::new();
        for (round, p) in (0..).zip(plan) {
            samples.push(sample(round, Arm::Base, 200.0));
            samples.push(sample(round, Arm::Ideal, 100.0));
            samples.push(sample(round, Arm::Plan, 100.0 * p));
        }
        let mut w = PromoteBenchWorkload {
            samples,
            summary: [Arm::Base, Arm::Ideal, Arm::Plan]
                .into_iter()
                .map(|a| summary_of(a, 6))
                .collect(),
            ..Default::default()
        };
        w.fill_headline();
        let ci = w.plan_share_of_ideal_saving_ci95.expect("six rounds");
        assert!((w.plan_share_of_ideal_saving.expect("share") - 0.9).abs() < 1e-9);
        assert!(
            (ci.lo - 0.8).abs() < 1e-9 && (ci.hi - 1.0).abs() < 1e-9,
            "{ci:?}"
        );
        let text = bench_workload(&w);
        assert!(text.contains("90.0% [80.0–100.0%]"), "{text}");
        // Five rounds are too few for it.
        w.samples.retain(|s| s.round < 5);
        for a in &mut w.summary {
            a.share_of_ideal_saving_ci95 = None;
            a.time_vs_ideal = None;
        }
        w.plan_share_of_ideal_saving_ci95 = None;
        w.fill_headline();
        assert_eq!(w.plan_share_of_ideal_saving_ci95, None);
    }

    #[test]
    fn a_daemon_below_its_budget_is_said_to_have_settled() {
        let daemon = |round, settled: Option<f64>| {
            let mut s = sample(round, Arm::Daemon, 60.0);
            s.daemon_cpu_ns = Some(40);
            s.wall_ns = 1_000;
            s.settled_ms = settled;
            s.daemon_steady_cpu_ns = Some(14);
            s.daemon_steady_wall_ns = Some(1_000);
            s
        };
        let mut w = PromoteBenchWorkload {
            samples: vec![
                daemon(0, Some(1_300.0)),
                daemon(1, Some(1_100.0)),
                daemon(2, None),
            ],
            ..Default::default()
        };
        w.fill_headline();
        // Never at the budget; settled at 1.1 s, 1.3 s and never: the median is 1.3 s.
        assert_eq!((w.reach_budget_ms, w.settled_ms), (None, Some(1_300.0)));
        let text = bench_workload(&w);
        assert!(
            text.contains("stayed below its budget, last promotion after 1.3 s (median), CPU 4.0%"),
            "{text}"
        );
        assert!(text.contains("1.4% after its last promotion"), "{text}");
    }

    fn action(kind: ActionKind, outcome: &str, huge_after: Option<u64>) -> Action {
        Action {
            t_ms: 0.0,
            pid: 1,
            start: 0,
            len_bytes: 2 << 20,
            kind,
            outcome: outcome.into(),
            latency_ns: 0,
            huge_bytes_after: huge_after,
            tried_again: false,
        }
    }

    #[test]
    fn failed_actions_are_counted_by_reason_with_what_it_means() {
        let mut actions = vec![action(ActionKind::Promote, "ok", Some(2 << 20))];
        actions.extend((0..11).map(|_| action(ActionKind::Promote, "EINVAL", None)));
        actions.push(action(ActionKind::Promote, "ok", Some(0)));
        let f = failures(&actions);
        assert_eq!(f.lines().count(), 2, "{f}");
        assert!(
            f.contains("11 promotions failed: EINVAL: the memory is marked MADV_NOHUGEPAGE"),
            "{f}"
        );
        assert!(
            f.contains("1 promotion failed: ok: the kernel said yes, but"),
            "{f}"
        );
        assert!(failures(&actions[..1]).is_empty());
        // An attempt tried again is not a failure, and its line says it was tried again.
        let retried = Action {
            tried_again: true,
            ..action(ActionKind::Promote, "EAGAIN", Some(0))
        };
        assert!(failures(std::slice::from_ref(&retried)).is_empty());
        assert!(action_line(&retried).ends_with("(tried again)"));
    }

    #[test]
    fn a_shaped_entry_says_what_was_shaped_and_sets_it_against_the_unshaped_one() {
        let memory = hugewise_results::env::MemoryState {
            mem_free_bytes: 12 << 30,
            mem_available_bytes: Some(12 << 30),
            buddy_free_bytes: 12 << 30,
            free_2m_blocks: 3072,
            unusable_bytes: 6 << 30,
            unusable_share: 0.5,
            pcp_free_bytes: None,
            mlocked_bytes: None,
            anon_huge_bytes: None,
            hugetlb_bytes: None,
            swap_total_bytes: None,
        };
        let round = |r: u32, secs: f64| hugewise_results::promote::ShapedRound {
            round: r,
            seconds: secs,
            fragment_reached: Some(r == 0),
            memory: memory.clone(),
            warnings: vec!["fragmentation is 45.0% where 50% was asked".into()],
            unshaped_unusable_share: Some(0.03),
        };
        let shaping = Shaping {
            pressure_leave_bytes: Some(12 << 30),
            fragment: Some(0.5),
            listed_bytes: Some(4 << 30),
            rounds: vec![round(0, 13.0), round(1, 32.0)],
            daemon_speedup_vs_unshaped: Some(1.22),
            daemon_gain_vs_unshaped: Some(0.5),
            ideal_speedup_vs_unshaped: Some(0.71),
            base_speedup_vs_unshaped: Some(0.87),
            daemon_time_speedup_vs_unshaped: Some(1.01),
            ..Shaping::default()
        };
        let plain = PromoteBenchWorkload {
            workload: "hot:3.9%:99.9%:lines:1:chase".into(),
            ..Default::default()
        };
        let shaped = PromoteBenchWorkload {
            shaped: Some(shaping),
            ..plain.clone()
        };
        let text = bench(&PromoteBenchReport {
            workloads: vec![plain, shaped],
            stopped: Some(hugewise_results::stats::Stopped::Interrupted),
        });
        for want in [
            "On a shaped machine (pressure leaving 12.0 GiB, 50 % of free memory fragmented)",
            "shaping took 13 s–32 s a round and left 12.0 GiB available, 12.0 GiB free in the \
             buddy allocator's lists, 50.0% of it in blocks under 2 MiB (unshaped: 3.0% in \
             blocks under 2 MiB); before the first round 4 GiB of free memory",
            "the fragmentation level reached in 1 of 2 rounds.",
            "warning (shaping): fragmentation is 45.0% where 50% was asked\n",
            "daemon's speedup 1.22x [n<6] (of its gain kept: 50.0% [n<6]), ideal's (THP at \
             fault) 0.71x [n<6]; the 4 KiB arm ran 0.87x [n<6] as fast shaped, the daemon \
             1.01x [n<6]",
            "hot:3.9%:99.9%:lines:1:chase (shaped)",
            "stopped by a signal (Ctrl-C)",
        ] {
            assert!(text.contains(want), "{want}\n---\n{text}");
        }
        // The warning shows once, though both rounds gave it.
        assert_eq!(text.matches("warning (shaping)").count(), 1);
    }
}
