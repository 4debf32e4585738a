//! Terminal views of the env crate's reports: what the machine looks like, what shaping did,
//! and what restoring put back.

use std::fmt::Write;

use hugewise_results::env::{
    ActionReport, EnvShow, FinishReport, KnobSet, MemoryState, RestoreReport, RunOutcome,
    SetReport, ShapeReport, ShapedRun, SwapReport, BLOCK_BYTES,
};
use hugewise_results::machine::Selector;

use crate::fmt::{bytes, bytes_compact, pct, stats_flush};

/// One line: free memory, free 2 MiB blocks, fragmentation level.
pub fn memory_line(m: &MemoryState) -> String {
    format!(
        "{} available, {} free in buddy lists, {} free 2 MiB blocks ({}), {} unusable for 2 MiB pages, {} mlocked",
        m.mem_available_bytes.map(bytes).unwrap_or_else(|| "?".into()),
        bytes(m.buddy_free_bytes),
        m.free_2m_blocks,
        bytes(m.free_2m_blocks * BLOCK_BYTES),
        pct(m.unusable_share),
        m.mlocked_bytes.map(bytes).unwrap_or_else(|| "?".into()),
    )
}

/// Knob writes, one a line.
pub fn knob_sets(sets: &[KnobSet]) -> String {
    let mut o = String::new();
    for s in sets {
        let note = if s.now != s.asked {
            format!("  (asked {}, the kernel reports {})", s.asked, s.now)
        } else {
            String::new()
        };
        let _ = writeln!(o, "  {:<34} {} -> {}{note}", s.knob, s.old, s.now);
    }
    o
}

/// `hugewise env show`.
pub fn show(r: &EnvShow) -> String {
    let mut o = String::new();
    let sel = |s: &Option<Selector>| {
        s.as_ref()
            .map(|s| s.current.clone())
            .unwrap_or_else(|| "-".into())
    };
    let _ = writeln!(
        o,
        "thp          enabled {}, defrag {}",
        r.thp.enabled.current,
        sel(&r.thp.defrag)
    );
    let sizes: Vec<String> = r
        .thp
        .sizes
        .iter()
        .map(|s| format!("{}kB={}", s.size_kib, sel(&s.enabled)))
        .collect();
    if !sizes.is_empty() {
        let _ = writeln!(o, "mthp         {}", sizes.join(" "));
    }
    let k = &r.thp.khugepaged;
    let n = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
    let _ = writeln!(
        o,
        "khugepaged   pages_to_scan {}, scan_sleep_millisecs {}, max_ptes_none {}",
        n(k.pages_to_scan),
        n(k.scan_sleep_millisecs),
        n(k.max_ptes_none)
    );
    for p in &r.hugetlb {
        let _ = writeln!(
            o,
            "hugetlb      {} kB pages: {} in pool, {} free",
            p.size_kib, p.pages, p.free_pages
        );
    }
    for (name, v) in &r.vm {
        let _ = writeln!(o, "vm           {name} = {}", v.as_deref().unwrap_or("-"));
    }
    let _ = writeln!(o, "memory       {}", memory_line(&r.memory));
    if r.swaps.is_empty() {
        let _ = writeln!(o, "swap         none");
    }
    for s in &r.swaps {
        let _ = writeln!(
            o,
            "swap         {} ({}, {} used, priority {})",
            s.path.display(),
            bytes(s.size_bytes),
            bytes(s.used_bytes),
            s.priority
        );
    }
    for c in &r.hugewise_cgroups {
        let _ = writeln!(o, "cgroup       {}", c.display());
    }
    match r.pending.as_deref() {
        None => {}
        Some([]) => {
            let _ = writeln!(o, "journal      {}: nothing to undo", r.journal.display());
        }
        Some(pending) => {
            let _ = writeln!(
                o,
                "journal      {}: {} change(s) to undo (`hugewise env restore`):",
                r.journal.display(),
                pending.len()
            );
            for p in pending {
                let _ = writeln!(
                    o,
                    "  #{} {} (pid {}, {:?})",
                    p.seq, p.change, p.pid, p.lifetime
                );
            }
        }
    }
    for u in &r.unread {
        let _ = writeln!(o, "unread       {u}");
    }
    o
}

/// What shaping did.
pub fn shape(r: &ShapeReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "before    {}", memory_line(&r.before));
    if !r.settings.is_empty() {
        let _ = writeln!(o, "settings");
        o.push_str(&knob_sets(&r.settings));
    }
    for a in &r.actions {
        let _ = writeln!(o, "action    {a}");
    }
    if let Some(p) = &r.pressure {
        let _ = writeln!(
            o,
            "pressure  holding {} in {:?} pages ({:.1} s)",
            bytes(p.held_bytes),
            p.pages,
            p.seconds
        );
    }
    if let Some(f) = &r.fragment {
        let _ = writeln!(
            o,
            "fragment  {} blocks of 2 MiB broken by one {} page each, {} rounds ({:.1} s){}",
            f.pinned_blocks,
            f.pages.name(),
            f.rounds,
            f.seconds,
            f.note
                .as_ref()
                .map(|n| format!("; {n}"))
                .unwrap_or_default()
        );
    }
    if let Some(p) = &r.pressure_whole_blocks {
        let _ = writeln!(
            o,
            "squeeze   holding {} more in whole 2 MiB blocks",
            bytes(p.held_bytes)
        );
    }
    let _ = writeln!(o, "shaped    {}", memory_line(&r.shaped));
    if let Some(p) = &r.probe {
        let _ = writeln!(
            o,
            "probe     a fresh {} THP region got {} huge ({} of it; thp {}, defrag {})",
            bytes(p.region_bytes),
            pct(p.huge_share),
            bytes(p.huge_bytes),
            p.thp_enabled,
            p.thp_defrag.as_deref().unwrap_or("-")
        );
    }
    for w in &r.warnings {
        let _ = writeln!(o, "warning   {w}");
    }
    o
}

/// How a command run in a shaped machine ended.
pub fn run_outcome(r: &RunOutcome) -> String {
    let mut o = String::new();
    let end = match (r.exit_code, r.signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown end".into(),
    };
    let _ = writeln!(
        o,
        "command   {} : {end} after {:.2} s",
        r.argv.join(" "),
        r.wall_seconds
    );
    if let Some(left) = &r.left_running {
        let _ = writeln!(o, "left      {left}");
    }
    if let (Some(c), Some(u)) = (&r.cgroup, &r.cgroup_usage) {
        let _ = writeln!(
            o,
            "cgroup    {}: limit {}, peak {}, limit hit {} times, {} OOM kills",
            c.display(),
            bytes(u.limit_bytes),
            u.peak_bytes.map(bytes).unwrap_or_else(|| "?".into()),
            u.limit_hits
                .map(|v| v.to_string())
                .unwrap_or_else(|| "?".into()),
            u.oom_kills
                .map(|v| v.to_string())
                .unwrap_or_else(|| "?".into()),
        );
    }
    if let Some(f) = &r.stats_flush {
        let _ = writeln!(o, "          {} while it ran", stats_flush(f));
    }
    o
}

/// What restoring put back.
pub fn restore(r: &RestoreReport) -> String {
    let mut o = String::new();
    if r.undone.is_empty() && r.failed.is_empty() {
        let _ = writeln!(o, "restored  nothing to undo");
    }
    for u in &r.undone {
        let _ = writeln!(o, "restored  {}: {}", u.change, u.outcome);
    }
    for f in &r.failed {
        let _ = writeln!(o, "FAILED    {}: {}", f.change, f.outcome);
    }
    o
}

/// Restoring and the memory afterwards.
pub fn finish(r: &FinishReport) -> String {
    let mut o = restore(&r.restore);
    let _ = writeln!(o, "after     {}", memory_line(&r.after));
    o
}

/// `env thp|hugetlb|khugepaged|page-cluster`.
pub fn set_report(r: &SetReport) -> String {
    format!(
        "{}kept until `hugewise env restore`\n",
        knob_sets(&r.settings)
    )
}

/// `env compact|drop-caches`.
pub fn action(r: &ActionReport) -> String {
    format!(
        "before  {}\nafter   {}\n",
        memory_line(&r.before),
        memory_line(&r.after)
    )
}

/// `env swap`.
pub fn swap(r: &SwapReport) -> String {
    format!(
        "swap file {} ({}) enabled; kept until `hugewise env restore`\n",
        r.file.display(),
        bytes_compact(r.size_bytes)
    )
}

/// `env with|pressure|fragment|limit`: shaping, the command's end, restoring, in the order
/// the run printed them.
pub fn shaped_run(r: &ShapedRun) -> String {
    let mut o = String::new();
    if let Some(s) = &r.shape {
        o.push_str(&shape(s));
    }
    if let Some(run) = &r.run {
        o.push_str(&run_outcome(run));
    }
    if let Some(e) = &r.error {
        let _ = writeln!(o, "error     {e}");
    }
    if let Some(f) = &r.finish {
        o.push_str(&finish(f));
    }
    o
}
