//! Graphs bigger than memory, as root on this machine: `hugewise run --memory` holds a real
//! kernel to a share of its footprint in a memory cgroup with a swap file it makes, records
//! telemetry, and leaves no cgroup, swap or setting behind; a study's `swap` run does the same
//! point by point through the same program.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

use hugewise_results::study::{PlannedRun, Shape, StudyPlan, Work};
use hugewise_study::runner;

const PAGE_CLUSTER: &str = "/proc/sys/vm/page-cluster";

/// These tests change machine-wide state and compare it before and after: one at a time.
static MACHINE: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

fn root() -> bool {
    hugewise_sys::testing::root_or_skip()
}

fn hw(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .env("HUGEWISE_STATE_DIR", state)
        .arg("--no-progress")
        .args(args)
        .output()
        .expect("run hugewise")
}

/// What a run may change and must put back.
fn machine() -> (String, String, Vec<String>) {
    let swaps = std::fs::read_to_string("/proc/swaps").expect("swaps");
    // hugewise's cgroups, under cgroup v1's memory hierarchy or v2's single one.
    let mut groups: Vec<String> = ["/sys/fs/cgroup/memory", "/sys/fs/cgroup"]
        .iter()
        .filter_map(|root| std::fs::read_dir(root).ok())
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("hugewise"))
        .collect();
    groups.sort();
    (
        swaps,
        std::fs::read_to_string(PAGE_CLUSTER).expect("page-cluster"),
        groups,
    )
}

fn generate(dir: &Path, state: &Path) -> String {
    let g = dir.join("k20.hwg");
    let o = hw(
        state,
        &[
            "graph",
            "gen",
            "--graph",
            "kron:20",
            "--out",
            g.to_str().expect("path"),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    g.display().to_string()
}

/// One test's machine and files: the machine to itself, a state directory, kron:20 on disk,
/// and the machine's state before the test (`None`: not root, skipped).
struct Setup {
    _machine: std::sync::MutexGuard<'static, ()>,
    dir: tempfile::TempDir,
    state: std::path::PathBuf,
    graph: String,
    before: (String, String, Vec<String>),
}

/// Whether this machine has a memory cgroup controller (v1's hierarchy, or v2's).
fn memory_cgroup() -> bool {
    let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
        .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"));
    let ok = v2 || std::path::Path::new("/sys/fs/cgroup/memory").is_dir();
    if !ok {
        hugewise_sys::testing::skip("no memory cgroup controller here");
    }
    ok
}

fn setup() -> Option<Setup> {
    if !root() || !memory_cgroup() {
        return None;
    }
    let machine_lock = one_at_a_time();
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let graph = generate(dir.path(), &state);
    Some(Setup {
        _machine: machine_lock,
        before: machine(),
        dir,
        state,
        graph,
    })
}

/// `hugewise run bfs` on the setup's graph with `args` after it.
fn bfs(s: &Setup, args: &[&str]) -> Output {
    let mut all = vec!["run", "bfs", "--graph", &s.graph];
    all.extend_from_slice(args);
    hw(&s.state, &all)
}

#[test]
fn a_run_held_to_a_share_of_its_footprint_swaps_and_puts_everything_back() {
    let Some(s) = setup() else {
        return;
    };
    let before = s.before.clone();
    let swap_file = s.dir.path().join("run.swap");
    let o = bfs(
        &s,
        &[
            "--trials",
            "2",
            // Shares near the whole footprint and `--page-cluster 0` are where cgroup v1's
            // reclaim gives up and the OOM killer ends the run (README, "Graphs bigger than
            // memory"); this test is about swapping and putting back, so it stays clear of both.
            "--memory",
            "65%",
            "--page-cluster",
            "1",
            "--swap-file",
            swap_file.to_str().expect("path"),
            "--telemetry",
            "50ms",
            "--json",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let m = &v["memory"];
    let fp = m["footprint_bytes"].as_u64().expect("footprint");
    let limit = m["limit_bytes"].as_u64().expect("limit");
    assert!(
        (limit as f64 / fp as f64 - 0.65).abs() < 0.01,
        "limit {limit} of {fp}"
    );
    assert_eq!(m["page_cluster"], 1);
    // The cgroup held the run to its limit, so part of the graph went to swap and came back.
    assert!(m["peak_bytes"].as_u64().expect("peak") <= limit + (4 << 20));
    let t = &v["telemetry"];
    assert!(t["samples"].as_array().expect("samples").len() >= 2);
    assert!(t["summary"]["page_ins_per_s"].as_f64().expect("page-ins") > 0.0);
    assert!(v["trials"]
        .as_array()
        .expect("trials")
        .iter()
        .all(|t| t["kernel_ns"].as_u64() > Some(0)));
    assert!(!swap_file.exists(), "the swap file is removed");
    assert_eq!(
        machine(),
        before,
        "swap, page-cluster and cgroups as they were"
    );
}

#[test]
fn ctrl_c_during_a_run_under_memory_puts_everything_back() {
    let Some(s) = setup() else {
        return;
    };
    let (state, g, before) = (&s.state, &s.graph, s.before.clone());
    let swap_file = s.dir.path().join("run.swap");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .env("HUGEWISE_STATE_DIR", state)
        .args([
            "--no-progress",
            "run",
            "bfs",
            "--graph",
            g,
            "--trials",
            "500",
            "--memory",
            "60%",
            "--page-cluster",
            "1",
            "--swap-file",
            swap_file.to_str().expect("path"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start hugewise");
    // Interrupt it once the machine has changed: swap on and the cgroup made.
    let t0 = std::time::Instant::now();
    loop {
        let (swaps, _, groups) = machine();
        if swaps.contains(swap_file.to_str().expect("path")) && !groups.is_empty() {
            break;
        }
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the run ended before it was interrupted"
        );
        assert!(
            t0.elapsed().as_secs() < 120,
            "the run never set up its limit"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    let killed = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let out = child.wait_with_output().expect("wait");
    assert!(
        !out.status.success(),
        "an interrupted run does not claim success"
    );
    assert!(!swap_file.exists(), "the swap file is removed");
    assert_eq!(
        machine(),
        before,
        "swap, page-cluster and cgroups as they were"
    );
}

#[test]
fn ctrl_c_during_a_run_with_only_page_cluster_puts_it_back() {
    let Some(s) = setup() else {
        return;
    };
    let before_cluster = std::fs::read_to_string(PAGE_CLUSTER).expect("page-cluster");
    let other = if before_cluster.trim() == "1" {
        "2"
    } else {
        "1"
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .env("HUGEWISE_STATE_DIR", &s.state)
        .args([
            "--no-progress",
            "run",
            "bfs",
            "--graph",
            &s.graph,
            "--trials",
            "100000",
            "--page-cluster",
            other,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start hugewise");
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(PAGE_CLUSTER)
        .expect("page-cluster")
        .trim()
        != other
    {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the run ended early"
        );
        assert!(t0.elapsed().as_secs() < 60, "page-cluster was never set");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(machine(), s.before, "page-cluster as it was");
}

#[test]
fn a_share_too_small_to_make_progress_is_refused_before_anything_changes() {
    let Some(s) = setup() else {
        return;
    };
    let (state, g, before) = (&s.state, &s.graph, s.before.clone());
    let o = hw(state, &["run", "bfs", "--graph", g, "--memory", "5%"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("needs to make progress"), "{err}");
    assert!(err.contains("give at least"), "{err}");
    assert_eq!(machine(), before);
}

#[test]
fn a_study_swap_run_measures_every_share_at_every_factor() {
    if !root() || !memory_cgroup() {
        return;
    }
    let _machine = one_at_a_time();
    let dir = tempfile::tempdir().expect("tempdir");
    let study = dir.path().join("study");
    let before = machine();
    let plan = StudyPlan {
        preset: "swap".into(),
        question: "test".into(),
        reproduces: "test".into(),
        quick: true,
        scale: None,
        repeat: 1,
        threads: 2,
        runs: vec![PlannedRun {
            id: "swap-bfs-kron20".into(),
            label: "bfs on kron:20".into(),
            shape: Shape::default(),
            work: Work::Swap {
                graph: "kron:20".into(),
                kernel: "bfs".into(),
                pages: "all=base".into(),
                reorder: None,
                // 90 %: it swaps, and leaves a debug build's BFS at two threads a core room.
                // At 80 % (108 MiB) a cgroup v1 limit OOM-killed the run in 4 of 8 tries (a
                // build beside the first three), with swap a fifth used: the OOM report showed all 110 MiB
                // on the active list (100 MiB of it already in swap cache), none inactive, so
                // reclaim found nothing to take while the bottom-up steps touched every page.
                shares: vec![1.0, 0.9],
                factors: vec!["1".into(), "2".into()],
                page_cluster: None,
                trials: 1,
            },
            estimate_s: 30.0,
            footprint_bytes: None,
        }],
        estimate_s: 30.0,
        claims: Vec::new(),
    };
    let meta = || hugewise_bench::meta::collect("0.0.0", vec!["test".into()]);
    let plan = runner::prepare(&study, &plan, meta(), false).expect("prepare");
    let opts = runner::Options {
        dir: study.clone(),
        resume: false,
        only: Vec::new(),
        seed: 1,
        exe: Some(env!("CARGO_BIN_EXE_hugewise").into()),
    };
    struct Quiet;
    impl runner::Observer for Quiet {
        fn started(&mut self, _: usize, _: usize, _: &PlannedRun) {}
        fn phase(&mut self, _: &str) {}
        fn progress(&mut self, _: u64, _: u64) {}
        fn finished(&mut self, _: usize, _: &PlannedRun, _: &runner::Outcome) {}
    }
    let out = runner::execute(&plan, &opts, &meta, &mut Quiet, &|| false).expect("execute");
    assert!(
        matches!(out[0].1, runner::Outcome::Done { .. }),
        "{:?}",
        out[0].1
    );
    let r = match hugewise_sys::read::result(&runner::run_path(&study, "swap-bfs-kron20")) {
        Ok(hugewise_results::AnyResult::Swap(s)) => s.result,
        other => panic!("not a swap result: {other:?}"),
    };
    assert_eq!(r.points.len(), 4);
    for p in &r.points {
        let run = p.run.as_ref().unwrap_or_else(|| panic!("{:?}", p.error));
        assert_eq!(
            run.threads,
            p.factor.parse::<usize>().expect("factor") * cpus()
        );
        let limit = run.memory.as_ref().expect("limit");
        assert!((limit.share - p.share).abs() < 1e-9);
        if p.share < 1.0 {
            // Held below its footprint, the run hit its limit: the kernel had to reclaim.
            assert!(limit.limit_hits > Some(0), "{limit:?}");
        }
    }
    // Shares largest first; the factors' order turns at the second share.
    let order: Vec<(f64, &str)> = r
        .points
        .iter()
        .map(|p| (p.share, p.factor.as_str()))
        .collect();
    assert_eq!(order, vec![(1.0, "1"), (1.0, "2"), (0.9, "2"), (0.9, "1")]);
    assert!(r.baseline_s().is_some());
    assert_eq!(machine(), before);
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn a_locked_hot_prefix_stays_in_memory_and_a_lock_the_limit_cannot_hold_is_refused() {
    let Some(s) = setup() else {
        return;
    };
    let before = s.before.clone();
    let swap_file = s.dir.path().join("lock.swap");
    let swap = swap_file.to_str().expect("path");
    let o = bfs(
        &s,
        &[
            "--trials",
            "1",
            "--memory",
            "65%",
            "--pages",
            "all=base,property=thp-prefix:20%+lock",
            "--swap-file",
            swap,
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let regions = v["regions"].as_array().expect("regions");
    let property = regions
        .iter()
        .find(|r| r["name"] == "property")
        .expect("property");
    assert_eq!(property["policy"], "thp-prefix:20%+lock");
    // Run without telemetry, whose sampler reads memory.stat too: the supervisor's own reads
    // (--stats-flush, 50ms by default) are what keep cgroup v1 from OOM-killing this run (it
    // did in 8 of 22 runs with `--stats-flush off`).
    let flush = &v["memory"]["stats_flush"];
    assert_eq!(flush["interval_ms"], 50.0);
    assert!(flush["reads"].as_u64() > Some(0), "{flush}");
    // 20 % of BFS's 4 MiB parent array, rounded up to one 2 MiB page, read back from the
    // kernel after the trials: locked, huge, and none of it swapped out while the rest was.
    assert_eq!(property["locked_bytes"], 2 << 20);
    let b = &property["backing"];
    assert!(b["thp_2m_bytes"].as_u64() >= Some(2 << 20), "{b}");
    let data = property["data_bytes"].as_u64().expect("data");
    assert!(b["swapped_bytes"].as_u64() <= Some(data - (2 << 20)), "{b}");
    assert!(regions
        .iter()
        .filter(|r| r["name"] != "property")
        .all(|r| r.get("locked_bytes").is_none()));
    let swapped: u64 = regions
        .iter()
        .filter_map(|r| r["backing"]["swapped_bytes"].as_u64())
        .sum();
    assert!(swapped > 0, "held to 65 %, part of the graph is in swap");
    assert_eq!(machine(), before);
    // Every array locked cannot fit in 65 % of them: refused before the worker joins a cgroup.
    let o = bfs(
        &s,
        &[
            "--memory",
            "65%",
            "--pages",
            "all=base+lock",
            "--swap-file",
            swap,
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("locked by +lock"), "{err}");
    assert!(err.contains("lock less"), "{err}");
    assert!(!swap_file.exists());
    assert_eq!(machine(), before);
}
