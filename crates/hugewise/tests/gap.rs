//! `hugewise bench gap` end to end against a stand-in for a GAP build: shell scripts named
//! `pr` and `bfs` that print what GAP's binaries print (a test double of a tool the repository
//! does not ship), on a generated graph converted to `.sg` once.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// A script that prints GAP-shaped output: the graph line, then per trial (its `-n`) a PageRank
/// log of `steps` lines when `-l` is given, a trial time, and a verdict when `-v` is given.
fn fake(dir: &Path, name: &str, steps: u32, verdict: &str) {
    let script = format!(
        r#"#!/bin/sh
n=1; log=0; verify=0
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n="$2"; shift ;;
    -l) log=1 ;;
    -v) verify=1 ;;
  esac
  shift
done
echo "Read Time:           0.00100"
echo "Graph has 4096 nodes and 60000 undirected edges for degree: 14"
i=0
while [ $i -lt $n ]; do
  if [ $log = 1 ]; then
    s=0
    while [ $s -lt {steps} ]; do echo "    $s                0.01000"; s=$((s+1)); done
  fi
  echo "Trial Time:          0.00050"
  if [ $verify = 1 ]; then echo "Verification:           {verdict}"; fi
  i=$((i+1))
done
echo "Average Time:        0.00050"
"#
    );
    let path = dir.join(name);
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn hugewise(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(args)
        .output()
        .expect("hugewise runs")
}

/// `hugewise bench gap` on kron:`scale` with the stand-ins in `gap`, converting into `work`,
/// saving to `out`, with `extra` arguments.
fn bench_gap(gap: &Path, work: &Path, scale: u32, out: &Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--no-progress",
        "bench",
        "gap",
        "--gap-dir",
        &gap.display().to_string(),
        "--graph",
        &format!("kron:{scale}"),
        "--convert-dir",
        &work.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

#[test]
fn compares_against_gaps_binaries_and_reports_iterations_and_verification() {
    let gap = tempfile::tempdir().expect("gap dir");
    fake(gap.path(), "pr", 1000, "PASS");
    fake(gap.path(), "bfs", 0, "FAIL");
    let work = tempfile::tempdir().expect("work dir");
    let out = work.path().join("gap.json");
    let args = |out: &Path| {
        let extra = ["--kernels", "pr,bfs", "--rounds", "2", "--json"];
        bench_gap(gap.path(), work.path(), 12, out, &extra)
    };
    let a = args(&out);
    let o = hugewise(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).expect("result");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["schema"], "hugewise/bench-gap");
    assert_eq!(v["converted"][0]["written"], true);
    let pr = &v["kernels"][0];
    assert_eq!(pr["kernel"], "pr");
    assert_eq!(pr["gap_iterations"], 1000);
    assert!(pr["hugewise_iterations"].as_u64().expect("iterations") < 100);
    assert_eq!(pr["gap_verified"], true);
    assert_eq!(pr["hugewise_verified"], true);
    assert_eq!(pr["samples"].as_array().expect("samples").len(), 2);
    assert!(
        pr["notes"].to_string().contains("cap of 1000"),
        "{}",
        pr["notes"]
    );
    // hugewise read kron:12 otherwise than the stand-in claims: said, not hidden.
    assert!(
        pr["notes"].to_string().contains("hugewise"),
        "{}",
        pr["notes"]
    );
    let bfs = &v["kernels"][1];
    assert_eq!(bfs["gap_verified"], false);
    assert!(bfs["samples"][0]["source"].is_u64());
    assert!(bfs["gap_args"].to_string().contains("<source>"));
    // The report renders it like every bench; the second run reuses the converted file.
    let o = hugewise(&["report", &out.display().to_string()]);
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        shown.contains("GAP / hugewise") && shown.contains("1000 / "),
        "{shown}"
    );
    let again = work.path().join("again.json");
    let a = args(&again);
    let o = hugewise(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&again).expect("again")).expect("json");
    assert_eq!(v["converted"][0]["written"], false);
}

#[test]
fn skipping_gaps_verification_leaves_it_unknown_and_says_so() {
    let gap = tempfile::tempdir().expect("gap dir");
    // Asked to verify, this stand-in would fail: skipped, it is never asked.
    fake(gap.path(), "bfs", 0, "FAIL");
    let work = tempfile::tempdir().expect("work dir");
    let out = work.path().join("gap.json");
    let extra = ["--kernels", "bfs", "--rounds", "1", "--skip-gap-verify"];
    let a = bench_gap(gap.path(), work.path(), 10, &out, &extra);
    let o = hugewise(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("result")).expect("json");
    let bfs = &v["kernels"][0];
    assert!(bfs["gap_verified"].is_null(), "{}", bfs["gap_verified"]);
    assert_eq!(bfs["hugewise_verified"], true);
    assert!(
        bfs["notes"].to_string().contains("--skip-gap-verify"),
        "{}",
        bfs["notes"]
    );
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(shown.contains("- / yes"), "{shown}");
}

#[test]
fn output_gap_never_prints_is_refused_naming_the_binary() {
    let gap = tempfile::tempdir().expect("gap dir");
    let path = gap.path().join("cc");
    std::fs::write(&path, "#!/bin/sh\necho 'Trial Time: later'\n").expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let work = tempfile::tempdir().expect("work dir");
    let o = hugewise(&[
        "--no-progress",
        "bench",
        "gap",
        "--gap-dir",
        &gap.path().display().to_string(),
        "--graph",
        "kron:10",
        "--convert-dir",
        &work.path().display().to_string(),
        "--kernels",
        "cc",
        "--rounds",
        "1",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cc") && err.contains("line 1") && err.contains("later"),
        "{err}"
    );
    // A kernel whose binary is missing is named before anything runs.
    let o = hugewise(&[
        "bench",
        "gap",
        "--gap-dir",
        &gap.path().display().to_string(),
        "--graph",
        "kron:10",
        "--kernels",
        "tc",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no GAP binary"));
}
