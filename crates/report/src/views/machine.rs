//! Terminal views of the machine and its memory: `hugewise sys`, `faultlat`, `bench faultlat`
//! and `bench randread`.

use std::fmt::Write;

use hugewise_results::faultlat::{FaultBenchReport, FaultlatReport, Latency};
use hugewise_results::machine::{MachineReport, Probe, Selector};
use hugewise_results::randread::RandreadReport;

use super::{busy_of, marked, sample_notes};
use crate::fmt::{bytes, ns, pct, ratio_ci};
use crate::table::Table;

fn yes_no(p: &Probe) -> String {
    format!("{}  {}", if p.usable { "yes" } else { "no " }, p.detail)
}

/// `hugewise sys`.
pub fn machine(r: &MachineReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "kernel      {}",
        r.kernel.as_deref().unwrap_or("unknown")
    );
    let m = &r.memory;
    let _ = writeln!(
        o,
        "memory      {} total, {} free, {} available, {} in THP, {} mlocked",
        bytes(m.total_bytes),
        bytes(m.free_bytes),
        m.available_bytes.map(bytes).unwrap_or_else(|| "?".into()),
        m.anon_huge_bytes.map(bytes).unwrap_or_else(|| "?".into()),
        m.mlocked_bytes.map(bytes).unwrap_or_else(|| "?".into()),
    );
    match &r.thp {
        Some(t) => {
            let sel = |s: &Option<Selector>| {
                s.as_ref()
                    .map(|s| s.current.clone())
                    .unwrap_or_else(|| "-".into())
            };
            let _ = writeln!(
                o,
                "THP         enabled={}  defrag={}  shmem={}",
                t.enabled.current,
                sel(&t.defrag),
                sel(&t.shmem_enabled)
            );
            let sizes: Vec<String> = t
                .sizes
                .iter()
                .map(|s| format!("{}K={}", s.size_kib, sel(&s.enabled)))
                .collect();
            if !sizes.is_empty() {
                let _ = writeln!(o, "mTHP        {}", sizes.join(" "));
            }
            let k = &t.khugepaged;
            let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                o,
                "khugepaged  pages_to_scan={} scan_sleep_ms={} max_ptes_none={} defrag={} \
                 full_scans={} pages_collapsed={}",
                opt(k.pages_to_scan),
                opt(k.scan_sleep_millisecs),
                opt(k.max_ptes_none),
                opt(k.defrag),
                opt(k.full_scans),
                opt(k.pages_collapsed)
            );
        }
        None => {
            let _ = writeln!(o, "THP         not available");
        }
    }
    o.push_str("\nhugetlb pools\n");
    let mut t = Table::new(["size", "pages", "free", "reserved", "surplus"]);
    for p in &r.hugetlb {
        t.row([
            bytes(p.size_kib << 10),
            p.pages.to_string(),
            p.free_pages.to_string(),
            p.reserved_pages.to_string(),
            p.surplus_pages.to_string(),
        ]);
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "\nfree memory by zone ({} free 2 MiB blocks in all)",
        r.free_2m_blocks
    );
    let mut t = Table::new([
        "zone",
        "free",
        "2M blocks",
        "unusable@2M",
        "frag@2M",
        "unusable@4K..4M",
    ]);
    for z in &r.zones {
        let u9 = z
            .unusable_index
            .get(9)
            .map(|u| format!("{u:.3}"))
            .unwrap_or_default();
        let f9 = match z.fragmentation_index.get(9) {
            Some(Some(f)) => format!("{f:.3}"),
            Some(None) => "-".into(),
            None => String::new(),
        };
        let all: Vec<String> = z.unusable_index.iter().map(|u| format!("{u:.2}")).collect();
        t.row([
            format!("{}/{}", z.node, z.zone),
            bytes(z.free_bytes),
            z.free_2m_blocks.to_string(),
            u9,
            f9,
            all.join(" "),
        ]);
    }
    o.push_str(&t.render());
    o.push_str("(frag@2M '-': a 2 MiB allocation succeeds now without compaction)\n");
    o.push_str("\nfree blocks per order\n");
    let orders = r
        .zones
        .iter()
        .map(|z| z.free_blocks.len())
        .max()
        .unwrap_or(0);
    let mut t = Table::new(
        std::iter::once("zone".to_string())
            .chain((0..orders).map(|k| bytes(4096u64 << k).replace(' ', ""))),
    );
    for z in &r.zones {
        t.row(
            std::iter::once(format!("{}/{}", z.node, z.zone))
                .chain(z.free_blocks.iter().map(|n| n.to_string())),
        );
    }
    o.push_str(&t.render());
    o.push_str("\ncounters\n");
    let shown = [
        "thp_fault_alloc",
        "thp_fault_fallback",
        "thp_collapse_alloc",
        "thp_collapse_alloc_failed",
        "thp_split_page",
        "thp_deferred_split_page",
        "compact_stall",
        "compact_fail",
        "compact_success",
    ];
    let mut t = Table::new(["counter", "value"]);
    for k in shown {
        if let Some(v) = r.counters.get(k) {
            t.row([k.to_string(), v.to_string()]);
        }
    }
    o.push_str(&t.render());
    let c = &r.capabilities;
    o.push_str("\ncapabilities\n");
    let mut t = Table::new(["feature", "usable"]);
    t.row([
        "root".to_string(),
        if c.root { "yes".into() } else { "no".into() },
    ]);
    t.row(["MADV_COLLAPSE".to_string(), yes_no(&c.madv_collapse)]);
    t.row(["process_madvise".to_string(), yes_no(&c.process_madvise)]);
    t.row(["pagemap frames".to_string(), yes_no(&c.pagemap_frames)]);
    t.row(["kpageflags".to_string(), yes_no(&c.kpageflags)]);
    t.row(["split_huge_pages".to_string(), yes_no(&c.split_huge_pages)]);
    o.push_str(&t.render());
    for n in &r.notes {
        let _ = writeln!(o, "\nnote: {n}");
    }
    o
}

fn latency_row(t: &mut Table, what: &str, l: &Latency) {
    t.row([
        what.to_string(),
        l.count.to_string(),
        ns(l.mean_ns),
        ns(l.p50_ns as f64),
        ns(l.p90_ns as f64),
        ns(l.p99_ns as f64),
        ns(l.p999_ns as f64),
        ns(l.max_ns as f64),
        ns(l.total_ns as f64),
    ]);
}

/// `hugewise faultlat`.
pub fn faultlat(r: &FaultlatReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} region, policy {}: {} touches, {} faults ({} major); timer overhead {} per sample\n",
        bytes(r.bytes),
        r.policy,
        r.touches,
        r.faults,
        r.major_faults,
        ns(r.timer_overhead_ns as f64)
    );
    let mut t = Table::new([
        "", "count", "mean", "p50", "p90", "p99", "p99.9", "max", "total",
    ]);
    latency_row(&mut t, "fault", &r.fault_latency);
    if let Some(c) = &r.collapse {
        latency_row(&mut t, "collapse 2M", &c.latency);
    }
    o.push_str(&t.render());
    let b = &r.backing;
    let _ = writeln!(
        o,
        "\nbacking after faults ({:?}): {} in 2 MiB THP, {} in 4 KiB, {} hugetlb, {} not present",
        b.source,
        bytes(b.thp_2m_bytes),
        bytes(b.base_bytes),
        bytes(b.hugetlb_bytes),
        bytes(b.not_present_bytes)
    );
    if let Some(c) = &r.collapse {
        let refused: Vec<String> = c.refused.iter().map(|(k, v)| format!("{k}×{v}")).collect();
        let _ = writeln!(
            o,
            "collapse: {}/{} pieces collapsed{}; afterwards {} in 2 MiB THP ({})",
            c.collapsed,
            c.pieces,
            if refused.is_empty() {
                String::new()
            } else {
                format!(", refused {}", refused.join(" "))
            },
            bytes(c.backing.thp_2m_bytes),
            pct(c.backing.huge_share())
        );
    }
    o
}

/// `hugewise bench faultlat`.
pub fn fault_bench(r: &FaultBenchReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "4 KiB faults over {}, {} rounds{} (arms alternated); the daemon{}: {}, budget {}, a look \
         every {} ms, collapses paced to hold up at most {}% of the faults (unpaced: no limit){}{}\n",
        bytes(r.bytes),
        r.rounds,
        crate::fmt::stopped(r.stopped),
        match r.daemon_in.as_deref() {
            Some("process") => " (a process of its own)",
            Some(_) | None => " (a thread of the faulting process)",
        },
        r.policy,
        pct(r.budget_share),
        r.interval_ms,
        r.fault_waits * 100.0,
        match r.warm {
            Some(true) => ", each onto a page it faulted in first",
            Some(false) => ", each onto whatever page the kernel gave",
            None => "",
        },
        r.nice
            .map(|n| format!("; its thread at nice {n}"))
            .unwrap_or_default()
    );
    let mut t = Table::new([
        "arm",
        "p50",
        "p99.9",
        "spread (MAD)",
        "p99.9 vs alone [95% CI]",
        "p50 vs alone",
        "collapses",
        "collapse p50",
    ]);
    let mut busy_total = 0;
    for a in &r.summary {
        let (busy, _) = busy_of(
            r.samples
                .iter()
                .filter(|x| x.arm == a.arm)
                .map(|x| &x.quiet),
        );
        busy_total += busy;
        t.row([
            marked(a.arm.name(), busy),
            ns(a.p50_ns.median),
            ns(a.p999_ns.median),
            pct(a.p999_ns.mad_rel),
            a.p999_vs_alone
                .map(|x| ratio_ci(x, a.p999_vs_alone_ci95, a.p999_ns.n, 2))
                .unwrap_or_else(|| "(baseline)".into()),
            a.p50_vs_alone
                .map(|x| format!("{x:.2}x"))
                .unwrap_or_else(|| "-".into()),
            a.collapses
                .map(|c| format!("{c:.0}"))
                .unwrap_or_else(|| "-".into()),
            a.collapse_p50_ns.map(ns).unwrap_or_else(|| "-".into()),
        ]);
    }
    o.push_str(&t.render());
    let (_, all) = busy_of(r.samples.iter().map(|s| &s.quiet));
    o.push_str(&sample_notes(busy_total, all));
    o.push_str(&settle_note(r));
    o
}

/// How the arms began (once the guest's free page reporting had gone still, or back to back)
/// and how much it handed back to its host around them: a page handed back costs a host fault
/// at its next first touch. Nothing where the kernel counted nothing and no wait was asked for.
fn settle_note(r: &FaultBenchReport) -> String {
    let back: Vec<_> = r.samples.iter().filter_map(|s| s.handback).collect();
    let range = |v: &[u64]| {
        let lo = v.iter().min().copied().unwrap_or(0);
        let hi = v.iter().max().copied().unwrap_or(0);
        (lo, hi)
    };
    let mut o = String::new();
    match r.settle {
        Some(true) => {
            let waits: Vec<_> = back.iter().filter_map(|h| h.waited_ms).collect();
            if waits.is_empty() {
                o.push_str(
                    "each arm was to wait for the guest to hand its free memory back to the \
                     host, but this kernel does not count what it hands back: the arms began \
                     at once\n",
                );
            } else {
                let (lo, hi) = range(&waits);
                let _ = write!(
                    o,
                    "each arm began once the guest's free page reporting had stood still for \
                     a while (waits {:.1}–{:.1} s)",
                    lo as f64 / 1000.0,
                    hi as f64 / 1000.0
                );
                let loud = back.iter().filter(|h| h.still == Some(false)).count();
                if loud > 0 {
                    let _ = write!(o, "; {loud} began with reporting still under way");
                }
                o.push('\n');
            }
        }
        Some(false) if !back.is_empty() => o.push_str(
            "the arms ran back to back after a run unmeasured, each faulting mostly the \
             memory the one before freed (--settle waits for the guest's free page reporting \
             to stand still first)\n",
        ),
        _ => {}
    }
    if !back.is_empty() {
        let kib = |v: Vec<u64>| {
            let (lo, hi) = range(&v);
            format!("{}–{}", span(lo), span(hi))
        };
        let _ = writeln!(
            o,
            "handed back to the host (its next first touch a host fault): before an arm {}, \
             while it faulted {}",
            kib(back.iter().map(|h| h.before_kib).collect()),
            kib(back.iter().map(|h| h.during_kib).collect())
        );
    }
    o
}

/// KiB as bytes in the unit that fits, `0 B` for nothing.
fn span(kib: u64) -> String {
    bytes(kib * 1024)
}

/// `hugewise bench randread`.
pub fn randread(r: &RandreadReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "random 8-byte reads over {}: {} reads per sample, {} rounds{} (variants alternated), seed {}\n",
        bytes(r.bytes),
        r.reads,
        r.rounds,
        crate::fmt::stopped(r.stopped),
        r.seed
    );
    let (table, busy) = randread_table(r);
    o.push_str(&table.render());
    let (_, all) = busy_of(r.samples.iter().map(|s| &s.quiet));
    o.push_str(&sample_notes(busy, all));
    o
}

/// The table, and how many samples were busy.
fn randread_table(r: &RandreadReport) -> (Table, usize) {
    let mut t = Table::new([
        "variant",
        "ns/read (median)",
        "min",
        "max",
        "spread (MAD)",
        "speedup vs base [95% CI]",
        "huge",
    ]);
    let mut busy_total = 0;
    for s in &r.summary {
        let n = &s.ns_per_read;
        let (busy, _) = busy_of(
            r.samples
                .iter()
                .filter(|x| x.variant == s.variant)
                .map(|x| &x.quiet),
        );
        busy_total += busy;
        t.row([
            marked(s.variant.name(), busy),
            format!("{:.2}", n.median),
            format!("{:.2}", n.min),
            format!("{:.2}", n.max),
            pct(n.mad_rel),
            s.speedup_vs_base
                .map(|x| ratio_ci(x, s.speedup_vs_base_ci95, n.n, 2))
                .unwrap_or_else(|| "(baseline)".into()),
            pct(s.huge_share),
        ]);
    }
    (t, busy_total)
}

/// A Markdown table of a randread result, for BENCHMARKS.md.
pub fn randread_markdown(r: &RandreadReport) -> String {
    let mut o = String::from(
        "| variant | ns/read (median) | min | max | speedup vs base (median of per-round ratios) [95% CI] | huge share |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for s in &r.summary {
        let n = &s.ns_per_read;
        let _ = writeln!(
            o,
            "| {} | {:.2} | {:.2} | {:.2} | {} | {} |",
            s.variant.name(),
            n.median,
            n.min,
            n.max,
            s.speedup_vs_base
                .map(|x| ratio_ci(x, s.speedup_vs_base_ci95, n.n, 2))
                .unwrap_or_else(|| "baseline".into()),
            pct(s.huge_share)
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_results::faultlat::{FaultArm, FaultBenchSample, Handback};

    fn report(settle: Option<bool>, backs: &[Option<Handback>]) -> FaultBenchReport {
        let sample = |handback| FaultBenchSample {
            round: 0,
            arm: FaultArm::Alone,
            faults: 1,
            fault_latency: Latency {
                count: 1,
                mean_ns: 1.0,
                p50_ns: 1,
                p90_ns: 1,
                p99_ns: 1,
                p999_ns: 1,
                max_ns: 1,
                total_ns: 1,
            },
            touch_wall_ns: 1,
            collapses: None,
            paced: None,
            collapse_p50_ns: None,
            quiet: None,
            handback,
        };
        FaultBenchReport {
            bytes: 4 << 30,
            policy: "mega".into(),
            budget_share: 1.0,
            fault_waits: 0.0002,
            warm: Some(true),
            nice: Some(0),
            interval_ms: 1000,
            daemon_in: Some("process".into()),
            rounds: 1,
            stopped: None,
            settle,
            samples: backs.iter().copied().map(sample).collect(),
            summary: Vec::new(),
        }
    }

    fn back(waited_ms: Option<u64>, still: Option<bool>, before: u64, during: u64) -> Handback {
        Handback {
            waited_ms,
            still,
            before_kib: before,
            during_kib: during,
        }
    }

    #[test]
    fn the_note_says_how_the_arms_began_and_what_was_handed_back_around_them() {
        let r = report(
            Some(true),
            &[
                Some(back(Some(5_000), Some(true), 4 << 20, 0)),
                Some(back(Some(60_000), Some(false), 1 << 20, 2048)),
            ],
        );
        let note = settle_note(&r);
        for want in [
            "waits 5.0–60.0 s",
            "1 began with reporting still under way",
            "before an arm 1 GiB–4 GiB, while it faulted 0 B–2 MiB",
        ] {
            assert!(note.contains(want), "{want:?} not in {note}");
        }
        let r = report(Some(false), &[Some(back(None, None, 512, 0))]);
        let note = settle_note(&r);
        assert!(note.contains("back to back"), "{note}");
        assert!(note.contains("before an arm 512 KiB–512 KiB"), "{note}");
        // Back to back where the kernel counts nothing (bare metal, a study's runs): no word
        // about a host.
        assert_eq!(settle_note(&report(Some(false), &[None])), "");
        // Asked to wait on a kernel that counts nothing: said, and nothing made up.
        let note = settle_note(&report(Some(true), &[None]));
        assert!(note.contains("does not count"), "{note}");
        assert!(!note.contains("handed back to the host ("), "{note}");
        // Older results say nothing.
        assert_eq!(settle_note(&report(None, &[None])), "");
    }
}
