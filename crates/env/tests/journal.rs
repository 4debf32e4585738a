//! The journal and restore logic against a fake /proc and /sys tree: every way a run can end
//! must leave the machine exactly as it found it.

use hugewise_env::journal::{Journal, Lifetime, Owner};
use hugewise_env::testing::FakeMachine;
use hugewise_env::{change::Change, restore_all, Error, KhugepagedSetting, Knob, Session};

const ENABLED: &str = "sys/kernel/mm/transparent_hugepage/enabled";
const SCAN: &str = "sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan";
const POOL: &str = "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";

fn scan() -> Knob {
    Knob::Khugepaged {
        setting: KhugepagedSetting::PagesToScan,
    }
}

#[test]
fn a_run_puts_back_what_it_changed_when_it_ends() {
    let m = FakeMachine::new();
    let before = m.snapshot();
    {
        let mut s = Session::open(&m.host(), Lifetime::Run).expect("open");
        let set = s.set(Knob::ThpEnabled, "always").expect("thp");
        assert_eq!((set.old.as_str(), set.now.as_str()), ("madvise", "always"));
        s.set(scan(), "8192").expect("scan");
        s.set(Knob::HugetlbPages { size_kib: 2048 }, "16")
            .expect("pool");
        assert!(m.read(ENABLED).contains("always"));
        assert_eq!(m.read(SCAN), "8192");
        assert_eq!(m.read(POOL), "16");
    }
    assert_eq!(m.snapshot(), before);
    let journal = m.root().join("state/journal.jsonl");
    assert_eq!(std::fs::read(journal).expect("journal").len(), 0);
}

#[test]
fn setting_the_current_value_journals_nothing() {
    let m = FakeMachine::new();
    let mut s = Session::open(&m.host(), Lifetime::Run).expect("open");
    s.set(Knob::ThpEnabled, "madvise").expect("same");
    let r = s.restore();
    assert!(r.undone.is_empty() && r.complete());
}

#[test]
fn a_refused_value_changes_nothing() {
    let m = FakeMachine::new();
    let before = m.snapshot();
    let mut s = Session::open(&m.host(), Lifetime::Run).expect("open");
    let e = s.set(Knob::ThpEnabled, "sometimes").expect_err("bad");
    assert!(e.to_string().contains("not one of"), "{e}");
    drop(s);
    assert_eq!(m.snapshot(), before);
}

#[test]
fn a_crash_between_two_steps_is_undone_by_restore() {
    let m = FakeMachine::new();
    let before = m.snapshot();
    let host = m.host();
    let mut s = Session::open(&host, Lifetime::Run).expect("open");
    s.set(Knob::ThpEnabled, "always").expect("first step");
    s.set(Knob::CompactUnevictable, "0").expect("second step");
    // The process dies here: no restore runs.
    s.abandon();
    // A run that died after journaling a third step but before making it.
    {
        let mut j = Journal::open(&host.state_dir).expect("journal");
        let owner = Owner {
            pid: 1,
            start_time: None,
            boot_id: "fake-boot-1".into(),
        };
        j.record_change(
            &owner,
            Lifetime::Run,
            &Change::Knob {
                knob: scan(),
                old: "4096".into(),
                new: "1".into(),
            },
        )
        .expect("record");
    }
    assert_ne!(m.snapshot(), before);

    // A new run refuses to start on top of the leftovers, and says what they are.
    let e = Session::open(&host, Lifetime::Run).expect_err("leftovers");
    assert!(matches!(e, Error::Leftover { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("thp enabled: madvise -> always"), "{msg}");
    assert!(msg.contains("hugewise env restore"), "{msg}");

    let r = restore_all(&host).expect("restore");
    assert!(r.complete(), "{r:?}");
    assert_eq!(r.undone.len(), 3);
    // Newest first.
    assert!(r.undone[0].change.starts_with("khugepaged"));
    assert_eq!(m.snapshot(), before);
    Session::open(&host, Lifetime::Run).expect("clean again");
}

#[test]
fn a_panic_inside_a_run_restores() {
    let m = FakeMachine::new();
    let before = m.snapshot();
    let host = m.host();
    let r = std::panic::catch_unwind(|| {
        let mut s = Session::open(&host, Lifetime::Run).expect("open");
        s.set(Knob::PageCluster, "0").expect("set");
        panic!("boom");
    });
    assert!(r.is_err());
    assert_eq!(m.snapshot(), before);
}

#[test]
fn kept_settings_stay_until_restore() {
    let m = FakeMachine::new();
    let before = m.snapshot();
    let host = m.host();
    {
        let mut s = Session::open(&host, Lifetime::Kept).expect("open");
        s.set(Knob::ThpDefrag, "always").expect("defrag");
    }
    assert_eq!(
        m.value("sys/kernel/mm/transparent_hugepage/defrag"),
        "always"
    );
    // Kept settings are not leftovers: a run may start.
    {
        let mut s = Session::open(&host, Lifetime::Run).expect("run on top");
        s.set(Knob::PageCluster, "0").expect("nested");
    }
    assert_eq!(
        m.value("sys/kernel/mm/transparent_hugepage/defrag"),
        "always"
    );
    assert_eq!(m.value("proc/sys/vm/page-cluster"), "3");
    restore_all(&host).expect("restore");
    assert_eq!(m.snapshot(), before);
}

#[test]
fn restore_notes_a_value_changed_by_someone_else() {
    let m = FakeMachine::new();
    let host = m.host();
    let mut s = Session::open(&host, Lifetime::Run).expect("open");
    s.set(Knob::PageCluster, "0").expect("set");
    std::fs::write(m.root().join("proc/sys/vm/page-cluster"), "5\n").expect("other writer");
    let r = s.restore();
    assert_eq!(m.read("proc/sys/vm/page-cluster"), "3");
    assert!(r.undone[0].outcome.contains("changed to 5 since"), "{r:?}");
}

#[test]
fn after_a_reboot_settings_are_not_written_back() {
    let m = FakeMachine::new();
    let host = m.host();
    let mut s = Session::open(&host, Lifetime::Kept).expect("open");
    s.set(Knob::PageCluster, "0").expect("set");
    drop(s);
    m.reboot();
    // The kernel booted with its own value; hugewise must not overwrite it.
    std::fs::write(m.root().join("proc/sys/vm/page-cluster"), "2\n").expect("boot value");
    let r = restore_all(&host).expect("restore");
    assert!(r.undone[0].outcome.contains("rebooted"), "{r:?}");
    assert_eq!(m.read("proc/sys/vm/page-cluster"), "2");
}

#[test]
fn a_damaged_journal_is_named_and_nothing_is_written() {
    let m = FakeMachine::new();
    let host = m.host();
    std::fs::create_dir_all(&host.state_dir).expect("mkdir");
    std::fs::write(host.state_dir.join("journal.jsonl"), "{\"record\":1}\n\n").expect("write");
    let e = restore_all(&host).expect_err("damaged");
    assert!(e.to_string().contains("journal.jsonl:1:"), "{e}");
}

#[test]
fn two_runs_cannot_shape_the_machine_at_once() {
    let m = FakeMachine::new();
    let host = m.host();
    let _a = Session::open(&host, Lifetime::Run).expect("first");
    let e = Session::open(&host, Lifetime::Run).expect_err("second");
    assert!(matches!(e, Error::Busy { .. }), "{e}");
}
