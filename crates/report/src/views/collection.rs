//! Views of a whole [`Collection`] besides the HTML page: terminal text, Markdown (headlines
//! and tables) and CSV (one row per `bench pages` layout per run). All read the same digest as
//! the HTML report, so the numbers agree.

use std::fmt::Write;

use hugewise_results::collection::{Collection, Entry};
use hugewise_results::pagebench::PagesReport;
use hugewise_results::AnyResult;

use crate::figures::{self, Bar};
use crate::fmt::{bytes, ns, pct};
use crate::table::Table;
use crate::views::study::{gap, metric_value};

fn study_title(c: &Collection, i: usize) -> String {
    let p = &c.plans[i];
    let machine = c
        .machines
        .get(p.machine)
        .map(|m| m.name())
        .unwrap_or_default();
    format!(
        "study {}{} on {machine}",
        p.plan.preset,
        if p.plan.quick { " (quick)" } else { "" }
    )
}

fn pages_runs<'a>(runs: &[&'a Entry]) -> Vec<(String, &'a PagesReport)> {
    runs.iter()
        .filter_map(|e| match &e.result {
            AnyResult::Pages(s) => Some((e.run_id(), &s.result)),
            _ => None,
        })
        .collect()
}

fn header_line(e: &Entry) -> String {
    format!("== {} ({}) ==\n", e.run_id(), e.path.display())
}

/// Every study's plan summary, headlines and `pages` table, then each other result as its
/// command printed it.
pub fn text(c: &Collection) -> String {
    let mut o = String::new();
    for (i, p) in c.plans.iter().enumerate() {
        let _ = writeln!(o, "{}: {}", study_title(c, i), p.plan.question);
        let _ = writeln!(o, "figures {}\n", p.plan.reproduces);
        let h = c.headlines(i);
        if !h.is_empty() {
            o.push_str(&crate::views::study::headlines(&h));
            o.push('\n');
        }
        let runs = c.runs_of(i);
        let pages = pages_runs(&runs);
        if !pages.is_empty() {
            let refs: Vec<(&str, &PagesReport)> =
                pages.iter().map(|(id, r)| (id.as_str(), *r)).collect();
            o.push_str(&crate::views::study::pages_table(&refs));
            o.push('\n');
        }
        for e in runs {
            if matches!(e.result, AnyResult::Pages(_)) {
                continue;
            }
            if let Some(t) = crate::render(&e.result, crate::Style::Text) {
                o.push_str(&header_line(e));
                o.push_str(&t);
                o.push('\n');
            }
        }
    }
    for e in c.loose() {
        if let Some(t) = crate::render(&e.result, crate::Style::Text) {
            o.push_str(&header_line(e));
            o.push_str(&t);
            o.push('\n');
        }
    }
    o.push_str(&machines_text(c));
    crate::escape::controls(&o).into_owned()
}

fn machines_text(c: &Collection) -> String {
    let mut t = Table::new([
        "machine", "cpu", "cpus", "memory", "kernel", "thp", "results",
    ]);
    for i in 0..c.machines.len() {
        t.row(machine_row(c, i));
    }
    t.render()
}

/// Machine `i`: name, CPU, CPUs, memory, kernels, THP settings, results.
fn machine_row(c: &Collection, i: usize) -> Vec<String> {
    let m = &c.machines[i];
    vec![
        m.name(),
        m.cpu_model.clone().unwrap_or_default(),
        m.meta.cpus.to_string(),
        m.meta.mem_total_bytes.map(bytes).unwrap_or_default(),
        m.kernels.join(", "),
        m.thp.join("; "),
        c.results
            .iter()
            .filter(|e| e.machine == i)
            .count()
            .to_string(),
    ]
}

/// A latency distribution's percentiles as table cells: p50, p90, p99, p99.9, max.
pub(crate) fn percentiles(l: &hugewise_results::faultlat::Latency) -> [String; 5] {
    [l.p50_ns, l.p90_ns, l.p99_ns, l.p999_ns, l.max_ns].map(|x| ns(x as f64))
}

/// A Markdown table cell: pipes escaped, line breaks folded.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn md_table(head: &[&str], right: &[bool], rows: &[Vec<String>]) -> String {
    let mut o = format!("| {} |\n|", head.join(" | "));
    for (i, _) in head.iter().enumerate() {
        o.push_str(if right.get(i) == Some(&true) {
            "---:|"
        } else {
            "---|"
        });
    }
    o.push('\n');
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o
}

fn speedup_cell(i: usize, b: &Bar) -> String {
    match (i, b.speedup) {
        (0, _) => "baseline".into(),
        (_, Some(s)) => crate::fmt::ratio_ci(s, b.ci95, b.samples, 2),
        (_, None) => String::new(),
    }
}

fn range_cell(b: &Bar) -> String {
    b.ratio_range
        .map(|(l, h)| format!("{l:.2}–{h:.2}x"))
        .unwrap_or_default()
}

fn pages_md(runs: &[&Entry]) -> String {
    let mut rows = Vec::new();
    let mut busy = 0;
    for e in runs {
        let AnyResult::Pages(s) = &e.result else {
            continue;
        };
        let r = &s.result;
        let shape = e
            .meta()
            .study
            .as_ref()
            .map(|t| t.shape.describe())
            .unwrap_or_default();
        for (i, b) in figures::pages_bars(r).iter().enumerate() {
            busy += b.busy;
            rows.push(vec![
                if i == 0 { e.run_id() } else { String::new() },
                if i == 0 { shape.clone() } else { String::new() },
                if i == 0 {
                    format!("{} on {}", r.kernel.name(), r.graph_spec)
                } else {
                    String::new()
                },
                format!("{}{}", b.label, if b.busy > 0 { " *" } else { "" }),
                ns(b.time.median),
                speedup_cell(i, b),
                range_cell(b),
                pct(b.time.mad_rel),
                pct(b.huge_share),
            ]);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut o = md_table(
        &[
            "run",
            "machine shape",
            "kernel",
            "layout",
            "median",
            "speedup",
            "per-round range",
            "spread",
            "huge share",
        ],
        &[false, false, false, false, true, true, true, true, true],
        &rows,
    );
    o.push_str(
        "\nspeedup: median over rounds of the baseline's time / the layout's, timed in the same \
         round, with its 95 % interval in brackets; spread: median absolute deviation of the times, as a share of the median.\n",
    );
    if busy > 0 {
        o.push_str(
            "\n\\* a sample of this layout was timed while other processes kept the CPUs busy.\n",
        );
    }
    o
}

fn curves_md(e: &Entry, c: &hugewise_results::sim::Curves) -> String {
    let rows: Vec<Vec<String>> = c
        .points
        .iter()
        .map(|p| {
            vec![
                p.policy.clone(),
                p.budget_share.map(pct).unwrap_or_default(),
                format!("{:.3}x", p.est_speedup),
                format!("{:.2}", p.walks_per_kacc),
                pct(p.huge_share),
            ]
        })
        .collect();
    format!(
        "Utility curve {} (simulated, {} footprint):\n\n{}",
        e.run_id(),
        bytes(c.footprint_bytes),
        md_table(
            &[
                "policy",
                "budget",
                "est. speedup",
                "walks / 1k accesses",
                "huge share"
            ],
            &[false, true, true, true, true],
            &rows
        )
    )
}

fn faultlat_md(runs: &[&Entry]) -> String {
    let mut rows = Vec::new();
    for e in runs {
        let AnyResult::Faultlat(s) = &e.result else {
            continue;
        };
        let r = &s.result;
        let l = &r.fault_latency;
        let mut row = vec![
            e.run_id(),
            r.policy.clone(),
            bytes(r.bytes),
            l.count.to_string(),
        ];
        row.extend(percentiles(l));
        row.push(pct(r.backing.huge_share()));
        rows.push(row);
    }
    if rows.is_empty() {
        return String::new();
    }
    md_table(
        &[
            "run", "policy", "region", "faults", "p50", "p90", "p99", "p99.9", "max", "huge",
        ],
        &[false, false, true, true, true, true, true, true, true, true],
        &rows,
    )
}

/// Headlines and tables as Markdown.
pub fn markdown(c: &Collection) -> String {
    let mut o = String::from("# hugewise report\n\n");
    for (i, p) in c.plans.iter().enumerate() {
        let _ = writeln!(o, "## {}\n\n{}\n", study_title(c, i), p.plan.question);
        let _ = writeln!(o, "Reproduces {}.\n", p.plan.reproduces);
        let h = c.headlines(i);
        if !h.is_empty() {
            let rows: Vec<Vec<String>> = h
                .iter()
                .enumerate()
                .map(|(k, x)| {
                    vec![
                        (k + 1).to_string(),
                        x.claim.what.clone(),
                        x.measured
                            .map(|v| metric_value(&x.claim.metric, v))
                            .unwrap_or_else(|| "not measured".into()),
                        crate::views::study::interval_text(x),
                        crate::views::study::scale_text(x),
                        x.claim.paper_text.clone(),
                        gap(x).map(|g| g.0).unwrap_or_default(),
                        x.claim.source.clone(),
                        x.runs.to_string(),
                    ]
                })
                .collect();
            o.push_str("### Headlines\n\n");
            o.push_str(&md_table(
                &[
                    "#", "headline", "here", "interval", "scale", "paper", "gap", "source", "runs",
                ],
                &[true, false, true, true, false, false, true, false, true],
                &rows,
            ));
            let notes: Vec<String> = h
                .iter()
                .enumerate()
                .filter(|(_, x)| !x.claim.gap.is_empty())
                .map(|(k, x)| format!("{}. {}", k + 1, x.claim.gap))
                .collect();
            let _ = write!(
                o,
                "\n{}",
                crate::views::study::headline_legend(&h)
                    .lines()
                    .map(|l| format!("{l}\n"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            if !notes.is_empty() {
                let _ = write!(
                    o,
                    "\nWhy here may differ from the paper:\n\n{}\n",
                    notes.join("\n")
                );
            }
            o.push('\n');
        }
        let runs = c.runs_of(i);
        o.push_str(&results_md(&runs));
    }
    let loose = c.loose();
    if !loose.is_empty() {
        o.push_str(if c.plans.is_empty() {
            "## Results\n\n"
        } else {
            "## Results outside a study\n\n"
        });
        o.push_str(&results_md(&loose));
        for e in &loose {
            if matches!(
                e.result,
                AnyResult::Pages(_) | AnyResult::Curves(_) | AnyResult::Faultlat(_)
            ) {
                continue;
            }
            let body = crate::render(&e.result, crate::Style::Markdown)
                .map(|m| format!("{m}\n"))
                .or_else(|| {
                    crate::render(&e.result, crate::Style::Text).map(|t| format!("```\n{t}```\n"))
                })
                .unwrap_or_default();
            let _ = writeln!(o, "{}:\n\n{body}", e.path.display());
        }
    }
    o.push_str("## Machines\n\n");
    let rows: Vec<Vec<String>> = (0..c.machines.len()).map(|i| machine_row(c, i)).collect();
    o.push_str(&md_table(
        &[
            "machine",
            "CPU",
            "CPUs",
            "memory",
            "kernel",
            "THP enabled / defrag",
            "results",
        ],
        &[false, false, true, true, false, false, true],
        &rows,
    ));
    crate::escape::controls(&o).into_owned()
}

fn results_md(runs: &[&Entry]) -> String {
    let mut o = String::new();
    let pages = pages_md(runs);
    if !pages.is_empty() {
        let _ = writeln!(o, "{pages}");
    }
    for e in runs {
        if let AnyResult::Curves(s) = &e.result {
            let _ = writeln!(o, "{}", curves_md(e, &s.result));
        }
    }
    let f = faultlat_md(runs);
    if !f.is_empty() {
        let _ = writeln!(o, "Page-fault latency:\n\n{f}");
    }
    o
}

/// The columns of [`csv`].
pub const CSV_COLUMNS: &[&str] = &[
    "study",
    "run",
    "label",
    "shape",
    "machine",
    "cpu",
    "linux",
    "thp",
    "graph",
    "vertices",
    "edges",
    "kernel",
    "threads",
    "rounds",
    "variant",
    "kernel_pages",
    "graph_pages",
    "reorder",
    "median_ns",
    "min_ns",
    "max_ns",
    "mad_rel",
    "speedup",
    "speedup_min",
    "speedup_max",
    "huge_share",
    "busy_samples",
    "samples",
    "file",
];

/// A CSV field, quoted when it holds a comma, quote or line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v}")).unwrap_or_default()
}

/// One row per `bench pages` layout per run; a value not measured is an empty field.
pub fn csv(c: &Collection) -> String {
    let mut o = CSV_COLUMNS.join(",");
    o.push('\n');
    for e in &c.results {
        let AnyResult::Pages(s) = &e.result else {
            continue;
        };
        let r = &s.result;
        let meta = e.meta();
        let tag = meta.study.as_ref();
        let study = e
            .plan
            .and_then(|p| c.plans.get(p))
            .map(|p| p.plan.preset.clone())
            .or_else(|| tag.map(|t| t.preset.clone()))
            .unwrap_or_default();
        let machine = c
            .machines
            .get(e.machine)
            .map(|m| m.name())
            .unwrap_or_default();
        for (i, (b, v)) in figures::pages_bars(r).iter().zip(&r.summary).enumerate() {
            let row = [
                study.clone(),
                tag.map(|t| t.run.clone()).unwrap_or_else(|| e.run_id()),
                tag.map(|t| t.label.clone()).unwrap_or_default(),
                tag.map(|t| t.shape.describe()).unwrap_or_default(),
                machine.clone(),
                meta.cpu_model.clone().unwrap_or_default(),
                meta.kernel.clone().unwrap_or_default(),
                meta.thp_enabled.clone().unwrap_or_default(),
                r.graph_spec.clone(),
                r.graph.vertices.to_string(),
                r.graph.edges.to_string(),
                r.kernel.name().to_string(),
                r.threads.to_string(),
                r.rounds.to_string(),
                b.label.clone(),
                v.pages.clone(),
                v.graph_pages
                    .clone()
                    .unwrap_or_else(|| r.graph_pages.clone()),
                v.reorder.clone().unwrap_or_default(),
                format!("{}", b.time.median),
                format!("{}", b.time.min),
                format!("{}", b.time.max),
                format!("{}", b.time.mad_rel),
                num(b.speedup),
                num(b.ratio_range.map(|x| x.0).or((i == 0).then_some(1.0))),
                num(b.ratio_range.map(|x| x.1).or((i == 0).then_some(1.0))),
                format!("{}", b.huge_share),
                b.busy.to_string(),
                b.samples.to_string(),
                e.path.display().to_string(),
            ];
            let cells: Vec<String> = row.iter().map(|s| field(s)).collect();
            o.push_str(&cells.join(","));
            o.push('\n');
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_with_commas_are_quoted() {
        assert_eq!(field("all=base,property=thp"), "\"all=base,property=thp\"");
        assert_eq!(field("a\"b"), "\"a\"\"b\"");
        assert_eq!(field("plain"), "plain");
    }

    #[test]
    fn markdown_cells_escape_pipes() {
        assert_eq!(cell("a|b"), "a\\|b");
    }
}
