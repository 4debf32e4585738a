//! `hugewise bench bloat` with Debian's real redis-server and redis-benchmark, as root: every
//! variant runs its four phases, and the THP mode, the cgroups and the servers are gone after.

use std::process::Command;

fn thp_enabled() -> String {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default()
}

fn our_cgroups() -> Vec<String> {
    ["/sys/fs/cgroup/memory", "/sys/fs/cgroup"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hugewise-"))
        .collect()
}

fn redis_servers() -> usize {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("comm"))
                        .is_ok_and(|c| c.trim() == "redis-server")
                })
                .count()
        })
        .unwrap_or(0)
}

/// Servers running once those a bench before has just stopped are gone (waits up to 10 s
/// for none to be left; a server of the machine's own stays counted).
fn servers_at_rest() -> usize {
    let t = std::time::Instant::now();
    while redis_servers() > 0 && t.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    redis_servers()
}

/// `hugewise bench bloat` on 20,000 keys, `rounds` rounds of `variants`, its journal in
/// `state` and its result saved to `out`.
fn bloat(state: &std::path::Path, rounds: &str, variants: &str, out: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hugewise"));
    c.env("HUGEWISE_STATE_DIR", state)
        .args(["--no-progress", "bench", "bloat", "--keys", "20000"])
        .args([
            "--rounds",
            rounds,
            "--settle",
            "100ms",
            "--variants",
            variants,
        ])
        .arg("--out")
        .arg(out);
    c
}

/// One bench at a time: each test compares the THP mode, the cgroups and the servers before
/// and after its own, which the other's would change.
static ONE_BENCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Root and Debian's Redis, or the test is skipped.
fn root_and_redis_or_skip() -> bool {
    if !hugewise_sys::testing::root_or_skip() {
        return false;
    }
    let runs = |p: &str| Command::new(p).arg("--version").output().is_ok();
    if !runs("redis-benchmark") || !runs("redis-server") {
        hugewise_sys::testing::skip(
            "no redis-server/redis-benchmark (Debian's redis-server, redis-tools)",
        );
        return false;
    }
    true
}

#[test]
fn redis_runs_every_phase_under_every_variant_and_nothing_is_left_behind() {
    if !root_and_redis_or_skip() {
        return;
    }
    let _one = ONE_BENCH.lock().unwrap_or_else(|e| e.into_inner());
    let before = (thp_enabled(), our_cgroups(), servers_at_rest());
    let state = tempfile::tempdir().expect("state dir");
    let out_file = state.path().join("bloat.json");
    let out = bloat(state.path(), "1", "never;always;exec:*=thp", &out_file)
        .output()
        .expect("run hugewise");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!((thp_enabled(), our_cgroups(), redis_servers()), before);
    let text = std::fs::read_to_string(&out_file).expect("saved");
    let r = hugewise_results::Saved::<hugewise_results::bloat::BloatReport>::from_json(&text)
        .expect("a bloat result")
        .result;
    assert!(
        r.server_version.starts_with("Redis server"),
        "{}",
        r.server_version
    );
    assert_eq!(r.runs.len(), 3);
    for run in &r.runs {
        let names: Vec<&str> = run.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["fill", "read", "delete", "refill"],
            "{}",
            run.variant
        );
        assert!(run.phases.iter().all(|p| p.rps > 0.0), "{run:?}");
        assert!(
            run.final_charged_bytes.is_some_and(|b| b > 1 << 20),
            "the server's memory was charged to its cgroup: {run:?}"
        );
        assert!(!run.series.is_empty());
        // The last reading is taken while the server still runs: its charge holds what the
        // server has resident, not what is left of it as it exits.
        let (charged, rss) = (
            run.final_charged_bytes.unwrap_or(0),
            run.final_rss_bytes.unwrap_or(u64::MAX),
        );
        assert!(
            charged >= rss / 2,
            "charged {charged} against {rss} resident: {run:?}"
        );
    }
    let never = &r.variants[0];
    assert_eq!(never.bloat_bytes, Some(0.0));
    assert!(r.variants[2].throughput_vs_always.is_some());
}

#[test]
fn a_signal_keeps_the_rounds_bloat_finished_and_puts_everything_back() {
    if !root_and_redis_or_skip() {
        return;
    }
    let _one = ONE_BENCH.lock().unwrap_or_else(|e| e.into_inner());
    let before = (thp_enabled(), our_cgroups(), servers_at_rest());
    let dir = tempfile::tempdir().expect("tmp");
    let out_file = dir.path().join("bloat.json");
    // A round of two variants takes a few seconds here; a first try stopped before its first
    // round ended is tried again with longer.
    let mut saved = false;
    for wait_s in [15, 45] {
        let mut child = bloat(dir.path(), "500", "never;always", &out_file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(std::time::Duration::from_secs(wait_s));
        let int = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(int.success());
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(130));
        // Whatever the signal cut short, the machine is as it was.
        assert_eq!((thp_enabled(), our_cgroups(), servers_at_rest()), before);
        if out_file.exists() {
            saved = true;
            break;
        }
    }
    assert!(saved, "no round ended in 45 s");
    let text = std::fs::read_to_string(&out_file).expect("saved");
    let r = hugewise_results::Saved::<hugewise_results::bloat::BloatReport>::from_json(&text)
        .expect("a bloat result")
        .result;
    assert_eq!(
        r.stopped,
        Some(hugewise_results::stats::Stopped::Interrupted)
    );
    assert!((1..500).contains(&r.rounds), "{}", r.rounds);
    // Both variants of every round kept, none of the round under way.
    assert_eq!(r.runs.len() as u32, 2 * r.rounds);
    assert!(r.runs.iter().all(|run| run.round < r.rounds));
}
