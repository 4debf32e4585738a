//! `hugewise promote` on real processes, through the real binary.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

fn hugewise() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hugewise"))
}

/// `out`, once it is known to have succeeded (else its stderr is the failure).
fn succeeded(out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn is_root() -> bool {
    std::fs::File::open("/proc/kpageflags").is_ok()
}

/// A Python process holding `mib` MiB of touched anonymous memory until it is killed.
fn holder(mib: usize) -> Option<Child> {
    let script = format!(
        "import mmap, sys, time\n\
         m = mmap.mmap(-1, {mib} << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n\
         m.write(b'x' * ({mib} << 20))\n\
         print('ready', flush=True)\n\
         time.sleep(60)\n"
    );
    let mut c = Command::new("python3")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut line = String::new();
    BufReader::new(c.stdout.as_mut()?)
        .read_line(&mut line)
        .ok()?;
    (line.trim() == "ready").then_some(c)
}

fn skip(why: &str) {
    hugewise_sys::testing::skip(why);
}

#[test]
fn the_daemon_promotes_a_running_process_within_its_budget() {
    if !is_root() {
        return skip("needs root for process_madvise on another process");
    }
    let Some(mut c) = holder(64) else {
        return skip("python3 is not installed");
    };
    let out = hugewise()
        .args(["promote", "--pid", &c.id().to_string()])
        .args([
            "--policy",
            "mega",
            "--budget",
            "4MiB",
            "--interval",
            "0.2s",
            "--for",
            "1.5s",
            "--walk-ns",
            "45",
        ])
        .arg("--json")
        .output()
        .expect("run hugewise");
    let _ = c.kill();
    let _ = c.wait();
    let out = succeeded(out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["schema"], "hugewise/promote");
    assert_eq!(v["mode"], "daemon");
    // The daemon's settings are kept with what it did, the ones not given too.
    assert_eq!(v["walk_ns"].as_f64(), Some(45.0), "{v}");
    assert_eq!(v["fault_waits"].as_f64(), Some(0.0002), "{v}");
    // 64 MiB fully mapped: MEGA promotes, and the budget holds two 2 MiB pages.
    assert_eq!(v["totals"]["promoted"], 2, "{v}");
    let huge = v["totals"]["huge_bytes_final"]
        .as_u64()
        .expect("huge bytes");
    assert_eq!(huge, 4 << 20);
    for iv in v["intervals"].as_array().expect("intervals") {
        assert!(
            iv["huge_bytes_after"].as_u64() <= iv["budget_bytes"].as_u64(),
            "{iv}"
        );
    }
}

#[test]
fn a_started_command_is_promoted_and_its_exit_code_passed_on() {
    if !is_root() {
        return skip("needs root for process_madvise");
    }
    if Command::new("python3").arg("-V").output().is_err() {
        return skip("python3 is not installed");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out_file = dir.path().join("p.json");
    let out = hugewise()
        .args([
            "promote",
            "--policy",
            "linux",
            "--budget",
            "50%",
            "--interval",
            "0.2s",
        ])
        .arg("--out")
        .arg(&out_file)
        .args(["--", "python3", "-c"])
        .arg(
            "import mmap, sys, time\n\
             m = mmap.mmap(-1, 32 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n\
             m.write(b'x' * (32 << 20))\n\
             time.sleep(1.5)\n\
             print('done')\n\
             sys.exit(3)\n",
        )
        .output()
        .expect("run hugewise");
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The command owns stdout; the session's summary goes to stderr.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("promoted (read back huge)"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).expect("saved")).expect("JSON");
    assert_eq!(v["command_exit"], 3);
    assert_eq!(v["gone"].as_array().map(Vec::len), Some(1), "{v}");
    // The saved session renders the same summary.
    let r = hugewise()
        .arg("report")
        .arg(&out_file)
        .output()
        .expect("report");
    assert!(String::from_utf8_lossy(&r.stdout).contains("promoted (read back huge)"));
}

#[test]
fn bad_targets_and_plans_are_refused_with_the_reason() {
    let run = |args: &[&str]| {
        let o = hugewise().args(args).output().expect("run");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (code, err) = run(&["promote", "--pid", "999999999"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("does not exist"), "{err}");
    let (code, err) = run(&["promote"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--pid"), "{err}");
    // A file that is not a plan.
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("sys.json");
    let o = hugewise()
        .args(["sys", "--out"])
        .arg(&f)
        .output()
        .expect("sys");
    assert!(o.status.success());
    let me = std::process::id().to_string();
    let (code, err) = run(&["promote", "--pid", &me, "--plan", f.to_str().expect("path")]);
    assert_eq!(code, Some(1));
    assert!(err.contains("not a promotion plan"), "{err}");
    // --plan and --policy do not go together.
    let (code, _) = run(&[
        "promote", "--pid", &me, "--plan", "x.json", "--policy", "mega",
    ]);
    assert_eq!(code, Some(2));
}

/// A kernel thread (pid 2, kthreadd, where the machine's own pids are seen) exists, but has no
/// user memory: it is not called missing.
#[test]
fn a_kernel_thread_is_refused_as_one() {
    let kernel_thread = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            let after = s.rsplit_once(')').map_or("", |(_, r)| r);
            let flags: u64 = after
                .split_whitespace()
                .nth(6)
                .and_then(|f| f.parse().ok())
                .unwrap_or(0);
            flags & 0x0020_0000 != 0
        })
    };
    if !kernel_thread("2") {
        skip("pid 2 is not a kernel thread here (a pid namespace of its own?)");
        return;
    }
    let o = hugewise()
        .args(["promote", "--pid", "2", "--for", "1s"])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("process 2 (kthreadd) is a kernel thread: it has no user memory to promote"),
        "{err}"
    );
}

/// `hugewise run --promote`: a plan made from a trace of the same kernel on the same graph is
/// found on the run's own arrays by name and applied while the trials run; a plan for another
/// graph is refused with the region and both sizes.
#[test]
fn a_plan_is_replayed_on_a_run_of_the_same_kernel_and_refused_on_another_graph() {
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[never]") {
        skip("THP is never here: MADV_COLLAPSE refuses");
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let trace = d.path().join("t.hwt");
    let plan = d.path().join("plan.json");
    let run = |args: &[&str]| {
        let o = hugewise()
            .args(args)
            .arg("--no-progress")
            .output()
            .expect("run hugewise");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let t = trace.to_str().expect("utf-8");
    let p = plan.to_str().expect("utf-8");
    let (code, _, err) = run(&[
        "trace",
        "bfs",
        "--graph",
        "kron:16",
        "--pages",
        "all=system",
        "--threads",
        "1",
        "--out",
        t,
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = run(&[
        "sim", "--trace", t, "--policy", "pcc", "--budget", "50", "--plan", p,
    ]);
    assert_eq!(code, Some(0), "{err}");
    // `run bfs` on `graph` with the plan of `policy` replayed, and what it printed.
    let replayed = |graph: &str, trials: &str, policy: &str| {
        run(&[
            "run",
            "bfs",
            "--graph",
            graph,
            "--pages",
            "all=system",
            "--trials",
            trials,
            "--promote",
            p,
            "--plan-policy",
            policy,
            "--json",
        ])
    };
    // Enough trials (a few ms each) for the replay thread to reach the plan's steps, which
    // fall a fraction of a millisecond into the traced trial.
    let (code, out, err) = replayed("kron:16", "20", "pcc");
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let replay = &v["replay"];
    let steps = replay["steps"].as_u64().expect("steps");
    assert!(steps > 0, "{replay}");
    let actions = replay["actions"].as_array().expect("actions");
    assert!(!actions.is_empty(), "{replay}");
    // Every action succeeded, and the run's arrays hold huge pages afterwards.
    assert!(actions.iter().all(|a| a["outcome"] == "ok"), "{replay}");
    assert!(
        v["huge_footprint_share"].as_f64().expect("share") > 0.0,
        "{v}"
    );
    assert!(
        replay["totals"]["promoted"].as_u64().expect("promoted") > 0,
        "{replay}"
    );

    // A plan whose steps are all due at the start (every chunk, the simulator's `all`) is
    // made before the first trial, however short the run: every step, at a negative time.
    let (code, out, err) = replayed("kron:16", "1", "all");
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let replay = &v["replay"];
    let actions = replay["actions"].as_array().expect("actions");
    assert_eq!(
        Some(actions.len() as u64),
        replay["steps"].as_u64(),
        "{replay}"
    );
    assert!(
        actions
            .iter()
            .all(|a| a["outcome"] == "ok" && a["t_ms"].as_f64() < Some(0.0)),
        "{replay}"
    );

    let (code, _, err) = replayed("kron:15", "1", "pcc");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("this run's holds"), "{err}");

    // Arrays on 4 KiB pages (`base`, MADV_NOHUGEPAGE, which the kernel will not collapse):
    // the plan's chunks are promoted all the same, the hint lifted from exactly them.
    let (code, out, err) = run(&[
        "run",
        "bfs",
        "--graph",
        "kron:16",
        "--pages",
        "all=base",
        "--trials",
        "1",
        "--promote",
        p,
        "--plan-policy",
        "all",
        "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let replay = &v["replay"];
    let actions = replay["actions"].as_array().expect("actions");
    assert!(!actions.is_empty(), "{replay}");
    assert!(actions.iter().all(|a| a["outcome"] == "ok"), "{replay}");
}

/// The highest thinning the pcc daemon asked of a sampled PageRank, run under `promote` with
/// `extra` arguments.
fn thinning_asked(extra: &[&str]) -> Option<u64> {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_file = dir.path().join("p.json");
    succeeded(
        hugewise()
            .args(["promote", "--policy", "pcc", "--budget", "50%"])
            .args(["--interval", "0.1s"])
            .args(extra)
            .arg("--out")
            .arg(&out_file)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_hugewise"))
            .args(["run", "pr", "--graph", "kron:16", "--pages", "all=system"])
            .args(["--sample-every", "1", "--trials", "300", "--no-progress"])
            .output()
            .expect("run hugewise"),
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).expect("saved")).expect("JSON");
    assert!(v["totals"]["promoted"].as_u64() > Some(0), "{v}");
    v["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter_map(|iv| iv["sample_thinning"].as_u64())
        .max()
}

#[test]
fn a_settled_pcc_daemon_thins_the_samples_of_a_running_kernel_unless_told_not_to() {
    if !is_root() {
        return skip("needs root for process_madvise on another process");
    }
    // The kernel samples, the daemon fills its budget and then finds nothing to do: it asks
    // for fewer samples, and the kernel's ring takes the request.
    let thinned = thinning_asked(&[]);
    assert!(thinned > Some(1), "{thinned:?}");
    assert_eq!(thinning_asked(&["--max-thinning", "1"]), Some(1));
}

#[test]
fn bench_promote_on_a_graph_makes_a_plan_and_measures_four_arms_each_in_its_own_run() {
    if !is_root() {
        return skip("needs root for process_madvise on another process");
    }
    let (_dir, work, stdout) = bench_on_kron16("pr");
    let v: serde_json::Value = serde_json::from_slice(&stdout).expect("JSON");
    let w = &v["workloads"][0];
    assert_eq!(w["workload"], "pr:kron:16");
    assert_eq!(w["unit"], "s");
    // The daemon's pacing by default, as `hugewise promote`'s, kept with the result.
    assert_eq!(w["fault_waits"].as_f64(), Some(0.0002), "{w}");
    // The plan was made from a trace (kept; the trace removed) and replayed.
    assert!(work.join("plan.json").is_file());
    assert!(!work.join("plan.hwt").exists());
    assert!(w["graph"]["plan_made_s"].as_f64() > Some(0.0), "{w}");
    let arm = |name: &str| {
        w["samples"]
            .as_array()
            .expect("samples")
            .iter()
            .find(|s| s["arm"] == name)
            .unwrap_or_else(|| panic!("no {name} sample in {w}"))
            .clone()
    };
    // Shares as each run read them back from the kernel.
    assert_eq!(arm("base")["huge_share"].as_f64(), Some(0.0), "{w}");
    assert!(arm("ideal")["huge_share"].as_f64() > Some(0.5), "{w}");
    let plan = arm("plan");
    assert!(plan["huge_share"].as_f64() > Some(0.0), "{w}");
    assert!(plan["promotions"][0].as_u64() > Some(0), "{w}");
    assert!(w["plan_chunks"].as_u64() > Some(0), "{w}");
    // The daemon arm ran under `hugewise promote`, whose record is kept.
    assert!(arm("daemon")["daemon_cpu_ns"].as_u64().is_some(), "{w}");
    assert!(work.join("round0-daemon-promote.json").is_file());
    // Its splits, and how many of them gave their place to a hotter chunk.
    let demotions = &arm("daemon")["demotions"];
    assert!(demotions[1].as_u64() <= demotions[0].as_u64(), "{w}");
    assert!(demotions[1].as_u64().is_some(), "{w}");
    // Two timed trials each; the plan's run one more, in which its steps were made, and
    // which its time leaves out.
    let trials = |name: &str| -> Vec<f64> {
        run_trials(&work, name)
            .iter()
            .map(|t| t["kernel_ns"].as_f64().expect("kernel_ns") / 1e9)
            .collect()
    };
    assert_eq!(
        ["base", "ideal", "plan", "daemon"].map(|a| trials(a).len()),
        [2, 2, 3, 2]
    );
    let plan_timed = trials("plan");
    let median = (plan_timed[1] + plan_timed[2]) / 2.0;
    let time = plan["time"].as_f64().expect("time");
    assert!(
        (time - median).abs() < 1e-9 * median,
        "{time} {plan_timed:?}"
    );
    for key in ["ideal_speedup", "plan_speedup", "daemon_speedup"] {
        assert!(w[key].as_f64().is_some_and(|x| x > 0.0), "{key}: {w}");
    }
}

/// `bench promote --graph kron:16 --kernel KERNEL`, one round of two timed trials at a 50 %
/// budget, in a fresh work directory: the directory (kept while the first value lives), the
/// work directory and the JSON printed.
fn bench_on_kron16(kernel: &str) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    let out = succeeded(
        hugewise()
            .args(["bench", "promote", "--graph", "kron:16", "--kernel", kernel])
            .args(["--rounds", "1", "--trials", "2", "--budget", "50%"])
            .args([
                "--interval",
                "0.1s",
                "--json",
                "--no-progress",
                "--work-dir",
            ])
            .arg(&work)
            .output()
            .expect("run hugewise"),
    );
    (dir, work, out.stdout)
}

/// The trials of one arm's run in round 0 of a `bench promote --graph` work directory.
fn run_trials(work: &std::path::Path, arm: &str) -> Vec<serde_json::Value> {
    let f = work.join(format!("round0-{arm}.json"));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&f).expect("run result")).expect("JSON");
    v["trials"].as_array().expect("trials").clone()
}

#[test]
fn bench_promote_on_bfs_times_every_arm_from_the_same_sources() {
    if !is_root() {
        return skip("needs root for process_madvise on another process");
    }
    let (_dir, work, _) = bench_on_kron16("bfs");
    // Every arm drops a first trial (the plan's steps are made in it), so all time the same
    // two searches.
    let timed = |arm: &str| -> Vec<serde_json::Value> {
        let t = run_trials(&work, arm);
        assert_eq!(t.len(), 3, "{arm}: {t:?}");
        t[1..].iter().map(|t| t["sources"].clone()).collect()
    };
    let base = timed("base");
    assert_ne!(base[0], base[1], "two trials from one source: {base:?}");
    for arm in ["ideal", "plan", "daemon"] {
        assert_eq!(timed(arm), base, "{arm}");
    }
}

#[test]
fn bench_promote_on_a_graph_refuses_a_budget_given_as_a_size() {
    let out = hugewise()
        .args([
            "bench", "promote", "--graph", "kron:10", "--budget", "64MiB",
        ])
        .output()
        .expect("run hugewise");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--budget") && err.contains("share"), "{err}");
}

#[test]
fn bench_promote_on_a_graph_refuses_a_given_plan_it_cannot_replay_before_any_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let refused = |plan: &std::path::Path| {
        let out = hugewise()
            .args(["bench", "promote", "--graph", "kron:10", "--plan"])
            .arg(plan)
            .arg("--work-dir")
            .arg(dir.path().join("work"))
            .output()
            .expect("run hugewise");
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let missing = dir.path().join("missing.json");
    let err = refused(&missing);
    assert!(err.contains("missing.json"), "{err}");
    // A result of another kind is named as such.
    let other = dir.path().join("sys.json");
    let saved = hugewise()
        .args(["sys", "--json"])
        .output()
        .expect("run hugewise");
    std::fs::write(&other, &saved.stdout).expect("write");
    let err = refused(&other);
    assert!(err.contains("not a promotion plan"), "{err}");
    // Nothing ran: no arm left a result behind.
    assert!(!dir.path().join("work").join("round0-base.json").exists());
}

/// `hugewise ARGS` refused as a usage error (exit code 2): its stderr.
fn refused_usage(args: &[&str]) -> String {
    let out = hugewise().args(args).output().expect("run hugewise");
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `bench promote` on a small hot spot (4 of 32 chunks take 99 % of the reads, one line of
/// each page, a budget of the 4), with `extra` arguments.
fn small_hot_spot(extra: &[&str]) -> std::process::Output {
    hugewise()
        .args([
            "bench",
            "promote",
            "--size",
            "64MiB",
            "--hotspot",
            "12.5%:99%",
            "--lines-per-page",
            "1",
            "--reads",
            "2M",
            "--rounds",
            "1",
            "--budget",
            "12.5%",
            "--interval",
            "10ms",
        ])
        .args(extra)
        .output()
        .expect("run hugewise")
}

#[test]
fn bench_promote_runs_a_chased_hot_spot_and_names_it_in_the_json() {
    let out = small_hot_spot(&[
        "--chase",
        "--json",
        "--fault-waits",
        "100%",
        "--walk-ns",
        "45",
        "--nice",
        "7",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("THP `always`") {
        return skip("THP `always`: the base arm cannot be 4 KiB");
    }
    let out = succeeded(out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let w = &v["workloads"][0];
    assert_eq!(w["workload"], "hot:12.5%:99%:lines:1:chase", "{w}");
    // 4 of 32 chunks hot, as drawn; the lines staggered, the reads chained.
    assert_eq!(w["hotspot"]["chunks"], 0.125);
    assert_eq!(w["chase"], true);
    assert_eq!(w["lines_staggered"], true);
    assert!(w["zipf_s"].is_null());
    assert!(w["ideal_speedup"].as_f64().is_some_and(|s| s > 0.0), "{w}");
    // The daemon arm's pacing, as asked, is kept with the result; a share past all is refused.
    assert_eq!(w["fault_waits"].as_f64(), Some(1.0), "{w}");
    let err = refused_usage(&["bench", "promote", "--fault-waits", "150%"]);
    assert!(err.contains("150%"), "{err}");
    // So is the walk cost it was given, and one that is no cost is refused by name.
    assert_eq!(w["walk_ns"].as_f64(), Some(45.0), "{w}");
    for bad in ["0", "-3", "1e9", "fast"] {
        let err = refused_usage(&["promote", &format!("--walk-ns={bad}"), "--pid", "1"]);
        assert!(err.contains("--walk-ns") && err.contains(bad), "{err}");
    }
    // And the nice value its thread gave way with; one past 0 to 19 is refused by name.
    assert_eq!(w["nice"].as_i64(), Some(7), "{w}");
    for bad in ["20", "-1", "low"] {
        let err = refused_usage(&["promote", &format!("--nice={bad}"), "--pid", "1"]);
        assert!(err.contains("--nice") && err.contains(bad), "{err}");
    }
    // A hot spot that leaves no chunk cold is refused by name.
    let err = refused_usage(&["bench", "promote", "--hotspot", "100%:50%"]);
    assert!(err.contains("'100%:50%'"), "{err}");
}

#[test]
fn bench_promote_on_shared_frames_runs_the_arms_in_the_order_of_the_splits() {
    let out = small_hot_spot(&["--same-frames", "--markdown"]);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("THP `always`")
        || err.contains("MADV_COLLAPSE made only")
        || err.contains("cannot share frames")
    {
        return skip("the region could not start all huge here");
    }
    let out = succeeded(out);
    let md = String::from_utf8_lossy(&out.stdout);
    // Ideal, plan, base, then the daemon: the order of the splits.
    assert!(md.contains("| 0 (B C A D) |"), "{md}");
    // A graph's arms are processes of their own, with their own pages: refused by name.
    let err = refused_usage(&["bench", "promote", "--graph", "kron:10", "--same-frames"]);
    assert!(err.contains("--same-frames"), "{err}");
}

#[test]
fn bench_promote_faults_cold_chunks_first_when_asked() {
    let out = small_hot_spot(&["--cold-first", "--json"]);
    if String::from_utf8_lossy(&out.stderr).contains("THP `always`") {
        return skip("THP `always`: the base arm cannot be 4 KiB");
    }
    let out = succeeded(out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let w = &v["workloads"][0];
    assert_eq!(w["cold_first"], true, "{w}");
    assert!(w["ideal_speedup"].as_f64().is_some_and(|s| s > 0.0), "{w}");
    // One region collapsed whole cannot also be faulted in an order: refused by name.
    let err = refused_usage(&["bench", "promote", "--cold-first", "--same-frames"]);
    assert!(err.contains("--cold-first"), "{err}");
}

#[test]
fn a_program_that_publishes_nothing_is_promoted_on_its_mapped_pages_and_told_so() {
    if !is_root() {
        return skip("needs root for process_madvise");
    }
    if Command::new("python3").arg("-V").output().is_err() {
        return skip("python3 is not installed");
    }
    // The default policy, on a program that knows nothing of hugewise.
    let out = hugewise()
        .args([
            "promote",
            "--budget",
            "100%",
            "--interval",
            "0.2s",
            "--json",
        ])
        .args(["--", "python3", "-c"])
        .arg(
            "import mmap, time\n\
             m = mmap.mmap(-1, 32 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n\
             m.write(b'x' * (32 << 20))\n\
             time.sleep(1.5)\n",
        )
        .output()
        .expect("run hugewise");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    // Said at the first interval: no samples, so the mapped pages, as MEGA judges them.
    assert!(
        err.contains("publishes no access samples, so auto judges it as mega"),
        "{err}"
    );
    // The JSON goes to stderr after the command's output (the command owns stdout).
    let json = &err[err.find("{\n").expect("JSON")..];
    let v: serde_json::Value = serde_json::from_str(json).expect("JSON");
    assert_eq!(v["policy"], "auto");
    // Python ran under the preload library: its 32 MiB were advised huge before their first
    // fault (or, where the kernel had no huge page then, promoted after): huge either way.
    assert!(
        err.contains("it runs under the preload library, whose allocation log is read"),
        "{err}"
    );
    assert!(peak_huge(&v) >= 16 << 20, "{}", v["intervals"]);
}

/// The most bytes the daemon read back huge at any look.
fn peak_huge(v: &serde_json::Value) -> u64 {
    v["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter_map(|i| i["huge_bytes_after"].as_u64())
        .max()
        .unwrap_or(0)
}

/// `benches/programs/randread.c` built in `dir` (None, and the test skipped, without `cc`).
fn randread(dir: &std::path::Path, extra: &[&str]) -> Option<std::path::PathBuf> {
    build(dir, "../../benches/programs/randread.c", extra)
}

/// The C program at `src` (from this crate's directory) built in `dir` with `extra` flags.
fn build(dir: &std::path::Path, src: &str, extra: &[&str]) -> Option<std::path::PathBuf> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
    let stem = src.file_stem().and_then(|s| s.to_str()).expect("a name");
    let exe = dir.join(format!("{stem}{}", extra.join("")));
    let ok = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(extra)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(exe)
}

/// What `randread` printed (`KEY=VALUE` lines) and the session's record, from a `hugewise
/// promote --json ... -- randread MIB 5`.
struct Launched {
    printed: std::collections::HashMap<String, String>,
    record: serde_json::Value,
    stderr: String,
}

/// `hugewise promote FLAGS -- randread MIB MILLION_READS`.
fn promote_randread(exe: &std::path::Path, flags: &[&str], mib: &str, reads: &str) -> Launched {
    let out = hugewise()
        .args(["promote", "--json"])
        .args(flags)
        .arg("--")
        .arg(exe)
        .args([mib, reads])
        .output()
        .expect("run hugewise");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let printed = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let json = &stderr[stderr.find("{\n").expect("JSON")..];
    Launched {
        printed,
        record: serde_json::from_str(json).expect("JSON"),
        stderr,
    }
}

impl Launched {
    fn number(&self, key: &str) -> u64 {
        let v = &self.printed[key];
        match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).expect("hex"),
            None => v.parse().expect("number"),
        }
    }

    /// Promotions the daemon made inside the program's buffer.
    fn promoted_in_buffer(&self) -> usize {
        let (buf, bytes) = (self.number("buf"), self.number("bytes"));
        self.record["actions"]
            .as_array()
            .expect("actions")
            .iter()
            .filter(|a| a["kind"] == "promote")
            .filter(|a| {
                a["start"]
                    .as_u64()
                    .is_some_and(|s| s + (2 << 20) > buf && s < buf + bytes)
            })
            .count()
    }
}

fn thp_possible() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| !s.contains("[never]"))
}

/// The end-to-end promise of `promote -- CMD` on a program that publishes nothing: started
/// under the preload library, its big buffer is backed by huge pages from its first fault as
/// far as the budget goes (read by the program itself from its smaps right after touching it,
/// before any daemon could collapse anything), and the daemon collapses nothing there.
#[test]
fn a_started_program_is_huge_at_first_fault_within_its_budget() {
    if !is_root() {
        return skip("needs root for process_madvise");
    }
    if !thp_possible() {
        return skip("THP is off on this machine");
    }
    let dir = tempfile::tempdir().expect("tmp");
    let Some(exe) = randread(dir.path(), &[]) else {
        return skip("no C compiler (cc)");
    };
    // Enough reads, and looks often enough (every 0.1 s), that the daemon looks while the
    // program runs: the note on its allocation log comes from such a look.
    let all = promote_randread(
        &exe,
        &["--budget", "100%", "--interval", "0.1s"],
        "256",
        "40",
    );
    assert!(
        all.stderr.contains("starts under the preload library"),
        "{}",
        all.stderr
    );
    assert!(
        all.stderr
            .contains("it runs under the preload library, whose allocation log is read"),
        "{}",
        all.stderr
    );
    // 256 MiB in 128 whole chunks, every one advised before its first fault.
    assert_eq!(all.number("huge_kib"), 256 << 10, "{}", all.stderr);
    assert_eq!(all.promoted_in_buffer(), 0, "{}", all.record["actions"]);

    // The default budget, 2 %: the buffer's mapping is 256 MiB and a page (its header), whose
    // 2 % is 5.12 MiB: two whole chunks at fault, and the daemon's budget has room for them.
    // 40 M reads on mostly 4 KiB pages keep the program alive for a second or more, so that
    // the daemon looks (every 0.3 s) while it holds the buffer; 5 M took under 0.3 s on a
    // quiet machine and no look saw it.
    let some = promote_randread(&exe, &["--interval", "0.3s"], "256", "40");
    assert_eq!(some.number("huge_kib"), 4 << 10, "{}", some.stderr);
    // Every look that saw the program held its huge pages within a budget that, once the
    // buffer was there, stood on its whole size (so the daemon split none of them).
    let looks = some.record["intervals"].as_array().expect("intervals");
    for i in looks {
        assert!(
            i["huge_bytes_after"].as_u64() <= i["budget_bytes"].as_u64(),
            "{i}"
        );
    }
    assert!(
        looks
            .iter()
            .any(|i| i["huge_bytes_after"].as_u64() == Some(4 << 20)),
        "{looks:?}"
    );
    assert_eq!(
        some.record["totals"]["demoted"], 0,
        "{}",
        some.record["totals"]
    );
    assert_eq!(some.promoted_in_buffer(), 0, "{}", some.record["actions"]);

    // Without the library the buffer faults in on 4 KiB pages (THP is `madvise` here, or
    // `always` and then the kernel decides alone). The daemon looks only at the start (20 s
    // apart), and the session ends with the program, not an interval later. Its collapses
    // go onto whatever page the kernel gives (no warm page first).
    let none = promote_randread(
        &exe,
        &[
            "--no-preload",
            "--no-warm",
            "--budget",
            "100%",
            "--interval",
            "20s",
        ],
        "256",
        "5",
    );
    let run_s: f64 = none.printed["run_s"].parse().expect("run_s");
    let session_s = none.record["wall_ns"].as_f64().expect("wall_ns") / 1e9;
    assert!(
        session_s < run_s + 10.0,
        "waited {session_s} s for the next look"
    );
    assert!(!none.stderr.contains("preload library"), "{}", none.stderr);
    let always = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| s.contains("[always]"));
    if !always {
        // Huge only what the daemon's first look collapsed (it may come while the buffer is
        // being touched), never at fault.
        let collapsed = none.promoted_in_buffer() as u64;
        assert!(
            none.number("huge_kib") <= collapsed * 2048,
            "{}",
            none.stderr
        );
        assert!(none.number("huge_kib") < 64 << 10, "{}", none.stderr);
    }
}

/// A program the loader would not preload is started as it is, and the user is told why.
#[test]
fn a_static_program_starts_without_the_library_and_says_why() {
    if !is_root() {
        return skip("needs root for process_madvise");
    }
    let dir = tempfile::tempdir().expect("tmp");
    let Some(exe) = randread(dir.path(), &["-static"]) else {
        return skip("no static C library to link with");
    };
    let r = promote_randread(&exe, &["--interval", "5s"], "8", "5");
    assert!(
        r.stderr.contains("starts without the preload library")
            && r.stderr.contains("statically linked"),
        "{}",
        r.stderr
    );
    assert_eq!(r.number("bytes"), 8 << 20);
}

/// The budget rule of the preload library, counted by hand: 8 MiB for a program that mallocs
/// 4, 6 and 16 MiB, frees the first and mallocs 8 MiB. The first gets its 4 MiB, the second the
/// 4 MiB left (its leading two chunks of three), the third none; the 4 MiB the first gave back
/// go to the fourth. Read from the program's own smaps, so from the kernel.
#[test]
fn the_preload_budget_goes_to_the_first_allocations_and_comes_back_when_freed() {
    if !thp_possible() {
        return skip("THP is off on this machine");
    }
    let dir = tempfile::tempdir().expect("tmp");
    let Some(exe) = build(dir.path(), "tests/programs/budget.c", &[]) else {
        return skip("no C compiler (cc)");
    };
    let beside = std::path::Path::new(env!("CARGO_BIN_EXE_hugewise"))
        .parent()
        .expect("a directory")
        .to_path_buf();
    let Some(library) = [
        beside.join("libhugewise_preload.so"),
        beside.join("deps/libhugewise_preload.so"),
    ]
    .into_iter()
    .filter(|p| p.is_file())
    .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok()) else {
        return skip("the preload library is not built");
    };
    let out = Command::new(&exe)
        .args(["4", "6", "16", "f0", "8"])
        .env("LD_PRELOAD", &library)
        .env("HUGEWISE_EXEC_RULES", ">=2MiB=thp")
        .env("HUGEWISE_EXEC_BUDGET", format!("bytes:{}", 8 << 20))
        .output()
        .expect("run the program");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(text, "huge[1]=4096\nhuge[2]=0\nhuge[3]=4096\n");
}
