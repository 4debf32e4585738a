//! Promotion and demotion on real processes: this test process itself and a child Python
//! process, through the same pidfd + process_madvise path a daemon uses on any program.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use hugewise_promote::action::ActionKind;
use hugewise_promote::target::Target;
use hugewise_promote::{Error, HUGE};
use hugewise_sys::mmap::{MapOptions, Mapping};
use hugewise_sys::proc::ProcFs;

fn is_root() -> bool {
    ProcFs::default().kpageflags().is_ok()
}

/// 8 MiB of this process's memory touched in 4 KiB pages (THP is `madvise` or `never` here,
/// and no advice is given), aligned to 2 MiB.
fn base_paged(len: usize) -> Mapping {
    let mut m = Mapping::anonymous(len, MapOptions::default()).expect("map");
    m.touch_pages(4096);
    m
}

#[test]
fn promotes_then_demotes_its_own_memory_and_keeps_the_data() {
    if !is_root() {
        hugewise_sys::testing::skip("frames are visible to root only");
        return;
    }
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[never]") {
        hugewise_sys::testing::skip("THP is never on this machine");
        return;
    }
    let mut m = base_paged(8 * HUGE);
    for (i, b) in m.as_mut_slice().iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    let t = Target::attach(
        &ProcFs::default(),
        std::process::id() as i32,
        Instant::now(),
    )
    .expect("attach to self");
    let range = m.addr()..m.addr() + m.len();
    assert!(t
        .scan(&range)
        .expect("scan")
        .iter()
        .all(|c| c.huge == Some(false)));

    let two = m.addr() + 2 * HUGE..m.addr() + 4 * HUGE;
    let a = t.promote(two.clone()).expect("promote");
    assert_eq!(a.kind, ActionKind::Promote);
    assert_eq!(a.outcome, "ok", "{a:?}");
    assert_eq!(a.huge_bytes_after, Some(2 * HUGE as u64), "{a:?}");
    assert!(a.succeeded() && a.latency_ns > 0);
    let chunks = t.scan(&range).expect("scan");
    let huge: Vec<bool> = chunks.iter().map(|c| c.huge == Some(true)).collect();
    assert_eq!(huge, [false, false, true, true, false, false, false, false]);
    assert!(chunks.iter().all(|c| c.mapped_pages == 512));

    let one = m.addr() + 3 * HUGE..m.addr() + 4 * HUGE;
    let d = t.demote(one).expect("demote");
    assert_eq!(
        (d.outcome.as_str(), d.huge_bytes_after),
        ("ok", Some(0)),
        "{d:?}"
    );
    let huge: Vec<bool> = t
        .scan(&range)
        .expect("scan")
        .iter()
        .map(|c| c.huge == Some(true))
        .collect();
    assert_eq!(
        huge,
        [false, false, true, false, false, false, false, false]
    );
    assert!(m
        .as_slice()
        .iter()
        .enumerate()
        .all(|(i, b)| *b == (i % 251) as u8));
}

#[test]
fn refuses_ranges_it_must_not_touch() {
    let t = Target::attach(
        &ProcFs::default(),
        std::process::id() as i32,
        Instant::now(),
    )
    .expect("attach to self");
    let m = base_paged(2 * HUGE);
    let refuse = |r: std::ops::Range<usize>, want: &str| match t.promote(r.clone()) {
        Err(Error::BadRange { why, .. }) => assert!(why.contains(want), "{r:x?}: {why}"),
        other => panic!("{r:x?}: expected a refusal naming {want:?}, got {other:?}"),
    };
    refuse(m.addr() + 4096..m.addr() + HUGE + 4096, "whole 2 MiB");
    // Anonymous mappings next to each other merge into one: find where this one really ends.
    let vma_end = t
        .maps()
        .expect("maps")
        .iter()
        .find(|e| e.start <= m.addr() && m.addr() < e.end)
        .expect("the mapping")
        .end;
    let last = vma_end / HUGE * HUGE - HUGE;
    refuse(last..last + 2 * HUGE, "runs past the end");
    // The page at address 0 is never mapped.
    refuse(0..HUGE, "not inside any mapping");
    // The test binary's own text is a file mapping.
    let text = t
        .maps()
        .expect("maps")
        .into_iter()
        .find(|e| e.exec && e.name.as_deref().is_some_and(|n| n.starts_with('/')))
        .expect("an executable file mapping");
    let start = text.start.next_multiple_of(HUGE);
    if start + HUGE <= text.end {
        refuse(start..start + HUGE, "not private anonymous");
    }
}

/// A Python child holding 8 MiB of anonymous memory, printing its address.
struct Child {
    child: std::process::Child,
    addr: usize,
    len: usize,
}

fn python_child() -> Option<Child> {
    let script = "import ctypes, mmap, sys\n\
        n = 10 << 20\n\
        m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n\
        m.write(bytes(range(256)) * (n // 256))\n\
        a = ctypes.addressof(ctypes.c_char.from_buffer(m))\n\
        print(a, n, flush=True)\n\
        sys.stdin.readline()\n\
        m.seek(0)\n\
        print(int(m.read(n) == bytes(range(256)) * (n // 256)), flush=True)\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut()?)
        .read_line(&mut line)
        .ok()?;
    let mut f = line.split_whitespace().map(|x| x.parse::<usize>().ok());
    let (addr, len) = (f.next()??, f.next()??);
    Some(Child { child, addr, len })
}

#[test]
fn promotes_another_process_and_lets_it_go() {
    if !is_root() {
        hugewise_sys::testing::skip("frames are visible to root only");
        return;
    }
    let Some(mut c) = python_child() else {
        hugewise_sys::testing::skip("python3 is not installed");
        return;
    };
    let pid = c.child.id() as i32;
    let t = Target::attach(&ProcFs::default(), pid, Instant::now()).expect("attach");
    let start = c.addr.next_multiple_of(HUGE);
    let range = start..start + 2 * HUGE;
    assert!(range.end <= c.addr + c.len);
    let a = t.promote(range.clone()).expect("promote the child");
    assert!(a.succeeded(), "{a:?}");
    let d = t.demote(range.clone()).expect("demote the child");
    assert!(d.succeeded(), "{d:?}");
    // The child's data is intact.
    let mut stdin = c.child.stdin.take().expect("stdin");
    writeln!(stdin).expect("wake the child");
    let mut line = String::new();
    BufReader::new(c.child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("child's answer");
    assert_eq!(line.trim(), "1", "the child's memory changed");
    assert!(c.child.wait().expect("wait").success());
    // Gone: acting on it now is recorded, not an error; attaching again says so.
    let g = t.promote(range).expect("a gone target is not an error");
    assert_eq!(g.outcome, "gone");
    match Target::attach(&ProcFs::default(), pid, Instant::now()) {
        Err(Error::Gone { pid: p, .. }) => assert_eq!(p, pid),
        other => panic!("expected Gone, got {other:?}"),
    }
}

/// `chunks` chunks of this process on 4 KiB pages, the time they were attached at and the
/// process as a target, for the replay tests; `None` (the test skips) where frames are hidden
/// or the kernel made huge pages at fault.
fn replay_setup(chunks: usize) -> Option<(Mapping, Instant, Target)> {
    if !is_root() {
        hugewise_sys::testing::skip("frames are visible to root only");
        return None;
    }
    let m = base_paged(chunks * HUGE);
    let t0 = Instant::now();
    let t = Target::attach(&ProcFs::default(), std::process::id() as i32, t0).expect("attach");
    let scanned = t.scan(&(m.addr()..m.addr() + m.len())).expect("scan");
    if scanned.iter().any(|c| c.huge == Some(true)) {
        hugewise_sys::testing::skip("THP `always` gave huge pages at fault");
        return None;
    }
    Some((m, t0, t))
}

#[test]
fn replays_steps_in_time_and_stops_when_cancelled() {
    use hugewise_promote::replay::{replay, Step};
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;
    let Some((m, t0, t)) = replay_setup(4) else {
        return;
    };
    let steps = [
        Step {
            at: Duration::ZERO,
            range: m.addr()..m.addr() + HUGE,
            kind: ActionKind::Promote,
        },
        Step {
            at: Duration::from_millis(200),
            range: m.addr() + 2 * HUGE..m.addr() + 4 * HUGE,
            kind: ActionKind::Promote,
        },
    ];
    let cancel = AtomicBool::new(false);
    let mut seen = 0;
    let r = replay(&t, &steps, t0, &cancel, &mut |_| seen += 1).expect("replay");
    assert_eq!((r.actions.len(), seen), (3, 3));
    assert!(!r.cancelled && !r.target_gone);
    assert!(r.actions.iter().all(|a| a.succeeded()), "{:?}", r.actions);
    assert!(
        r.actions[1].t_ms >= 200.0,
        "the second step ran early: {:?}",
        r.actions[1]
    );
    let huge = t.scan(&(m.addr()..m.addr() + m.len())).expect("scan");
    let huge: Vec<bool> = huge.iter().map(|c| c.huge == Some(true)).collect();
    assert_eq!(huge, [true, false, true, true]);

    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let r = replay(&t, &steps, Instant::now(), &cancel, &mut |_| {}).expect("replay");
    assert!(r.cancelled && r.actions.is_empty());
}

#[test]
fn a_replayed_step_the_kernel_could_not_take_is_tried_twice_more() {
    use hugewise_promote::replay::{replay, Step, AGAIN_RETRIES};
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;
    let Some((m, t0, t)) = replay_setup(2) else {
        return;
    };
    let step = |c: usize| Step {
        at: Duration::ZERO,
        range: m.addr() + c * HUGE..m.addr() + (c + 1) * HUGE,
        kind: ActionKind::Promote,
    };
    // Chunk 0's page is held by a pipe throughout; chunk 1's is let go at its first refusal.
    let hold = |addr| hugewise_sys::testing::PageHold::new(addr);
    let (_kept, mut let_go) = match (hold(m.addr() + 4096), hold(m.addr() + HUGE + 4096)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            return hugewise_sys::testing::skip(format!("vmsplice refused: {e}"))
        }
    };
    let cancel = AtomicBool::new(false);
    let r = replay(&t, &[step(0), step(1)], t0, &cancel, &mut |a| {
        if a.start == m.addr() + HUGE && a.outcome == "EAGAIN" {
            let_go.release().expect("release");
        }
    })
    .expect("replay");
    let outcomes: Vec<(usize, &str)> = r
        .actions
        .iter()
        .map(|a| ((a.start - m.addr()) / HUGE, a.outcome.as_str()))
        .collect();
    let mut want = vec![(0, "EAGAIN"); AGAIN_RETRIES as usize + 1];
    want.extend([(1, "EAGAIN"), (1, "ok")]);
    assert_eq!(outcomes, want, "{:?}", r.actions);
    // Every refusal but a step's last is marked as an attempt tried again.
    let again: Vec<bool> = r.actions.iter().map(|a| a.tried_again).collect();
    let mut want = vec![true; AGAIN_RETRIES as usize];
    want.extend([false, true, false]);
    assert_eq!(again, want, "{:?}", r.actions);
}

#[test]
fn launches_a_program_without_aslr_and_reports_one_that_cannot_start() {
    use hugewise_promote::target::launch;
    let mut l = launch(
        &ProcFs::default(),
        "sleep",
        &["5".to_string()],
        &Default::default(),
        Instant::now(),
    )
    .expect("launch sleep");
    let persona =
        std::fs::read_to_string(format!("/proc/{}/personality", l.child.id())).expect("persona");
    let persona = u32::from_str_radix(persona.trim(), 16).expect("hex");
    assert_ne!(
        persona & 0x0040000,
        0,
        "ADDR_NO_RANDOMIZE not set: {persona:#x}"
    );
    assert_eq!(l.target.pid(), l.child.id() as i32);
    assert!(l
        .target
        .maps()
        .expect("maps")
        .iter()
        .any(|m| m.name.as_deref() == Some("[stack]")));
    l.child.kill().expect("kill");
    l.child.wait().expect("wait");
    match launch(
        &ProcFs::default(),
        "/nonexistent/program",
        &[],
        &Default::default(),
        Instant::now(),
    ) {
        Err(Error::Launch { program, .. }) => assert_eq!(program, "/nonexistent/program"),
        other => panic!("expected Launch error, got {other:?}"),
    }
}

#[test]
fn a_target_managed_within_a_range_offers_only_its_chunks() {
    let m = base_paged(8 * HUGE);
    let t0 = Instant::now();
    let me = std::process::id() as i32;
    let whole = Target::attach(&ProcFs::default(), me, t0).expect("attach to self");
    assert!(whole
        .huge_capable()
        .expect("ranges")
        .iter()
        .any(|r| r.start <= m.addr() && m.addr() + m.len() <= r.end));
    // The middle 4 MiB of the mapping, then a window from its last 4 MiB on: trimmed to it.
    let inner = m.addr() + 2 * HUGE..m.addr() + 4 * HUGE;
    let t = Target::attach(&ProcFs::default(), me, t0)
        .expect("attach")
        .within(inner.clone());
    assert_eq!(t.huge_capable().expect("ranges"), [inner]);
    // Nor does it act outside the range, though the memory there is the process's own.
    let outside = m.addr()..m.addr() + HUGE;
    match t.promote(outside) {
        Err(Error::BadRange { why, .. }) => assert!(why.contains("manages"), "{why}"),
        other => panic!("{other:?}"),
    }
    let window = m.addr() + 6 * HUGE..m.addr() + 100 * HUGE;
    let t = Target::attach(&ProcFs::default(), me, t0)
        .expect("attach")
        .within(window.clone());
    let got = t.huge_capable().expect("ranges");
    assert_eq!(got[0].start, window.start, "{got:x?}");
    assert!(
        got.iter()
            .all(|r| r.start >= window.start && r.end <= window.end),
        "{got:x?}"
    );
}

#[test]
fn a_process_whose_main_thread_ended_is_not_taken_for_gone() {
    // Its other thread runs on, but `/proc/PID/maps` reads empty: the main thread's memory
    // was released when it ended. Its pidfd alone says whether the process has exited.
    let script = "import ctypes, sys, threading\n\
                  threading.Thread(target=sys.stdin.readline).start()\n\
                  print('ready', flush=True)\n\
                  ctypes.CDLL(None).pthread_exit(None)\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let pid = child.id() as i32;
    let t = Target::attach(&ProcFs::default(), pid, Instant::now()).expect("attach");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("the child's word");
    assert_eq!(line.trim(), "ready");
    let status = format!("/proc/{pid}/status");
    let t_wait = Instant::now();
    while !std::fs::read_to_string(&status)
        .expect("status")
        .contains("State:\tZ")
    {
        assert!(
            t_wait.elapsed().as_secs() < 10,
            "the main thread never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // The kernel reads its memory through the ended thread: its maps read empty (or, on
    // some kernels, refuse with ESRCH), and it is not gone.
    assert!(!t.exited());
    assert!(t.maps().expect("alive, no maps to read").is_empty());
    assert_eq!(t.huge_capable().expect("alive, nothing to manage"), []);
    match t.scan(&(0..HUGE)) {
        Ok(c) => assert!(c.iter().all(|c| c.mapped_pages == 0), "{c:?}"),
        Err(e) => panic!("{e}"),
    }
    // Attached now, it is refused with the reason, not taken for gone.
    match Target::attach(&ProcFs::default(), pid, Instant::now()) {
        Ok(_) => {}
        Err(Error::Denied { reason, .. }) => assert!(reason.contains("main thread"), "{reason}"),
        Err(e) => panic!("{e}"),
    }
    // The last thread ends: now it is gone, before its parent has waited for it.
    writeln!(child.stdin.as_mut().expect("stdin")).expect("wake the thread");
    let t_wait = Instant::now();
    while !t.exited() {
        assert!(t_wait.elapsed().as_secs() < 10, "the process never exited");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    match t.huge_capable() {
        Err(Error::Gone { pid: p, .. }) => assert_eq!(p, pid),
        other => panic!("expected Gone, got {other:?}"),
    }
    assert!(child.wait().expect("wait").success());
}
