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
        "sim",
        "sim-reuse",
        "env-show",
        "env-set",
        "env-action",
        "env-swap",
        "env-shaped",
        "env-restore",
        "promote",
        "bench-promote",
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
