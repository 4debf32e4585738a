//! The HTML report: one self-contained page (inline CSS and SVG, no script, no font or
//! resource from the network) with the headlines next to the seeds' numbers, a chart and its
//! table for every comparison, and the machines and settings the results came from.

use std::fmt::Write;

use hugewise_results::collection::{Collection, Entry, Machine};
use hugewise_results::faultlat::FaultlatReport;
use hugewise_results::pagebench::PagesReport;
use hugewise_results::promote::PromoteReport;
use hugewise_results::sim::Curves;
use hugewise_results::stats::BUSY_SHARE;
use hugewise_results::study::Headline;
use hugewise_results::swapstudy::SwapStudy;
use hugewise_results::AnyResult;

use crate::charts::{self, BarSpec, Bars, Lines, Ticks};
use crate::figures::{self, Bar, Series};
use crate::fmt::{bytes, ns, pct};
use crate::views::collection::percentiles;
use crate::views::study::{
    gap, headline_legend, headline_value, interval_text, scale_text, work_line,
};

/// Text made safe inside HTML elements and attribute values.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const CSS: &str = r#"
:root { --ink: #1d2330; --muted: #5b6475; --line: #e3e6ec; --bg: #f5f6f8; --accent: #0072b2; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header.top { background: #16324f; color: #fff; padding: 28px 40px 22px; }
header.top h1 { margin: 0 0 6px; font-size: 28px; font-weight: 650; letter-spacing: .2px; }
header.top p { margin: 0; color: #c9d6e6; }
nav.toc { margin-top: 14px; display: flex; flex-wrap: wrap; gap: 8px; }
nav.toc a { color: #fff; background: rgba(255,255,255,.12); padding: 3px 10px; border-radius: 12px;
  text-decoration: none; font-size: 13px; }
main { max-width: 1280px; margin: 0 auto; padding: 8px 24px 48px; }
section { margin-top: 28px; }
section > h2 { font-size: 22px; margin: 0 0 4px; padding-bottom: 6px; border-bottom: 2px solid var(--line); }
p.lead { color: var(--muted); margin: 6px 0 14px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 18px 20px;
  margin: 16px 0; box-shadow: 0 1px 2px rgba(20,30,50,.05); }
.card h3 { margin: 0; font-size: 17px; }
.card p.sub { margin: 2px 0 12px; color: var(--muted); font-size: 14px; }
.body { display: flex; flex-wrap: wrap; gap: 20px 28px; align-items: flex-start; }
.chart { flex: 0 1 620px; min-width: 300px; }
.chart svg { width: 100%; height: auto; display: block; }
.side { flex: 1 1 440px; min-width: min-content; max-width: 100%; overflow-x: auto; }
.rng { display: block; color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; font-size: 13.5px; width: 100%; }
th, td { padding: 5px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12.5px; text-transform: uppercase; letter-spacing: .3px; }
td:first-child { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:last-child td { border-bottom: none; }
.sw { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.note { color: var(--muted); font-size: 13px; margin: 8px 0 0; }
.busy { color: #b34700; font-weight: 600; }
.gap-good { color: #00795a; } .gap-bad { color: #b34700; }
table.headlines strong { font-size: 15px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 3px 18px; margin: 0; font-size: 14px; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; }
details { margin-top: 10px; } summary { cursor: pointer; color: var(--accent); }
pre { background: #f7f8fa; border: 1px solid var(--line); padding: 10px; overflow-x: auto; font-size: 12.5px; }
.chart-error { color: #b00020; }
footer { color: var(--muted); font-size: 13px; text-align: center; margin: 36px 0 12px; }
"#;

/// A table under construction: cells are HTML; cells that read as numbers align right.
struct Table {
    class: &'static str,
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(head: &[&str]) -> Table {
        Table {
            class: "",
            head: head.iter().map(|h| escape(h)).collect(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn html(&self) -> String {
        let mut o = format!("<table class=\"{}\"><thead><tr>", self.class);
        for h in &self.head {
            let _ = write!(o, "<th>{h}</th>");
        }
        o.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            o.push_str("<tr>");
            for (k, c) in r.iter().enumerate() {
                let text = strip_tags(c);
                let numeric = k > 0
                    && text
                        .trim_start_matches(['+', '−', '-'])
                        .starts_with(|ch: char| ch.is_ascii_digit());
                if numeric {
                    let _ = write!(o, "<td class=\"num\">{c}</td>");
                } else {
                    let _ = write!(o, "<td>{c}</td>");
                }
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody></table>");
        o
    }
}

fn strip_tags(s: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for ch in s.chars() {
        match ch {
            '<' => inside = true,
            '>' => inside = false,
            c if !inside => out.push(c),
            _ => {}
        }
    }
    out
}

fn swatch(i: usize) -> String {
    format!(
        "<span class=\"sw\" style=\"background:{}\"></span>",
        charts::css_colour(i)
    )
}

/// The page as it is built.
struct Page {
    body: String,
    toc: Vec<(String, String)>,
    ids: usize,
}

impl Page {
    fn section(&mut self, title: &str, lead: &str) {
        self.ids += 1;
        let id = format!("s{}", self.ids);
        let _ = write!(self.body, "<section id=\"{id}\"><h2>{}</h2>", escape(title));
        if !lead.is_empty() {
            let _ = write!(self.body, "<p class=\"lead\">{lead}</p>");
        }
        self.toc.push((id, title.to_string()));
    }

    fn end_section(&mut self) {
        self.body.push_str("</section>");
    }

    /// A chart with its table and notes beside it.
    fn card(&mut self, title: &str, sub: &str, svg: &str, side: &str) {
        let _ = write!(
            self.body,
            "<div class=\"card\"><h3>{}</h3><p class=\"sub\">{}</p><div class=\"body\">\
             <div class=\"chart\">{svg}</div><div class=\"side\">{side}</div></div></div>",
            escape(title),
            sub
        );
    }

    /// A card without a chart.
    fn plain_card(&mut self, title: &str, sub: &str, content: &str) {
        let _ = write!(
            self.body,
            "<div class=\"card\"><h3>{}</h3><p class=\"sub\">{}</p>{content}</div>",
            escape(title),
            sub
        );
    }
}

fn busy_note(busy: usize, all: usize) -> String {
    if busy == 0 {
        return String::new();
    }
    format!(
        "<p class=\"note\"><span class=\"busy\">*</span> busy machine: {busy} of {all} samples \
         were timed while other processes used more than {:.0}% of the CPUs; their times may be \
         inflated.</p>",
        BUSY_SHARE * 100.0
    )
}

const SPREAD_NOTE: &str = "<p class=\"note\">Bars: median over rounds of the baseline's time / \
     the layout's time, each pair timed in the same round; whiskers: the lowest and highest \
     per-round ratio. In brackets: the 95 % interval of the median speedup, from the per-round \
     ratios' order statistics (none below 6 rounds). Spread: median absolute deviation of the times from their median, as a \
     share of the median.</p>";

/// A speedup chart and its table, for any timed comparison.
fn bars_card(page: &mut Page, title: &str, sub: &str, time_title: &str, bars: &[Bar]) {
    let Some(base) = bars.first() else { return };
    let drawn: Vec<BarSpec> = bars
        .iter()
        .enumerate()
        .skip(1)
        .filter_map(|(i, b)| {
            Some(BarSpec {
                label: b.label.clone(),
                value: b.speedup?,
                whisker: b.ratio_range,
                colour: i - 1,
            })
        })
        .collect();
    let mut t = Table::new(&[
        "layout",
        &format!("{time_title} (min – max)"),
        "spread",
        "speedup (per round)",
        "huge share",
    ]);
    let (mut busy, mut all) = (0, 0);
    for (i, b) in bars.iter().enumerate() {
        busy += b.busy;
        all += b.samples;
        t.row(vec![
            format!(
                "{}{}{}",
                if i == 0 { String::new() } else { swatch(i - 1) },
                escape(&b.label),
                if b.busy > 0 {
                    " <span class=\"busy\">*</span>"
                } else {
                    ""
                }
            ),
            format!(
                "{}<span class=\"rng\">{}</span>",
                ns(b.time.median),
                ns_range(b.time.min, b.time.max)
            ),
            pct(b.time.mad_rel),
            match (i, b.speedup) {
                (0, _) => "baseline".into(),
                (_, Some(s)) => format!(
                    "{s:.2}×{}<span class=\"rng\">{}</span>",
                    b.ci95
                        .map(|c| format!(
                            " <span class=\"ci\" title=\"95 % interval of the median \
                             ({:.1} % coverage)\">[{:.2} – {:.2}]</span>",
                            c.coverage * 100.0,
                            c.lo,
                            c.hi
                        ))
                        .unwrap_or_default(),
                    b.ratio_range
                        .map(|(l, h)| format!("{l:.2} – {h:.2}×"))
                        .unwrap_or_default()
                ),
                (_, None) => "—".into(),
            },
            pct(b.huge_share),
        ]);
    }
    let side = format!("{}{}{SPREAD_NOTE}", t.html(), busy_note(busy, all));
    let svg = if drawn.is_empty() {
        "<p class=\"note\">Only the baseline was timed: nothing to compare.</p>".to_string()
    } else {
        charts::bars(&Bars {
            y_title: format!("speedup over {} (×)", base.label),
            bars: drawn,
            reference: 1.0,
            reference_label: format!("{} = 1×", base.label),
        })
    };
    page.card(title, sub, &svg, &side);
}

/// `176.4 – 183.6 ms`: one unit when both ends print in the same one.
fn ns_range(lo: f64, hi: f64) -> String {
    let (a, b) = (ns(lo), ns(hi));
    match (a.rsplit_once(' '), b.rsplit_once(' ')) {
        (Some((x, u)), Some((y, v))) if u == v => format!("{x} – {y} {u}"),
        _ => format!("{a} – {b}"),
    }
}

fn shape_of(e: &Entry) -> Option<String> {
    e.meta().study.as_ref().map(|t| t.shape.describe())
}

fn pages_card(page: &mut Page, e: &Entry, r: &PagesReport) {
    let title = match &e.meta().study {
        Some(t) if t.label.contains(&r.graph_spec) => t.label.clone(),
        Some(t) => format!("{}: {} on {}", t.label, r.kernel.name(), r.graph_spec),
        None => format!("{} on {}", r.kernel.name(), r.graph_spec),
    };
    let sub = format!(
        "{}; {} vertices, {} edges, {} of graph arrays; {} threads, {} rounds{}",
        escape(&r.kernel.to_string()),
        r.graph.vertices,
        r.graph.edges,
        bytes(r.graph.data_bytes),
        r.threads,
        r.rounds,
        shape_of(e)
            .map(|s| format!("; machine {}", escape(&s)))
            .unwrap_or_default()
    );
    bars_card(page, &title, &sub, "median", &figures::pages_bars(r));
}

fn ratio_table(x_title: &str, series: &[Series], fmt: fn(f64) -> String) -> String {
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let mut head = vec![x_title.to_string()];
    head.extend(series.iter().map(|s| s.name.clone()));
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(&head);
    for (i, s) in series.iter().enumerate() {
        t.head[i + 1] = format!("{}{}", swatch(s.colour), t.head[i + 1]);
    }
    for x in xs {
        let mut row = vec![charts::plain(x)];
        for s in series {
            row.push(
                s.points
                    .iter()
                    .find(|p| p.0 == x)
                    .map(|p| fmt(p.1))
                    .unwrap_or_else(|| "—".into()),
            );
        }
        t.row(row);
    }
    t.html()
}

fn sensitivity_cards(page: &mut Page, runs: &[&Entry]) {
    for s in figures::sensitivity(runs) {
        let x_short = match s.axis {
            figures::Axis::Fragment => "fragmentation %",
            figures::Axis::FreeBeyond => "free beyond, GiB",
        };
        if !s.speedup.is_empty() {
            let svg = charts::lines(&Lines {
                references: vec![("baseline = 1×".into(), 1.0)],
                y_format: Ticks::Times,
                ..Lines::linear(
                    s.axis.title(),
                    "median speedup over the baseline (×)",
                    s.speedup.clone(),
                )
            });
            let side = ratio_table(x_short, &s.speedup, |v| format!("{v:.2}×"));
            page.card(
                &format!("Speedup against the machine's shape: {}", s.what),
                "Each point is one run of the study, its layouts alternated round by round.",
                &svg,
                &side,
            );
        }
        let svg = charts::lines(&Lines {
            y_from_zero: true,
            ..Lines::linear(
                s.axis.title(),
                "footprint in huge pages (%)",
                s.huge_share.clone(),
            )
        });
        let side = ratio_table(x_short, &s.huge_share, |v| format!("{v:.1}%"));
        page.card(
            &format!("Huge pages obtained against the machine's shape: {}", s.what),
            "Share of every array's bytes in huge pages after the last round, read from the kernel.",
            &svg,
            &side,
        );
    }
}

fn curves_cards(page: &mut Page, e: &Entry, c: &Curves) {
    let u = figures::utility(c);
    let name = match &e.meta().study {
        Some(t) => t.label.clone(),
        None => file_name(e),
    };
    let sub = format!(
        "Simulated on the trace {} ({} accesses, {} footprint, TLB {}); speedups are the cost \
         model's estimate{}.",
        escape(&c.trace.display().to_string()),
        c.accesses,
        bytes(c.footprint_bytes),
        escape(&c.tlb.name),
        if c.cost_model.calibrated {
            ", fitted to measured runs"
        } else {
            ", not calibrated"
        }
    );
    // Budgets from 1% to 100% read best on a log axis (budget 0 is the 4 KiB line).
    let positive = |s: &[Series]| -> Vec<Series> {
        s.iter()
            .map(|x| Series {
                points: x.points.iter().copied().filter(|p| p.0 > 0.0).collect(),
                ..x.clone()
            })
            .collect()
    };
    let budgets: Vec<f64> = u
        .speedup
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| *x > 0.0)
        .collect();
    let lo = budgets.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = budgets.iter().copied().fold(0.0, f64::max);
    let log = budgets.len() > 2 && lo * 20.0 <= hi;
    let (speed, walks) = if log {
        (positive(&u.speedup), positive(&u.walks))
    } else {
        (u.speedup.clone(), u.walks.clone())
    };
    let x_title = "share of the footprint promoted (%)";
    let mut refs = vec![("4 KiB only = 1×".to_string(), 1.0)];
    if let Some((s, _)) = u.ideal {
        refs.push(("all huge (ideal)".to_string(), s));
    }
    let svg = charts::lines(&Lines {
        references: refs,
        x_log: log,
        y_format: Ticks::Times,
        ..Lines::linear(x_title, "estimated speedup over 4 KiB pages (×)", speed)
    });
    let mut side = ratio_table("budget %", &u.speedup, |v| format!("{v:.3}×"));
    if let Some((s, w)) = u.ideal {
        let _ = write!(
            side,
            "<p class=\"note\">All huge: {s:.3}×, {w:.2} walks per 1 000 accesses{}.</p>",
            u.none_walks
                .map(|n| format!("; 4 KiB only: {n:.2}"))
                .unwrap_or_default()
        );
    }
    page.card(&format!("Utility curves: {name}"), &sub, &svg, &side);
    if !u.removed.is_empty() {
        let removed = if log {
            positive(&u.removed)
        } else {
            u.removed.clone()
        };
        let svg = charts::lines(&Lines {
            references: vec![("all huge = 100 %".to_string(), 100.0)],
            x_log: log,
            y_from_zero: true,
            ..Lines::linear(
                x_title,
                "page-table reads removed (% of all huge's)",
                removed,
            )
        });
        let side = ratio_table("budget %", &u.removed, |v| format!("{v:.1}%"));
        page.card(
            &format!("Page-table reads removed against the budget: {name}"),
            "Of the page-table reads that every page huge removes, the share each budget \
             removes: read off the simulated walks, not the cost model's estimate, and what \
             the utility headlines of a study quote.",
            &svg,
            &side,
        );
    }
    let mut refs = Vec::new();
    if let Some(w) = u.none_walks {
        refs.push(("4 KiB only".to_string(), w));
    }
    if let Some((_, w)) = u.ideal {
        refs.push(("all huge".to_string(), w));
    }
    let svg = charts::lines(&Lines {
        references: refs,
        x_log: log,
        y_from_zero: true,
        ..Lines::linear(x_title, "page walks per 1 000 accesses", walks)
    });
    let side = ratio_table("budget %", &u.walks, |v| format!("{v:.2}"));
    page.card(
        &format!("Page walks against the budget: {name}"),
        "Fewer walks is better: what a policy's choice of pages saves the TLB.",
        &svg,
        &side,
    );
    physical_card(page, &name, c);
}

/// Free 2 MiB blocks over the trace under `sim --phys`: each policy at its largest budget,
/// and `all`, with what compaction moved.
fn physical_card(page: &mut Page, name: &str, c: &Curves) {
    let mut shown: Vec<&hugewise_results::sim::Point> = Vec::new();
    for p in c
        .points
        .iter()
        .filter(|p| p.phys.is_some() && p.policy != "none")
    {
        match shown.iter_mut().find(|q| q.policy == p.policy) {
            Some(q) if q.budget_share < p.budget_share => *q = p,
            Some(_) => {}
            None => shown.push(p),
        }
    }
    let Some(label) = shown
        .first()
        .and_then(|p| p.phys.as_ref())
        .map(|r| r.label.clone())
    else {
        return;
    };
    let rate = c.timing.accesses_per_s / c.timing.time_scale;
    let series: Vec<Series> = shown
        .iter()
        .enumerate()
        .map(|(i, p)| Series {
            name: match p.budget_share {
                Some(b) => format!("{} at {}", p.policy, pct(b)),
                None => p.policy.clone(),
            },
            points: p
                .phys
                .iter()
                .flat_map(|r| &r.series)
                .map(|s| (s.at_access as f64 / rate, s.free_blocks as f64))
                .collect(),
            colour: i,
        })
        .collect();
    let svg = charts::lines(&Lines {
        y_from_zero: true,
        ..Lines::linear("policy time (s)", "free 2 MiB blocks", series)
    });
    let mut t = Table::new(&[
        "policy",
        "refused",
        "pages moved",
        "per block",
        "p99.9 latency",
    ]);
    for p in &shown {
        let Some(r) = &p.phys else {
            continue;
        };
        t.row(vec![
            escape(&p.policy),
            r.refused_no_block.to_string(),
            r.pages_moved.to_string(),
            r.pages_per_block
                .map(|x| format!("{x:.0}"))
                .unwrap_or_else(|| "-".into()),
            r.latency_us
                .map(|l| ns(l[2] * 1e3))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    page.card(
        &format!("Physical memory (simulated): {name}"),
        &format!(
            "Promotions need a free block; compaction makes them. Model: {}.",
            escape(&label)
        ),
        &svg,
        &t.html(),
    );
}

fn swap_cards(page: &mut Page, e: &Entry, r: &SwapStudy) {
    let u = figures::swap_lines(r);
    let name = match &e.meta().study {
        Some(t) => t.label.clone(),
        None => file_name(e),
    };
    let x_title = "memory: share of the footprint (%)";
    let failed = r.points.iter().filter(|p| p.run.is_none()).count();
    let sub = format!(
        "{} on {} ({}): each point a run in a memory cgroup with swap, {} of {} points finished; \
         x<i>n</i> runs <i>n</i> threads per CPU, x<i>auto</i> picks the factor trial by trial.",
        escape(&r.kernel),
        escape(&r.graph_spec),
        escape(&r.pages),
        r.points.len() - failed,
        r.points.len()
    );
    let svg = charts::lines(&Lines {
        references: vec![("all in memory, x1".to_string(), 1.0)],
        y_format: Ticks::Times,
        ..Lines::linear(
            x_title,
            "time over all in memory at x1 (×)",
            u.slowdown.clone(),
        )
    });
    let side = ratio_table("memory %", &u.slowdown, |v| format!("{v:.2}×"));
    page.card(&format!("Swapping: {name}"), &sub, &svg, &side);
    let svg = charts::lines(&Lines {
        y_from_zero: true,
        ..Lines::linear(x_title, "CPU idle or waiting for I/O (%)", u.idle.clone())
    });
    let side = ratio_table("memory %", &u.idle, |v| format!("{v:.0} %"));
    page.card(
        &format!("Where the time goes: {name}"),
        "The CPUs' time idle or in iowait while the trials ran (from /proc/stat): what \
         more threads can put to work.",
        &svg,
        &side,
    );
    let svg = charts::lines(&Lines {
        y_from_zero: true,
        ..Lines::linear(
            x_title,
            "swap device: mean requests in flight",
            u.queue.clone(),
        )
    });
    let side = ratio_table("memory %", &u.queue, |v| format!("{v:.1}"));
    page.card(
        &format!("Swap device queue depth: {name}"),
        "Mean requests in flight on the swap device (from /proc/diskstats): a deeper queue \
         is what overcommit buys from the disk.",
        &svg,
        &side,
    );
}

fn faultlat_card(page: &mut Page, title: &str, runs: &[(&Entry, &FaultlatReport)]) {
    if runs.is_empty() {
        return;
    }
    let mut series = Vec::new();
    let mut t = Table::new(&[
        "run",
        "faults",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "touch loop",
        "huge",
    ]);
    for (e, r) in runs {
        let name = match &e.meta().study {
            Some(tag) => tag.label.clone(),
            None => format!("{} {}", r.policy, bytes(r.bytes)),
        };
        let l = &r.fault_latency;
        let i = series.len();
        series.push(Series {
            name: format!("{name}: fault"),
            points: figures::cdf(l),
            colour: i,
        });
        let mut row = vec![
            format!("{}{}", swatch(i), escape(&name)),
            l.count.to_string(),
        ];
        row.extend(percentiles(l));
        row.extend([ns(r.touch_wall_ns as f64), pct(r.backing.huge_share())]);
        t.row(row);
        if let Some(c) = &r.collapse {
            let i = series.len();
            series.push(Series {
                name: format!("{name}: collapse"),
                points: figures::cdf(&c.latency),
                colour: i,
            });
            let l = &c.latency;
            let mut row = vec![
                format!(
                    "{}{} collapse ({} of {} pieces)",
                    swatch(i),
                    escape(&name),
                    c.collapsed,
                    c.pieces
                ),
                l.count.to_string(),
            ];
            row.extend(percentiles(l));
            row.extend(["—".into(), pct(c.backing.huge_share())]);
            t.row(row);
        }
    }
    series.retain(|s| !s.points.is_empty());
    let svg = charts::lines(&Lines {
        x_log: true,
        x_format: Ticks::Latency,
        ..Lines::linear(
            "latency of one fault or collapse",
            "events at or below (%)",
            series,
        )
    });
    let side = format!(
        "{}<p class=\"note\">Drawn through the saved percentiles (50, 90, 99, 99.9, max). A THP \
         fault maps 2 MiB at once, a 4 KiB fault one page: compare the touch loop's total too. \
         Latencies include the timer's own overhead.</p>",
        t.html()
    );
    page.card(
        title,
        "How long a first touch waits for the kernel, per event.",
        &svg,
        &side,
    );
}

fn promote_card(page: &mut Page, e: &Entry, r: &PromoteReport) {
    let pts = figures::contiguity(r);
    let mut refs = Vec::new();
    if let Some(b) = r.intervals.last().map(|i| i.budget_bytes) {
        refs.push(("budget".to_string(), b as f64 / (1u64 << 20) as f64));
    }
    let svg = charts::lines(&Lines {
        references: refs,
        y_from_zero: true,
        ..Lines::linear(
            "time since the start (s)",
            "target memory in 2 MiB pages (MiB)",
            vec![Series {
                name: format!("{} {}", r.mode, r.policy),
                points: pts,
                colour: 0,
            }],
        )
    });
    let t = &r.totals;
    let mut tab = Table::new(&["", "value"]);
    for (k, v) in [
        ("promoted", t.promoted.to_string()),
        ("refused or not huge", t.promote_failed.to_string()),
        ("demoted", t.demoted.to_string()),
        (
            "huge at the end",
            t.huge_bytes_final.map(bytes).unwrap_or_else(|| "—".into()),
        ),
        (
            "collapse p50 / p99",
            match (t.collapse_p50_ns, t.collapse_p99_ns) {
                (Some(a), Some(b)) => format!("{} / {}", ns(a as f64), ns(b as f64)),
                _ => "—".into(),
            },
        ),
        (
            "daemon CPU",
            t.daemon_core_share
                .map(|s| format!("{} of a core", pct(s)))
                .unwrap_or_else(|| "—".into()),
        ),
        (
            "budget reached after",
            t.reach_budget_ms
                .map(|m| ns(m * 1e6))
                .unwrap_or_else(|| "—".into()),
        ),
        ("session", ns(r.wall_ns as f64)),
    ] {
        tab.row(vec![escape(k), v]);
    }
    page.card(
        &format!(
            "Contiguity over time: {}",
            e.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ),
        &format!(
            "hugewise promote ({}, policy {}{}), huge bytes read back from the kernel.",
            escape(&r.mode),
            escape(&r.policy),
            r.budget
                .as_ref()
                .map(|b| format!(", budget {}", escape(b)))
                .unwrap_or_default()
        ),
        &svg,
        &tab.html(),
    );
}

fn file_name(e: &Entry) -> String {
    e.path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Charts and tables for a set of results (a study's runs, or the files outside any study).
fn results(page: &mut Page, entries: &[&Entry], c: &Collection) {
    for e in entries {
        match &e.result {
            AnyResult::Pages(s) => pages_card(page, e, &s.result),
            AnyResult::Randread(s) => bars_card(
                page,
                &format!("Random reads: {}", file_name(e)),
                &format!(
                    "bench randread over {}, {} rounds{}.",
                    bytes(s.result.bytes),
                    s.result.rounds,
                    crate::fmt::stopped(s.result.stopped)
                ),
                "per read",
                &figures::randread_bars(&s.result),
            ),
            AnyResult::BenchPromote(s) => {
                for w in &s.result.workloads {
                    bars_card(
                        page,
                        &format!(
                            "Promotion benchmark, {}: {}",
                            crate::views::promote::label(w),
                            file_name(e)
                        ),
                        &format!(
                            "bench promote, {}; budget {}{}.",
                            w.describe(),
                            pct(w.budget_share),
                            w.shaped
                                .as_ref()
                                .map(|sh| format!("; on a shaped machine ({})", sh.describe()))
                                .unwrap_or_default()
                        ),
                        if w.graph.is_some() {
                            "per timed trial"
                        } else {
                            "per read"
                        },
                        &figures::promote_bench_bars(w),
                    );
                }
            }
            _ => {}
        }
    }
    sensitivity_cards(page, entries);
    for e in entries {
        match &e.result {
            AnyResult::Curves(s) => curves_cards(page, e, &s.result),
            AnyResult::Promote(s) => promote_card(page, e, &s.result),
            AnyResult::Swap(s) => swap_cards(page, e, &s.result),
            _ => {}
        }
    }
    // Fault latencies of one machine share a chart.
    for (m, machine) in c.machines.iter().enumerate() {
        let runs: Vec<(&Entry, &FaultlatReport)> = entries
            .iter()
            .filter(|e| e.machine == m)
            .filter_map(|e| match &e.result {
                AnyResult::Faultlat(s) => Some((*e, &s.result)),
                _ => None,
            })
            .collect();
        faultlat_card(
            page,
            &format!("Page-fault latency on {}", machine.name()),
            &runs,
        );
    }
    for e in entries {
        let charted = matches!(
            e.result,
            AnyResult::Pages(_)
                | AnyResult::Randread(_)
                | AnyResult::BenchPromote(_)
                | AnyResult::Curves(_)
                | AnyResult::Promote(_)
                | AnyResult::Faultlat(_)
                | AnyResult::Swap(_)
                | AnyResult::Machine(_)
        );
        if charted {
            continue;
        }
        if let Some(text) = crate::render(&e.result, crate::Style::Text) {
            page.plain_card(
                &file_name(e),
                &format!("A {} result, as the command printed it.", e.result.schema()),
                &format!("<pre>{}</pre>", escape(&text)),
            );
        }
    }
}

fn gap_cell(h: &Headline) -> String {
    match gap(h) {
        Some((text, above)) => format!(
            "<span class=\"{}\">{text}</span>",
            if above { "gap-good" } else { "gap-bad" }
        ),
        None => "—".into(),
    }
}

fn headlines_html(h: &[Headline]) -> String {
    let mut t = Table::new(&[
        "#",
        "headline",
        "here",
        "interval",
        "scale",
        "paper",
        "gap",
        "source",
        "runs",
        "why it may differ",
    ]);
    t.class = "headlines";
    for (i, x) in h.iter().enumerate() {
        let scale = match &x.scale {
            Some(s) if s.far_below_paper => format!(
                "<span class=\"gap-bad\" title=\"far below the paper's inputs\">{}</span>",
                escape(&scale_text(x))
            ),
            _ => escape(&scale_text(x)),
        };
        t.row(vec![
            (i + 1).to_string(),
            escape(&x.claim.what),
            match x.measured {
                Some(_) => format!("<strong>{}</strong>", escape(&headline_value(x))),
                None => escape(&headline_value(x)),
            },
            escape(&interval_text(x)),
            scale,
            escape(&x.claim.paper_text),
            gap_cell(x),
            escape(&x.claim.source),
            x.runs.to_string(),
            escape(&x.claim.gap),
        ]);
    }
    let legend: String = headline_legend(h)
        .lines()
        .map(|l| format!("<p class=\"note\">{}</p>", escape(l)))
        .collect();
    format!("{}{legend}", t.html())
}

/// A date from seconds since the epoch (UTC), for the machines' tables.
fn date(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    // Days to a civil date (Howard Hinnant's algorithm, public domain arithmetic).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let secs = unix_s % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        secs / 3600,
        (secs % 3600) / 60
    )
}

fn machine_card(page: &mut Page, c: &Collection, i: usize, m: &Machine) {
    let meta = &m.meta;
    let entries: Vec<&Entry> = c.results.iter().filter(|e| e.machine == i).collect();
    let started = entries.iter().map(|e| e.meta().started_unix_s).chain(
        c.plans
            .iter()
            .filter(|p| p.machine == i)
            .map(|p| p.meta.started_unix_s),
    );
    let first = started.clone().min();
    let last = started.max();
    let mut kv = String::from("<dl class=\"kv\">");
    let mut item = |k: &str, v: String| {
        let _ = write!(kv, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(&v));
    };
    item(
        "host",
        m.host.clone().unwrap_or_else(|| "not recorded".into()),
    );
    item(
        "CPU",
        format!(
            "{}, {} logical CPUs",
            m.cpu_model.as_deref().unwrap_or("unknown"),
            meta.cpus
        ),
    );
    item(
        "memory",
        meta.mem_total_bytes
            .map(bytes)
            .unwrap_or_else(|| "unknown".into()),
    );
    item("kernel", m.kernels.join(", "));
    item("THP enabled / defrag", m.thp.join("; "));
    item("hugewise", meta.tool_version.clone());
    item(
        "results",
        format!(
            "{} result files{}",
            entries.len(),
            match (first, last) {
                (Some(a), Some(b)) if a != b => format!(", {} to {}", date(a), date(b)),
                (Some(a), _) => format!(", {}", date(a)),
                _ => String::new(),
            }
        ),
    );
    kv.push_str("</dl>");
    let mut shapes = Table::new(&[
        "run",
        "shape asked",
        "fragmentation",
        "available",
        "free 2 MiB blocks",
        "THP probe",
        "warnings",
    ]);
    let mut any = false;
    for e in &entries {
        let Some(tag) = &e.meta().study else { continue };
        let Some(s) = &tag.shaped else { continue };
        any = true;
        shapes.row(vec![
            escape(&tag.run),
            escape(&tag.shape.describe()),
            pct(s.shaped.unusable_share),
            bytes(s.shaped.available()),
            s.shaped.free_2m_blocks.to_string(),
            s.probe
                .as_ref()
                .map(|p| format!("{} huge", pct(p.huge_share)))
                .unwrap_or_else(|| "—".into()),
            escape(&s.warnings.join("; ")),
        ]);
    }
    let mut content = kv;
    if any {
        content.push_str("<h4>Machine shapes, measured once shaped (before each run)</h4>");
        content.push_str(&shapes.html());
    }
    if let Some(AnyResult::Machine(s)) = m.sys.and_then(|k| c.results.get(k)).map(|e| &e.result) {
        let _ = write!(
            content,
            "<details><summary>hugewise sys on this machine</summary><pre>{}</pre></details>",
            escape(&crate::views::machine::machine(&s.result))
        );
    }
    page.plain_card(&m.name(), "", &content);
}

/// The report over everything in `c`, as one HTML page.
pub fn render(c: &Collection) -> String {
    let mut page = Page {
        body: String::new(),
        toc: Vec::new(),
        ids: 0,
    };
    if !c.plans.is_empty() {
        page.section(
            "Headlines",
            "Each study's answer in the seed papers' terms, next to the paper's number.",
        );
        for (i, p) in c.plans.iter().enumerate() {
            let h = c.headlines(i);
            let machine = c
                .machines
                .get(p.machine)
                .map(Machine::name)
                .unwrap_or_default();
            let title = format!("{} on {}", p.plan.preset, machine);
            if h.is_empty() {
                page.plain_card(&title, "This preset sets no seed numbers.", "");
            } else {
                page.plain_card(&title, &escape(&p.plan.question), &headlines_html(&h));
            }
        }
        page.end_section();
    }
    for (i, p) in c.plans.iter().enumerate() {
        let machine = c
            .machines
            .get(p.machine)
            .map(Machine::name)
            .unwrap_or_default();
        let plan = &p.plan;
        let runs = c.runs_of(i);
        let done: Vec<&str> = runs
            .iter()
            .map(|e| {
                e.meta()
                    .study
                    .as_ref()
                    .map(|t| t.run.as_str())
                    .unwrap_or("")
            })
            .collect();
        let missing: Vec<String> = plan
            .runs
            .iter()
            .filter(|r| !done.contains(&r.id.as_str()))
            .map(|r| format!("{} ({})", r.id, work_line(&r.work)))
            .collect();
        let lead = format!(
            "{}<br>Reproduces {}. {} of {} runs found in {}{}; {} threads, {} rounds per \
             comparison.{}",
            escape(&plan.question),
            escape(&plan.reproduces),
            runs.len(),
            plan.runs.len(),
            escape(&p.dir.display().to_string()),
            if plan.quick { " (quick)" } else { "" },
            plan.threads,
            plan.repeat,
            if missing.is_empty() {
                String::new()
            } else {
                format!(
                    " Not run (or not finished): {}.",
                    escape(&missing.join(", "))
                )
            }
        );
        page.section(&format!("Study {} on {}", plan.preset, machine), &lead);
        results(&mut page, &runs, c);
        page.end_section();
    }
    let loose = c.loose();
    let loose: Vec<&Entry> = loose
        .into_iter()
        .filter(|e| !matches!(e.result, AnyResult::Machine(_)))
        .collect();
    if !loose.is_empty() {
        page.section(
            if c.plans.is_empty() {
                "Results"
            } else {
                "Results outside a study"
            },
            "",
        );
        results(&mut page, &loose, c);
        page.end_section();
    }
    if !c.machines.is_empty() {
        page.section(
            "Machines and settings",
            "Where the results were measured; merged directories keep each machine apart.",
        );
        for (i, m) in c.machines.iter().enumerate() {
            machine_card(&mut page, c, i, m);
        }
        page.end_section();
    }
    let mut inputs = String::new();
    for p in &c.plans {
        let _ = writeln!(inputs, "{}", escape(&p.path.display().to_string()));
    }
    for e in &c.results {
        let _ = writeln!(inputs, "{}", escape(&e.path.display().to_string()));
    }

    let studies = c.plans.len();
    let mut o = String::with_capacity(page.body.len() + 8192);
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    let title = match c.plans.first() {
        Some(p) => format!("hugewise report: {}", p.plan.preset),
        None => "hugewise report".to_string(),
    };
    let _ = write!(
        o,
        "<title>{}</title><style>{CSS}</style></head><body>",
        escape(&title)
    );
    let _ = write!(
        o,
        "<header class=\"top\"><h1>{}</h1><p>{} result file{}{} from {} machine{}, rendered from \
         the saved files (nothing was re-run).</p><nav class=\"toc\">",
        escape(&title),
        c.results.len(),
        if c.results.len() == 1 { "" } else { "s" },
        match studies {
            0 => String::new(),
            1 => " of 1 study".into(),
            n => format!(" of {n} studies"),
        },
        c.machines.len(),
        if c.machines.len() == 1 { "" } else { "s" }
    );
    for (id, t) in &page.toc {
        let _ = write!(o, "<a href=\"#{id}\">{}</a>", escape(t));
    }
    o.push_str("</nav></header><main>");
    o.push_str(&page.body);
    let _ =
        writeln!(
        o,
        "<details><summary>Files read</summary><pre>{inputs}</pre></details></main><footer>Made \
         by hugewise {} report.</footer></body></html>",
        escape(&c.machines.first().map(|m| m.meta.tool_version.clone()).unwrap_or_default())
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(date(0), "1970-01-01 00:00 UTC");
        assert_eq!(date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(date(1_700_000_000), "2023-11-14 22:13 UTC");
    }
}
