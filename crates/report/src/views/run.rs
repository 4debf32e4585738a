//! Terminal views of graph kernel runs and the graphs they run on: `hugewise run`, `graph info`,
//! `graph gen|convert` and `bench pages`.

use std::fmt::Write;

use hugewise_results::graph::{CacheOutcome, GraphInfo, GraphWritten, RegionReport};
use hugewise_results::pagebench::{PagesReport, PagesVariant};
use hugewise_results::run::{InfoReport, RunReport};

use super::{busy_of, marked, opt, sample_notes, SPREAD_NOTE};
use crate::fmt::{bytes, ns, pct, ratio_ci, stats_flush};
use crate::table::Table;

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
        "kernel  {} on {}; pages {}; alloc order {}\n",
        r.kernel,
        crate::fmt::threads(r.threads, &r.threads_bound_to),
        r.pages,
        r.alloc_order
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
        o.push_str(&crate::views::promote::failures(&p.actions));
    }
    o.push_str(&swapping(r));
    o
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
    if r.copies_in_turn {
        o.push_str(
            "copies  in turn: each layout's own copy of the graph was built when its turn came \
             and freed before the next was built (untimed)\n\n",
        );
    }
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
    if r.copies_in_turn {
        o.push_str("The layouts' own copies of the graph were built in turn, one at a time.\n\n");
    }
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
