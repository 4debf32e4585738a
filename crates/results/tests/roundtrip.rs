//! Every kind of saved result reads back and writes out unchanged, from a fixture saved by the
//! command that makes it.

use std::path::{Path, PathBuf};

use hugewise_results::{AnyResult, Error, Saved};

/// A saved result read back (hugewise reads through `hugewise_sys::read::result`, which also
/// bounds the file; sys sits above this crate).
fn read(path: &Path) -> Result<AnyResult, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    hugewise_results::parse(path, &text)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Read the fixture, check its kind, and check that writing it again gives the same JSON.
fn round_trip(name: &str, schema: &str) -> AnyResult {
    let path = fixture(name);
    let text = std::fs::read_to_string(&path).expect("fixture");
    let original: serde_json::Value = serde_json::from_str(&text).expect("json");
    let r = read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(r.schema(), schema, "{name}");
    let again = r.to_json().expect("serialize");
    assert_eq!(again, original, "{name} changed on the way through");
    r
}

#[test]
fn sys() {
    let AnyResult::Machine(s) = round_trip("sys.json", "hugewise/sys") else {
        panic!("kind")
    };
    assert!(s.result.memory.total_bytes > 0);
    assert!(!s.meta.command.is_empty());
}

#[test]
fn faultlat() {
    round_trip("faultlat.json", "hugewise/faultlat");
}

#[test]
fn run_and_graph_info() {
    let AnyResult::Run(s) = round_trip("run.json", "hugewise/run") else {
        panic!("kind")
    };
    assert_eq!(s.result.failed_verification(), 0);
    round_trip("graph-info.json", "hugewise/graph-info");
    let AnyResult::GraphWritten(w) = round_trip("graph-write.json", "hugewise/graph-write") else {
        panic!("kind")
    };
    assert_eq!(w.result.format, "hwg");
    assert!(w.result.reorder.is_some());
}

#[test]
fn bench_pages_and_randread() {
    round_trip("bench-pages.json", "hugewise/bench-pages");
    round_trip("bench-randread.json", "hugewise/bench-randread");
    let AnyResult::BenchFaultlat(f) = round_trip("bench-faultlat.json", "hugewise/bench-faultlat")
    else {
        panic!("kind")
    };
    assert_eq!(f.result.samples.len(), 3 * f.result.rounds as usize);
}

#[test]
fn trace_capture() {
    round_trip("trace.json", "hugewise/trace");
    round_trip("trace-lackey.json", "hugewise/trace-lackey");
}

#[test]
fn sim_curves_and_reuse() {
    let AnyResult::Curves(s) = round_trip("sim.json", "hugewise/sim") else {
        panic!("kind")
    };
    assert!(s.result.reuse.is_some());
    round_trip("sim-reuse.json", "hugewise/sim-reuse");
}

#[test]
fn promotion_plan() {
    let AnyResult::Plans(s) = round_trip("promotion-plan.json", "hugewise/promotion-plan") else {
        panic!("kind")
    };
    s.result.validate().expect("the simulator's plan is valid");
}

#[test]
fn promotion_session_and_benchmark() {
    let AnyResult::Promote(s) = round_trip("promote.json", "hugewise/promote") else {
        panic!("kind")
    };
    assert_eq!(s.result.mode, "daemon");
    assert!(s.result.actions.iter().all(|a| a.succeeded()));
    // A session on memory shaped 95 % broken up, `--compact always`: collapses refused, one
    // compaction logged with free memory before and after.
    let AnyResult::Promote(c) = round_trip("promote-compact.json", "hugewise/promote") else {
        panic!("kind")
    };
    assert_eq!(c.result.compact.as_deref(), Some("always"));
    let made: Vec<_> = c
        .result
        .intervals
        .iter()
        .filter_map(|i| i.compaction.as_ref())
        .collect();
    assert_eq!(
        made.len() as u64,
        c.result.totals.compactions.expect("counted")
    );
    assert!(made[0].before.unusable_index > 0.9 && made[0].wall_ns > 0);
    let AnyResult::BenchPromote(b) = round_trip("bench-promote.json", "hugewise/bench-promote")
    else {
        panic!("kind")
    };
    let names: Vec<&str> = b
        .result
        .workloads
        .iter()
        .map(|w| w.workload.as_str())
        .collect();
    assert_eq!(names, ["zipf:1", "zipf:1.5"]);
    for w in &b.result.workloads {
        assert!(w.ideal_speedup.is_some() && w.plan_speedup.is_some());
        assert!(w
            .huge_footprint_share
            .is_some_and(|s| (0.0..=1.0).contains(&s)));
    }
}

#[test]
fn a_version_1_promotion_benchmark_reads_as_its_one_workload() {
    // Version 1 held one workload at the top level, without its headline.
    let r = read(&fixture("bench-promote-v1.json")).expect("read");
    let AnyResult::BenchPromote(b) = r else {
        panic!("kind")
    };
    let [w] = &b.result.workloads[..] else {
        panic!("{} workloads", b.result.workloads.len())
    };
    assert_eq!(w.workload, "zipf:1");
    // The headline is filled from the summaries it had.
    let plan = w
        .summary
        .iter()
        .find(|s| s.arm.name() == "plan")
        .expect("plan");
    assert_eq!(w.plan_speedup, plan.speedup_vs_base);
    assert_eq!(w.huge_footprint_share, Some(plan.huge_footprint_share));
}

#[test]
fn a_version_2_promotion_benchmark_reads_its_times_in_nanoseconds_per_read() {
    // Version 2 named every time `ns_per_read`, before graph workloads timed in seconds.
    let r = read(&fixture("bench-promote-v2.json")).expect("read");
    let AnyResult::BenchPromote(b) = r else {
        panic!("kind")
    };
    for w in &b.result.workloads {
        assert_eq!(w.unit, "ns/read");
        assert!(w.graph.is_none() && w.zipf_s.is_some());
        assert!(w.samples.iter().all(|s| s.time > 0.0));
        assert!(w.summary.iter().all(|a| a.time.median > 0.0));
    }
}

#[test]
fn study_plan_and_its_headlines() {
    use hugewise_results::study::{headlines, Evidence, Metric};
    let AnyResult::Study(s) = round_trip("study.json", "hugewise/study") else {
        panic!("kind")
    };
    let plan = &s.result;
    assert_eq!(plan.preset, "quick");
    assert!(!plan.claims.is_empty());
    // No runs: every headline is unmeasured, never 0.
    let h = headlines(plan, Evidence::default());
    assert!(h.iter().all(|x| x.measured.is_none() && x.runs == 0));
    // The bench-pages fixture's second layout, named as a claim would name it.
    let AnyResult::Pages(p) = round_trip("bench-pages.json", "hugewise/bench-pages") else {
        panic!("kind")
    };
    let mut r = p.result.clone();
    r.summary[0].name = Some("base".into());
    r.summary[1].name = Some("huge".into());
    let want = r.summary[1].speedup_vs_first.expect("ratio");
    let ev = Evidence {
        pages: &[&r],
        curves: &[],
        swaps: &[],
        bloats: &[],
        packings: &[],
        promotes: &[],
        faults: &[],
        answered: &[],
    };
    let (got, n) = hugewise_results::study::measure(
        &Metric::Speedup {
            variant: "huge".into(),
        },
        ev,
    );
    assert_eq!((got, n), (Some(want), 1));
    let (over, _) = hugewise_results::study::measure(
        &Metric::SpeedupOver {
            variant: "huge".into(),
            over: "base".into(),
        },
        ev,
    );
    assert_eq!(over, Some(want));
    let (share, _) = hugewise_results::study::measure(
        &Metric::ShareOfIdeal {
            variant: "huge".into(),
            ideal: "huge".into(),
            over: None,
        },
        ev,
    );
    // The ideal's own share of its gain is 1, once the gain is past the noise floor.
    if want >= 1.0 + hugewise_results::study::MIN_IDEAL_GAIN {
        assert!(share.is_some_and(|s| (s - 1.0).abs() < 1e-12), "{share:?}");
    } else {
        assert_eq!(share, None, "a gain of {want} is within the noise");
    }
    // A ratio that is not a number (a 0/0 median) is no measurement: it neither gives a value
    // nor counts as a run behind one.
    let mut nan = r.clone();
    nan.summary[1].speedup_vs_first = Some(f64::NAN);
    let both = [&r, &nan];
    let (got, n) = hugewise_results::study::measure(
        &Metric::Speedup {
            variant: "huge".into(),
        },
        Evidence { pages: &both, ..ev },
    );
    assert_eq!((got, n), (Some(want), 1));
    let (got, n) = hugewise_results::study::measure(
        &Metric::Speedup {
            variant: "huge".into(),
        },
        Evidence {
            pages: &[&nan],
            ..ev
        },
    );
    assert_eq!((got, n), (None, 0));
}

#[test]
fn a_claim_about_one_kernel_reads_only_that_kernels_runs() {
    use hugewise_results::kernel::Spec;
    use hugewise_results::study::{headlines, Evidence, Metric};
    let AnyResult::Study(s) = round_trip("study.json", "hugewise/study") else {
        panic!("kind")
    };
    let AnyResult::Pages(p) = round_trip("bench-pages.json", "hugewise/bench-pages") else {
        panic!("kind")
    };
    let mut bfs = p.result.clone();
    bfs.summary[0].name = Some("base".into());
    bfs.summary[1].name = Some("huge".into());
    bfs.kernel = Spec::default_for("bfs").expect("bfs");
    bfs.summary[1].speedup_vs_first = Some(1.0);
    let mut pr = bfs.clone();
    pr.kernel = Spec::default_for("pr").expect("pr");
    pr.summary[1].speedup_vs_first = Some(1.44);
    let mut plan = s.result.clone();
    let mut of_pr = plan.claims[0].clone();
    of_pr.metric = Metric::Speedup {
        variant: "huge".into(),
    };
    of_pr.kernel = Some("pr".into());
    let mut of_all = of_pr.clone();
    of_all.kernel = None;
    let mut of_tc = of_pr.clone();
    of_tc.kernel = Some("tc".into());
    plan.claims = vec![of_pr, of_all, of_tc];
    let ev = Evidence {
        pages: &[&bfs, &pr],
        ..Evidence::default()
    };
    let h = headlines(&plan, ev);
    // PageRank's own runs: its gain, not the mean with BFS's none.
    assert_eq!(h[0].runs, 1);
    assert!((h[0].measured.expect("pr") - 1.44).abs() < 1e-12);
    // Every run: the geometric mean, 1.2.
    assert_eq!(h[1].runs, 2);
    assert!((h[1].measured.expect("mean") - 1.2).abs() < 1e-12);
    // A kernel no run measured: no value, never 0.
    assert_eq!((h[2].measured, h[2].runs), (None, 0));
}

#[test]
fn a_run_whose_ideal_interval_reaches_one_has_no_share_of_its_gain() {
    use hugewise_results::stats::MedianInterval;
    use hugewise_results::study::{measure, Evidence, Metric};
    let AnyResult::Pages(p) = round_trip("bench-pages.json", "hugewise/bench-pages") else {
        panic!("kind")
    };
    let mut r = p.result.clone();
    r.summary[0].name = Some("base".into());
    r.summary[1].name = Some("huge".into());
    r.summary[1].speedup_vs_first = Some(1.3);
    let share = Metric::ShareOfIdeal {
        variant: "huge".into(),
        ideal: "huge".into(),
        over: None,
    };
    let with = |lo: f64| {
        let mut r = r.clone();
        r.summary[1].speedup_vs_first_ci95 = Some(MedianInterval {
            lo,
            hi: 1.4,
            coverage: 0.97,
        });
        r
    };
    let (shown, unshown) = (with(1.1), with(0.98));
    let ev = |rs: &[&hugewise_results::pagebench::PagesReport]| {
        measure(
            &share,
            Evidence {
                pages: rs,
                ..Evidence::default()
            },
        )
    };
    let (v, n) = ev(&[&shown]);
    assert_eq!(n, 1);
    assert!(v.is_some_and(|v| (v - 1.0).abs() < 1e-12), "{v:?}");
    // Its median is 1.3x, but its interval reaches 1: a run, with no share.
    assert_eq!(ev(&[&unshown]), (None, 1));
    // Beside a run that shows its gain, it is left out of the share and still counted.
    let (v, n) = ev(&[&shown, &unshown]);
    assert_eq!(n, 2);
    assert!(v.is_some_and(|v| (v - 1.0).abs() < 1e-12), "{v:?}");
}

#[test]
fn env_reports() {
    for (name, schema) in [
        ("env-show.json", "hugewise/env-show"),
        ("env-set.json", "hugewise/env-set"),
        ("env-action.json", "hugewise/env-action"),
        ("env-swap.json", "hugewise/env-swap"),
        ("env-shaped.json", "hugewise/env-shaped"),
        ("env-restore.json", "hugewise/env-restore"),
    ] {
        round_trip(name, schema);
    }
}

#[test]
fn a_kind_read_as_another_is_refused() {
    let text = std::fs::read_to_string(fixture("faultlat.json")).expect("fixture");
    let e = Saved::<hugewise_results::run::RunReport>::from_json(&text).expect_err("kind");
    assert!(e.to_string().contains("hugewise/faultlat"), "{e}");
}

#[test]
fn unknown_kinds_newer_versions_and_old_files_are_refused_by_name() {
    let e = AnyResult::from_json(r#"{"schema": "hugewise/nope", "schema_version": 1}"#)
        .expect_err("unknown");
    assert!(e.to_string().contains("hugewise/nope"), "{e}");
    let e = AnyResult::from_json(r#"{"schema": "hugewise/sys", "schema_version": 99}"#)
        .expect_err("newer");
    assert!(matches!(e, Error::Version { found: 99, .. }), "{e}");
    let e = AnyResult::from_json(r#"{"meta": {}, "kernel": "6.1"}"#).expect_err("old");
    assert!(e.to_string().contains("schema"), "{e}");
}

#[test]
fn a_damaged_file_names_itself() {
    let d = tempfile::tempdir().expect("tmp");
    let p = d.path().join("cut.json");
    let text = std::fs::read_to_string(fixture("run.json")).expect("fixture");
    std::fs::write(&p, &text[..text.len() / 2]).expect("write");
    let e = read(&p).expect_err("truncated");
    assert!(e.to_string().contains("cut.json"), "{e}");
}

#[test]
fn programs_run_under_exec_and_their_benchmarks() {
    let AnyResult::Exec(e) = round_trip("exec.json", "hugewise/exec") else {
        panic!("kind")
    };
    let totals = e.result.totals();
    assert_eq!(totals.len(), 1);
    assert!(totals[0].peak_huge_bytes > 0, "{totals:?}");
    let AnyResult::BenchExec(b) = round_trip("bench-exec.json", "hugewise/bench-exec") else {
        panic!("kind")
    };
    assert_eq!(b.result.variants[0].speedup_vs_first, None);
    assert!(b.result.variants[1].metric_speedup_vs_first.is_some());
    let AnyResult::BenchBloat(r) = round_trip("bench-bloat.json", "hugewise/bench-bloat") else {
        panic!("kind")
    };
    assert_eq!(
        r.result.variants[0].bloat_bytes,
        Some(0.0),
        "never against itself"
    );
    assert!(r.result.runs.iter().all(|run| run.phases.len() == 4));
    // A file from before the intervals were kept reads without them; a study's headline
    // carries a run's interval when it has one.
    use hugewise_results::stats::MedianInterval;
    use hugewise_results::study::{interval, Evidence, Metric};
    let mega = "exec:*=system+mega".to_string();
    assert!(r.result.variants[2].throughput_vs_always_ci95.is_none());
    let mut b = r.result.clone();
    let ci = MedianInterval {
        lo: 0.85,
        hi: 1.07,
        coverage: 0.969,
    };
    b.variants[2].throughput_vs_always_ci95 = Some(ci);
    let ev = Evidence {
        bloats: &[&b],
        ..Evidence::default()
    };
    let got = interval(
        &Metric::ThroughputVsAlways {
            variant: mega.clone(),
        },
        ev,
    );
    assert_eq!(got, Some(ci));
    assert_eq!(interval(&Metric::BloatVsAlways { variant: mega }, ev), None);
}

#[test]
fn a_profile_and_the_packing_benchmark() {
    let AnyResult::Profile(p) = round_trip("profile.json", "hugewise/profile") else {
        panic!("kind")
    };
    assert!(p.result.run.profile);
    assert!(p
        .result
        .sites
        .iter()
        .any(|s| s.placement.as_deref() == Some("arena")));
    let AnyResult::BenchPacking(b) = round_trip("bench-packing.json", "hugewise/bench-packing")
    else {
        panic!("kind")
    };
    let v = &b.result.variants;
    assert_eq!(v[0].label, "4k");
    assert_eq!(v[0].speedup_vs_4k, None);
    assert!(v.iter().skip(1).all(|x| x.speedup_vs_4k.is_some()));
    assert_eq!(b.result.samples.len(), 2 * v.len());
}

#[test]
fn a_run_whose_arrays_got_mthp_folios_reads_back() {
    // JSON keeps the folio sizes of `mthp_bytes` as string keys.
    let path = fixture("run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("json");
    let at = if v.get("regions").is_some() {
        "/regions"
    } else {
        "/result/regions"
    };
    let regions = v
        .pointer_mut(at)
        .and_then(|r| r.as_array_mut())
        .expect("regions");
    regions[0]["backing"]["mthp_bytes"] = serde_json::json!({ "64": 131072 });
    let r = AnyResult::from_json(&v.to_string()).expect("reads back");
    let AnyResult::Run(s) = r else { panic!("kind") };
    assert_eq!(
        s.result.regions[0].backing.mthp_bytes.get(&64),
        Some(&131072)
    );
}

#[test]
fn a_simulated_share_counts_page_table_reads_and_a_kernels_claim_reads_its_curves() {
    use hugewise_results::study::{headlines, measure, Evidence, Metric};
    let AnyResult::Curves(s) = round_trip("sim.json", "hugewise/sim") else {
        panic!("kind")
    };
    let linux = Metric::SimShareOfIdeal {
        policy: "linux".into(),
        budget: 0.5,
    };
    // The fixture: 32 page-table reads on 4 KiB pages, 12 with every page huge, 22 with
    // Linux's order within half of the footprint: half of what every page huge removes.
    let mut pr = s.result.clone();
    // Estimated speedups, whatever they say, are not what the share is made of.
    for p in &mut pr.points {
        p.est_speedup = 9.0;
    }
    let mut bfs = s.result.clone();
    for p in &mut bfs.points {
        if p.policy == "linux" && p.budget_share == Some(0.5) {
            p.walk_reads = 27;
        }
    }
    let both = [("pr", &pr), ("bfs", &bfs)];
    let only_pr = Evidence {
        curves: &both[..1],
        ..Evidence::default()
    };
    assert_eq!(measure(&linux, only_pr), (Some(0.5), 1));
    let ev = Evidence {
        curves: &both,
        ..Evidence::default()
    };
    let (v, n) = measure(&linux, ev);
    assert_eq!(n, 2);
    assert!(v.is_some_and(|v| (v - 0.375).abs() < 1e-12), "{v:?}");
    // A claim about BFS reads BFS's curve alone: a quarter.
    let AnyResult::Study(st) = round_trip("study.json", "hugewise/study") else {
        panic!("kind")
    };
    let mut plan = st.result.clone();
    let mut c = plan.claims[0].clone();
    c.metric = linux;
    c.kernel = Some("bfs".into());
    plan.claims = vec![c];
    let h = headlines(&plan, ev);
    assert_eq!((h[0].measured, h[0].runs), (Some(0.25), 1));
}

/// The fixture study's plan, and the indices of its pages runs (two or more).
fn study_with_pages_runs() -> (hugewise_results::study::StudyPlan, Vec<usize>) {
    use hugewise_results::study::Work;
    let AnyResult::Study(st) = round_trip("study.json", "hugewise/study") else {
        panic!("kind")
    };
    let plan = st.result.clone();
    let pages: Vec<usize> = (0..plan.runs.len())
        .filter(|&i| matches!(plan.runs[i].work, Work::Pages { .. }))
        .collect();
    assert!(pages.len() >= 2, "the fixture plans several pages runs");
    (plan, pages)
}

#[test]
fn a_headlines_scale_is_that_of_the_runs_made() {
    use hugewise_results::study::{headlines, Evidence, Metric, Work};
    let (mut plan, pages) = study_with_pages_runs();
    // One pages run planned on a larger graph, and not made.
    if let Work::Pages { graph, .. } = &mut plan.runs[pages[0]].work {
        *graph = "kron:26".into();
    }
    let mut c = plan.claims[0].clone();
    c.metric = Metric::Speedup {
        variant: "base".into(),
    };
    c.kernel = None;
    plan.claims = vec![c];
    let scale = |answered: &[&str]| {
        let ev = Evidence {
            answered,
            ..Evidence::default()
        };
        headlines(&plan, ev)[0].scale.clone().expect("a scale").text
    };
    let made: Vec<&str> = pages[1..]
        .iter()
        .map(|&i| plan.runs[i].id.as_str())
        .collect();
    assert!(!scale(&made).contains("kron:26"), "{}", scale(&made));
    // Not known which were made: the plan's.
    assert!(scale(&[]).contains("kron:26"), "{}", scale(&[]));
}

#[test]
fn a_kernels_headline_takes_its_scale_from_that_kernels_runs() {
    use hugewise_results::study::{headlines, Evidence, Metric, Work};
    let (mut plan, pages) = study_with_pages_runs();
    // BFS on a larger graph than PageRank's.
    for (n, &i) in pages.iter().enumerate() {
        if let Work::Pages { graph, kernel, .. } = &mut plan.runs[i].work {
            (*graph, *kernel) = if n == 0 {
                ("kron:26".into(), "bfs".into())
            } else {
                ("kron:21".into(), "pr".into())
            };
        }
    }
    let mut c = plan.claims[0].clone();
    c.metric = Metric::Speedup {
        variant: "base".into(),
    };
    let bfs_run = plan.runs[pages[0]].id.clone();
    let scale_of = |kernel: Option<&str>, answered: &[&str]| {
        let mut p = plan.clone();
        let mut c = c.clone();
        c.kernel = kernel.map(String::from);
        p.claims = vec![c];
        let ev = Evidence {
            answered,
            ..Evidence::default()
        };
        headlines(&p, ev)[0].scale.clone().map(|s| s.text)
    };
    let scale = |kernel: Option<&str>| scale_of(kernel, &[]).expect("a scale");
    let pr = scale(Some("pr"));
    assert!(pr.contains("kron:21") && !pr.contains("kron:26"), "{pr}");
    assert!(scale(Some("bfs")).contains("kron:26"));
    let all = scale(None);
    assert!(all.contains("kron:21") && all.contains("kron:26"), "{all}");
    // Only BFS made: PageRank's claim takes the scale its own runs were planned at.
    let planned = scale_of(Some("pr"), &[bfs_run.as_str()]).expect("the plan's");
    assert!(
        planned.contains("kron:21") && !planned.contains("kron:26"),
        "{planned}"
    );
    // A kernel no run has: no scale, rather than another kernel's.
    assert_eq!(scale_of(Some("tc"), &[]), None);
}
