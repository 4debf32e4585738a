//! The report over saved fixtures and assembled study directories: one drawn chart per chart
//! slot, the headlines next to the seeds' numbers, nothing fetched from the network, and the
//! Markdown and CSV views of the same collection.

mod common;

use hugewise_results::collection;

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

fn rendered() -> (tempfile::TempDir, collection::Collection, String) {
    let root = tempfile::tempdir().expect("tmp");
    let c =
        collection::load(&common::inputs(root.path()), &hugewise_sys::read::result).expect("load");
    let html = hugewise_report::html::render(&c);
    if let Ok(out) = std::env::var("HUGEWISE_REPORT_SAMPLE") {
        std::fs::write(out, &html).expect("write sample");
    }
    (root, c, html)
}

#[test]
fn every_chart_slot_holds_one_drawn_svg() {
    let (_root, _c, html) = rendered();
    let slots = count(&html, "<div class=\"chart\">");
    assert!(slots >= 12, "{slots} charts");
    assert_eq!(count(&html, "<svg"), slots, "one svg per chart");
    assert_eq!(count(&html, "</svg>"), slots);
    assert!(
        !html.contains("class=\"chart-error\""),
        "a chart failed to draw"
    );
    for svg in html.split("<svg").skip(1) {
        let svg = &svg[..svg.find("</svg>").expect("closed")];
        let marks = count(svg, "<rect") + count(svg, "<polyline") + count(svg, "<circle");
        assert!(marks > 3, "an empty chart: {}", &svg[..svg.len().min(300)]);
        assert!(count(svg, "<text") > 4, "a chart without labels");
    }
    // Bars, sensitivity lines, utility curves, fault-latency CDFs, contiguity over time.
    for title in [
        "bfs, 50% fragmented: bfs on kron:20",
        "Speedup against the machine&#39;s shape: bfs on kron:20",
        "Huge pages obtained against the machine&#39;s shape",
        "Utility curves: bfs utility curve",
        "Page walks against the budget",
        "Page-table reads removed against the budget: bfs utility curve",
        "Page-fault latency on alpha",
        "Contiguity over time: promote.json",
        "Promotion benchmark, zipf:1: bench-promote.json",
        "Promotion benchmark, zipf:1.5: bench-promote.json",
        "Random reads: bench-randread.json",
    ] {
        assert!(html.contains(title), "no chart {title}");
    }
}

#[test]
fn the_page_is_self_contained() {
    let (_root, _c, html) = rendered();
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(!html.contains("<script") && !html.contains("<link") && !html.contains("src="));
    assert!(!html.contains("url("), "no CSS resource");
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
}

#[test]
fn headlines_stand_next_to_the_papers_numbers() {
    let (_root, c, html) = rendered();
    assert_eq!(
        count(&html, "<table class=\"headlines\">"),
        2,
        "one per machine"
    );
    assert!(html.contains("speedup over 4 KiB, all THP"));
    assert!(html.contains("1.45x") && html.contains("IISWC&#39;22 Fig. 8"));
    assert!(html.contains("gap-bad"), "a gap below the paper is marked");
    assert!(html.contains("not stated"));
    let h = c.headlines(0);
    let measured = h[0].measured.expect("measured");
    assert!(measured > 1.0 && measured < 1.45, "{measured}");
    assert!(html.contains(&format!("<strong>{measured:.2}x</strong>")));
    // Each headline's interval and scale stand beside it; kron:20 is 16x below the
    // paper's 2^24 vertices and flagged, with the paper's inputs in the legend.
    let lo = h[0].interval.expect("interval").lo;
    assert!(html.contains(&format!("[{lo:.2}x, ")), "the interval");
    assert!(html.contains("title=\"far below the paper's inputs\">kron:20 !</span>"));
    assert!(html.contains("! 1. kron:20 against the paper&#39;s graphs of tens of GiB"));
    assert!(
        h[1].scale.as_ref().is_some_and(|s| !s.far_below_paper),
        "no paper scale"
    );
    // A planned run that never ran is named.
    assert!(html.contains("Not run (or not finished): never-ran"));
}

#[test]
fn machines_are_kept_apart() {
    let (_root, c, html) = rendered();
    // The loose fixtures were saved on the machines that ran their commands: one per host and
    // CPU model they name.
    let fixture_machines: std::collections::BTreeSet<(String, String)> = common::loose_fixtures()
        .iter()
        .map(|p| {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).expect("fixture")).expect("json");
            let field = |k: &str| v["meta"][k].as_str().unwrap_or_default().to_string();
            (field("host"), field("cpu_model"))
        })
        .collect();
    assert_eq!(
        c.machines.len(),
        2 + fixture_machines.len(),
        "alpha, beta, and the fixtures' machines"
    );
    assert!(html.contains("Study fragmentation on alpha"));
    assert!(html.contains("Study fragmentation on beta"));
    assert!(html.contains("Machine shapes, measured once shaped"));
    assert!(html.contains("hugewise sys on this machine"));
}

#[test]
fn busy_samples_are_marked() {
    let (_root, _c, html) = rendered();
    assert!(html.contains("<span class=\"busy\">*</span>"));
    assert!(html.contains("busy machine: 1 of 20 samples"));
}

#[test]
fn markdown_and_csv_are_views_of_the_same_collection() {
    let (_root, c, _html) = rendered();
    let md = hugewise_report::views::collection::markdown(&c);
    assert!(md.contains("### Headlines"));
    assert!(md.contains("| 1 | speedup over 4 KiB, all THP |"));
    assert!(
        md.contains(" | kron:20 ! | 1.45x |"),
        "scale flagged in Markdown"
    );
    assert!(md.contains("| bfs-frag50 | frag 50% | bfs on kron:20 | base |"));
    assert!(md.contains("## Machines"));
    let csv = hugewise_report::views::collection::csv(&c);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        hugewise_report::views::collection::CSV_COLUMNS.join(",")
    );
    // 2 machines x 4 runs x 4 layouts, and the loose bench-pages fixture's 2 layouts.
    assert_eq!(lines.len(), 1 + 2 * 4 * 4 + 2);
    let row = lines
        .iter()
        .find(|l| l.starts_with("fragmentation,bfs-frag25,") && l.contains(",all THP,"))
        .expect("a row");
    assert!(
        row.contains(",alpha,") && row.contains(",kron:20,"),
        "{row}"
    );
    let text = hugewise_report::views::collection::text(&c);
    assert!(text.contains("why here may differ from the paper"));
}

#[test]
fn the_unfragmented_run_is_the_first_point_of_the_fragmentation_lines() {
    let (_root, c, _html) = rendered();
    let runs = c.runs_of(0);
    let s = hugewise_report::figures::sensitivity(&runs);
    let bfs = s
        .iter()
        .find(|s| s.axis == hugewise_report::figures::Axis::Fragment)
        .expect("a fragmentation chart");
    for line in &bfs.speedup {
        let xs: Vec<f64> = line.points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [0.0, 25.0, 50.0, 75.0], "{}", line.name);
    }
}
