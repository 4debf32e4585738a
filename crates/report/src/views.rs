//! Terminal views of each result model.

use std::fmt::Write;

use hugewise_results::faultlat::{FaultlatReport, Latency};
use hugewise_results::graph::{CacheOutcome, GraphInfo, GraphWritten, RegionReport};
use hugewise_results::machine::{MachineReport, Probe, Selector};
use hugewise_results::pagebench::{PagesReport, PagesVariant};
use hugewise_results::randread::RandreadReport;
use hugewise_results::run::{InfoReport, RunReport};
use hugewise_results::stats::{Quiet, BUSY_SHARE};

use crate::fmt::{bytes, ns, pct, ratio_ci, stats_flush};
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

fn regions_table(regions: &[RegionReport]) -> String {
    let mut t = Table::new(["array", "policy", "data", "2M THP", "4K", "hugetlb", "huge"]);
    for r in regions {
        let b = &r.backing;
        t.row([
            r.name.clone(),
            r.policy.clone(),
            bytes(r.data_bytes),
            bytes(b.thp_2m_bytes),
            bytes(b.base_bytes),
            bytes(b.hugetlb_bytes),
            pct(b.huge_share()),
        ]);
    }
    t.render()
}

/// What the tables' "spread" is.
const SPREAD_NOTE: &str =
    "spread: median absolute deviation of the samples from their median, as a share of the median";

/// How many of `samples` were taken on a busy machine, and how many there are.
pub(crate) fn busy_of<'a>(samples: impl Iterator<Item = &'a Option<Quiet>>) -> (usize, usize) {
    samples.fold((0, 0), |(busy, all), q| {
        (busy + usize::from(q.is_some_and(|q| q.busy())), all + 1)
    })
}

/// A row's name with the busy marker when any of its samples was busy.
fn marked(name: &str, busy: usize) -> String {
    if busy > 0 {
        format!("{name} *")
    } else {
        name.to_string()
    }
}

/// The footnotes under a table of samples: what spread is, and what the busy marker means.
fn sample_notes(busy: usize, all: usize) -> String {
    let mut o = format!("\n{SPREAD_NOTE}.\n");
    if busy > 0 {
        let _ = writeln!(
            o,
            "* busy machine: {busy} of {all} samples were taken while other processes used more \
             than {:.0}% of the CPUs (the quiet check gave up waiting); their times may be \
             inflated",
            BUSY_SHARE * 100.0
        );
    }
    o
}

fn graph_line(g: &GraphInfo) -> String {
    format!(
        "{} vertices, {} edges ({} arcs, {}{}), {} of arrays",
        g.vertices,
        g.edges,
        g.arcs,
        if g.directed { "directed" } else { "symmetric" },
        if g.weighted { ", weighted" } else { "" },
        bytes(g.data_bytes)
    )
}

/// `hugewise run`.
pub fn run(r: &RunReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "graph   {}: {}", r.graph_spec, graph_line(&r.graph));
    let _ = writeln!(
        o,
        "load    {} (count {}, alloc {}, place {}, sort+dedup {})",
        ns(r.load.load_ns as f64),
        ns(r.load.build.count_ns as f64),
        ns(r.load.build.alloc_ns as f64),
        ns(r.load.build.place_ns as f64),
        ns(r.load.build.normalize_ns as f64)
    );
    if let Some(x) = &r.reorder {
        match &x.cache {
            Some(c) if c.outcome == CacheOutcome::Hit => {
                let _ = writeln!(
                    o,
                    "reorder {} read from the cache {} ({}): the input was not loaded, nothing \
                     relabelled",
                    x.method,
                    c.path.display(),
                    bytes(c.bytes)
                );
            }
            _ => {
                let _ = writeln!(
                    o,
                    "reorder {} (order {}, relabel {})",
                    x.method,
                    ns(x.order_ns as f64),
                    ns(x.relabel_ns as f64)
                );
            }
        }
        if let Some(c) = x.cache.as_ref().filter(|c| c.outcome != CacheOutcome::Hit) {
            let _ = match c.outcome {
                CacheOutcome::Stored => writeln!(
                    o,
                    "        kept in {} ({}, written in {}): the next run of this file reads it",
                    c.path.display(),
                    bytes(c.bytes),
                    ns(c.ns as f64)
                ),
                _ => writeln!(
                    o,
                    "        not kept: {}",
                    c.note.as_deref().unwrap_or("no reason given")
                ),
            };
        }
    }
    let _ = writeln!(
        o,
        "kernel  {} on {} threads; pages {}; alloc order {}\n",
        r.kernel, r.threads, r.pages, r.alloc_order
    );
    let mut t = Table::new(["trial", "sources", "time", "MTEPS", "found", "verified"]);
    for (i, x) in r.trials.iter().enumerate() {
        let sources: Vec<String> = x.sources.iter().map(u32::to_string).collect();
        t.row([
            (i + 1).to_string(),
            if sources.is_empty() {
                "-".into()
            } else {
                sources.join(",")
            },
            ns(x.kernel_ns as f64),
            format!("{:.1}", x.edges_per_s / 1e6),
            x.outcome.summary(),
            match x.verified {
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
                None => "-".into(),
            },
        ]);
    }
    o.push_str(&t.render());
    let k = &r.kernel_ns;
    let _ = writeln!(
        o,
        "\nmedian {} (min {}, max {}, spread {})\n{SPREAD_NOTE}.\n",
        ns(k.median),
        ns(k.min),
        ns(k.max),
        pct(k.mad_rel)
    );
    o.push_str(&regions_table(&r.regions));
    let _ = writeln!(
        o,
        "\nhuge pages hold {} of the arrays' footprint; peak RSS {}",
        pct(r.huge_footprint_share),
        bytes(r.peak_rss_bytes)
    );
    if let Some(p) = &r.replay {
        let t = &p.totals;
        let _ = writeln!(
            o,
            "plan    {} from {}: {} steps, {} promoted, {} failed, {} demoted; collapse p50 {}, \
             p99 {}",
            p.label,
            p.plan.display(),
            p.steps,
            t.promoted,
            t.promote_failed,
            t.demoted,
            t.collapse_p50_ns
                .map(|v| ns(v as f64))
                .unwrap_or_else(|| "-".into()),
            t.collapse_p99_ns
                .map(|v| ns(v as f64))
                .unwrap_or_else(|| "-".into()),
        );
        o.push_str(&crate::promoteview::failures(&p.actions));
    }
    o.push_str(&swapping(r));
    o
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or_else(|| "-".into(), f)
}

/// What `--memory`, `--overcommit auto` and `--telemetry` recorded, when they did.
fn swapping(r: &RunReport) -> String {
    let mut o = String::new();
    if let Some(m) = &r.memory {
        let _ = writeln!(
            o,
            "\nmemory  {} of the {} footprint: limit {} ({}); swap {}; page-cluster {}; \
             graph copied under the limit in {}; peak {}, {} limit hits, {} OOM kills; {}",
            pct(m.share),
            bytes(m.footprint_bytes),
            bytes(m.limit_bytes),
            m.cgroup.display(),
            match (&m.swap_file, m.swap_bytes) {
                (Some(f), Some(b)) => format!("file {} ({})", f.display(), bytes(b)),
                _ => "already on".into(),
            },
            m.page_cluster.map_or("as it was".into(), |n| n.to_string()),
            ns(m.settle_ns as f64),
            m.peak_bytes.map_or("-".into(), bytes),
            m.limit_hits.map_or("-".into(), |n| n.to_string()),
            m.oom_kills.map_or("-".into(), |n| n.to_string()),
            m.stats_flush
                .as_ref()
                .map_or("memory.stat not read".to_string(), stats_flush),
        );
    }
    if let Some(c) = &r.overcommit {
        let tried: Vec<String> = c.factors.iter().map(|f| format!("×{f}")).collect();
        let _ = writeln!(
            o,
            "\novercommit auto: ×{} (trials ran at {})",
            c.chosen,
            tried.join(" ")
        );
        for why in &c.reasons {
            let _ = writeln!(o, "  {why}");
        }
    }
    if let Some(t) = &r.telemetry {
        let s = &t.summary;
        let _ = writeln!(
            o,
            "\ntelemetry every {:.0} ms, {} samples, sampler busy {} of the time; swap device {}",
            t.interval_ms,
            s.samples,
            pct(t.sampler_busy_share),
            t.swap_device.as_deref().unwrap_or("none")
        );
        let mut tb = Table::new([
            "",
            "user",
            "system",
            "idle",
            "iowait",
            "page-ins/s",
            "page-outs/s",
            "queue depth",
            "disk reads/s",
        ]);
        let row = |name: String, s: &hugewise_results::telemetry::Summary| {
            let c = |f: fn(&hugewise_results::telemetry::CpuSplit) -> f64| {
                s.cpu.as_ref().map_or("-".into(), |x| pct(f(x)))
            };
            [
                name,
                c(|x| x.user_share),
                c(|x| x.system_share),
                c(|x| x.idle_share),
                c(|x| x.iowait_share),
                opt(s.page_ins_per_s, |v| format!("{v:.0}")),
                opt(s.page_outs_per_s, |v| format!("{v:.0}")),
                opt(s.mean_queue_depth, |v| format!("{v:.2}")),
                opt(s.disk_reads_per_s, |v| format!("{v:.0}")),
            ]
        };
        for (i, x) in r.trials.iter().enumerate() {
            if let Some(s) = &x.telemetry {
                let who = match x.threads {
                    Some(n) => format!("trial {} ({n} thr)", i + 1),
                    None => format!("trial {}", i + 1),
                };
                tb.row(row(who, s));
            }
        }
        tb.row(row("all".into(), s));
        o.push_str(&tb.render());
    }
    o
}

/// `hugewise graph info`.
pub fn graph_info(r: &InfoReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "graph    {}: {}", r.graph_spec, graph_line(&r.graph));
    let d = &r.degrees;
    let _ = writeln!(
        o,
        "degrees  out: max {}, mean {:.2}, median {}, {} vertices without out-arcs",
        d.max, d.mean, d.median, d.isolated
    );
    let _ = writeln!(o, "load     {}\n", ns(r.load.load_ns as f64));
    o.push_str(&regions_table(&r.regions));
    o
}

/// `hugewise graph gen|convert`.
pub fn graph_written(r: &GraphWritten) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "wrote    {} ({} vertices, {} edges)",
        r.file.display(),
        r.graph.vertices,
        r.graph.edges
    );
    let _ = writeln!(o, "file     {}, {}", r.format, bytes(r.file_bytes));
    let _ = writeln!(o, "graph    {}: {}", r.graph_spec, graph_line(&r.graph));
    let reorder = match &r.reorder {
        Some(x) => format!(
            ", reorder {} {}",
            x.method,
            ns((x.order_ns + x.relabel_ns) as f64)
        ),
        None => String::new(),
    };
    let _ = writeln!(
        o,
        "time     load {}{reorder}, write {}",
        ns(r.load.load_ns as f64),
        ns(r.write_ns as f64)
    );
    o
}

/// A variant's name in tables: its own name, or its layout (and its graph copy's).
pub fn variant_label(v: &PagesVariant) -> String {
    if let Some(n) = &v.name {
        return n.clone();
    }
    let mut s = v.pages.clone();
    if let Some(g) = &v.graph_pages {
        s.push_str(&format!("; graph {g}"));
    }
    if let Some(m) = &v.reorder {
        s.push_str(&format!("; {m}"));
    }
    if v.kernel_first {
        s.push_str("; kernel first");
    }
    s
}

/// `hugewise bench pages`.
pub fn pagebench(r: &PagesReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "graph   {}: {}", r.graph_spec, graph_line(&r.graph));
    let _ = writeln!(
        o,
        "kernel  {} on {} threads, {} rounds{}; graph arrays {}\n",
        r.kernel,
        r.threads,
        r.rounds,
        crate::fmt::stopped(r.stopped),
        r.graph_pages
    );
    let mut t = Table::new([
        "kernel arrays",
        "median",
        "min",
        "max",
        "spread",
        "speedup [95% CI]",
        "huge share",
    ]);
    let mut busy_total = 0;
    for (v, s) in r.summary.iter().enumerate() {
        let k = &s.kernel_ns;
        let (busy, _) = busy_of(
            r.samples
                .iter()
                .filter(|x| x.variant == v)
                .map(|x| &x.quiet),
        );
        busy_total += busy;
        t.row([
            marked(&variant_label(s), busy),
            ns(k.median),
            ns(k.min),
            ns(k.max),
            pct(k.mad_rel),
            s.speedup_vs_first
                .map(|x| ratio_ci(x, s.speedup_vs_first_ci95, k.n, 2))
                .unwrap_or_else(|| "baseline".into()),
            pct(s.huge_footprint_share),
        ]);
    }
    o.push_str(&t.render());
    let (_, all) = busy_of(r.samples.iter().map(|s| &s.quiet));
    o.push_str(&sample_notes(busy_total, all));
    for s in &r.summary {
        let _ = writeln!(o, "\nkernel arrays for {}:", variant_label(s));
        o.push_str(&regions_table(&s.regions));
    }
    o
}

/// `hugewise bench pages --markdown`, for BENCHMARKS.md.
pub fn pagebench_markdown(r: &PagesReport) -> String {
    let mut o = format!(
        "{} on {} ({} vertices, {} edges), {} threads, {} rounds{}, graph arrays {}\n\n",
        r.kernel,
        r.graph_spec,
        r.graph.vertices,
        r.graph.edges,
        r.threads,
        r.rounds,
        crate::fmt::stopped(r.stopped),
        r.graph_pages
    );
    o.push_str(
        "| kernel arrays | median | min | max | speedup (median of per-round ratios) [95% CI] | huge share of footprint |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for s in &r.summary {
        let k = &s.kernel_ns;
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            variant_label(s),
            ns(k.median),
            ns(k.min),
            ns(k.max),
            s.speedup_vs_first
                .map(|x| ratio_ci(x, s.speedup_vs_first_ci95, k.n, 2))
                .unwrap_or_else(|| "baseline".into()),
            pct(s.huge_footprint_share)
        );
    }
    o
}
