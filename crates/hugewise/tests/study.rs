//! `hugewise study`: the plan, a real (small) study end to end, resuming, and refusals.

use std::path::Path;
use std::process::{Command, Output};

fn hugewise(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(args)
        .arg("--no-progress")
        .output()
        .expect("run hugewise")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_dry_run_prints_the_plan_and_writes_nothing() {
    let d = tempfile::tempdir().expect("tmp");
    let dir = d.path().join("s");
    let dir_s = dir.to_str().expect("utf-8");
    let o = hugewise(&["study", "fragmentation", "--dry-run", "--out", dir_s]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("frag 75%"), "{out}");
    assert!(out.contains("IISWC'22 Fig. 8"), "{out}");
    assert!(!dir.exists());
    let o = hugewise(&["study", "quick", "--dry-run", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["schema"], "hugewise/study");
    assert_eq!(v["runs"].as_array().map(Vec::len), Some(4));
    let o = hugewise(&["study", "nope", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("quick, page-size"), "{}", text(&o).1);
}

fn read(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("json")
}

#[test]
fn a_study_saves_each_run_prints_headlines_and_resumes() {
    let d = tempfile::tempdir().expect("tmp");
    let dir = d.path().join("s");
    let dir_s = dir.to_str().expect("utf-8");
    let o = hugewise(&["study", "smoke", "--out", dir_s, "--repeat", "2"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("property THP"), "{out}");
    assert!(out.contains("headline"), "{out}");
    assert_eq!(read(&dir.join("study.json"))["schema"], "hugewise/study");
    let run = read(&dir.join("runs/bfs-kron10.json"));
    assert_eq!(run["schema"], "hugewise/bench-pages");
    assert_eq!(run["meta"]["study"]["run"], "bfs-kron10");
    assert_eq!(run["samples"].as_array().map(Vec::len), Some(4));
    // Every run finished: the generated graph is gone, the results stay.
    assert!(!dir.join("graphs").exists());

    let o = hugewise(&["study", "smoke", "--out", dir_s, "--repeat", "2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("--resume"), "{}", text(&o).1);
    let o = hugewise(&[
        "study", "smoke", "--out", dir_s, "--repeat", "2", "--resume",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("headline"), "{out}");
    assert_eq!(
        read(&dir.join("runs/bfs-kron10.json")),
        run,
        "a finished run is kept as it is"
    );
    // Another plan in the same directory is refused, not mixed in.
    let o = hugewise(&[
        "study", "smoke", "--out", dir_s, "--repeat", "1", "--resume",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("another study"), "{}", text(&o).1);
}
