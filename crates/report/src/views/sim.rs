//! Text views of simulation results and captures: utility curves, reuse distance, a capture's
//! summary.

use std::fmt::Write;

use hugewise_results::capture::{CaptureReport, LackeyImport};
use hugewise_results::plan::{PlanAction, PromotionPlans};
use hugewise_results::sim::{Curves, Granularity};

use crate::fmt::{bytes, ns, pct};
use crate::table::Table;

/// The utility curves as one table, `none` and `all` first.
pub fn curves(c: &Curves) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "trace   {}: {} accesses, {} streams, footprint {}{}",
        c.trace.display(),
        c.accesses,
        c.streams,
        bytes(c.footprint_bytes),
        if c.warmup_accesses > 0 {
            format!(
                "; counted after a warm-up of {} (first touch), simulated but not counted",
                c.warmup_accesses
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        o,
        "tlb     {}; clock {:.0} accesses/s ({}), policy intervals / {:.3}",
        c.tlb.name, c.timing.accesses_per_s, c.timing_source, c.timing.time_scale
    );
    let _ = writeln!(
        o,
        "cost    {} (est. speedup is an estimate{})\n",
        if c.cost_model.calibrated {
            "calibrated on measured runs"
        } else {
            "not calibrated"
        },
        c.cost_model
            .note
            .as_ref()
            .map(|n| format!(": {n}"))
            .unwrap_or_default()
    );
    let mut t = Table::new([
        "policy",
        "budget",
        "walks/kacc",
        "L1 miss",
        "L2 miss",
        "promoted",
        "demoted",
        "huge",
        "est. speedup",
    ]);
    for p in &c.points {
        t.row([
            p.policy.clone(),
            p.budget_share.map(pct).unwrap_or_else(|| "-".into()),
            format!("{:.2}", p.walks_per_kacc),
            pct(p.l1_miss_rate),
            p.l2_miss_rate.map(pct).unwrap_or_else(|| "-".into()),
            p.promotions.to_string(),
            p.demotions.to_string(),
            pct(p.huge_share),
            format!("{:.3}x", p.est_speedup),
        ]);
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "\n{} configurations simulated in {} (TLB figures are simulated, not measured)",
        c.configurations,
        ns(c.sim_wall_s * 1e9)
    );
    if let Some(t) = walks_by_region(c) {
        o.push('\n');
        o.push_str(&t);
    }
    if c.points.iter().any(|p| p.phys.is_some()) {
        o.push('\n');
        o.push_str(&physical(c));
    }
    if let Some(r) = &c.reuse {
        o.push('\n');
        o.push_str(&reuse(r));
    }
    o
}

/// Where the walks are: each region's share of the 4 KiB-only walks, and how many of its
/// walks each policy removes at the budget nearest 4 %.
fn walks_by_region(c: &Curves) -> Option<String> {
    let none = c.points.iter().find(|p| p.policy == "none")?;
    if none.walks_by_region.len() != c.regions.len() + 1 || none.walks == 0 {
        return None;
    }
    let mut picked: Vec<&hugewise_results::sim::Point> = Vec::new();
    // The budget nearest 4 % (the seeds' headline share) stands for each policy.
    let off =
        |p: &hugewise_results::sim::Point| p.budget_share.map_or(f64::MAX, |b| (b - 0.04).abs());
    for p in c
        .points
        .iter()
        .filter(|p| p.budget_share.is_some_and(|b| b > 0.0))
    {
        match picked.iter_mut().find(|q| q.policy == p.policy) {
            Some(q) if off(q) > off(p) => *q = p,
            Some(_) => {}
            None => picked.push(p),
        }
    }
    picked.retain(|p| p.walks_by_region.len() == none.walks_by_region.len());
    let mut head = vec!["region".to_string(), "bytes".into(), "walks (4 KiB)".into()];
    head.extend(picked.iter().map(|p| {
        format!(
            "{} {} removes",
            p.policy,
            p.budget_share.map(pct).unwrap_or_default()
        )
    }));
    let mut t = Table::new(head);
    let names = c
        .regions
        .iter()
        .map(|r| (r.name.clone(), bytes(r.bytes)))
        .chain(std::iter::once(("(outside)".to_string(), "-".to_string())));
    for (i, (name, size)) in names.enumerate() {
        let base = none.walks_by_region[i];
        if base == 0 {
            continue;
        }
        let mut row = vec![name, size, pct(base as f64 / none.walks as f64)];
        row.extend(
            picked
                .iter()
                .map(|p| pct(1.0 - p.walks_by_region[i] as f64 / base as f64)),
        );
        t.row(row);
    }
    Some(format!(
        "walks by region (simulated; removes: the share of that region's 4 KiB walks gone)\n{}",
        t.render()
    ))
}

/// What each configuration's simulated physical memory went through (`sim --phys`).
fn physical(c: &Curves) -> String {
    let mut o = String::new();
    if let Some(r) = c.points.iter().find_map(|p| p.phys.as_ref()) {
        let _ = writeln!(
            o,
            "physical memory (simulated) {}: {} blocks of 2 MiB, {} with an unmovable page, {} free at the start",
            r.label, r.blocks, r.pinned_blocks, r.free_blocks_start
        );
    }
    let mut t = Table::new([
        "policy",
        "budget",
        "placed",
        "refused",
        "compacted",
        "pages moved",
        "per block",
        "free at end",
        "latency p50",
        "p99.9",
    ]);
    for p in &c.points {
        let Some(r) = &p.phys else {
            continue;
        };
        let lat = |i: usize| {
            r.latency_us
                .map(|l| ns(l[i] * 1e3))
                .unwrap_or_else(|| "-".into())
        };
        t.row([
            p.policy.clone(),
            p.budget_share.map(pct).unwrap_or_else(|| "-".into()),
            r.placed.to_string(),
            r.refused_no_block.to_string(),
            r.blocks_compacted.to_string(),
            r.pages_moved.to_string(),
            r.pages_per_block
                .map(|x| format!("{x:.0}"))
                .unwrap_or_else(|| "-".into()),
            r.free_blocks_end.to_string(),
            lat(0),
            lat(2),
        ]);
    }
    o.push_str(&t.render());
    o
}

/// Reuse distance at each page size.
pub fn reuse(rs: &[Granularity]) -> String {
    let mut o = String::new();
    for g in rs {
        let _ = writeln!(
            o,
            "{} pages: {} accesses, {} distinct pages, {} first touches",
            bytes(g.page_bytes),
            g.accesses,
            g.pages,
            g.cold
        );
        let mut t = Table::new(["distance", "reuses"]);
        for b in &g.histogram {
            let range = if b.from == 0 {
                "0".to_string()
            } else if b.below == b.from + 1 {
                b.from.to_string()
            } else {
                format!("{}..{}", b.from, b.below - 1)
            };
            t.row([range, b.reuses.to_string()]);
        }
        o.push_str(&t.render());
        let c = &g.classes;
        let mut t = Table::new([
            "class",
            "pages",
            "share",
            "accesses",
            "reuses >= 1024",
            "share of those",
        ]);
        for (name, x) in [
            ("tlb-friendly", &c.tlb_friendly),
            ("hubs", &c.hubs),
            ("low-reuse", &c.low_reuse),
        ] {
            t.row([
                name.to_string(),
                x.pages.to_string(),
                pct(x.share_of_pages),
                x.accesses.to_string(),
                x.long_reuses.to_string(),
                pct(x.share_of_long_reuses),
            ]);
        }
        let _ = writeln!(o);
        o.push_str(&t.render());
        let _ = writeln!(
            o,
            "(a HUB has at least {:.1} reuses at distance >= 1024, the mean of TLB-sensitive pages)\n",
            c.hub_min_long_reuses
        );
    }
    o
}

/// `hugewise trace lackey`.
pub fn lackey(r: &LackeyImport) -> String {
    format!(
        "{}: {} accesses from {} lines ({} instruction fetches skipped), {} bytes\n",
        r.trace.display(),
        r.accesses,
        r.lines,
        r.instructions_skipped,
        r.trace_bytes
    )
}

/// What a capture wrote.
pub fn capture(r: &CaptureReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "traced  {} on {}", r.kernel.name(), r.graph_spec);
    let _ = writeln!(
        o,
        "trace   {}: {} accesses ({} first touches), {} = {:.2} B/access",
        r.trace.display(),
        r.accesses,
        r.prologue_accesses,
        bytes(r.trace_bytes),
        r.bytes_per_access
    );
    if r.threads > 1 {
        let per: Vec<String> = r.stream_accesses.iter().map(u64::to_string).collect();
        let _ = writeln!(
            o,
            "streams {} threads, accesses per stream: {}",
            r.threads,
            per.join(", ")
        );
    }
    let _ = writeln!(
        o,
        "speed   captured at {:.1} M accesses/s; untraced {}",
        r.capture_accesses_per_s / 1e6,
        match (&r.untraced_ns, r.accesses_per_s) {
            (Some(s), Some(a)) => format!("{} = {:.1} M accesses/s", ns(s.median), a / 1e6),
            _ => "not measured".into(),
        }
    );
    if let Some(c) = &r.calibration {
        let _ = writeln!(
            o,
            "calibration  untraced on 4 KiB pages {:.3} s, on THP {:.3} s ({:.0} % of the \
             memory in huge pages), medians of {}",
            c.base_s,
            c.huge_s,
            c.huge_share * 100.0,
            c.runs
        );
    }
    let mut t = Table::new(["array", "base", "size"]);
    for a in &r.arrays {
        t.row([a.name.clone(), format!("{:#x}", a.base), bytes(a.bytes)]);
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "verified {}",
        match r.verified {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "not checked",
        }
    );
    o
}

/// Promotion plans: one line per configuration.
pub fn plans(p: &PromotionPlans) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "plans   {}: {} configurations, footprint {}, clock {:.0} accesses/s\n",
        p.trace.display(),
        p.plans.len(),
        bytes(p.footprint_bytes),
        p.accesses_per_s
    );
    let mut t = Table::new([
        "policy", "budget", "promote", "demote", "first at", "last at",
    ]);
    for plan in &p.plans {
        let count = |a: PlanAction| plan.entries.iter().filter(|e| e.action == a).count();
        let at = |e: Option<&hugewise_results::plan::PlanEntry>| {
            e.map(|e| format!("{:.3} s", e.at_s))
                .unwrap_or_else(|| "-".into())
        };
        t.row([
            plan.policy_label.clone(),
            plan.budget_share.map(pct).unwrap_or_else(|| "-".into()),
            count(PlanAction::Promote).to_string(),
            count(PlanAction::Demote).to_string(),
            at(plan.entries.first()),
            at(plan.entries.last()),
        ]);
    }
    o.push_str(&t.render());
    o
}
