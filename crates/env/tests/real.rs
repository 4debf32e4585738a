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
