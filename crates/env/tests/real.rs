//! Root tests on this machine's real kernel: each changes something for real, checks the
//! kernel shows it, and leaves the machine exactly as it found it. Where one cannot run (not
//! root, or the feature is missing) it says so through `hugewise_sys::testing::skip`.

use std::sync::Mutex;

use hugewise_env::fragment::{self, FragmentPages, FragmentTarget};
use hugewise_env::journal::Lifetime;
use hugewise_env::{state, Host, Knob, Session};

/// The tests below change machine-wide state: one at a time.
static MACHINE: Mutex<()> = Mutex::new(());

fn host() -> Option<(tempfile::TempDir, Host)> {
    if !hugewise_sys::caps::is_root() {
        hugewise_sys::testing::skip("not root");
        return None;
    }
    let dir = tempfile::tempdir().expect("tmp");
    let host = Host::real_with_state(dir.path());
    Some((dir, host))
}

fn never() -> bool {
    false
}

/// The kernel's unusable-free-space index for 2 MiB (order 9) over all zones, from
/// `/proc/buddyinfo`: the share of free memory in blocks too small for a 2 MiB page. Free
/// 2 MiB block counts would not do: on kernels that hand memory to the buddy allocator lazily,
/// whole blocks appear on their own while a test runs, but they only add to free memory.
fn unusable_index_2m() -> f64 {
    let zones = hugewise_sys::proc::ProcFs::default()
        .buddyinfo()
        .expect("buddyinfo");
    let free: u64 = zones.iter().map(|z| z.free_pages()).sum();
    let weighted: f64 = zones
        .iter()
        .map(|z| hugewise_sys::proc::unusable_index(z, 9) * z.free_pages() as f64)
        .sum();
    weighted / free.max(1) as f64
}

/// What [`fragment_then_compact`] saw.
struct Seen {
    /// Blocks kept broken.
    kept_blocks: u64,
    /// Mlocked memory the kernel counted while they were kept, over what it counted before.
    mlocked_rise: i64,
    /// The kernel's index before and after compacting all memory.
    before: f64,
    compacted: f64,
}

/// Fragment 2 GiB more of free memory with `pages`, check the kernel's index shows it, compact
/// all memory, and return what was seen (or None when
/// this machine would not take a measured fragmentation now). The kept pages are then given
/// back and the index must fall by what they held; the knobs must be as they were.
fn fragment_then_compact(pages: FragmentPages) -> Option<Seen> {
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let (_d, host) = host()?;
    let before_knobs = (
        Knob::CompactUnevictable.read(&host).expect("knob"),
        Knob::PcpHighFraction.read(&host).expect("knob"),
    );
    let mut s = Session::open(&host, Lifetime::Run).expect("session");
    fragment::prepare(&mut s).expect("knobs");
    // Start from whole blocks, so that the compaction below has only the kept pages to undo.
    hugewise_env::actions::compact(&host).expect("compact");
    let start = state::settled(&host).expect("measure");
    // 2 GiB more of free memory made useless for 2 MiB pages, as a share of free memory: well
    // above what compaction leaves broken on its own (5 % of free memory here).
    let rise = (2u64 << 30) as f64 / start.buddy_free_bytes as f64;
    let level = (start.unusable_share + rise).min(0.9);
    let (f, r) = fragment::fragment(
        &host,
        FragmentTarget::Level(level),
        pages,
        0.01,
        4 << 30,
        &never,
        &mut |_, _| {},
    )
    .expect("fragment");
    assert_eq!(r.pages, pages);
    let mut seen = None;
    if r.reached {
        state::settle(&host);
        let mid = unusable_index_2m();
        assert!(
            (mid - level).abs() <= 0.02,
            "asked {:.1}%, the kernel's index says {:.1}%: {r:#?}",
            level * 100.0,
            mid * 100.0
        );
        hugewise_env::actions::compact(&host).expect("compact");
        state::settle(&host);
        let compacted = unusable_index_2m();
        let mlocked = |s: &state::MemoryState| s.mlocked_bytes.unwrap_or(0) as i64;
        seen = Some(Seen {
            kept_blocks: f.pinned_blocks(),
            mlocked_rise: mlocked(&state::measure(&host).expect("measure")) - mlocked(&start),
            before: mid,
            compacted,
        });
        // Given back: each block broken by a kept page is whole again once the page is freed.
        // Taking and freeing pages to find whole blocks also breaks some on its own, which
        // the fragmenter counts towards the level but does not hold: only its kept pages are
        // judged here. Movable ones were mostly moved already, their blocks made whole by the
        // compaction: freeing them (wherever they went) must not break any block again.
        let held = f.pinned_blocks() as f64 * state::BLOCK_BYTES as f64;
        let free = state::measure(&host).expect("measure").buddy_free_bytes as f64;
        drop(f);
        state::settle(&host);
        let end = unusable_index_2m();
        match pages {
            FragmentPages::Unmovable => assert!(
                mid - end >= 0.5 * held / free - 0.01,
                "{} blocks given back, yet the index went from {:.1}% ({:.1}% compacted) to \
                 {:.1}%",
                r.pinned_blocks,
                mid * 100.0,
                compacted * 100.0,
                end * 100.0
            ),
            FragmentPages::Movable => assert!(
                end <= compacted + 0.01,
                "freeing the moved pages took the index from {:.1}% to {:.1}%",
                compacted * 100.0,
                end * 100.0
            ),
        }
    } else {
        // The fragmenter says why (no whole blocks left, or free memory moved under it); it
        // is the machine, busy or already fragmented, that cannot be fragmented further.
        let why = r.note.as_deref().unwrap_or("no reason given");
        assert!(r.note.is_some(), "not reached and no reason given: {r:#?}");
        hugewise_sys::testing::skip(format!(
            "this machine would not take a measured fragmentation now ({:.0}% unusable at the \
             start): {why}",
            start.unusable_share * 100.0
        ));
        drop(f);
    }
    drop(s);
    let after_knobs = (
        Knob::CompactUnevictable.read(&host).expect("knob"),
        Knob::PcpHighFraction.read(&host).expect("knob"),
    );
    assert_eq!(after_knobs, before_knobs);
    seen
}

#[test]
fn unmovable_fragmentation_shows_in_buddyinfo_survives_compaction_and_is_given_back() {
    let Some(s) = fragment_then_compact(FragmentPages::Unmovable) else {
        return;
    };
    // One mlocked page a kept block, which compaction may not move: the blocks stay broken.
    assert!(
        s.mlocked_rise >= (s.kept_blocks * 4096) as i64 * 9 / 10,
        "{} blocks kept, {} bytes more mlocked",
        s.kept_blocks,
        s.mlocked_rise
    );
    eprintln!(
        "{} unmovable pages kept; compaction took the index from {:.1}% to {:.1}%",
        s.kept_blocks,
        s.before * 100.0,
        s.compacted * 100.0
    );
    assert!(
        s.compacted >= s.before - 0.05,
        "compaction took the index from {:.1}% to {:.1}%: unmovable pages were moved",
        s.before * 100.0,
        s.compacted * 100.0
    );
}

#[test]
fn movable_fragmentation_shows_in_buddyinfo_with_no_page_locked() {
    let Some(s) = fragment_then_compact(FragmentPages::Movable) else {
        return;
    };
    // Ordinary pages, nothing mlocked: compaction may move them. How many a compaction moves
    // depends on where the kept blocks lie (its two scanners meet halfway through a zone), so
    // that is shown, not judged.
    assert!(
        s.mlocked_rise < 1 << 20,
        "{} blocks kept, {} bytes more mlocked",
        s.kept_blocks,
        s.mlocked_rise
    );
    eprintln!(
        "{} movable pages kept; compaction took the index from {:.1}% to {:.1}%",
        s.kept_blocks,
        s.before * 100.0,
        s.compacted * 100.0
    );
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
        hugewise_sys::testing::skip("no memory cgroup controller");
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
    // The statistics were kept fresh while the command ran, and no read failed (one that
    // landed after the cgroup went would have said so here).
    let flush = r
        .stats_flush
        .expect("a limited command gets a stats flusher");
    assert_eq!(flush.stopped, None);
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
        hugewise_sys::testing::skip("no memory cgroup controller");
        return;
    }
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        hugewise_sys::testing::skip("no python3 to allocate with");
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
                hugewise_sys::testing::skip(format!("swap files not usable here: {e}"));
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
    use hugewise_env::pressure::{hold, PressurePages, PressureTarget};
    let start = state::measure(&host).expect("measure");
    let (h, r) = hold(
        &host,
        PressureTarget::Take(512 << 20),
        PressurePages::Base,
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
        PressureTarget::Leave(256 << 20),
        PressurePages::Base,
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
        hugewise_sys::testing::skip("no /dev/shm");
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
