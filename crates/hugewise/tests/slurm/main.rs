//! Studies through a real Slurm: a private single-node cluster per test (see [`cluster`]).

mod cluster;

use cluster::{Cluster, NoCluster};
use hugewise_sys::testing::skip;

/// A running cluster, `None` (after saying SKIPPED) where Slurm is not installed; a cluster
/// that is installed but does not come up fails the test.
fn cluster() -> Option<Cluster> {
    match Cluster::start() {
        Ok(c) => Some(c),
        Err(NoCluster::Missing(why)) => {
            skip(why);
            None
        }
        Err(NoCluster::Failed(why)) => panic!("the test cluster did not start: {why}"),
    }
}

#[test]
fn the_test_cluster_runs_a_job_and_leaves_nothing_behind() {
    let Some(c) = cluster() else { return };
    let out = tempfile::tempdir().expect("tmp");
    let log = out.path().join("ok.out");
    let output = format!("--output={}", log.display());
    if let Err(e) = c.run("sbatch", &["--wait", &output, "--wrap", "echo ok"]) {
        panic!("{e}\n{}", c.logs());
    }
    assert_eq!(std::fs::read_to_string(&log).expect("job output"), "ok\n");

    let pids = c.daemon_pids();
    let conf = c.conf().to_path_buf();
    let files = conf.parent().expect("dir").to_path_buf();
    drop(c);
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "daemon {pid} still runs"
        );
    }
    let needle = format!("SLURM_CONF={}", conf.display());
    assert_eq!(
        cluster::processes_with_env(needle.as_bytes()),
        Vec::<i32>::new()
    );
    assert!(!files.exists(), "{} left behind", files.display());
}

#[test]
fn a_job_still_running_is_ended_with_the_cluster() {
    let Some(c) = cluster() else { return };
    let out = tempfile::tempdir().expect("tmp");
    let output = format!("--output={}", out.path().join("sleep.out").display());
    c.run("sbatch", &[&output, "--wrap", "sleep 300"])
        .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    let start = std::time::Instant::now();
    while c.leftovers().is_empty() {
        assert!(
            start.elapsed().as_secs() < 30,
            "the job never started\n{}",
            c.logs()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let conf = c.conf().to_path_buf();
    drop(c);
    let needle = format!("SLURM_CONF={}", conf.display());
    assert_eq!(
        cluster::processes_with_env(needle.as_bytes()),
        Vec::<i32>::new()
    );
}

/// The emitted script as sbatch reads it: its `#SBATCH` lines (a study directory with a space
/// and a `%` in its path), one task per run, each handing its worker the study's typed request
/// under its own array index (the worker picks the run from it).
#[test]
fn every_task_of_an_emitted_job_runs_its_own_run() {
    use hugewise_bench::worker::{self, Request, StudyTask};
    use hugewise_results::study::{PlannedRun, Shape, StudyPlan, Work};
    use hugewise_study::slurm::{emit, SlurmJob};

    let Some(c) = cluster() else { return };
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("sweep 100% one");
    // A stand-in for hugewise that leaves its arguments and its stdin beside itself, in a file
    // named for the array task's index.
    let fake = tmp.path().join("fake hugewise");
    std::fs::write(
        &fake,
        r#"#!/bin/sh
d="$(dirname "$0")/tasks"
mkdir -p "$d" && { printf '%s\n' "$@"; cat; } > "$d/$SLURM_ARRAY_TASK_ID"
"#,
    )
    .expect("fake");
    let chmod = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&fake)
        .status();
    assert!(chmod.expect("chmod").success());
    let ids = ["pages-bfs-a", "pages-bfs-b", "faultlat 4k"];
    let plan = StudyPlan {
        preset: "smoke".into(),
        question: "q".into(),
        reproduces: "r".into(),
        quick: false,
        scale: None,
        repeat: 1,
        threads: 1,
        runs: ids
            .iter()
            .map(|id| PlannedRun {
                id: id.to_string(),
                label: id.to_string(),
                shape: Shape::default(),
                work: Work::Faultlat {
                    size_bytes: 1 << 20,
                    policy: "base".into(),
                    then_collapse: false,
                },
                estimate_s: 1.0,
                footprint_bytes: Some(1 << 20),
            })
            .collect(),
        estimate_s: 3.0,
        claims: Vec::new(),
    };
    let e = emit(&plan, &SlurmJob::new(&fake), &dir).expect("emit");
    let script = e.script.to_string_lossy().to_string();
    if let Err(err) = c.run("sbatch", &["--wait", &script]) {
        panic!("{err}\n{}{}", task_outputs(&dir), c.logs());
    }
    let want = Request::Study(StudyTask {
        dir: dir.clone(),
        preset: "smoke".into(),
        quick: false,
        scale: None,
        repeat: 1,
        threads: 1,
        seed: 1,
        run: None,
    });
    for i in 0..ids.len() {
        let got = std::fs::read_to_string(tmp.path().join(format!("tasks/{i}")))
            .unwrap_or_else(|err| panic!("task {i}: {err}\n{}", c.logs()));
        let (command, request) = got.split_once('\n').expect("command, then request");
        assert_eq!(command, "worker", "task {i}");
        assert_eq!(worker::decode(request).expect("request"), want, "task {i}");
    }
    // The index picks the run on its line of runs.txt, as the worker reads it.
    let runs = std::fs::read_to_string(&e.runs).expect("runs.txt");
    assert_eq!(runs.lines().collect::<Vec<_>>(), ids);
    let outputs = std::fs::read_dir(dir.join("slurm"))
        .expect("slurm dir")
        .filter(|f| {
            f.as_ref()
                .is_ok_and(|f| f.path().extension() == Some("out".as_ref()))
        })
        .count();
    assert_eq!(outputs, ids.len(), "one output file per task");
}

/// What the tasks of a study's array job printed (`DIR/slurm/*.out`), for a failure message.
fn task_outputs(dir: &std::path::Path) -> String {
    let mut s = String::new();
    for f in std::fs::read_dir(dir.join("slurm"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if f.path().extension() == Some("out".as_ref()) {
            let text = std::fs::read_to_string(f.path()).unwrap_or_else(|e| e.to_string());
            s.push_str(&format!("--- {}:\n{text}\n", f.path().display()));
        }
    }
    s
}

/// Without a cluster: what `--emit slurm` writes and prints, and what it cannot go with.
#[test]
fn emit_slurm_writes_the_job_and_says_how_to_submit_it() {
    use std::process::Command;

    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("s");
    let hugewise = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hugewise"))
            .args(args)
            .output()
            .expect("hugewise")
    };
    let dir_s = dir.to_str().expect("utf-8");
    let o = hugewise(&[
        "study", "smoke", "--quick", "--out", dir_s, "--emit", "slurm",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let script = dir.join("slurm/study.sbatch");
    for want in [
        "array job of 1 task,",
        "submit: sbatch ",
        "hugewise report ",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    assert!(out.contains(script.to_str().expect("utf-8")), "{out}");
    let text = std::fs::read_to_string(&script).expect("script");
    assert!(text.contains("#SBATCH --array=0-0"), "{text}");
    assert!(
        text.contains("exec \"$hugewise\" worker < \"$dir/slurm/task.json\""),
        "{text}"
    );
    let task = std::fs::read_to_string(dir.join("slurm/task.json")).expect("task.json");
    match hugewise_bench::worker::decode(&task).expect("a worker's request") {
        hugewise_bench::worker::Request::Study(t) => {
            assert_eq!((t.preset.as_str(), t.quick, t.repeat), ("smoke", true, 3));
            assert_eq!(t.run, None, "the array index picks the run");
        }
        other => panic!("not a study task: {other:?}"),
    }
    assert!(!dir.join("runs/bfs-kron10.json").exists(), "nothing ran");
    // The same plan again is fine; another one in the same directory is refused.
    let o = hugewise(&[
        "study", "smoke", "--quick", "--out", dir_s, "--emit", "slurm",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = hugewise(&["study", "smoke", "--out", dir_s, "--emit", "slurm"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("another study"));
    for other in ["--dry-run", "--resume"] {
        let o = hugewise(&["study", "smoke", "--out", dir_s, "--emit", "slurm", other]);
        assert_eq!(o.status.code(), Some(2), "{other}");
    }
}

/// `hugewise study smoke --emit slurm`, submitted twice as two sweeps: every run of each plan
/// leaves a result that reads back as that run's.
#[test]
fn a_study_emitted_for_slurm_runs_there_and_its_results_read_back() {
    use hugewise_results::AnyResult;
    use std::process::Command;

    let Some(c) = cluster() else { return };
    let tmp = tempfile::tempdir().expect("tmp");
    for sweep in ["sweep one", "sweep two"] {
        let dir = tmp.path().join(sweep);
        let o = Command::new(env!("CARGO_BIN_EXE_hugewise"))
            .args(["study", "smoke", "--out"])
            .arg(&dir)
            .args(["--emit", "slurm", "--json"])
            .output()
            .expect("hugewise");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let emitted: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let script = emitted["script"].as_str().expect("script").to_string();
        assert!(emitted["submit"]
            .as_str()
            .is_some_and(|s| s.starts_with("sbatch ")));
        if let Err(err) = c.run("sbatch", &["--wait", &script]) {
            panic!("{err}\n{}{}", task_outputs(&dir), c.logs());
        }
        let plan = match hugewise_sys::read::result(&dir.join("study.json")) {
            Ok(AnyResult::Study(s)) => s.result,
            other => panic!("study.json: {other:?}"),
        };
        assert!(!plan.runs.is_empty());
        // Tasks write their own result files only.
        assert!(!dir.join("report.md").exists());
        for run in &plan.runs {
            let path = dir.join("runs").join(format!("{}.json", run.id));
            let meta = match hugewise_sys::read::result(&path) {
                Ok(AnyResult::Pages(s)) => s.meta,
                Ok(AnyResult::Curves(s)) => s.meta,
                Ok(AnyResult::Faultlat(s)) => s.meta,
                other => panic!(
                    "{}: {other:?}\n{}{}",
                    path.display(),
                    task_outputs(&dir),
                    c.logs()
                ),
            };
            let tag = meta.study.expect("a study run's meta names it");
            assert_eq!(
                (tag.preset.as_str(), tag.run.as_str()),
                ("smoke", run.id.as_str())
            );
            // The saved result renders as the study printed it.
            let o = Command::new(env!("CARGO_BIN_EXE_hugewise"))
                .arg("report")
                .arg(&path)
                .output()
                .expect("report");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    }
    // The two sweeps merge into one report: every layout of every run of both.
    let dirs = ["sweep one", "sweep two"].map(|d| tmp.path().join(d));
    let merged = tmp.path().join("merged.html");
    let o = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .arg("report")
        .args(&dirs)
        .arg("--out")
        .arg(&merged)
        .output()
        .expect("report");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&merged).expect("merged report");
    assert!(html.contains("<svg"), "no chart in the merged report");
    let o = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .arg("report")
        .args(&dirs)
        .args(["--format", "csv"])
        .output()
        .expect("report");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = String::from_utf8_lossy(&o.stdout);
    // smoke: one run of two layouts per sweep.
    assert_eq!(csv.lines().count(), 1 + 2 * 2, "{csv}");
}
