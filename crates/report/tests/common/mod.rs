//! Study directories assembled from the saved fixtures, as `hugewise study` leaves them: a
//! plan and its runs (pages runs at four fragmentation levels, a simulated utility curve,
//! fault latencies), on two machines, with the numbers made to look like a real study's.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/tests/fixtures")
}

pub fn fixture(kind: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join(format!("{kind}.json"))).expect("fixture");
    serde_json::from_str(&text).expect("fixture json")
}

fn write(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).expect("json")).expect("write");
}

fn tag(run: &str, label: &str, fragment: Option<f64>, shaped_share: Option<f64>) -> Value {
    let shaped = shaped_share.map(|share| {
        let mut s = fixture("env-shaped")["shape"].clone();
        s["shaped"]["unusable_share"] = share.into();
        s
    });
    json!({
        "preset": "fragmentation",
        "run": run,
        "label": label,
        "shape": {"fragment": fragment, "free_beyond_footprint_bytes": null},
        "shaped": shaped,
    })
}

fn summary(xs: &[f64]) -> Value {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    let mut dev: Vec<f64> = s.iter().map(|x| (x - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = dev[n / 2];
    json!({
        "n": n, "median": median, "min": s[0], "max": s[n - 1],
        "mean": s.iter().sum::<f64>() / n as f64, "mad_rel": mad / median,
    })
}

/// A `bench pages` run of bfs with four named layouts over `rounds` rounds; huge pages help
/// less as fragmentation grows.
fn pages_run(host: &str, id: &str, fragment: f64, slow: f64) -> Value {
    let mut v = fixture("bench-pages");
    v["meta"]["host"] = host.into();
    v["meta"]["study"] = tag(
        id,
        &format!("bfs, {:.0}% fragmented", fragment * 100.0),
        // As the presets tag it: no level for the unfragmented run.
        (fragment > 0.0).then_some(fragment),
        Some(fragment + 0.01),
    );
    v["graph_spec"] = "kron:20".into();
    v["graph"] = json!({"vertices": 1048576, "edges": 15699687, "arcs": 31399374,
                        "directed": false, "weighted": false, "data_bytes": 134217728u64});
    let names = ["base", "all THP", "property THP", "ideal"];
    let pages = ["all=base", "all=thp", "all=base,property=thp", "all=thp"];
    // Speedup each layout reaches on a clean machine, and the huge share it gets.
    let gain = [1.0, 1.32, 1.21, 1.41];
    let share = [0.0, 0.97, 0.31, 1.0];
    let fade = 1.0 - fragment * 0.8;
    let rounds = 5u32;
    let mut samples = Vec::new();
    let mut times = vec![Vec::new(); names.len()];
    for round in 0..rounds {
        for (i, g) in gain.iter().enumerate() {
            let wobble = 1.0 + 0.02 * (((round as usize * 7 + i * 3) % 5) as f64 - 2.0) / 2.0;
            let g = 1.0 + (g - 1.0) * fade;
            let t = 180e6 * slow / g * wobble;
            times[i].push(t);
            samples.push(json!({
                "round": round, "variant": i, "kernel_ns": t as u64, "sources": [7],
                "quiet": {"others_busy_share": if round == 3 && i == 1 && fragment > 0.6 { 0.4 } else { 0.01 },
                          "window_ms": 200, "waits": 0}
            }));
        }
    }
    let template = v["summary"][0].clone();
    let summary: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut s = template.clone();
            s["name"] = (*name).into();
            s["pages"] = pages[i].into();
            s["kernel_ns"] = summary(&times[i]);
            let ratios: Vec<f64> = (0..rounds as usize)
                .map(|r| times[0][r] / times[i][r])
                .collect();
            s["speedup_vs_first"] = if i == 0 {
                Value::Null
            } else {
                summary(&ratios)["median"].clone()
            };
            // Of five rounds, the lowest and highest ratio hold the median with probability
            // 1 - 2/32.
            let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            s["speedup_vs_first_ci95"] = if i == 0 {
                Value::Null
            } else {
                json!({"lo": lo, "hi": hi, "coverage": 0.9375})
            };
            s["huge_footprint_share"] =
                (share[i] * (1.0 - fragment * if i == 2 { 0.3 } else { 0.6 })).into();
            s
        })
        .collect();
    v["rounds"] = rounds.into();
    v["samples"] = Value::Array(samples);
    v["summary"] = Value::Array(summary);
    v
}

/// A simulated utility curve: PCC rises fastest, Linux slowest.
fn curve_run(host: &str) -> Value {
    let mut v = fixture("sim");
    v["meta"]["host"] = host.into();
    v["meta"]["study"] = tag("curve", "bfs utility curve", None, None);
    let template = v["points"][0].clone();
    let mut points = Vec::new();
    let point = |policy: &str, budget: Option<f64>, speedup: f64, walks: f64, huge: f64| {
        let mut p = template.clone();
        p["policy"] = policy.into();
        p["policy_label"] = policy.into();
        p["budget_share"] = budget.map_or(Value::Null, Value::from);
        p["est_speedup"] = speedup.into();
        p["walks_per_kacc"] = walks.into();
        // Page-table reads follow the walks, so that the share of reads removed has a curve.
        p["walk_reads"] = ((walks * 1000.0) as u64).into();
        p["huge_share"] = huge.into();
        p
    };
    points.push(point("none", None, 1.0, 42.0, 0.0));
    points.push(point("all", None, 1.38, 3.1, 1.0));
    for (policy, reach) in [("pcc", 0.04f64), ("hawkeye", 0.12), ("linux", 0.45)] {
        for b in [0.0f64, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0] {
            let f: f64 = 1.0 - (-b / reach).exp();
            points.push(point(policy, Some(b), 1.0 + 0.38 * f, 42.0 - 38.9 * f, b));
        }
    }
    v["points"] = Value::Array(points);
    v
}

fn faultlat_run(host: &str, id: &str, label: &str, scale: f64, collapse: bool) -> Value {
    let mut v = fixture("faultlat");
    v["meta"]["host"] = host.into();
    v["meta"]["study"] = tag(id, label, Some(0.0), None);
    let lat = |s: f64| {
        json!({"count": 512, "mean_ns": 1500.0 * s, "p50_ns": (1100.0 * s) as u64,
               "p90_ns": (2100.0 * s) as u64, "p99_ns": (5200.0 * s) as u64,
               "p999_ns": (9800.0 * s) as u64, "max_ns": (21000.0 * s) as u64,
               "total_ns": (768000.0 * s) as u64})
    };
    v["fault_latency"] = lat(scale);
    if collapse {
        v["collapse"] = json!({
            "pieces": 8, "collapsed": 8, "refused": {}, "latency": lat(120.0),
            "backing": v["backing"].clone(),
        });
    }
    v
}

fn plan(host: &str) -> Value {
    let mut meta = fixture("sys")["meta"].clone();
    meta["host"] = host.into();
    let pages_work = json!({"kind": "pages", "graph": "kron:20", "kernel": "bfs", "rounds": 5,
    "variants": [
        {"name": "base", "kernel_pages": "all=base", "graph_pages": "all=base", "reorder": null},
        {"name": "all THP", "kernel_pages": "all=thp", "graph_pages": "all=thp", "reorder": null},
        {"name": "property THP", "kernel_pages": "all=base,property=thp", "graph_pages": "all=base", "reorder": null},
        {"name": "ideal", "kernel_pages": "all=thp", "graph_pages": "all=thp", "reorder": null}
    ]});
    let mut runs = Vec::new();
    for f in [0, 25, 50, 75] {
        runs.push(
            json!({"id": format!("bfs-frag{f}"), "label": format!("bfs, {f}% fragmented"),
            "shape": {"fragment": f as f64 / 100.0}, "work": pages_work, "estimate_s": 20.0}),
        );
    }
    runs.push(json!({"id": "curve", "label": "bfs utility curve", "shape": {},
        "work": {"kind": "curve", "graph": "kron:20", "kernel": "bfs",
                 "policies": ["pcc", "hawkeye", "linux"], "budgets": [0.0, 0.01, 1.0], "reorder": null},
        "estimate_s": 30.0}));
    for (id, policy, collapse) in [
        ("fault-base", "base", false),
        ("fault-thp", "thp", false),
        ("fault-collapse", "base", true),
    ] {
        runs.push(json!({"id": id, "label": id, "shape": {"fragment": 0.0},
            "work": {"kind": "faultlat", "size_bytes": 1u64 << 30, "policy": policy, "then_collapse": collapse},
            "estimate_s": 5.0}));
    }
    runs.push(json!({"id": "never-ran", "label": "left out", "shape": {},
        "work": {"kind": "faultlat", "size_bytes": 1u64 << 30, "policy": "thp", "then_collapse": false},
        "estimate_s": 5.0}));
    json!({
        "schema": "hugewise/study", "schema_version": 1, "meta": meta,
        "preset": "fragmentation", "question": "How much do huge pages still give as free memory fragments?",
        "reproduces": "IISWC'22 Fig. 8, 9", "quick": true, "repeat": 5, "threads": 2,
        "estimate_s": 140.0, "runs": runs,
        "claims": [
            {"what": "speedup over 4 KiB, all THP", "metric": {"of": "speedup", "variant": "all THP"},
             "paper_value": 1.45, "paper_text": "1.45x", "source": "IISWC'22 Fig. 8",
             "gap": "a 128 MiB graph on a 2-CPU VM, the paper's were tens of GiB on a Xeon",
             "paper_scale": {"vertices": 16777216, "text": "graphs of tens of GiB"}},
            {"what": "share of the ideal's gain, property THP", "metric": {"of": "share-of-ideal", "variant": "property THP", "ideal": "ideal"},
             "paper_value": 0.8, "paper_text": "about 80%", "source": "IISWC'22 Fig. 9",
             "gap": "smaller graph: the property array is a larger share of it"},
            {"what": "footprint in huge pages, all THP", "metric": {"of": "huge-share", "variant": "all THP"},
             "paper_value": null, "paper_text": "not stated", "source": "IISWC'22 Fig. 9", "gap": ""}
        ]
    })
}

/// A study directory of the `fragmentation` preset as measured on `host` (`slow` scales its
/// times), under `root/<host>`.
pub fn study_dir(root: &Path, host: &str, slow: f64) -> PathBuf {
    let d = root.join(host);
    let runs = d.join("runs");
    std::fs::create_dir_all(&runs).expect("mkdir");
    write(&d.join("study.json"), &plan(host));
    for f in [0.0, 0.25, 0.5, 0.75] {
        let id = format!("bfs-frag{:.0}", f * 100.0);
        write(
            &runs.join(format!("{id}.json")),
            &pages_run(host, &id, f, slow),
        );
    }
    write(&runs.join("curve.json"), &curve_run(host));
    write(
        &runs.join("fault-base.json"),
        &faultlat_run(host, "fault-base", "4 KiB faults", 1.0, false),
    );
    write(
        &runs.join("fault-thp.json"),
        &faultlat_run(host, "fault-thp", "THP faults", 60.0, false),
    );
    write(
        &runs.join("fault-collapse.json"),
        &faultlat_run(host, "fault-collapse", "4 KiB then collapse", 1.0, true),
    );
    // What an interrupted write leaves behind.
    std::fs::write(
        runs.join(".never-ran.json.4242.tmp"),
        "{\"schema\": \"hugew",
    )
    .expect("write");
    d
}

/// Every fixture that has a chart or a view, as loose files.
pub fn loose_fixtures() -> Vec<PathBuf> {
    [
        "bench-pages",
        "bench-randread",
        "bench-promote",
        "promote",
        "sim",
        "faultlat",
        "run",
        "sys",
    ]
    .iter()
    .map(|k| fixtures().join(format!("{k}.json")))
    .collect()
}

/// Two machines' study directories and the loose fixtures.
pub fn inputs(root: &Path) -> Vec<PathBuf> {
    let mut v = vec![study_dir(root, "alpha", 1.0), study_dir(root, "beta", 1.4)];
    v.extend(loose_fixtures());
    v
}
