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

#[test]
fn the_compaction_study_plans_every_arm_at_every_level_and_the_models_beside() {
    let o = hugewise(&["study", "compaction", "--quick", "--dry-run", "--json"]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let runs = v["runs"].as_array().expect("runs");
    let ids: Vec<&str> = runs.iter().filter_map(|r| r["id"].as_str()).collect();
    for id in [
        "hot-auto-frag0",
        "hot-off-frag0",
        "hot-auto-frag50",
        "hot-off-frag50",
        "sim-ingens-kron16-frag50",
        "sim-mega-kron16-frag50",
    ] {
        assert!(ids.contains(&id), "{id}: {ids:?}");
    }
    for r in runs.iter().filter(|r| r["work"]["kind"] == "promote") {
        // Every measured arm under pressure, kcompactd at Linux's default, 4 GiB left free.
        assert_eq!(r["shape"]["proactiveness"], 20, "{r}");
        assert_eq!(r["shape"]["free_beyond_footprint_bytes"], 4u64 << 30, "{r}");
    }
    let o = hugewise(&["study", "compaction", "--dry-run"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for want in [
        "frag 90%",
        "proactiveness 100",
        "pr on kron:22",
        "mega:memory=2x",
        "hot-auto-frag90-movable",
        "frag 90% movable",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    // The quick variant keeps to unmovable pages; the full one says which runs are movable.
    assert!(!ids.iter().any(|id| id.ends_with("movable")), "{ids:?}");
    let o = hugewise(&["study", "compaction", "--dry-run", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let movable: Vec<&serde_json::Value> = v["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter(|r| r["shape"]["fragment_pages"] == "movable")
        .collect();
    assert_eq!(movable.len(), 2, "auto and off: {movable:?}");
    assert!(movable.iter().all(|r| r["shape"]["fragment"] == 0.9));
    let o = hugewise(&["study", "--help"]);
    assert!(text(&o).0.contains("compaction"), "{}", text(&o).0);
}

/// `vm.compaction_proactiveness` and the settings shaping changes, to check they are put back.
const SHAPED_KNOBS: [&str; 4] = [
    "/proc/sys/vm/compaction_proactiveness",
    "/proc/sys/vm/compact_unevictable_allowed",
    "/proc/sys/vm/percpu_pagelist_high_fraction",
    "/sys/kernel/mm/transparent_hugepage/enabled",
];

fn shaped_knobs() -> Vec<String> {
    SHAPED_KNOBS
        .iter()
        .map(|k| std::fs::read_to_string(k).unwrap_or_default())
        .collect()
}

#[test]
fn the_quick_compaction_study_runs_as_root_and_puts_the_machine_back() {
    if std::fs::File::open("/proc/kpageflags").is_err() {
        return hugewise_sys::testing::skip("needs root to shape memory and set proactiveness");
    }
    let available = hugewise_sys::proc::ProcFs::default()
        .meminfo()
        .ok()
        .and_then(|m| m.available_bytes)
        .unwrap_or(0);
    // Shaping leaves each run's footprint and 4 GiB free, and needs room above that.
    if available < 12 << 30 {
        return hugewise_sys::testing::skip("under 12 GiB available: too little to shape");
    }
    let before = shaped_knobs();
    let d = tempfile::tempdir().expect("tmp");
    let dir = d.path().join("s");
    let dir_s = dir.to_str().expect("utf-8");
    let o = hugewise(&["study", "compaction", "--quick", "--out", dir_s]);
    let (out, err) = text(&o);
    assert_eq!(shaped_knobs(), before, "the machine was not put back");
    assert!(o.status.success(), "{out}\n{err}");
    let run = read(&dir.join("runs/hot-auto-frag50.json"));
    assert_eq!(run["schema"], "hugewise/bench-promote");
    assert_eq!(run["meta"]["study"]["shape"]["proactiveness"], 20);
    let settings = run["meta"]["study"]["shaped"]["settings"].to_string();
    assert!(settings.contains("compaction_proactiveness"), "{settings}");
    let w = &run["workloads"][0];
    assert_eq!(w["compact"], "auto");
    let daemon = w["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .find(|s| s["arm"] == "daemon")
        .expect("a daemon sample");
    assert!(daemon["compactions"].is_array(), "{daemon}");
    let sim = read(&dir.join("runs/sim-mega-kron16-frag50.json"));
    assert!(
        sim.to_string().contains("pages_per_block"),
        "no physical memory record"
    );
    assert!(out.contains("pages moved per 2 MiB block"), "{out}");
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
    let err = text(&o).1;
    assert!(err.contains("differs from the one asked for"), "{err}");
    assert!(err.contains("changed: bfs-kron10"), "{err}");
}
