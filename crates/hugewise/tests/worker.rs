//! `hugewise worker`, the hidden command that serves hugewise's own typed requests, through the
//! real binary: what a benchmark's arm or a study's point gets from it.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;

use hugewise_bench::run;
use hugewise_bench::worker::{self, Request, RunRequest};
use hugewise_graph::kernels::Spec;
use hugewise_graph::load::{Input, LoadOptions};
use hugewise_graph::Layout;
use hugewise_results::run::RunReport;

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_hugewise"))
}

/// `hugewise worker` given `stdin`: its exit code and stderr.
fn worker_given(stdin: &str) -> (Option<i32>, String) {
    let mut c = Command::new(exe())
        .arg("worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hugewise");
    c.stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write");
    let o = c.wait_with_output().expect("wait");
    assert!(o.stdout.is_empty(), "no reply on failure");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_worker_run_gives_what_hugewise_run_gives() {
    let o = Command::new(exe())
        .args(["run", "bfs", "--graph", "kron:10", "--pages", "all=base"])
        .args([
            "--trials",
            "2",
            "--threads",
            "2",
            "--verify",
            "--source",
            "1",
        ])
        .args(["--source", "5", "--json", "--no-progress"])
        .output()
        .expect("run hugewise");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cli: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");

    // What `hugewise run` makes of those flags, as a typed request.
    let request = RunRequest::new(run::Config {
        input: Input::parse("kron:10").expect("spec"),
        load: LoadOptions::for_kernel(1),
        layout: Layout::parse("all=base", "natural").expect("layout"),
        kernel: Spec::default_for("bfs").expect("bfs"),
        reorder: None,
        reorder_cache: None,
        trials: 2,
        sources: vec![1, 5],
        verify: true,
        threads: 2,
        sample_every: None,
        replay: None,
    });
    let r: RunReport = worker::call(exe(), &Request::Run(request), &AtomicBool::new(false))
        .expect("the worker's run");
    let w = serde_json::to_value(&r).expect("JSON");
    for key in [
        "graph_spec",
        "graph",
        "kernel",
        "threads",
        "pages",
        "alloc_order",
        "huge_footprint_share",
        "sample_every",
        "replay",
        "memory",
    ] {
        assert_eq!(w[key], cli[key], "{key}");
    }
    // What each trial found; a BFS step's time is the run's own.
    let trials = |v: &serde_json::Value, field: &str| -> Vec<serde_json::Value> {
        let t = v["trials"].as_array().expect("trials");
        t.iter()
            .map(|t| {
                let mut x = t[field].clone();
                let outcomes = match x.as_array_mut() {
                    Some(all) => all.iter_mut().collect(),
                    None => vec![&mut x],
                };
                for o in outcomes {
                    if let Some(steps) = o.get_mut("steps").and_then(|s| s.as_array_mut()) {
                        for step in steps {
                            step["ns"] = serde_json::Value::from(0);
                        }
                    }
                }
                x
            })
            .collect()
    };
    for field in ["sources", "outcome", "verified"] {
        assert_eq!(trials(&w, field), trials(&cli, field), "{field}");
    }
    assert!(r.trials.iter().all(|t| t.verified == Some(true)));
    let regions = |v: &serde_json::Value| -> Vec<(serde_json::Value, serde_json::Value)> {
        let r = v["regions"].as_array().expect("regions");
        r.iter()
            .map(|r| (r["name"].clone(), r["data_bytes"].clone()))
            .collect()
    };
    assert_eq!(regions(&w), regions(&cli));
}

#[test]
fn a_request_of_another_build_or_none_is_refused_by_name() {
    let (code, err) = worker_given("{\"version\": 999, \"request\": {}}\n");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("version 999"), "{err}");
    assert!(
        err.contains(&format!("serves version {}", worker::VERSION)),
        "{err}"
    );

    let line = worker::encode(&Request::Run(RunRequest::new(run::Config {
        input: Input::parse("kron:4").expect("spec"),
        load: LoadOptions::for_kernel(1),
        layout: Layout::default(),
        kernel: Spec::default_for("cc").expect("cc"),
        reorder: None,
        reorder_cache: None,
        trials: 1,
        sources: Vec::new(),
        verify: false,
        threads: 1,
        sample_every: None,
        replay: None,
    })))
    .expect("encode");
    let renamed = line.replace("\"trials\"", "\"runs\"");
    let (code, err) = worker_given(&renamed);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("unknown field `runs`"), "{err}");

    let (code, err) = worker_given("");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("no request on stdin"), "{err}");

    // Not a command for people: absent from the help.
    let help = Command::new(exe()).arg("--help").output().expect("help");
    assert!(!String::from_utf8_lossy(&help.stdout).contains("worker"));
}
