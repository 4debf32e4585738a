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

/// The command failed with `code` and its message mentions `want`.
fn fails_with(o: &std::process::Output, code: i32, want: &str) {
    assert_eq!(o.status.code(), Some(code), "{}", stderr(o));
    assert!(
        stderr(o).contains(want),
        "expected {want:?} in: {}",
        stderr(o)
    );
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
    assert_eq!(v["schema_version"], 1);
    assert!(v["schema"]
        .as_str()
        .expect("schema")
        .starts_with("hugewise/"));
    assert!(v["meta"]["kernel"].is_string());
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
    assert_eq!(v["schema_version"], 1);
    assert!(v["schema"]
        .as_str()
        .expect("schema")
        .starts_with("hugewise/"));
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
        (
            vec!["bench", "faultlat", "--fault-waits", "2"],
            "a share from 0 to 1",
        ),
        (
            vec!["promote", "--pid", "1", "--fault-waits", "150%"],
            "a share from 0 to 1",
        ),
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
        hugewise_sys::testing::skip("the 2 MiB pool is not empty here");
        return;
    }
    let o = hw(&["faultlat", "--size", "4MiB", "--policy", "hugetlb-2m"]);
    fails_with(
        &o,
        1,
        "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
    );
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    for json in [false, true] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hugewise"));
        cmd.args(["sys", "--no-progress"]);
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        drop(child.stdout.take());
        let o = child.wait_with_output().expect("wait");
        assert!(o.status.success(), "json={json}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "json={json}");
    }
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

#[test]
fn run_bfs_verifies_and_reports_backing_per_array() {
    let o = hw(&[
        "run",
        "bfs",
        "--graph",
        "kron:12",
        "--verify",
        "--trials",
        "2",
        "--pages",
        "all=base,property=thp",
        "--alloc-order",
        "property-first",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["trials"].as_array().expect("trials").len(), 2);
    assert!(v["trials"]
        .as_array()
        .expect("trials")
        .iter()
        .all(|t| t["verified"] == true));
    let regions = v["regions"].as_array().expect("regions");
    let prop = regions
        .iter()
        .find(|r| r["name"] == "property")
        .expect("property");
    assert_eq!(prop["policy"], "thp");
    assert_eq!(
        prop["backing"]["thp_2m_bytes"],
        prop["backing"]["total_bytes"]
    );
    let edges = regions
        .iter()
        .find(|r| r["name"] == "edges")
        .expect("edges");
    assert_eq!(edges["backing"]["thp_2m_bytes"], 0);
}

#[test]
fn gap_file_round_trips_through_the_binary() {
    let d = tempfile::tempdir().expect("tmp");
    let sg = d.path().join("k.sg");
    let o = hw(&[
        "graph",
        "convert",
        "--graph",
        "kron:10",
        "--out",
        sg.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let info = |g: &str| -> serde_json::Value {
        let o = hw(&["graph", "info", "--graph", g, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).expect("json")
    };
    let a = info("kron:10");
    let b = info(sg.to_str().expect("utf8"));
    assert_eq!(a["graph"], b["graph"]);
    let o = hw(&[
        "run",
        "bfs",
        "--graph",
        sg.to_str().expect("utf8"),
        "--verify",
        "--trials",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let wrong = d.path().join("k.wsg");
    let o = hw(&[
        "graph",
        "convert",
        "--graph",
        "kron:10",
        "--out",
        wrong.to_str().expect("utf8"),
    ]);
    fails_with(&o, 1, "unweighted graph goes to a .sg file");
}

#[test]
fn overcommit_runs_that_many_threads_per_cpu() {
    let o = hw(&[
        "run",
        "bfs",
        "--graph",
        "kron:8",
        "--overcommit",
        "3",
        "--trials",
        "1",
        "--verify",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    assert_eq!(v["threads"], 3 * cpus);
    assert_eq!(v["trials"][0]["verified"], true);
    fails_with(
        &hw(&["run", "bfs", "--threads", "2", "--overcommit", "2"]),
        2,
        "cannot be used with",
    );
}

#[test]
fn run_bfs_on_the_real_graph_in_the_repository() {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/cnr-2000.el.zst");
    let o = hw(&[
        "run", "bfs", "--graph", p, "--mode", "top-down", "--verify", "--trials", "2", "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["graph"]["vertices"], 325_557);
    assert_eq!(v["graph"]["directed"], true);
}

#[test]
fn bad_graph_inputs_say_what_is_wrong() {
    let d = tempfile::tempdir().expect("tmp");
    let el = d.path().join("bad.el");
    std::fs::write(&el, "0 1\n1 two\n").expect("write");
    let o = hw(&["run", "bfs", "--graph", el.to_str().expect("utf8")]);
    fails_with(&o, 1, "bad.el:2: target id 'two' is not a whole number");
    for (args, want) in [
        (
            vec!["run", "bfs", "--graph", "kron:99"],
            "scale must be 1 to 31",
        ),
        (
            vec!["run", "bfs", "--pages", "vertices=thp"],
            "unknown region 'vertices'",
        ),
        (
            vec!["run", "bfs", "--alloc-order", "weights-frist"],
            "unknown region 'weights-frist'",
        ),
        (
            vec!["run", "bfs", "--graph", "g.txt"],
            "unknown graph file kind",
        ),
    ] {
        fails_with(&hw(&args), 2, want);
    }
}

#[test]
fn every_kernel_runs_and_verifies_from_the_command_line() {
    for (kernel, extra) in [
        ("bfs", vec!["--mode", "top-down"]),
        ("sssp", vec!["--delta", "4"]),
        ("pr", vec!["--mode", "push", "--tolerance", "1e-5"]),
        ("cc", vec!["--mode", "sv"]),
        ("bc", vec!["--sources", "2"]),
        ("tc", vec![]),
    ] {
        let mut args = vec![
            "run", kernel, "--graph", "kron:10", "--verify", "--trials", "2",
        ];
        args.extend(&extra);
        args.push("--json");
        let o = hw(&args);
        assert!(o.status.success(), "{kernel}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert_eq!(v["kernel"]["kernel"], kernel);
        assert_eq!(v["trials"][1]["verified"], true, "{kernel}");
        assert_eq!(v["trials"][1]["outcome"]["kernel"], kernel);
        let want_sources = match kernel {
            "bfs" | "sssp" => 1,
            "bc" => 2,
            _ => 0,
        };
        assert_eq!(
            v["trials"][0]["sources"].as_array().expect("sources").len(),
            want_sources,
            "{kernel}"
        );
    }
}

#[test]
fn kernel_flags_that_do_not_fit_are_usage_errors() {
    for (args, want) in [
        (
            vec!["run", "bfs", "--delta", "3"],
            "--delta applies to sssp only",
        ),
        (vec!["run", "pr", "--mode", "sv"], "not a variant of pr"),
        (vec!["run", "tc", "--mode", "do"], "tc has no variants"),
        (vec!["run", "bc", "--sources", "0"], "0 is not in 1.."),
        (
            vec!["run", "bfs", "--reorder", "dgb"],
            "unknown reordering 'dgb'",
        ),
    ] {
        fails_with(&hw(&args), 2, want);
    }
}

#[test]
fn tc_on_a_directed_file_says_how_to_fix_it_and_sssp_weights_any_input() {
    let d = tempfile::tempdir().expect("tmp");
    let el = d.path().join("tri.el");
    std::fs::write(&el, "# a directed triangle\n0 1\n1 2\n2 0\n").expect("write");
    let path = el.to_str().expect("utf8");
    fails_with(
        &hw(&["run", "tc", "--graph", path]),
        1,
        "tc needs an undirected graph: pass --symmetrize",
    );
    let o = hw(&["run", "tc", "--graph", path, "--symmetrize", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["trials"][0]["outcome"]["triangles"], 1);
    let o = hw(&["run", "sssp", "--graph", path, "--verify", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["graph"]["weighted"], true);
    assert_eq!(v["trials"][0]["verified"], true);
}

#[test]
fn reordering_is_timed_apart_and_keeps_the_sources() {
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "run", "bfs", "--graph", "kron:12", "--verify", "--trials", "3",
        ];
        args.extend(extra);
        args.push("--json");
        let o = hw(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).expect("json")
    };
    let plain = run(&[]);
    assert!(plain["reorder"].is_null());
    for m in ["dbg", "degree-sort", "hub-sort", "hub-cluster", "random"] {
        let r = run(&["--reorder", m]);
        assert_eq!(r["reorder"]["method"], m);
        assert!(r["reorder"]["relabel_ns"].as_u64().expect("ns") > 0);
        for t in 0..3 {
            assert_eq!(r["trials"][t]["sources"], plain["trials"][t]["sources"]);
            assert_eq!(r["trials"][t]["verified"], true);
            assert_eq!(
                r["trials"][t]["outcome"]["reached"], plain["trials"][t]["outcome"]["reached"],
                "{m}: the same source reaches the same vertices"
            );
        }
    }
}

#[test]
fn hwg_and_mtx_files_load_and_agree_with_their_source() {
    let d = tempfile::tempdir().expect("tmp");
    let hwg = d.path().join("k.hwg");
    let hwg_s = hwg.to_str().expect("utf8");
    let o = hw(&["graph", "gen", "--graph", "kron:11", "--out", hwg_s]);
    assert!(o.status.success(), "{}", stderr(&o));
    let info = |g: &str| -> serde_json::Value {
        let o = hw(&["graph", "info", "--graph", g, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).expect("json")
    };
    assert_eq!(info("kron:11")["graph"], info(hwg_s)["graph"]);
    let o = hw(&["run", "bc", "--graph", hwg_s, "--verify", "--trials", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let mtx = d.path().join("m.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate pattern symmetric\n% K4\n4 4 6\n2 1\n3 1\n4 1\n3 2\n4 2\n4 3\n",
    )
    .expect("write");
    let o = hw(&[
        "run",
        "tc",
        "--graph",
        mtx.to_str().expect("utf8"),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["trials"][0]["outcome"]["triangles"], 4);

    let reordered = d.path().join("k-dbg.hwg");
    let o = hw(&[
        "graph",
        "convert",
        "--graph",
        hwg_s,
        "--reorder",
        "dbg",
        "--out",
        reordered.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = info(reordered.to_str().expect("utf8"));
    assert_eq!(r["graph"], info(hwg_s)["graph"]);

    let mut bytes = std::fs::read(&hwg).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&hwg, &bytes).expect("damage");
    fails_with(
        &hw(&["graph", "info", "--graph", hwg_s]),
        1,
        "checksum does not match",
    );
    fails_with(
        &hw(&["graph", "convert", "--graph", "kron:4", "--out", "x.txt"]),
        1,
        "write .hwg (hugewise), .sg or .wsg (GAP)",
    );
}

#[test]
fn bench_pages_compares_layouts_and_refuses_bad_ones() {
    let o = hw(&[
        "bench", "pages", "bfs", "--graph", "kron:10", "--rounds", "2", "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["samples"].as_array().expect("samples").len(), 4);
    assert_eq!(v["summary"][1]["pages"], "all=base,property=thp");
    for (args, want) in [
        (
            vec![
                "bench",
                "pages",
                "bfs",
                "--compare",
                "edges=thp",
                "--compare",
                "all=base",
            ],
            "give the graph's as graph:PAGES",
        ),
        (
            vec!["bench", "pages", "bfs", "--compare", "all=base"],
            "give --compare twice or more",
        ),
    ] {
        fails_with(&hw(&args), 2, want);
    }
}

#[test]
fn given_sources_are_used_and_misplaced_ones_are_usage_errors() {
    let o = hw(&[
        "run", "bfs", "--graph", "kron:10", "--source", "3", "--source", "9", "--trials", "3",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let used: Vec<u64> = v["trials"]
        .as_array()
        .expect("trials")
        .iter()
        .map(|t| t["sources"][0].as_u64().expect("source"))
        .collect();
    assert_eq!(used, [3, 9, 3]);
    fails_with(
        &hw(&["run", "pr", "--graph", "kron:10", "--source", "1"]),
        2,
        "--source applies to",
    );
    fails_with(
        &hw(&["run", "bfs", "--graph", "kron:10", "--source", "5000"]),
        1,
        "not a vertex",
    );
}

/// Every subcommand's usage line names the subcommand itself (`graph gen` was once an alias
/// whose help said `graph convert`).
#[test]
fn each_usage_line_names_its_own_command() {
    for path in [
        "sys",
        "faultlat",
        "run",
        "trace",
        "trace lackey",
        "sim",
        "sim reuse",
        "report",
        "graph gen",
        "graph convert",
        "graph info",
        "bench pages",
        "bench randread",
        "env show",
        "env with",
        "env pressure",
        "env fragment",
        "env limit",
        "env restore",
    ] {
        let mut args: Vec<&str> = path.split(' ').collect();
        args.push("--help");
        let o = hw(&args);
        assert!(o.status.success(), "{path}: {}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains(&format!("Usage: hugewise {path} ")),
            "{path}: {}",
            text.lines()
                .find(|l| l.starts_with("Usage"))
                .unwrap_or("no usage line")
        );
    }
}

#[test]
fn zero_threads_are_refused_by_the_command_line() {
    for args in [
        &["run", "bfs", "--threads", "0"][..],
        &["bench", "pages", "bfs", "--threads", "0"],
    ] {
        fails_with(&hw(args), 2, "0 threads run nothing: give 1 or more");
    }
    fails_with(
        &hw(&["run", "bfs", "--overcommit", "0"]),
        2,
        "invalid value '0' for '--overcommit",
    );
}

/// `graph gen|convert` and `trace lackey` make a file (their --out) and print what they did as
/// a result `hugewise report` renders, as a table or with --json.
#[test]
fn file_making_commands_print_a_saved_kind_of_result() {
    let d = tempfile::tempdir().expect("tmp");
    let g = d.path().join("k.sg");
    let o = hw(&[
        "graph",
        "gen",
        "--graph",
        "kron:9",
        "--out",
        g.to_str().expect("utf8"),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["schema"], "hugewise/graph-write");
    assert_eq!(v["format"], "sg");
    assert_eq!(v["graph"]["vertices"], 512);
    assert_eq!(
        v["file_bytes"].as_u64(),
        Some(std::fs::metadata(&g).expect("written").len())
    );
    let saved = d.path().join("gen.json");
    std::fs::write(&saved, &o.stdout).expect("save");
    let shown = hw(&["report", saved.to_str().expect("utf8")]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.starts_with(&format!("wrote    {} (512 vertices", g.display())),
        "{shown}"
    );

    let o = hw(&[
        "graph",
        "convert",
        "--graph",
        g.to_str().expect("utf8"),
        "--out",
        d.path().join("k.hwg").to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("file     hwg,"));

    let lackey = d.path().join("l.txt");
    std::fs::write(
        &lackey,
        "I  0400d7d4,8\n S 7ff000398,8\n L 7ff000390,8\n M 0421d7f0,4\n",
    )
    .expect("write");
    let t = d.path().join("l.hwt");
    let o = hw(&[
        "trace",
        "lackey",
        lackey.to_str().expect("utf8"),
        "--out",
        t.to_str().expect("utf8"),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["schema"], "hugewise/trace-lackey");
    assert_eq!(
        (v["accesses"].as_u64(), v["instructions_skipped"].as_u64()),
        (Some(3), Some(1))
    );
}

/// Off a terminal, progress is one plain line per finished step with its rate; --no-progress
/// silences it.
#[test]
fn progress_off_a_terminal_is_a_line_per_step() {
    let o = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(["run", "bfs", "--graph", "kron:10", "--trials", "3"])
        .stderr(Stdio::piped())
        .output()
        .expect("run hugewise");
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("hugewise: generating: 16384 in ") && l.ends_with("/s)")),
        "the edges generated, with their rate: {err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("hugewise: trials: 3 in ") && l.ends_with("/s)")),
        "{err}"
    );
    assert!(!err.contains("0/0"), "{err}");
    let quiet = hw(&["run", "bfs", "--graph", "kron:10", "--trials", "3"]);
    assert!(
        !stderr(&quiet).contains("hugewise: trials"),
        "{}",
        stderr(&quiet)
    );
}

/// MemAvailable in bytes, to skip a refusal test on a machine that could take the input.
fn mem_available() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(u64::MAX, |kb| kb * 1024)
}

#[test]
fn inputs_that_would_not_fit_are_refused_before_they_are_read() {
    let d = tempfile::tempdir().expect("tmp");
    // 2e9 vertices as a directed graph: 32 bytes a vertex of offsets and cursors, 64 GB.
    if mem_available() > 60 << 30 {
        eprintln!("skip: this machine could take the inputs");
        return;
    }
    let el = d.path().join("far.el");
    std::fs::write(&el, "0 2000000000\n").expect("write");
    let mtx = d.path().join("big.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate pattern general\n3000000000 3000000000 1\n1 2\n",
    )
    .expect("write");
    let el = el.to_str().expect("utf8");
    let mtx = mtx.to_str().expect("utf8");
    for (args, want) in [
        (
            vec!["graph", "info", "--graph", el],
            "vertex id 2000000000 implies 2 000 000 001 vertices",
        ),
        (
            vec!["run", "bfs", "--graph", el],
            "vertex id 2000000000 implies 2 000 000 001 vertices",
        ),
        (
            vec!["graph", "info", "--graph", mtx],
            "declares 3 000 000 000 vertices and 1 edges",
        ),
        (
            vec!["graph", "gen", "--graph", "kron:31", "--out", "never.hwg"],
            "scale 31 implies 2 147 483 648 vertices",
        ),
        (
            vec!["faultlat", "--size", "100TiB"],
            "a region of 100TiB with every page touched",
        ),
    ] {
        let o = hw(&args);
        fails_with(&o, 1, want);
        fails_with(&o, 1, "is available");
        fails_with(&o, 1, "--force");
    }
    let o = hw(&["graph", "gen", "--graph", "kron:32", "--out", "never.hwg"]);
    fails_with(&o, 2, "scale must be 1 to 31");
    let o = hw(&["graph", "info", "--graph", "kron:8", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn loading_a_file_reports_the_bytes_read_and_their_rate() {
    let d = tempfile::tempdir().expect("tmp");
    let el = d.path().join("g.el");
    let el_s = el.to_str().expect("utf-8");
    let text: String = (0..20_000u32)
        .map(|i| format!("{} {}\n", i, (i * 7919) % 20_000))
        .collect();
    std::fs::write(&el, &text).expect("write");
    let size = text.len();
    // stderr is a pipe here: one line per finished step, with its rate.
    let o = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(["graph", "info", "--graph", el_s])
        .output()
        .expect("run");
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("hugewise: loading: "))
        .unwrap_or_else(|| panic!("a loading line: {err}"));
    assert!(line.contains("/s)"), "{line}");
    assert!(
        line.contains("KiB") || line.contains("MiB"),
        "bytes, not items ({size} bytes read): {line}"
    );
}

#[test]
fn generating_a_graph_reports_the_edges_made_and_their_rate() {
    let o = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(["graph", "info", "--graph", "kron:10"])
        .output()
        .expect("run");
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    // kron:10 has 16 Ki edges; the builder's last pass counts them all.
    assert!(
        err.lines()
            .any(|l| l.starts_with("hugewise: generating: 16384 in ") && l.ends_with("/s)")),
        "{err}"
    );
}

/// `--until` runs at least `--rounds`, keeps every ratio's interval in the JSON, and says why
/// it stopped.
#[test]
fn randread_until_reports_intervals_and_why_it_stopped() {
    let o = hw(&[
        "bench",
        "randread",
        "--size",
        "64MiB",
        "--reads",
        "1M",
        "--rounds",
        "6",
        "--until",
        "50%",
        "--max-rounds",
        "8",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let rounds = v["rounds"].as_u64().expect("rounds");
    assert!((6..=8).contains(&rounds), "{rounds}");
    let stopped = v["stopped"].as_str().expect("stopped");
    assert!(["narrow", "max_rounds"].contains(&stopped), "{stopped}");
    if stopped == "max_rounds" {
        assert_eq!(rounds, 8);
    }
    assert!(v["summary"][0].get("speedup_vs_base_ci95").is_none());
    for s in &v["summary"].as_array().expect("summary")[1..] {
        let ci = &s["speedup_vs_base_ci95"];
        let (lo, hi) = (
            ci["lo"].as_f64().expect("lo"),
            ci["hi"].as_f64().expect("hi"),
        );
        let median = s["speedup_vs_base"].as_f64().expect("speedup");
        assert!(lo <= median && median <= hi, "{lo} {median} {hi}");
        assert!(ci["coverage"].as_f64().expect("coverage") >= 0.95);
        if stopped == "narrow" {
            assert!((hi - lo) / median <= 0.5, "{s}");
        }
    }
}

/// `bench faultlat` runs its three arms in every round and saves a result the report reads.
#[test]
fn bench_faultlat_runs_every_arm_and_its_result_reads_back() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("fb.json");
    let o = hw(&[
        "bench",
        "faultlat",
        "--size",
        "64MiB",
        "--rounds",
        "1",
        "--interval",
        "10ms",
        "--out",
        out.to_str().expect("path"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).expect("saved");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["schema"], "hugewise/bench-faultlat");
    let arms: Vec<&str> = v["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| s["arm"].as_str().expect("arm"))
        .collect();
    assert_eq!(arms, ["alone", "daemon", "unpaced"]);
    assert_eq!(v["samples"][0]["faults"], 16384);
    // As root the daemon ran in a worker process of its own and stopped with the faults;
    // otherwise in a thread, since collapsing another process's memory needs root.
    let root = hugewise_sys::caps::is_root();
    assert_eq!(v["daemon_in"], if root { "process" } else { "thread" });
    assert!(v["samples"][1]["collapses"].is_u64(), "{text}");
    let shown = hw(&["report", out.to_str().expect("path")]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("p99.9 vs alone"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
}

/// Ctrl-C in the middle of an alternated bench keeps the rounds it finished: the result is
/// written with whole rounds only, says why it stopped, and the exit code says a signal ended
/// the command.
#[test]
fn a_signal_keeps_the_rounds_a_bench_finished() {
    /// Kills the bench if the test fails before it ended.
    struct Running(std::process::Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("rr.json");
    // A round takes about a second here, more on a busy machine (each sample waits up to a
    // second for quiet); a first try that stopped the bench before its first round ended is
    // tried again with longer.
    let mut saved = false;
    for wait_s in [8, 30] {
        let child = Command::new(env!("CARGO_BIN_EXE_hugewise"))
            .args([
                "bench",
                "randread",
                "--size",
                "16MiB",
                "--reads",
                "200K",
                "--rounds",
                "2000",
                "--out",
                out.to_str().expect("path"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let mut running = Running(child);
        std::thread::sleep(std::time::Duration::from_secs(wait_s));
        let int = Command::new("kill")
            .args(["-INT", &running.0.id().to_string()])
            .status()
            .expect("kill");
        assert!(int.success());
        let status = running.0.wait().expect("wait");
        assert_eq!(status.code(), Some(130));
        if out.exists() {
            saved = true;
            break;
        }
    }
    assert!(saved, "no round ended in 30 s");
    let text = std::fs::read_to_string(&out).expect("the rounds done were saved");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["stopped"], "interrupted", "{text}");
    let rounds = v["rounds"].as_u64().expect("rounds");
    assert!((1..2000).contains(&rounds), "{rounds}");
    let samples = v["samples"].as_array().expect("samples");
    // Every variant of every round kept, none of the round under way.
    let variants = v["summary"].as_array().expect("summary").len() as u64;
    assert_eq!(samples.len() as u64, rounds * variants, "{text}");
    assert!(samples.iter().all(|s| s["round"].as_u64() < Some(rounds)));
    let shown = hw(&["report", out.to_str().expect("path")]);
    assert!(shown.status.success(), "{}", stderr(&shown));
}

#[test]
fn until_caps_need_until() {
    let o = hw(&["bench", "randread", "--max-rounds", "3"]);
    fails_with(&o, 2, "--until");
}

#[test]
fn run_binds_its_threads_says_where_and_refuses_a_misspelt_switch() {
    let run = |var: &str, value: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hugewise"));
        c.args([
            "run",
            "bfs",
            "--graph",
            "kron:10",
            "--threads",
            "2",
            "--json",
            "--no-progress",
        ]);
        match value {
            Some(v) => c.env(var, v),
            None => c.env_remove(var),
        };
        c.output().expect("run hugewise")
    };
    let bound = |o: &std::process::Output| -> Vec<u64> {
        assert!(o.status.success(), "{}", stderr(o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        v["threads_bound_to"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
            .unwrap_or_default()
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let default = bound(&run("HUGEWISE_BIND_THREADS", None));
    if cpus >= 2 {
        assert_eq!(default.len(), 2, "two threads, one CPU each");
        assert_ne!(default[0], default[1]);
    } else {
        assert!(default.is_empty(), "one CPU: nothing to bind");
    }
    assert!(bound(&run("HUGEWISE_BIND_THREADS", Some("off"))).is_empty());
    for var in ["HUGEWISE_BIND_THREADS", "HUGEWISE_AWAKE_THREADS"] {
        let o = run(var, Some("of"));
        assert!(!o.status.success());
        assert!(stderr(&o).contains(var), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("expected auto, on or off"),
            "{}",
            stderr(&o)
        );
    }
}
