//! `hugewise report FILE.json` prints what the command that saved FILE printed, for every kind
//! of result (the fixtures and their text were saved by the commands themselves).

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/tests/fixtures")
}

fn report(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .arg("report")
        .args(args)
        .output()
        .expect("run hugewise")
}

#[test]
fn every_saved_result_renders_as_its_command_printed_it() {
    for kind in [
        "sys",
        "faultlat",
        "run",
        "graph-info",
        "graph-write",
        "trace-lackey",
        "bench-pages",
        "bench-randread",
        "bench-faultlat",
        "sim",
        "sim-reuse",
        "env-show",
        "env-set",
        "env-action",
        "env-swap",
        "env-shaped",
        "env-restore",
        "promote",
        "promote-compact",
        "bench-promote",
        "study",
        "exec",
        "bench-exec",
        "bench-bloat",
        "profile",
        "bench-packing",
    ] {
        let json = fixtures().join(format!("{kind}.json"));
        let want = std::fs::read_to_string(fixtures().join(format!("{kind}.txt"))).expect("txt");
        let out = report(&[json.to_str().expect("utf-8 path")]);
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{kind}");
    }
}

#[test]
fn markdown_where_a_kind_has_it_and_a_usage_error_where_not() {
    let pages = fixtures().join("bench-pages.json");
    let out = report(&[pages.to_str().expect("path"), "--markdown"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("| kernel arrays |"));
    let sys = fixtures().join("sys.json");
    let out = report(&[sys.to_str().expect("path"), "--markdown"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_file_that_is_not_a_result_fails_and_says_why() {
    let d = tempfile::tempdir().expect("tmp");
    let p = d.path().join("x.json");
    std::fs::write(&p, "{\"a\": 1}").expect("write");
    let out = report(&[p.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("x.json") && err.contains("schema"), "{err}");
}

/// A sample taken while others kept the CPUs busy is marked in the table and the footnote says
/// what the mark means; "spread" is defined under every table that shows it.
#[test]
fn busy_samples_are_marked_and_spread_is_defined() {
    let d = tempfile::tempdir().expect("tmp");
    for kind in ["bench-randread", "bench-pages"] {
        let text = std::fs::read_to_string(fixtures().join(format!("{kind}.json"))).expect("json");
        let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
        let samples = v["samples"].as_array_mut().expect("samples");
        let n = samples.len();
        for (i, s) in samples.iter_mut().enumerate() {
            // Only the first sample busy.
            s["quiet"]["others_busy_share"] = serde_json::json!(if i == 0 { 1.0 } else { 0.01 });
        }
        let path = d.path().join(format!("{kind}.json"));
        std::fs::write(&path, serde_json::to_vec(&v).expect("write")).expect("write");
        let out = report(&[path.to_str().expect("utf-8")]);
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{kind}");
        assert!(
            shown.contains("spread: median absolute deviation"),
            "{kind}: {shown}"
        );
        assert!(
            shown.contains(&format!("* busy machine: 1 of {n} samples")),
            "{kind}: {shown}"
        );
        assert_eq!(
            shown.matches(" * ").count() + shown.matches(" *\n").count(),
            1,
            "{kind}: one row marked: {shown}"
        );

        for s in v["samples"].as_array_mut().expect("samples") {
            s["quiet"]["others_busy_share"] = serde_json::json!(0.01);
        }
        std::fs::write(&path, serde_json::to_vec(&v).expect("write")).expect("write");
        let shown =
            String::from_utf8_lossy(&report(&[path.to_str().expect("utf-8")]).stdout).into_owned();
        assert!(
            !shown.contains('*'),
            "{kind}: a quiet run has no mark: {shown}"
        );
        assert!(
            shown.contains("spread: median absolute deviation"),
            "{kind}"
        );
    }
}

/// Study directories as `hugewise study` leaves them, assembled from the fixtures.
#[path = "../../report/tests/common/mod.rs"]
mod studies;

#[test]
fn study_directories_from_two_machines_make_one_html_page() {
    let root = tempfile::tempdir().expect("tmp");
    let a = studies::study_dir(root.path(), "alpha", 1.0);
    let b = studies::study_dir(root.path(), "beta", 1.3);
    let out = root.path().join("report.html");
    let run = report(&[
        a.to_str().expect("path"),
        b.to_str().expect("path"),
        "--out",
        out.to_str().expect("path"),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.stdout.is_empty(), "written to the file, not printed");
    let html = std::fs::read_to_string(&out).expect("report");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        html.contains("Study fragmentation on alpha")
            && html.contains("Study fragmentation on beta")
    );
    assert!(!html.contains("http://") && !html.contains("https://"));
    // Written atomically: nothing is left beside it.
    let left: Vec<_> = std::fs::read_dir(root.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
}

#[test]
fn formats_are_views_of_the_same_results() {
    let root = tempfile::tempdir().expect("tmp");
    let a = studies::study_dir(root.path(), "alpha", 1.0);
    let dir = a.to_str().expect("path");
    let csv = report(&[dir, "--format", "csv"]);
    assert!(csv.status.success());
    let csv = String::from_utf8_lossy(&csv.stdout).into_owned();
    assert!(csv.starts_with("study,run,label,shape,machine,"));
    assert_eq!(csv.lines().count(), 1 + 4 * 4);
    let md = report(&[dir, "--format", "md"]);
    assert!(String::from_utf8_lossy(&md.stdout).contains("### Headlines"));
    let text = report(&[dir]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("headline"));
    // --format html to stdout, and html chosen by the output's name.
    let html = report(&[dir, "--format", "html"]);
    assert!(String::from_utf8_lossy(&html.stdout).contains("<svg"));
    let out = root.path().join("r.md");
    let md = report(&[dir, "--out", out.to_str().expect("path")]);
    assert!(md.status.success());
    assert!(!std::fs::read_to_string(&out)
        .expect("written")
        .contains("<svg"));
}

#[test]
fn a_directory_with_a_stray_file_names_it() {
    let root = tempfile::tempdir().expect("tmp");
    let a = studies::study_dir(root.path(), "alpha", 1.0);
    std::fs::write(a.join("runs/notes.json"), "[1, 2]").expect("write");
    let out = report(&[a.to_str().expect("path"), "--format", "html"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("notes.json"), "{err}");
}

#[test]
fn help_shows_examples() {
    let out = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(["report", "--help"])
        .output()
        .expect("run hugewise");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("--out report.html") && help.contains("--format"),
        "{help}"
    );
}
