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

#[test]
fn redis_runs_every_phase_under_every_variant_and_nothing_is_left_behind() {
    if !hugewise_sys::testing::root_or_skip() {
        return;
    }
    if Command::new("redis-benchmark")
        .arg("--version")
        .output()
        .is_err()
        || Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
    {
        hugewise_sys::testing::skip(
            "no redis-server/redis-benchmark (Debian's redis-server, redis-tools)",
        );
        return;
    }
    let before = (thp_enabled(), our_cgroups(), redis_servers());
    let out_file = std::env::temp_dir().join(format!("hw-bloat-{}.json", std::process::id()));
    let state = tempfile::tempdir().expect("state dir");
    let out = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .env("HUGEWISE_STATE_DIR", state.path())
        .args([
            "--no-progress",
            "bench",
            "bloat",
            "--keys",
            "20000",
            "--rounds",
            "1",
        ])
        .args([
            "--settle",
            "100ms",
            "--variants",
            "never;always;exec:*=thp",
            "--out",
        ])
        .arg(&out_file)
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
    let _ = std::fs::remove_file(&out_file);
}
