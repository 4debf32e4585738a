//! The online daemon on real memory: budgets checked against the kernel's backing, samples
//! steering the PCC, huge pages the kernel made by itself counted and trimmed, targets that
//! exit dropped.

use std::time::{Duration, Instant};

use hugewise_promote::action::ActionKind;
use hugewise_promote::budget::Limit;
use hugewise_promote::channel::{Publisher, Subscriber};
use hugewise_promote::daemon::{turn_after, Config, Daemon};
use hugewise_promote::policies::linux::Linux;
use hugewise_promote::policy::by_name;
use hugewise_promote::target::Target;
use hugewise_promote::thinning;
use hugewise_promote::HUGE;
use hugewise_sys::mmap::{Advice, MapOptions, Mapping};
use hugewise_sys::proc::ProcFs;
use hugewise_sys::shm::Writer;

/// The daemon tests manage this very process: one at a time, so one test's mappings do not
/// count in another's budget.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn is_root() -> bool {
    ProcFs::default().kpageflags().is_ok()
}

/// A daemon that acts on the samples of its first look (the tests publish exact counts),
/// never pacing its collapses by the target's faults: the target is this test process, where
/// other tests fault memory at any time (pacing has its own test below).
fn cfg(limit: Limit) -> Config {
    Config {
        interval: Duration::from_millis(10),
        limit,
        first_samples: 0,
        fault_waits: 1.0,
        // Reads counted look by look: a chunk must not wait longer because the test process's
        // counters happened to show no change (the test of that sets it).
        quiet_stretch: 1,
        ..Config::default()
    }
}

/// The same, for tests that step it by hand and swap chunks: the policy weighs heat over time
/// as if each step came a second after the last, as at the default interval.
fn cfg_each_second(limit: Limit) -> Config {
    Config {
        interval: Duration::from_secs(1),
        ..cfg(limit)
    }
}

fn huge_map(t: &Target, m: &Mapping) -> Vec<bool> {
    t.scan(&(m.addr()..m.addr() + m.len()))
        .expect("scan")
        .iter()
        .map(|c| c.huge == Some(true))
        .collect()
}

/// `chunks` 2 MiB chunks faulted in 4 KiB pages, with collapse allowed: no advice at all, so
/// that with THP `madvise` the faults are 4 KiB and khugepaged (which then scans only
/// `MADV_HUGEPAGE` areas) leaves them alone, while `MADV_COLLAPSE` ignores the mode. `None`,
/// and the test skips, when the kernel made huge pages at fault (THP `always`).
fn four_k_chunks(chunks: usize) -> Option<Mapping> {
    let mut m = Mapping::anonymous(chunks * HUGE, MapOptions::default()).expect("map");
    m.touch_pages(4096);
    let me = Target::attach(
        &ProcFs::default(),
        std::process::id() as i32,
        Instant::now(),
    )
    .expect("attach");
    if huge_map(&me, &m).iter().any(|&h| h) {
        hugewise_sys::testing::skip("THP `always` gave huge pages at fault");
        return None;
    }
    Some(m)
}

/// The tests' serial lock and [`four_k_chunks`]; `None`, and the test skips, when frames are
/// not visible (not root) or the kernel made huge pages at fault.
fn serial_four_k_chunks(chunks: usize) -> Option<(std::sync::MutexGuard<'static, ()>, Mapping)> {
    let one = serial();
    if !is_root() {
        hugewise_sys::testing::skip("frames are visible to root only");
        return None;
    }
    Some((one, four_k_chunks(chunks)?))
}

/// A `pcc` daemon managing this process with `config`, reading the samples of a ring of its own
/// (named by `name`), and the ring's publisher.
fn pcc_on_me(name: &str, config: Config) -> (Publisher, Daemon) {
    let ring = std::env::temp_dir().join(format!("hw-daemon-{name}-{}", std::process::id()));
    let publisher = Publisher::create_at(&ring, 1 << 16).expect("ring");
    let t0 = Instant::now();
    let me = std::process::id() as i32;
    let mut d = Daemon::new(by_name("pcc").expect("pcc"), config, t0);
    d.add_with(
        Target::attach(&ProcFs::default(), me, t0).expect("attach"),
        Subscriber::open_at(&ring, Writer::this_process()).ok(),
    );
    (publisher, d)
}

/// Four 4 KiB chunks under a `pcc` daemon (a look a second) with a one-chunk budget, chunk 1
/// made huge by its first look: where the swap tests start. `None` where the machine cannot.
fn chunk_1_huge(
    name: &str,
) -> Option<(
    std::sync::MutexGuard<'static, ()>,
    Mapping,
    Publisher,
    Daemon,
)> {
    let (one, m) = serial_four_k_chunks(4)?;
    let (publisher, mut d) = pcc_on_me(name, cfg_each_second(Limit::Bytes(2 << 20)));
    heat(&publisher, &m, &[1], 1000);
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.promoted, iv.sample_thinning), (1, Some(1)), "{iv:?}");
    Some((one, m, publisher, d))
}

/// Samples for the chunks in `hot` of `m`, `n` each, spread over all their pages.
fn heat(p: &Publisher, m: &Mapping, hot: &[usize], n: usize) {
    for &c in hot {
        for k in 0..n {
            p.sample(m.addr() + c * HUGE + (k * 4096) % HUGE, false);
        }
    }
}

#[test]
fn pcc_follows_the_samples_within_its_budget() {
    let Some((_one, m)) = serial_four_k_chunks(8) else {
        return;
    };
    let (publisher, mut d) = pcc_on_me("ring", cfg_each_second(Limit::Bytes(4 << 20)));
    let me = std::process::id() as i32;
    let check = Target::attach(&ProcFs::default(), me, Instant::now()).expect("attach");
    assert_eq!(d.sampled(), [me]);

    heat(&publisher, &m, &[5, 6], 1000);
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.samples, iv.promoted, iv.failed), (2000, 2, 0), "{iv:?}");
    assert_eq!(iv.budget_bytes, 4 << 20);
    let h = huge_map(&check, &m);
    assert_eq!(&h, &[false, false, false, false, false, true, true, false]);

    // The heat moves to chunks 1 and 2, at more than twice what 5 and 6 keep (1000 / 2),
    // but new heat does not take a huge chunk's place: it might be a stream passing by.
    heat(&publisher, &m, &[1, 2], 3000);
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.promoted, iv.demoted), (0, 0), "{iv:?}");
    // It lasts: within a few more looks (by hand: the third, when the heat that has lasted,
    // 537, passes twice what 5 and 6 have had, 125) 1 and 2 take the places of 5 and 6, and
    // the budget is never exceeded.
    let mut looks = 1;
    let iv = loop {
        heat(&publisher, &m, &[1, 2], 3000);
        let iv = d.step(&mut |_| {}).expect("step");
        looks += 1;
        assert!(iv.huge_bytes_after <= 4 << 20, "{iv:?}");
        if iv.promoted > 0 || looks == 6 {
            break iv;
        }
    };
    assert_eq!(looks, 3, "{iv:?}");
    let h = huge_map(&check, &m);
    assert_eq!(
        &h,
        &[false, true, true, false, false, false, false, false],
        "{iv:?}"
    );
    assert_eq!((iv.promoted, iv.demoted), (2, 2));
}

#[test]
fn a_settled_daemon_asks_for_fewer_samples_and_a_swap_steps_back_one_step() {
    let Some((_one, m, publisher, mut d)) = chunk_1_huge("thin") else {
        return;
    };
    // The budget is full and chunk 1 stays the hottest: nothing to do, look after look, and
    // the daemon asks the program for fewer samples, step by step.
    let mut asked = Vec::new();
    for _ in 0..3 * thinning::CALM_LOOKS {
        heat(&publisher, &m, &[1], 1000);
        let iv = d.step(&mut |_| {}).expect("step");
        assert_eq!((iv.promoted, iv.demoted), (0, 0), "{iv:?}");
        assert_eq!(iv.swaps, Some(0), "{iv:?}");
        asked.push(iv.sample_thinning.expect("asked"));
    }
    assert_eq!(asked.first(), Some(&1), "{asked:?}");
    assert_eq!(asked.last(), Some(&64), "{asked:?}");
    assert!(asked.windows(2).all(|w| w[0] <= w[1]), "{asked:?}");
    assert_eq!(publisher.thinning(), 64, "the program reads what was asked");
    // The heat moves to chunk 3 and lasts: a swap within the full budget steps the thinning
    // back one step, not to every sample.
    let mut swapped = false;
    for _ in 0..6 {
        heat(&publisher, &m, &[3], 20_000);
        let iv = d.step(&mut |_| {}).expect("step");
        if iv.promoted > 0 {
            assert_eq!((iv.promoted, iv.demoted), (1, 1), "{iv:?}");
            assert_eq!(iv.swaps, Some(1), "the split gave its place: {iv:?}");
            assert_eq!(iv.sample_thinning, Some(16), "{iv:?}");
            assert_eq!(publisher.thinning(), 16);
            swapped = true;
            break;
        }
    }
    assert!(swapped, "the heat on chunk 3 never took chunk 1's place");
}

#[test]
fn a_score_made_of_a_few_heavy_samples_takes_no_huge_chunks_place() {
    let Some((_one, m, publisher, mut d)) = chunk_1_huge("few") else {
        return;
    };
    // Pages 37 apart: each sample a jump that stands for its whole weight (a step of a few
    // pages would be counted as a stream's, a walk a page).
    let few = |n: usize| {
        for k in 0..n {
            publisher.sample_weighted(m.addr() + 3 * HUGE + (k * 37 * 4096) % HUGE, false, 1000);
        }
    };
    // Chunk 3 scores far above chunk 1, look after look, but from four samples that each
    // stand for a thousand: too few to trust, so no split and no collapse.
    for _ in 0..3 {
        few(4);
        let iv = d.step(&mut |_| {}).expect("step");
        assert_eq!((iv.promoted, iv.demoted), (0, 0), "{iv:?}");
    }
    // With as many samples as a swap asks for, the same heat takes chunk 1's place.
    few(Config::default().swap_min_samples as usize);
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.promoted, iv.demoted), (1, 1), "{iv:?}");
    let me = std::process::id() as i32;
    let check = Target::attach(&ProcFs::default(), me, Instant::now()).expect("attach");
    assert_eq!(&huge_map(&check, &m), &[false, false, false, true]);
}

#[test]
fn a_chunk_whose_pages_stay_held_takes_no_huge_chunks_place() {
    let Some((_one, m, publisher, mut d)) = chunk_1_huge("held") else {
        return;
    };
    let _held = match hugewise_sys::testing::PageHold::new(m.addr() + 3 * HUGE + 5 * 4096) {
        Ok(h) => h,
        Err(e) => return hugewise_sys::testing::skip(format!("vmsplice refused: {e}")),
    };
    // Chunk 3 far hotter: a swap splits chunk 1 for it, and the kernel cannot take its pages.
    let mut swapped = false;
    for _ in 0..6 {
        heat(&publisher, &m, &[3], 20_000);
        let iv = d.step(&mut |_| {}).expect("step");
        if iv.demoted > 0 {
            assert_eq!((iv.promoted, iv.demoted, iv.failed), (0, 1, 1), "{iv:?}");
            swapped = true;
            break;
        }
    }
    assert!(swapped, "the heat on chunk 3 never took chunk 1's place");
    // With room, chunk 1 comes back (chunk 3 gets its one try).
    heat(&publisher, &m, &[1], 20_000);
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!(iv.promoted, 1, "{iv:?}");
    // The budget full again, chunk 3's heat splits nothing: its pages were held just now.
    for _ in 0..3 {
        heat(&publisher, &m, &[3], 20_000);
        let mut acted = Vec::new();
        let iv = d.step(&mut |a| acted.push(a.clone())).expect("step");
        assert_eq!((iv.promoted, iv.demoted), (0, 0), "{acted:?} {iv:?}");
        assert!(acted.is_empty(), "{acted:?}");
    }
    let me = std::process::id() as i32;
    let check = Target::attach(&ProcFs::default(), me, Instant::now()).expect("attach");
    assert_eq!(&huge_map(&check, &m), &[false, true, false, false]);
}

#[test]
fn the_first_decision_comes_once_samples_are_in_not_a_whole_interval_later() {
    let Some((_one, m)) = serial_four_k_chunks(4) else {
        return;
    };
    let ring = std::env::temp_dir().join(format!("hw-daemon-first-{}", std::process::id()));
    let publisher = Publisher::create_at(&ring, 1 << 16).expect("ring");
    let t0 = Instant::now();
    let me = std::process::id() as i32;
    let target = Target::attach(&ProcFs::default(), me, t0).expect("attach");
    // An interval of a minute: without the early look nothing would happen in this test.
    let config = Config {
        interval: Duration::from_secs(60),
        limit: Limit::Bytes(2 << 20),
        first_samples: 1000,
        ..Config::default()
    };
    let mut d = Daemon::new(by_name("pcc").expect("pcc"), config, t0);
    d.add_with(
        target,
        Subscriber::open_at(&ring, Writer::this_process()).ok(),
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut seen: Vec<(f64, u64, u32)> = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            // After the daemon's first look (no samples yet), 2000 samples on chunk 2.
            std::thread::sleep(Duration::from_millis(200));
            heat(&publisher, &m, &[2], 2000);
        });
        d.run(&stop, &mut |iv, _| {
            seen.push((iv.t_ms, iv.samples, iv.promoted));
            if iv.promoted > 0 || seen.len() > 2 {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        })
        .expect("run");
    });
    // First look at once, with nothing; the second as soon as the samples were in, well
    // within the minute, promoting the sampled chunk.
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!((seen[0].1, seen[0].2), (0, 0), "{seen:?}");
    // (It may look while the samples are still being written: at 1000 of them or more.)
    assert!(seen[1].1 >= 1000 && seen[1].2 == 1, "{seen:?}");
    assert!(seen[1].0 < 5_000.0, "{seen:?}");
}

#[test]
fn a_look_promotes_past_its_promotion_count_while_it_lasts_less_than_an_interval() {
    let Some((_one, m)) = serial_four_k_chunks(6) else {
        return;
    };
    // Four hot chunks, room for all four, one promotion a look at least.
    let hot = [0, 2, 3, 5];
    let one_a_look = |interval| Config {
        interval,
        max_promotions: 1,
        ..cfg(Limit::Bytes(8 << 20))
    };
    // A second of interval: the four collapses (a few milliseconds each) fit in one look.
    let (publisher, mut d) = pcc_on_me("cap-long", one_a_look(Duration::from_secs(1)));
    heat(&publisher, &m, &hot, 1000);
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.promoted, iv.failed), (4, 0), "{iv:?}");
    drop((publisher, d));

    // An interval shorter than any collapse: one a look, as the count says.
    let Some(m) = four_k_chunks(6) else {
        return;
    };
    let (publisher, mut d) = pcc_on_me("cap-short", one_a_look(Duration::from_nanos(1)));
    heat(&publisher, &m, &hot, 1000);
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.promoted, iv.failed), (1, 0), "{iv:?}");
}

#[test]
fn a_sampled_policy_counts_without_acting_until_it_has_enough_samples() {
    let Some((_one, m)) = serial_four_k_chunks(4) else {
        return;
    };
    // An interval of a minute: only the count ends the warm-up here.
    let (publisher, mut d) = pcc_on_me(
        "warm",
        Config {
            first_samples: 3000,
            settled_samples: 0,
            interval: Duration::from_secs(60),
            ..cfg(Limit::Bytes(2 << 20))
        },
    );
    let (t0, me) = (Instant::now(), std::process::id() as i32);
    // 2000 samples, all on chunk 1: counted, not acted on (2000 < 3000).
    heat(&publisher, &m, &[1], 2000);
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.samples, iv.promoted), (2000, 0), "{iv:?}");
    // 1500 more on chunk 3: 3500 counted; the PCC's scores kept the first interval's heat
    // (2000 / 2 = 1000 for chunk 1, 1500 for chunk 3): chunk 3 is promoted, within the
    // budget of one.
    heat(&publisher, &m, &[3], 1500);
    let mut acted = Vec::new();
    let iv = d
        .step(&mut |a| acted.push((a.kind, a.start)))
        .expect("step");
    assert_eq!((iv.samples, iv.promoted), (1500, 1), "{iv:?}");
    // What the daemon promoted is its actions.
    let promoted: Vec<usize> = acted
        .iter()
        .filter(|a| a.0 == ActionKind::Promote)
        .map(|a| a.1)
        .collect();
    assert_eq!(promoted, [m.addr() + 3 * HUGE], "{acted:?}");
    let check = Target::attach(&ProcFs::default(), me, t0).expect("attach");
    assert!(huge_map(&check, &m)[3]);
    // The linux policy does not rank by samples: with the same ring it acts at once whatever
    // the setting.
    let ring = std::env::temp_dir().join(format!("hw-daemon-warm-{me}"));
    let mut l = Daemon::new(Box::new(Linux::with(1 << 30, 1.0, 511)), config_linux(), t0);
    l.add_with(
        Target::attach(&ProcFs::default(), me, t0).expect("attach"),
        Subscriber::open_at(&ring, Writer::this_process()).ok(),
    );
    assert!(
        Subscriber::open_at(&ring, Writer::this_process()).is_ok(),
        "the ring is there"
    );
    assert!(l.step(&mut |_| {}).expect("step").promoted >= 1);
}

#[test]
fn a_plain_hot_set_is_acted_on_once_each_of_its_chunks_is_well_sampled() {
    let Some((_one, m)) = serial_four_k_chunks(4) else {
        return;
    };
    // Room for two chunks; the count alone would wait for a billion samples, a minute.
    let (publisher, mut d) = pcc_on_me(
        "settle",
        Config {
            first_samples: 1 << 30,
            settled_samples: 64,
            interval: Duration::from_secs(60),
            ..cfg(Limit::Bytes(4 << 20))
        },
    );
    // 40 samples on chunks 1 and 3, 5 on chunk 0: none well sampled yet.
    heat(&publisher, &m, &[1, 3], 40);
    heat(&publisher, &m, &[0], 5);
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.samples, iv.promoted), (85, 0), "{iv:?}");
    // 40 more on each: 80 apiece, two well-sampled chunks for the room of two.
    heat(&publisher, &m, &[1, 3], 40);
    let mut acted = Vec::new();
    let iv = d
        .step(&mut |a| acted.push((a.kind, a.start)))
        .expect("step");
    assert_eq!((iv.samples, iv.promoted), (80, 2), "{iv:?}");
    assert!(
        iv.notes
            .iter()
            .any(|n| n.contains("plain after 165 samples")),
        "{iv:?}"
    );
    let mut promoted: Vec<usize> = acted
        .iter()
        .filter(|a| a.0 == ActionKind::Promote)
        .map(|a| a.1)
        .collect();
    promoted.sort_unstable();
    assert_eq!(
        promoted,
        [m.addr() + HUGE, m.addr() + 3 * HUGE],
        "{acted:?}"
    );
}

#[test]
fn a_slow_publisher_is_acted_on_an_interval_after_its_first_samples() {
    let Some((_one, m)) = serial_four_k_chunks(2) else {
        return;
    };
    // It would take a billion samples to end the warm-up by count.
    let (publisher, mut d) = pcc_on_me(
        "slow",
        Config {
            first_samples: 1 << 30,
            settled_samples: 0,
            interval: Duration::from_millis(200),
            ..cfg(Limit::Bytes(2 << 20))
        },
    );
    heat(&publisher, &m, &[1], 100);
    assert_eq!(d.step(&mut |_| {}).expect("step").promoted, 0);
    std::thread::sleep(Duration::from_millis(250));
    heat(&publisher, &m, &[1], 100);
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.samples, iv.promoted), (100, 1), "{iv:?}");
}

fn config_linux() -> Config {
    Config {
        first_samples: 1 << 20,
        ..cfg(Limit::Share(1.0))
    }
}

#[test]
fn huge_pages_the_kernel_made_count_against_the_budget() {
    let _one = serial();
    if !is_root() {
        hugewise_sys::testing::skip("frames are visible to root only");
        return;
    }
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[never]") {
        hugewise_sys::testing::skip("THP is never here");
        return;
    }
    // MADV_HUGEPAGE before the first touch: the kernel backs all four chunks with THP itself.
    let mut m = Mapping::anonymous(4 * HUGE, MapOptions::default()).expect("map");
    m.advise(0..m.len(), Advice::HugePage).expect("THP");
    m.touch_pages(4096);
    let t0 = Instant::now();
    let me = std::process::id() as i32;
    let check = Target::attach(&ProcFs::default(), me, t0).expect("attach");
    let before = huge_map(&check, &m);
    if before.iter().filter(|h| **h).count() < 2 {
        hugewise_sys::testing::skip("the kernel gave no THP at fault now");
        return;
    }
    // Everything mapped in this test process counts toward the share, so a byte budget: the
    // mapping's kernel-made huge pages must come down to what the rest of the process leaves.
    let process_huge = || -> u64 {
        check
            .huge_capable()
            .expect("maps")
            .iter()
            .map(|r| hugewise_promote::chunk::huge_bytes(&check.scan(r).expect("scan")))
            .sum()
    };
    let other_huge = process_huge() - before.iter().filter(|h| **h).count() as u64 * HUGE as u64;
    let budget = other_huge + HUGE as u64;
    let mut d = Daemon::new(
        Box::new(Linux::with(0, 10.0, 511)),
        cfg(Limit::Bytes(budget)),
        t0,
    );
    d.add(Target::attach(&ProcFs::default(), me, t0).expect("attach"));
    let iv = d.step(&mut |_| {}).expect("step");
    assert!(iv.huge_bytes_after <= iv.budget_bytes, "{iv:?}");
    assert!(iv.demoted >= 1, "{iv:?}");
    // Read again by a scan of its own, the whole process holds no more than the budget: the
    // mapping's chunks or others of the process's (which ones the policy splits depends on
    // where they lie) were split.
    let after = huge_map(&check, &m);
    assert!(process_huge() <= budget, "{after:?} {iv:?}");
}

#[test]
fn a_target_that_exits_is_dropped_and_its_share_returns() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let t0 = Instant::now();
    let mut d = Daemon::new(by_name("mega").expect("mega"), cfg(Limit::Share(0.5)), t0);
    d.add(Target::attach(&ProcFs::default(), child.id() as i32, t0).expect("attach"));
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.targets, iv.gone.len()), (1, 0));
    child.kill().expect("kill");
    child.wait().expect("wait");
    let iv = d.step(&mut |_| {}).expect("a gone target is no error");
    assert_eq!(iv.gone, [child.id() as i32]);
    assert_eq!((iv.targets, iv.mapped_bytes, iv.budget_bytes), (0, 0, 0));
    assert!(d.pids().is_empty());
    // run() ends by itself once no target is left.
    let cancel = std::sync::atomic::AtomicBool::new(false);
    d.run(&cancel, &mut |_, _| panic!("no interval without targets"))
        .expect("run");
}

#[test]
fn the_daemons_thread_gives_way_and_its_target_and_creator_keep_their_priority() {
    use hugewise_sys::priority::{current_thread_nice, LOWEST};
    // The nice value of a process's main thread, field 19 of /proc/PID/stat (after the
    // command's closing parenthesis, the 17th).
    let nice_of = |pid: u32| -> i32 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
        let rest = &stat[stat.rfind(')').expect("comm") + 2..];
        rest.split(' ')
            .nth(16)
            .expect("nice")
            .parse()
            .expect("a number")
    };
    /// Ended however the test ends.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mine = current_thread_nice().expect("this thread's");
    let child = Killed(
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep"),
    );
    let child = &child.0;
    let child_nice = nice_of(child.id());
    for (asked, expected) in [(LOWEST, LOWEST), (0, mine.max(0))] {
        let t0 = Instant::now();
        let config = Config {
            nice: asked,
            ..cfg(Limit::Share(0.5))
        };
        let mut d = Daemon::new(by_name("mega").expect("mega"), config, t0);
        d.add(Target::attach(&ProcFs::default(), child.id() as i32, t0).expect("attach"));
        let seen = std::thread::spawn(move || {
            let cancel = std::sync::atomic::AtomicBool::new(false);
            let mut seen = None;
            d.run(&cancel, &mut |_, _| {
                seen = Some(current_thread_nice().expect("the daemon thread's"));
                cancel.store(true, std::sync::atomic::Ordering::Relaxed);
            })
            .expect("run");
            (seen, d.nice(), current_thread_nice().expect("after"))
        })
        .join()
        .expect("the daemon's thread");
        assert_eq!(
            (seen.0, seen.1),
            (Some(expected), Some(expected)),
            "asked {asked}"
        );
        // Its thread gets its value back once the daemon returns (putting a priority back
        // needs root, which every test here that promotes another process has).
        if hugewise_sys::caps::is_root() {
            assert_eq!(seen.2, mine, "asked {asked}");
        }
    }
    // Per thread: the process it runs in and the program it promotes keep theirs.
    assert_eq!(current_thread_nice().expect("this thread's"), mine);
    assert_eq!(nice_of(child.id()), child_nice);
}

#[test]
fn a_chunk_the_kernel_refuses_is_not_asked_again() {
    let _one = serial();
    let mut m = Mapping::anonymous(4 * HUGE, MapOptions::default()).expect("map");
    m.advise(0..m.len(), Advice::NoHugePage).expect("no THP");
    m.touch_pages(4096);
    let t0 = Instant::now();
    let me = std::process::id() as i32;
    // khugepaged scanning everything at once, with room for everything.
    let mut d = Daemon::new(
        Box::new(Linux::with(1 << 30, 1.0, 511)),
        cfg(Limit::Bytes(1 << 40)),
        t0,
    );
    d.add(Target::attach(&ProcFs::default(), me, t0).expect("attach"));
    let mine =
        |a: &hugewise_promote::action::Action| a.start >= m.addr() && a.start < m.addr() + m.len();
    let mut first = Vec::new();
    let iv = d.step(&mut |a| first.push(a.clone())).expect("step");
    let refused: Vec<_> = first.iter().filter(|a| mine(a)).collect();
    assert_eq!(refused.len(), 4, "{refused:?}");
    assert!(refused.iter().all(|a| a.outcome == "EINVAL"), "{refused:?}");
    // Why, said once: another process's hint cannot be lifted, and is respected.
    let why = |notes: &[String]| {
        notes
            .iter()
            .filter(|n| n.contains("MADV_NOHUGEPAGE"))
            .count()
    };
    assert_eq!(why(&iv.notes), 1, "{:?}", iv.notes);
    let mut second = Vec::new();
    let iv = d.step(&mut |a| second.push(a.clone())).expect("step");
    assert_eq!(second.iter().filter(|a| mine(a)).count(), 0);
    assert_eq!(why(&iv.notes), 0, "{:?}", iv.notes);
}

#[test]
fn a_collapse_the_kernel_could_not_take_that_moment_is_tried_again_within_the_look() {
    use hugewise_promote::action::Action;
    use hugewise_promote::replay::AGAIN_RETRIES;
    use hugewise_sys::testing::PageHold;
    let Some((_one, m)) = serial_four_k_chunks(4) else {
        return;
    };
    // Room for every chunk: no swap, each hot chunk collapsed at its look.
    let (publisher, mut d) = pcc_on_me("again", cfg_each_second(Limit::Bytes(8 << 20)));
    let chunk = |a: &Action| (a.start - m.addr()) / HUGE;
    // A page of a chunk referenced by a pipe: the kernel answers `EAGAIN` while it is held.
    let hold = |c: usize| PageHold::new(m.addr() + c * HUGE + 5 * 4096);
    let (h0, mut h2, h3) = match (hold(0), hold(2), hold(3)) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (Err(e), ..) | (_, Err(e), _) | (.., Err(e)) => {
            return hugewise_sys::testing::skip(format!("vmsplice refused: {e}"))
        }
    };
    // Each look's attempts per chunk: (chunk, outcome, tried again).
    let mut look = |hot: &[usize], on: &mut dyn FnMut(&Action)| {
        heat(&publisher, &m, hot, 1000);
        let mut seen = Vec::new();
        let iv = d
            .step(&mut |a| {
                if a.kind == ActionKind::Promote && a.start >= m.addr() {
                    on(a);
                    seen.push((chunk(a), a.outcome.clone(), a.tried_again));
                }
            })
            .expect("step");
        (iv, seen)
    };
    let tries = AGAIN_RETRIES as usize + 1;
    let attempt = |c: usize, outcome: &str, again: bool| (c, outcome.to_string(), again);
    // Chunk 2 let go at its first refusal: its second attempt makes it.
    let (iv, seen) = look(&[2], &mut |a| {
        if chunk(a) == 2 {
            h2.release().expect("release");
        }
    });
    assert_eq!(
        seen,
        [attempt(2, "EAGAIN", true), attempt(2, "ok", false)],
        "{iv:?}"
    );
    assert_eq!((iv.promoted, iv.failed), (1, 0), "{iv:?}");
    // Chunks 0 and 3 held all look: the first tried takes every try, then the look gives the
    // other one try, so that busy memory costs a look one chunk's pauses.
    let (iv, seen) = look(&[0, 3], &mut |_| {});
    assert_eq!((iv.promoted, iv.failed), (0, 2), "{iv:?}");
    let first = seen[0].0;
    let other = 3 - first;
    let mut want = vec![attempt(first, "EAGAIN", true); tries - 1];
    want.extend([
        attempt(first, "EAGAIN", false),
        attempt(other, "EAGAIN", false),
    ]);
    assert_eq!(seen, want);
    // The one that took every try is held for long, and gets one try a look from now on;
    // the other, let go, is collapsed.
    let (known, mut known_hold, mut other_hold) =
        if first == 0 { (0, h0, h3) } else { (3, h3, h0) };
    other_hold.release().expect("release");
    let (iv, seen) = look(&[0, 3], &mut |_| {});
    assert!(seen.contains(&attempt(known, "EAGAIN", false)), "{seen:?}");
    assert!(seen.contains(&attempt(other, "ok", false)), "{seen:?}");
    assert_eq!(seen.len(), 2, "{seen:?}");
    // Let go at last, it is collapsed too.
    known_hold.release().expect("release");
    let (iv2, seen) = look(&[known], &mut |_| {});
    assert_eq!(seen, [attempt(known, "ok", false)], "{iv:?} {iv2:?}");
    let me = std::process::id() as i32;
    let check = Target::attach(&ProcFs::default(), me, Instant::now()).expect("attach");
    assert_eq!(&huge_map(&check, &m), &[true, false, true, true]);
}

#[test]
fn the_daemon_counts_only_the_newest_samples() {
    let ring = std::env::temp_dir().join(format!("hw-daemon-cap-{}", std::process::id()));
    let p = Publisher::create_at(&ring, 1 << 12).expect("ring");
    let mut sub = Subscriber::open_at(&ring, Writer::this_process()).expect("open");
    for i in 0..1000u64 {
        p.sample(i as usize * 4096, false);
    }
    let mut got = Vec::new();
    // 1000 published, 100 wanted: the newest 100, and 900 passed over.
    let d = sub.drain(&mut got, 100);
    assert_eq!((d.passed, d.weight), (900, 1.0));
    assert_eq!(got.len(), 100);
    assert_eq!((got[0], got[99]), (900 * 4096, 999 * 4096));
    got.clear();
    assert_eq!(sub.drain(&mut got, 100).passed, 0);
    assert!(got.is_empty());
    // 30 samples taken at one in 16 of the usual and 10 plain: each stands for 12.25 on
    // average, whatever the daemon asked.
    for i in 0..30u64 {
        p.sample_weighted(i as usize * 4096, false, 16);
    }
    for i in 0..10u64 {
        p.sample(i as usize * 4096, false);
    }
    assert_eq!(sub.drain(&mut got, 100).weight, 12.25);
    // Dropped, the subscriber asks the program for every sample again.
    assert!(sub.ask_thinning(64));
    assert_eq!(p.thinning(), 64);
    drop(sub);
    assert_eq!(p.thinning(), 1);
}

#[test]
fn a_large_target_is_swept_over_several_intervals() {
    let _one = serial();
    let mut m = Mapping::anonymous(16 * HUGE, MapOptions::default()).expect("map");
    m.advise(0..m.len(), Advice::NoHugePage)
        .expect("no THP at fault");
    let t0 = Instant::now();
    let me = std::process::id() as i32;
    let target = Target::attach(&ProcFs::default(), me, t0).expect("attach");
    let limit = 4;
    let mut d = Daemon::new(
        by_name("mega").expect("mega"),
        Config {
            scan_chunks: limit,
            // Nothing may be promoted: only the reading is under test.
            limit: Limit::Bytes(0),
            ..cfg(Limit::Bytes(0))
        },
        t0,
    );
    d.add(target);
    // The first interval reads every chunk: all are new to the daemon.
    let first = d.step(&mut |_| {}).expect("step");
    assert!(first.chunks_read.is_some_and(|n| n >= 16), "{first:?}");
    // Memory appears in chunks the daemon already knows: it sees it only as its sweep passes,
    // never reading more than `limit` known chunks an interval.
    m.touch_pages(4096);
    let mut seen = first.mapped_bytes;
    let mut steps = 0;
    while seen < first.mapped_bytes + m.len() as u64 - 4096 && steps < 10_000 {
        let iv = d.step(&mut |_| {}).expect("step");
        assert!(
            iv.chunks_read.is_some_and(|n| n <= limit as u64 + 8),
            "{iv:?}"
        );
        seen = iv.mapped_bytes;
        steps += 1;
    }
    assert!(steps > 1, "saw all new memory in one interval: {steps}");
    assert!(
        seen >= first.mapped_bytes + m.len() as u64 - 4096,
        "the sweep never came round: {seen} after {steps} intervals"
    );
}

#[test]
fn a_ring_another_user_owns_is_not_read_and_the_daemon_says_why() {
    let _one = serial();
    if !is_root() {
        hugewise_sys::testing::skip("making a file another user's needs root");
        return;
    }
    // A ring under this process's conventional name, as nobody would plant it: the header
    // names this pid, but the file is nobody's.
    let me = std::process::id() as i32;
    let path = hugewise_promote::channel::path(me);
    let p = Publisher::create_at(&path, 1 << 12).expect("ring");
    let chown = std::process::Command::new("chown")
        .arg("65534")
        .arg(&path)
        .status()
        .expect("chown");
    assert!(chown.success());
    let t0 = Instant::now();
    let mut d = Daemon::new(by_name("pcc").expect("pcc"), cfg(Limit::Bytes(2 << 20)), t0);
    d.add(Target::attach(&ProcFs::default(), me, t0).expect("attach"));
    let m = Mapping::anonymous(HUGE, MapOptions::default()).expect("map");
    for k in 0..100 {
        p.sample(m.addr() + k * 4096, false);
    }
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!(iv.samples, 0, "{iv:?}");
    assert!(d.sampled().is_empty());
    let refused = |iv: &hugewise_results::promote::Interval| {
        iv.notes
            .iter()
            .filter(|n| {
                n.contains("belongs to uid 65534") && n.contains(&path.display().to_string())
            })
            .count()
    };
    assert_eq!(refused(&iv), 1, "{:?}", iv.notes);
    // Said once, not at every look.
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.samples, refused(&iv)), (0, 0), "{:?}", iv.notes);
}

#[test]
fn each_target_is_told_which_signal_the_policy_acts_on_once() {
    let _one = serial();
    let me = std::process::id() as i32;
    let t0 = Instant::now();
    let said = |policy: &str| {
        let mut d = Daemon::new(
            by_name(policy).expect("policy"),
            cfg(Limit::Bytes(2 << 20)),
            t0,
        );
        d.add(Target::attach(&ProcFs::default(), me, t0).expect("attach"));
        let first = d.step(&mut |_| {}).expect("step").notes;
        let second = d.step(&mut |_| {}).expect("step").notes;
        assert!(second.is_empty(), "{second:?}");
        first.join("\n")
    };
    // This test process publishes no ring under its pid.
    let pcc = said("pcc");
    assert!(
        pcc.contains(&format!("pid {me}:"))
            && pcc.contains("publishes no access samples")
            && pcc.contains("nothing is promoted")
            && pcc.contains("--policy auto"),
        "{pcc}"
    );
    let auto = said("auto");
    assert!(auto.contains("auto judges it as mega"), "{auto}");
}

#[test]
fn what_is_read_of_a_target_that_exited_is_not_used() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let t = Target::attach(&ProcFs::default(), child.id() as i32, Instant::now()).expect("attach");
    assert!(t.maps().is_ok());
    child.kill().expect("kill");
    // Exited, not yet reaped: /proc/PID still reads (a zombie's empty maps), and once reaped
    // the pid may be another process's. Either way what is read is not the target's.
    std::thread::sleep(Duration::from_millis(200));
    let gone = |r: hugewise_promote::Result<Vec<hugewise_sys::proc::MapEntry>>| {
        matches!(r, Err(hugewise_promote::Error::Gone { .. }))
    };
    assert!(gone(t.maps()));
    child.wait().expect("reap");
    assert!(gone(t.maps()));
}

/// How many chunks each of `looks` looks of `d` read.
fn chunks_read_per_look(d: &mut Daemon, looks: usize) -> Vec<u64> {
    (0..looks)
        .map(|_| {
            d.step(&mut |_| {})
                .expect("step")
                .chunks_read
                .expect("counted")
        })
        .collect()
}

/// Eight chunks of this process that fault in on 4 KiB pages (none faulted yet), watched by
/// `mega` with no budget, every chunk read each look until settled, then every
/// `settled_every` looks (`quiet_stretch` times that at quiet looks).
fn mega_on_eight_4k_chunks(settled_every: u64, quiet_stretch: u64) -> (Mapping, Daemon) {
    let m = Mapping::anonymous(8 * HUGE, MapOptions::default()).expect("map");
    m.advise(0..m.len(), Advice::NoHugePage)
        .expect("no THP at fault");
    let t0 = Instant::now();
    let me = std::process::id() as i32;
    let target = Target::attach(&ProcFs::default(), me, t0)
        .expect("attach")
        .within(m.addr()..m.addr() + m.len());
    let mut d = Daemon::new(
        by_name("mega").expect("mega"),
        Config {
            scan_chunks: 0,
            settled_every,
            quiet_stretch,
            ..cfg(Limit::Bytes(0))
        },
        t0,
    );
    d.add(target);
    (m, d)
}

#[test]
fn a_chunk_read_the_same_twice_is_read_again_only_at_its_turn() {
    let _one = serial();
    let (mut m, mut d) = mega_on_eight_4k_chunks(4, 1);
    m.touch_pages(4096);
    let reads = chunks_read_per_look(&mut d, 6);
    // Looks 1 and 2 read all 8 (new, then not yet read alike twice); from look 3 on each
    // chunk's turn comes every 4th look, on the look its run of 128 MiB has: the 8 chunks
    // together, or in two parts where they straddle two runs.
    assert_eq!(reads[..2], [8, 8]);
    let turns: Vec<u64> = (0..8)
        .map(|i| turn_after(2, m.addr() + i * HUGE, 4))
        .collect();
    let expected: Vec<u64> = (3..=6)
        .map(|look| turns.iter().filter(|&&t| t == look).count() as u64)
        .collect();
    assert_eq!(reads[2..], expected[..]);
    assert_eq!(expected.iter().sum::<u64>(), 8);
    assert!(expected.iter().filter(|&&n| n > 0).count() <= 2);
    // A change in a settled chunk is seen by its turn, within 4 looks.
    m.advise(0..m.len(), Advice::HugePage).expect("THP allowed");
    let before = d.step(&mut |_| {}).expect("step").mapped_bytes;
    m.discard(0..HUGE).expect("freed");
    let mut looks = 0;
    loop {
        looks += 1;
        let iv = d.step(&mut |_| {}).expect("step");
        if iv.mapped_bytes < before {
            assert_eq!(iv.mapped_bytes, before - HUGE as u64);
            break;
        }
        assert!(looks < 4, "not seen after {looks} looks");
    }
}

#[test]
fn a_chunk_settled_empty_is_read_again_at_the_first_look_after_its_target_faults() {
    let _one = serial();
    let (mut m, mut d) = mega_on_eight_4k_chunks(64, 1);
    // Looks 1 and 2 read every chunk, nothing mapped: settled, each due again on its run's
    // turn, up to 64 looks away.
    assert_eq!(chunks_read_per_look(&mut d, 2), [8, 8]);
    let mut look = 2;
    let turn_next =
        |look: u64| (0..8).any(|i| turn_after(look, m.addr() + i * HUGE, 64) == look + 1);
    while turn_next(look) {
        d.step(&mut |_| {}).expect("step");
        look += 1;
    }
    // The program faults one chunk in (512 faults, on a thread of its own: the daemon leaves
    // out its own thread's faults); the next look is no chunk's turn, and still reads it,
    // mapped.
    let chunk = &mut m.as_mut_slice()[HUGE..2 * HUGE];
    std::thread::scope(|s| {
        s.spawn(|| chunk.iter_mut().step_by(4096).for_each(|b| *b = 1));
    });
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!(iv.mapped_bytes, HUGE as u64, "{iv:?}");
}

#[test]
fn settled_chunks_wait_longer_while_nothing_changes_and_a_free_is_seen_at_the_next_look() {
    let _one = serial();
    // Every 2nd look, 8 times as long for a chunk read since the last sign of a change: 8
    // chunks read each 2 looks would be 152 reads in looks 3 to 40; with no sign, each waits
    // 16 looks.
    let (mut m, mut d) = mega_on_eight_4k_chunks(2, 8);
    m.touch_pages(4096);
    let reads = chunks_read_per_look(&mut d, 40);
    assert_eq!(reads[..2], [8, 8]);
    let settled: u64 = reads[2..].iter().sum();
    assert!(settled < 152 / 2, "{settled} chunks read: {reads:?}");
    // Freeing a chunk drops the process's resident pages without a fault: a sign, and the
    // next look reads the chunks whose plain turn has passed.
    let before = d.step(&mut |_| {}).expect("step").mapped_bytes;
    m.discard(0..HUGE).expect("freed");
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!(iv.mapped_bytes, before - HUGE as u64, "{iv:?}");
}

#[test]
fn a_sampled_targets_whole_4k_chunks_wait_longer_at_each_turn_that_finds_them_so() {
    // Eight chunks of 4 KiB pages, every page mapped, settled every 2nd look. Under `mega`
    // (mapped pages are its signal) each is read at every turn: 20 times in looks 3 to 42.
    // Under `pcc` with a ring, a turn that finds one as it was doubles its wait, twice: one
    // read in look 3 or 4, one within the 4 looks after (by look 8), then one every 8 looks
    // from there to 42: 4 or 5 more, 6 or 7 in all (a third doubling would make it 5 or 6).
    let Some((_one, m)) = serial_four_k_chunks(8) else {
        return;
    };
    let range = m.addr()..m.addr() + m.len();
    let reads = |policy: &str| -> u64 {
        let config = Config {
            scan_chunks: 0,
            settled_every: 2,
            ..cfg(Limit::Bytes(0))
        };
        let t0 = Instant::now();
        let me = std::process::id() as i32;
        let target = Target::attach(&ProcFs::default(), me, t0)
            .expect("attach")
            .within(range.clone());
        let mut d = Daemon::new(by_name(policy).expect("policy"), config, t0);
        let ring = std::env::temp_dir().join(format!("hw-daemon-quiet-{}", std::process::id()));
        let _publisher = Publisher::create_at(&ring, 1 << 16).expect("ring");
        d.add_with(
            target,
            Subscriber::open_at(&ring, Writer::this_process()).ok(),
        );
        let per_look = chunks_read_per_look(&mut d, 42);
        // Looks 1 and 2 read every chunk: new, then not yet read alike twice.
        assert_eq!(per_look[..2], [8, 8], "{policy}");
        per_look[2..].iter().sum()
    };
    assert_eq!(reads("mega"), 8 * 20);
    let pcc = reads("pcc");
    assert!((8 * 6..=8 * 7).contains(&pcc), "pcc read {pcc} chunks");
}

#[test]
fn a_chunk_whose_walks_would_not_pay_for_its_collapse_stays_small() {
    // 1 000 samples on chunk 1, each on another page than the last: 1 000 walks in the first
    // look, which the daemon takes as one second. At 30 ns a walk over 10 s, a sample that
    // stands for one access saves 1 000 × 30 × 10 = 0.3 ms, less than the 2 ms a collapse is
    // taken to cost before one is timed; one that stands for 100 saves 30 ms.
    for (period, promoted) in [(1u64, 0u32), (100, 1)] {
        let Some((_one, m)) = serial_four_k_chunks(4) else {
            return;
        };
        // No TLB to hold pages: every sampled walk is one (the 512 pages read would fit a
        // real one; the next test is about that).
        let (publisher, mut d) = pcc_on_me(
            &format!("worth-{period}"),
            Config {
                tlb_entries: 0,
                ..cfg_each_second(Limit::Bytes(2 << 20))
            },
        );
        publisher.set_period(period);
        heat(&publisher, &m, &[1], 1000);
        let iv = d.step(&mut |_| {}).expect("step");
        assert_eq!(iv.promoted, promoted, "period {period}: {iv:?}");
        if promoted == 0 {
            assert_eq!(iv.not_worth, Some(1), "{iv:?}");
            assert!(
                iv.notes
                    .iter()
                    .any(|n| n.contains("would save less than their collapse")),
                "{:?}",
                iv.notes
            );
        } else {
            assert_eq!(iv.not_worth, None, "{iv:?}");
        }
    }
}

#[test]
fn a_hot_set_the_tlb_holds_is_not_worth_a_collapse() {
    // 1 000 samples on chunk 1 going round its first 64 pages, each on another page than the
    // last: 1 000 walks in a first look taken as one second, each standing for 100 accesses,
    // 30 ms saved over the payback without a TLB. With 1 536 entries the 64 pages stay in it
    // and a huge page removes no walk: declined. With 32 entries, read evenly, half the reads
    // miss (1 - 32 / 64): 15 ms saved, more than the 2 ms a collapse is taken to cost.
    for (entries, promoted) in [(1536u32, 0u32), (32, 1)] {
        let Some((_one, m)) = serial_four_k_chunks(4) else {
            return;
        };
        let (publisher, mut d) = pcc_on_me(
            &format!("reach-{entries}"),
            Config {
                tlb_entries: entries,
                ..cfg_each_second(Limit::Bytes(2 << 20))
            },
        );
        publisher.set_period(100);
        for k in 0..1000 {
            publisher.sample(m.addr() + HUGE + (k % 64) * 4096, false);
        }
        let iv = d.step(&mut |_| {}).expect("step");
        assert_eq!(iv.promoted, promoted, "{entries} entries: {iv:?}");
        let declined = (promoted == 0).then_some(1);
        assert_eq!(iv.not_worth, declined, "{iv:?}");
    }
}

#[test]
fn collapses_wait_while_the_target_faults_and_go_once_it_stops() {
    let Some((_one, m)) = serial_four_k_chunks(8) else {
        return;
    };
    let t0 = Instant::now();
    let me = std::process::id() as i32;
    // No fault of the target's may be held up: while it faults, no collapse.
    let mut d = Daemon::new(
        Box::new(Linux::with(1 << 30, 1.0, 511)),
        Config {
            fault_waits: 0.0,
            ..config_linux()
        },
        t0,
    );
    let within = m.addr()..m.addr() + m.len();
    d.add(
        Target::attach(&ProcFs::default(), me, t0)
            .expect("attach")
            .within(within),
    );
    // Another thread of the target faults 4 KiB pages until told to stop (2 GiB at most).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let touched = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let faulter = {
        let (stop, touched) = (stop.clone(), touched.clone());
        std::thread::spawn(move || {
            let mut f = Mapping::anonymous(2 << 30, MapOptions::default()).expect("map");
            f.advise(0..f.len(), Advice::NoHugePage).expect("no THP");
            let s = f.as_mut_slice();
            for off in (0..s.len()).step_by(4096) {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                s[off] = 1;
                touched.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            std::hint::black_box(&f);
        })
    };
    while touched.load(std::sync::atomic::Ordering::Relaxed) < 10_000 {
        std::thread::yield_now();
    }
    let t = Instant::now();
    let iv = d.step(&mut |_| {}).expect("step");
    let rate = (touched.load(std::sync::atomic::Ordering::Relaxed) - 10_000) as f64
        / t.elapsed().as_secs_f64();
    let still_faulting = !faulter.is_finished();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    faulter.join().expect("faulter");
    if !still_faulting {
        hugewise_sys::testing::skip("the faulting thread finished before the look ended");
        return;
    }
    if rate < 2.0 * hugewise_promote::pacing::HEAVY_FAULTS_PER_S {
        hugewise_sys::testing::skip(format!(
            "the faulting thread took {rate:.0} faults a second, too few to be sure of pacing: \
             the host backs memory slowly now"
        ));
        return;
    }
    // A collapse goes only when no fault came since the last reading (the faults' rate is
    // read over the time since, at least a collapse's length);
    // once one came, that candidate and the rest waited for the next look.
    let first = iv.promoted;
    assert!(first < 8 && iv.paced == Some(8 - first), "{iv:?}");
    assert!(iv.notes.iter().any(|n| n.contains("faulting")), "{iv:?}");
    // Faulting no more: the rest go, none waits.
    let iv = d.step(&mut |_| {}).expect("step");
    assert_eq!((iv.promoted, iv.paced), (8 - first, None), "{iv:?}");
}
