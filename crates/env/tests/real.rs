//! Root tests on this machine's real kernel: each changes something for real, checks the
//! kernel shows it, and leaves the machine exactly as it found it. They skip (with a message)
//! where they cannot run: not root, or the feature is missing.

use std::sync::Mutex;

use hugewise_env::fragment::{self, Target};
use hugewise_env::journal::Lifetime;
use hugewise_env::{state, Host, Knob, Session};

/// The tests below change machine-wide state: one at a time.
static MACHINE: Mutex<()> = Mutex::new(());

fn host() -> Option<(tempfile::TempDir, Host)> {
    if !hugewise_sys::caps::is_root() {
        eprintln!("skip: not root");
        return None;
    }
    let dir = tempfile::tempdir().expect("tmp");
    let host = Host::real_with_state(dir.path());
    Some((dir, host))
}

fn never() -> bool {
    false
}

#[test]
fn fragmenting_half_a_gib_shows_in_buddyinfo_and_is_given_back() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_d, host)) = host() else { return };
    let before_knobs = (
        Knob::CompactUnevictable.read(&host).expect("knob"),
        Knob::PcpHighFraction.read(&host).expect("knob"),
    );
    let mut s = Session::open(&host, Lifetime::Run).expect("session");
    fragment::prepare(&mut s).expect("knobs");
    let start = state::settled(&host).expect("measure");
    let hole = 512u64 << 20;
    let (f, r) = fragment::fragment(
        &host,
        Target::UnusableBytes(start.unusable_bytes + hole),
        0.01,
        4 << 30,
        &never,
        &mut |_, _| {},
    )
    .expect("fragment");
    eprintln!("{r:#?}");
    let mid = state::settled(&host).expect("measure");
    let grown = mid.unusable_bytes as f64 - start.unusable_bytes as f64;
    assert!(
        (grown - hole as f64).abs() < 0.15 * hole as f64 + 0.01 * mid.buddy_free_bytes as f64,
        "unusable grew by {} MiB, asked 512",
        grown as i64 >> 20
    );
    assert!(f.pinned_blocks() >= 200, "{}", f.pinned_blocks());
    assert!(mid.free_2m_blocks + 200 <= start.free_2m_blocks + 64);
    drop(f);
    let end = state::settled(&host).expect("measure");
    eprintln!("start {start:?}\nmid {mid:?}\nend {end:?}");
    // Given back: the broken blocks are whole again.
    assert!(end.unusable_bytes < mid.unusable_bytes - hole / 2);
    drop(s);
    let after_knobs = (
        Knob::CompactUnevictable.read(&host).expect("knob"),
        Knob::PcpHighFraction.read(&host).expect("knob"),
    );
    assert_eq!(after_knobs, before_knobs);
}

#[test]
fn thp_mode_is_set_and_put_back() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_d, host)) = host() else { return };
    let before = Knob::ThpEnabled.read(&host).expect("read");
    let other = if before == "always" {
        "never"
    } else {
        "always"
    };
    {
        let mut s = Session::open(&host, Lifetime::Run).expect("session");
        let set = s.set(Knob::ThpEnabled, other).expect("set");
        assert_eq!(set.now, other);
        let raw =
            std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").expect("sysfs");
        assert!(raw.contains(&format!("[{other}]")), "{raw}");
    }
    assert_eq!(Knob::ThpEnabled.read(&host).expect("read"), before);
}

#[test]
fn a_command_runs_in_its_own_cgroup_which_is_removed_after() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_d, host)) = host() else { return };
    let Ok(h) = hugewise_env::cgroup::Hierarchy::find(&host) else {
        eprintln!("skip: no memory cgroup controller");
        return;
    };
    let mut s = Session::open(&host, Lifetime::Run).expect("session");
    let out = tempfile::NamedTempFile::new().expect("tmp");
    let cmd = hugewise_env::scoped::CommandSpec {
        argv: vec![
            "sh".into(),
            "-c".into(),
            format!("cat /proc/self/cgroup > {}", out.path().display()),
        ],
    };
    let r = hugewise_env::scoped::run_command(&mut s, &cmd, Some(64 << 20), &never).expect("run");
    assert_eq!(r.exit_code, Some(0));
    let path = r.cgroup.clone().expect("cgroup");
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .expect("name")
        .to_string();
    assert!(name.starts_with("hugewise-"));
    let seen = std::fs::read_to_string(out.path()).expect("read");
    assert!(
        seen.lines().any(|l| l.ends_with(&format!("/{name}"))),
        "the command did not run in {name}: {seen}"
    );
    let usage = r.cgroup_usage.expect("usage");
    assert_eq!(usage.limit_bytes, 64 << 20);
    assert!(usage.peak_bytes.unwrap_or(1) > 0);
    assert!(!path.exists(), "removed once the command ended");
    drop(s);
    // Nothing named hugewise-* is left in the hierarchy.
    let left: Vec<_> = std::fs::read_dir(&h.mount)
        .expect("read")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&name))
        .collect();
    assert!(left.is_empty());
}

#[test]
fn a_command_over_its_limit_is_stopped_by_the_cgroup() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_d, host)) = host() else { return };
    if hugewise_env::cgroup::Hierarchy::find(&host).is_err() {
        return;
    }
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skip: no python3 to allocate with");
        return;
    }
    let mut s = Session::open(&host, Lifetime::Run).expect("session");
    // Without swap, 256 MiB of touched memory cannot fit in 32 MiB: the OOM killer ends it.
    let cmd = hugewise_env::scoped::CommandSpec {
        argv: vec![
            "python3".into(),
            "-c".into(),
            "b = bytearray(256 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1".into(),
        ],
    };
    let r = hugewise_env::scoped::run_command(&mut s, &cmd, Some(32 << 20), &never).expect("run");
    assert_ne!(r.exit_code, Some(0), "{r:?}");
    let u = r.cgroup_usage.expect("usage");
    assert!(u.limit_hits.unwrap_or(1) > 0, "{u:?}");
}

#[test]
fn a_small_swap_file_is_enabled_then_removed() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let Some((dir, host)) = host() else { return };
    let path = dir.path().join("test.swap");
    let before = host.proc.swaps().expect("swaps");
    {
        let mut s = Session::open(&host, Lifetime::Run).expect("session");
        match s.add_swap(&path, 64 << 20) {
            Ok(()) => {}
            Err(e) => {
                eprintln!("skip: swap files not usable here: {e}");
                return;
            }
        }
        let on = host.proc.swaps().expect("swaps");
        let area = on
            .iter()
            .find(|a| a.path == path)
            .expect("listed in /proc/swaps");
        assert!(area.size_bytes >= 60 << 20, "{area:?}");
    }
    assert!(!path.exists(), "file removed");
    assert_eq!(host.proc.swaps().expect("swaps"), before);
}

#[test]
fn pressure_holds_what_was_asked_and_refuses_to_break_the_floor() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_d, host)) = host() else { return };
    use hugewise_env::pressure::{hold, Pages, Target};
    let start = state::measure(&host).expect("measure");
    let (h, r) = hold(
        &host,
        Target::Take(512 << 20),
        Pages::Base,
        4 << 30,
        &never,
        &mut |_, _| {},
    )
    .expect("hold");
    assert_eq!(h.held_bytes(), 512 << 20);
    let locked = r.after.mlocked_bytes.unwrap_or(0) - start.mlocked_bytes.unwrap_or(0);
    assert!(locked >= 500 << 20, "mlocked grew by {locked}");
    drop(h);
    let e = hold(
        &host,
        Target::Leave(256 << 20),
        Pages::Base,
        1 << 30,
        &never,
        &mut |_, _| {},
    )
    .expect_err("below the floor");
    assert!(e.to_string().contains("safety floor"), "{e}");
}

#[test]
fn a_swap_file_the_kernel_refuses_leaves_nothing_behind() {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_d, host)) = host() else { return };
    // tmpfs cannot hold swap: the file is made, swapon refuses it.
    let Ok(shm) = tempfile::tempdir_in("/dev/shm") else {
        eprintln!("skip: no /dev/shm");
        return;
    };
    let path = shm.path().join("refused.swap");
    let mut s = Session::open(&host, Lifetime::Kept).expect("session");
    let e = s.add_swap(&path, 4 << 20).expect_err("swapon on tmpfs");
    assert!(e.to_string().contains("swapon"), "{e}");
    assert!(!path.exists(), "the half-made file was removed");
    drop(s);
    assert!(
        hugewise_env::session::pending(&host)
            .expect("journal")
            .is_empty(),
        "nothing half-made stays pending"
    );
}
