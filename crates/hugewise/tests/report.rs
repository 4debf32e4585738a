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
