//! The real binary, run as a user would.

use std::process::{Command, Stdio};

fn hw(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(args)
        .arg("--no-progress")
        .output()
        .expect("run hugewise")
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn sys_json_has_the_machine() {
    let o = hw(&["sys", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(v["memory"]["total_bytes"].as_u64().expect("total") > 0);
    assert!(!v["zones"].as_array().expect("zones").is_empty());
    assert!(v["capabilities"]["madv_collapse"]["usable"].is_boolean());
    assert!(v["thp"]["enabled"]["current"].is_string());
}

#[test]
fn sys_text_and_atomic_out_file() {
    let d = tempfile::tempdir().expect("tmp");
    let out = d.path().join("sys.json");
    let o = hw(&["sys", "--out", out.to_str().expect("utf8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("hugetlb pools") && text.contains("capabilities"),
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("saved")).expect("json");
    assert!(v["free_2m_blocks"].is_u64());
    assert_eq!(
        std::fs::read_dir(d.path()).expect("ls").count(),
        1,
        "no temp file left"
    );
}

#[test]
fn faultlat_base_counts_one_fault_per_page() {
    let o = hw(&["faultlat", "--size", "16MiB", "--policy", "base", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["touches"], 4096);
    assert!(v["faults"].as_u64().expect("faults") >= 4080);
    assert_eq!(v["policy"], "base");
    assert_eq!(v["backing"]["thp_2m_bytes"], 0);
    assert_eq!(v["meta"]["schema_version"], 1);
    assert!(v["fault_latency"]["p99_ns"].as_u64().expect("p99") > 0);
}

#[test]
fn faultlat_then_collapse_reports_the_collapse_apart() {
    let o = hw(&["faultlat", "--size", "8MiB", "--then-collapse", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["collapse"]["pieces"], 4);
    assert_eq!(v["collapse"]["latency"]["count"], 4);
}

#[test]
fn bad_sizes_and_policies_are_usage_errors_that_say_why() {
    for (args, want) in [
        (vec!["faultlat", "--size", "-1"], "negative"),
        (vec!["faultlat", "--size", "0"], "greater than 0"),
        (vec!["faultlat", "--size", "3XB"], "unknown unit"),
        (
            vec!["faultlat", "--size", "99999999999999999999"],
            "too large",
        ),
        (
            vec!["faultlat", "--policy", "huge"],
            "valid policies: system, base, thp",
        ),
        (vec!["faultlat", "--policy", "thp-prefix:150%"], "over 100%"),
        (vec!["bench", "randread", "--reads", "0"], "at least 1"),
    ] {
        let o = hw(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn empty_hugetlb_pool_names_the_knob() {
    let pool = std::fs::read_to_string("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
        .unwrap_or_default();
    if pool.trim() != "0" {
        eprintln!("skip: the 2 MiB pool is not empty here");
        return;
    }
    let o = hw(&["faultlat", "--size", "4MiB", "--policy", "hugetlb-2m"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(["sys", "--no-progress"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("wait");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn help_teaches_with_examples() {
    let o = hw(&["faultlat", "--help"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("Examples:") && text.contains("--then-collapse"),
        "{text}"
    );
    let o = hw(&["--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Exit codes:"));
}
