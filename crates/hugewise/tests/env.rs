//! `hugewise env` as a user runs it, as root on this machine: a run puts back what it changed
//! when it ends, when it is told to stop, and (through `env restore`) when it was killed.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// These tests change machine-wide settings: one at a time.
static MACHINE: Mutex<()> = Mutex::new(());

const PAGE_CLUSTER: &str = "/proc/sys/vm/page-cluster";
const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

fn root() -> bool {
    hugewise_sys::testing::root_or_skip()
}

fn hw(state: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hugewise"));
    c.env("HUGEWISE_STATE_DIR", state).arg("--no-progress");
    c
}

fn run(state: &Path, args: &[&str]) -> Output {
    hw(state).args(args).output().expect("run hugewise")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn read(p: &str) -> String {
    std::fs::read_to_string(p).expect("read").trim().to_string()
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Start `env with --page-cluster <other value> -- sleep 30` and wait until the setting shows;
/// returns the value before and the running hugewise.
fn sleep_with_other_page_cluster(state: &Path) -> (String, std::process::Child) {
    let before = read(PAGE_CLUSTER);
    let target = if before == "0" { "1" } else { "0" };
    let child = hw(state)
        .args([
            "env",
            "with",
            "--page-cluster",
            target,
            "--probe",
            "off",
            "--",
        ])
        .args(["sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_until("the setting", || read(PAGE_CLUSTER) == target);
    (before, child)
}

#[test]
fn with_runs_the_command_in_the_shaped_machine_and_restores() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let before = (read(THP), read(PAGE_CLUSTER));
    let out = state.path().join("with.json");
    let o = run(
        state.path(),
        &[
            "env",
            "with",
            "--thp",
            "always",
            "--page-cluster",
            "0",
            "--probe",
            "off",
            "--out",
            out.to_str().expect("utf8"),
            "--",
            "sh",
            "-c",
            &format!("cat {THP} {PAGE_CLUSTER}; exit 3"),
        ],
    );
    // The command's own exit code comes back.
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let seen = text(&o.stdout);
    assert!(seen.contains("[always]"), "{seen}");
    assert!(seen.lines().any(|l| l.trim() == "0"), "{seen}");
    assert_eq!((read(THP), read(PAGE_CLUSTER)), before);
    let err = text(&o.stderr);
    assert!(
        err.contains("thp enabled") && err.contains("back to"),
        "{err}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("report")).expect("json");
    assert_eq!(v["run"]["exit_code"], 3);
    assert_eq!(v["shape"]["settings"][0]["now"], "always");
    assert!(v["finish"]["restore"]["failed"]
        .as_array()
        .expect("failed")
        .is_empty());
    assert!(v["meta"]["tool_version"].is_string());
}

/// Movable fragmentation: the command runs with the kept pages in place and THP `defrag` as it
/// was (shaping turns it to `never` only while it squeezes), the automatic probe is skipped
/// (its faults would compact the pages away), and everything is put back.
#[test]
fn movable_fragmentation_leaves_defrag_as_it_was_for_the_command_and_skips_the_probe() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    const DEFRAG: &str = "/sys/kernel/mm/transparent_hugepage/defrag";
    let state = tempfile::tempdir().expect("tmp");
    let before = (read(THP), read(DEFRAG));
    let out = state.path().join("movable.json");
    let o = run(
        state.path(),
        &[
            "env",
            "with",
            "--fragment",
            "20%",
            "--fragment-pages",
            "movable",
            "--out",
            out.to_str().expect("utf8"),
            "--",
            "cat",
            DEFRAG,
        ],
    );
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(text(&o.stdout).trim(), before.1, "{err}");
    assert_eq!((read(THP), read(DEFRAG)), before);
    assert!(err.contains("broken by one movable page each"), "{err}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("report")).expect("json");
    let shape = &v["shape"];
    assert_eq!(shape["plan"]["fragment_pages"], "movable");
    // Held at `never` while shaping, then set back to what it was, both journaled.
    let defrag: Vec<(&str, &str)> = shape["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .filter(|s| s["knob"] == "thp defrag")
        .map(|s| {
            (
                s["asked"].as_str().unwrap_or(""),
                s["now"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let was = before.1.as_str();
    let was = was
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(was);
    if was == "never" {
        assert!(
            defrag.is_empty() || defrag.iter().all(|d| d.1 == "never"),
            "{shape}"
        );
    } else {
        assert_eq!(defrag, [("never", "never"), (was, was)], "{shape}");
    }
    assert_eq!(shape["fragment"]["pages"], "movable");
    assert!(shape["probe"].is_null(), "{shape}");
    assert!(
        shape["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("THP probe skipped"))),
        "{shape}"
    );
    assert!(v["finish"]["restore"]["failed"]
        .as_array()
        .expect("failed")
        .is_empty());
    // Without --fragment there is nothing for --fragment-pages to say: refused before anything
    // is changed.
    let o = run(
        state.path(),
        &["env", "with", "--fragment-pages", "movable", "--", "true"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--fragment"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn sigterm_stops_the_command_and_restores() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let (before, child) = sleep_with_other_page_cluster(state.path());
    let t0 = Instant::now();
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let o = child.wait_with_output().expect("wait");
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "sleep 30 was not stopped"
    );
    // sleep ended by SIGTERM: 128 + 15.
    assert_eq!(o.status.code(), Some(143), "{}", text(&o.stderr));
    assert_eq!(read(PAGE_CLUSTER), before);
}

/// `kill -SIG pid`.
fn send(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

/// hugewise exits with 128 + the signal it got, whether the command it ran then ended with
/// another (SIGTERM, which hugewise sends it) or shaping was cut short.
#[test]
fn the_exit_code_is_128_plus_the_signal_received() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    // While the command runs.
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let state = tempfile::tempdir().expect("tmp");
        let (before, child) = sleep_with_other_page_cluster(state.path());
        send(signal, child.id());
        let o = child.wait_with_output().expect("wait");
        assert_eq!(
            o.status.code(),
            Some(code),
            "SIG{signal}: {}",
            text(&o.stderr)
        );
        assert_eq!(read(PAGE_CLUSTER), before);
    }
    // While shaping: memory is being taken (page-cluster, set first, shows it has begun). At
    // most 8 GiB, leaving 6 GiB or more free for whatever else runs on the machine.
    let available = meminfo_bytes("MemAvailable:");
    let take = (available.saturating_sub(6 << 30)).min(8 << 30);
    if take < 2 << 30 {
        hugewise_sys::testing::skip("less than 8 GiB available to take 2 GiB of while shaping");
        return;
    }
    for (signal, code) in [("TERM", 143), ("INT", 130)] {
        let state = tempfile::tempdir().expect("tmp");
        let before = read(PAGE_CLUSTER);
        let target = if before == "0" { "1" } else { "0" };
        let child = hw(state.path())
            .args(["env", "with", "--page-cluster", target, "--probe", "off"])
            .args(["--pressure-take", &format!("{}MiB", take >> 20)])
            .args(["--", "sleep", "30"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        wait_until("the setting", || read(PAGE_CLUSTER) == target);
        send(signal, child.id());
        let o = child.wait_with_output().expect("wait");
        let err = text(&o.stderr);
        assert!(
            err.contains("interrupted while shaping"),
            "SIG{signal}: {err}"
        );
        assert_eq!(o.status.code(), Some(code), "SIG{signal}: {err}");
        assert_eq!(read(PAGE_CLUSTER), before);
    }
}

/// A `/proc/meminfo` line's value in bytes.
fn meminfo_bytes(key: &str) -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .expect("meminfo")
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .expect("a meminfo value")
        << 10
}

#[test]
fn a_killed_run_is_found_and_restore_puts_it_back() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let (before, mut child) = sleep_with_other_page_cluster(state.path());
    let target = read(PAGE_CLUSTER);
    let sleep = Leftover(journaled_command(state.path()));
    assert!(alive(sleep.0), "sleep {} is not running", sleep.0);
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    // The kernel ends the command with hugewise.
    wait_until("the command to die with hugewise", || !alive(sleep.0));
    assert_eq!(read(PAGE_CLUSTER), target, "nothing ran to restore it");

    let shown = run(state.path(), &["env", "show"]);
    assert!(
        text(&shown.stdout).contains("2 change(s) to undo"),
        "{}",
        text(&shown.stdout)
    );
    let refused = run(
        state.path(),
        &["env", "with", "--probe", "off", "--", "true"],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("hugewise env restore"),
        "{}",
        text(&refused.stderr)
    );

    let restored = run(state.path(), &["env", "restore"]);
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let said = text(&restored.stdout);
    assert!(said.contains(&format!("back to {before}")), "{said}");
    assert!(
        said.contains(&format!(
            "command `sleep 30` (process group {}): already ended",
            sleep.0
        )),
        "{said}"
    );
    assert_eq!(read(PAGE_CLUSTER), before);
    let again = run(state.path(), &["env", "restore"]);
    assert!(text(&again.stdout).contains("nothing to undo"));
}

/// What a killed run's command started in turn is not its child: the kernel does not end it
/// with hugewise, but it stays in the command's process group, which `env restore` ends.
#[test]
fn restore_ends_what_a_killed_runs_command_left_running() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let before = read(PAGE_CLUSTER);
    let target = if before == "0" { "1" } else { "0" };
    let pidfile = state.path().join("grandchild.pid");
    let mut child = hw(state.path())
        .args([
            "env",
            "with",
            "--page-cluster",
            target,
            "--probe",
            "off",
            "--",
        ])
        .args(["sh", "-c", "sleep 1000 & echo $! > \"$0\"; wait"])
        .arg(&pidfile)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    wait_until("the grandchild's pid", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    });
    let grandchild = Leftover(
        read(pidfile.to_str().expect("utf8"))
            .parse()
            .expect("a pid"),
    );
    let shell = journaled_command(state.path());
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    wait_until("the shell to die with hugewise", || !alive(shell));
    assert!(
        alive(grandchild.0),
        "sleep {} should outlive its shell",
        grandchild.0
    );

    let restored = run(state.path(), &["env", "restore"]);
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let said = text(&restored.stdout);
    assert!(
        said.contains(&format!(
            "process group {shell}): ended 1 process still running ({} sleep) (SIGTERM)",
            grandchild.0
        )),
        "{said}"
    );
    assert!(!alive(grandchild.0));
    assert_eq!(read(PAGE_CLUSTER), before);
}

/// A command that ends on its own takes what it left in its group along, and says so.
#[test]
fn what_a_command_leaves_running_ends_with_the_run() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let o = run(
        state.path(),
        &[
            "env",
            "with",
            "--probe",
            "off",
            "--",
            "sh",
            "-c",
            // The pause lets the child exec `sleep`: caught between fork and exec it would
            // still be named `sh` (it was, once, on a loaded machine).
            "sleep 1000 & echo $!; sleep 0.3",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let pid: i32 = out
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid first in {out}"));
    let _guard = Leftover(pid);
    assert!(!alive(pid), "sleep {pid} outlived the run");
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!("ended 1 process still running ({pid} sleep)")),
        "{err}"
    );
}

/// The pid of the command the journal in `state` records, once it is there.
fn journaled_command(state: &Path) -> i32 {
    let journal = state.join("journal.jsonl");
    let mut pid = None;
    wait_until("the command in the journal", || {
        let text = std::fs::read_to_string(&journal).unwrap_or_default();
        pid = text.lines().find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["change"]["kind"] == "command").then(|| v["change"]["pid"].as_i64())?
        });
        pid.is_some()
    });
    pid.and_then(|p| i32::try_from(p).ok()).expect("a pid")
}

/// Whether `pid` runs (a zombie has ended: it only waits to be reaped).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        !matches!(state.and_then(|r| r.chars().next()), Some('Z' | 'X') | None)
    })
}

/// A process a test makes sure does not outlive it, whatever its assertions found.
struct Leftover(i32);

impl Drop for Leftover {
    fn drop(&mut self) {
        if alive(self.0) {
            let _ = Command::new("kill")
                .args(["-KILL", &self.0.to_string()])
                .status();
        }
    }
}

#[test]
fn kept_settings_stay_until_restore() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let before = read(PAGE_CLUSTER);
    let target = if before == "0" { "1" } else { "0" };
    let o = run(state.path(), &["env", "page-cluster", target]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(read(PAGE_CLUSTER), target);
    let o = run(state.path(), &["env", "restore", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["undone"].as_array().expect("undone").len(), 1);
    assert_eq!(read(PAGE_CLUSTER), before);
}

/// Whether setpriv is there to drop root with; when not, the calling test is reported skipped.
fn setpriv_or_skip() -> bool {
    let there = Command::new("setpriv").arg("--version").output().is_ok();
    if !there {
        hugewise_sys::testing::skip("no setpriv to drop root with");
    }
    there
}

/// hugewise run as `nobody`, with its journal in `state`.
fn run_as_nobody(state: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_hugewise"))
        .args(args)
        .env("HUGEWISE_STATE_DIR", state)
        .output()
        .expect("setpriv")
}

#[test]
fn without_root_nothing_is_changed() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() || !setpriv_or_skip() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let before = read(THP);
    let o = run_as_nobody(state.path(), &["env", "thp", "--enabled", "always"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("needs root"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(read(THP), before);
}

/// Runs `env restore` in its state directory when dropped, whatever the test found.
struct RestoreAtEnd<'a>(&'a Path);

impl Drop for RestoreAtEnd<'_> {
    fn drop(&mut self) {
        let _ = run(self.0, &["env", "restore"]);
    }
}

/// `env show` needs no root: as another user it shows what it can, and says the journal
/// (0600, root's) could not be read rather than failing or calling it empty.
#[test]
fn show_without_root_says_the_journal_is_roots() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() || !setpriv_or_skip() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let before = read(PAGE_CLUSTER);
    let target = if before == "0" { "1" } else { "0" };
    let _restore = RestoreAtEnd(state.path());
    let o = run(state.path(), &["env", "page-cluster", target]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let journal = state.path().join("journal.jsonl");
    use std::os::unix::fs::PermissionsExt;
    // A state directory others may enter (the journal in it stays 0600), then one they may not.
    for mode in [0o755, 0o700] {
        std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(mode))
            .expect("chmod");
        let o = run_as_nobody(state.path(), &["env", "show"]);
        let out = text(&o.stdout);
        assert!(o.status.success(), "mode {mode:o}: {}", text(&o.stderr));
        assert!(out.contains("thp          enabled"), "{out}");
        assert!(
            out.contains(&format!(
                "the restore journal at {} is root's: run as root to see the changes",
                journal.display()
            )),
            "mode {mode:o}: {out}"
        );
        assert!(!out.contains("nothing to undo"), "{out}");
    }
    let shown = run(state.path(), &["env", "show"]);
    assert!(text(&shown.stdout).contains("1 change(s) to undo"));
    assert_eq!(read(PAGE_CLUSTER), target);
}

#[test]
fn wrong_values_are_usage_errors() {
    let state = tempfile::tempdir().expect("tmp");
    let o = run(state.path(), &["env", "fragment", "--level", "50"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("give a percentage"),
        "{}",
        text(&o.stderr)
    );
    let o = run(state.path(), &["env", "with", "--thp", "always"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let o = run(state.path(), &["env", "pressure"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn a_missing_command_or_a_floor_too_low_changes_nothing() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let before = read(PAGE_CLUSTER);
    let target = if before == "0" { "1" } else { "0" };
    let o = run(
        state.path(),
        &[
            "env",
            "with",
            "--page-cluster",
            target,
            "--probe",
            "off",
            "--",
            "/no/such/program",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("cannot start /no/such/program"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        read(PAGE_CLUSTER),
        before,
        "restored after the failed start"
    );
    let o = run(
        state.path(),
        &["env", "pressure", "--take", "1GiB", "--floor", "1MiB"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("below the minimum"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_value_the_kernel_does_not_offer_is_refused_by_name() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let o = run(state.path(), &["env", "thp", "--enabled", "sometimes"]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(
        e.contains("thp enabled") && e.contains("always, madvise, never"),
        "{e}"
    );
}

/// The shaping commands take --json: `env with` prints the report as JSON on stderr (the
/// command owns stdout), `env pressure` on stdout; both save the same with --out.
#[test]
fn shaping_commands_print_json_reports() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let state = tempfile::tempdir().expect("tmp");
    let before = read(PAGE_CLUSTER);
    let o = run(
        state.path(),
        &[
            "env",
            "with",
            "--page-cluster",
            "1",
            "--probe",
            "off",
            "--json",
            "--",
            "echo",
            "from-the-command",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "from-the-command");
    let v: serde_json::Value = serde_json::from_slice(&o.stderr).expect("stderr is JSON");
    assert_eq!(v["schema"], "hugewise/env-shaped");
    assert_eq!(v["run"]["exit_code"], 0);
    assert_eq!(v["shape"]["settings"][0]["now"], "1");
    assert_eq!(read(PAGE_CLUSTER), before);

    let out = state.path().join("pressure.json");
    let o = run(
        state.path(),
        &[
            "env",
            "pressure",
            "--take",
            "64MiB",
            "--for",
            "0.2s",
            "--json",
            "--out",
            out.to_str().expect("utf8"),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(v["schema"], "hugewise/env-shaped");
    assert!(v["shape"]["pressure"].is_object(), "{v}");
    assert!(v["run"].is_null());
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("saved")).expect("json");
    assert_eq!(saved["shape"], v["shape"]);
}
