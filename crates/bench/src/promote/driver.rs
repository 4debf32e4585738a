//! The four-arm driver on the skewed stream: the workload run four ways, alternated round by
//! round: 4 KiB pages only (`base`), every chunk huge (`ideal`), a promotion plan replayed at
//! start (`plan`), and the online daemon promoting while the workload runs (`daemon`), each
//! arm on a fresh region or all on the same frames ([`super::frames`]).
//!
//! The plan holds the chunks a sampled profile of the same access stream ranks highest (the
//! software PCC's ranking), as many as the budget allows. The daemon runs the `pcc` policy on
//! the samples the workload publishes (one access in `sample_every`) through the same channel
//! any cooperating program uses, within the same budget. Every huge-page share is read back
//! from the kernel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hugewise_mem::{Bytes, Region};
use hugewise_promote::action::ActionKind;
use hugewise_promote::budget::Limit;
use hugewise_promote::channel::{Publisher, Subscriber};
use hugewise_promote::daemon::{self, Daemon};
use hugewise_promote::replay::{replay, Step};
use hugewise_promote::target::Target;
use hugewise_promote::HUGE;
use hugewise_results::promote::{
    Arm, NoGain, PromoteBenchArm, PromoteBenchReport, PromoteBenchSample, PromoteBenchWorkload,
    ShapedRound,
};
use hugewise_sys::proc::ProcFs;

use super::frames::{all_huge, huge_chunks, make, split_chunks};
use super::shape::Shape;
use super::stream::{profile_plan, Pass, Skew, Stream, WORDS_PER_CHUNK};
use crate::quiet;
use crate::stats::{median, ratio, summarize, Stopped, Until};
use crate::{Error, Progress, Result};

/// One workload of the stream: how the chunks are drawn and how each read goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    /// How the chunks' ranks are drawn.
    pub skew: Skew,
    /// Cache lines of each 4 KiB page the reads go to: a power of two from 1 to 64 (every
    /// line).
    pub lines_per_page: u32,
    /// Each read's address waits for the read before it (a chase), rather than every read
    /// being known in advance.
    pub chase: bool,
}

impl Workload {
    /// The hot spot huge pages pay most for, measured in BENCHMARKS.md: 99.9 % of the reads on
    /// 3.9 % of the chunks, one staggered line of each page read, each read waiting for the
    /// one before, so that a read's cost is its page walk. 3.9 %, not the 4 % measured: 4 %
    /// of 4 096 chunks rounds to 164 hot ones, one more than a 4 % budget's 163 whole huge
    /// pages; 160 fit it at every size from 1 GiB.
    pub fn hotspot() -> Workload {
        Workload {
            skew: Skew::Hotspot {
                chunks: 0.039,
                reads: 0.999,
            },
            lines_per_page: 1,
            chase: true,
        }
    }

    /// The workload no huge page helps ([`Skew::NoGain`]): every arm should take as long as
    /// 4 KiB pages, and the daemon should decline to collapse anything.
    pub fn nogain() -> Workload {
        Workload {
            skew: Skew::NoGain {
                pages: super::stream::NOGAIN_PAGES,
            },
            lines_per_page: 64,
            chase: true,
        }
    }

    /// Zipf reads with exponent `s`, every line of each page, independent.
    pub fn zipf(s: f64) -> Workload {
        Workload {
            skew: Skew::Zipf(s),
            lines_per_page: 64,
            chase: false,
        }
    }
}

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Region size.
    pub bytes: Bytes,
    /// The workloads, run in turn.
    pub workloads: Vec<Workload>,
    /// Timed reads per run.
    pub reads: u64,
    /// Rounds (each runs every arm once), at least.
    pub rounds: u32,
    /// More rounds until every arm's speedup interval is narrow enough.
    pub until: Until,
    /// Share of the region that may be huge for `plan` and `daemon`.
    pub budget_share: f64,
    /// The daemon's interval.
    pub interval: Duration,
    /// One access in this many is published as a sample (daemon arm).
    pub sample_every: u32,
    /// Seed of the permutation and the address stream.
    pub seed: u64,
    /// Run every arm of a round on the same physical pages (see [`SHARED_ORDER`]) instead of
    /// mapping the region afresh for each.
    pub same_frames: bool,
    /// Fault each arm's region chunk by chunk, coldest first, as a program that fills its bulk
    /// data before its hot index: THP at fault (the ideal arm) then spends scarce huge pages
    /// on the cold chunks, as Linux does for whatever faults first.
    pub cold_first: bool,
    /// Run even when the region is larger than the memory available (swap to spare).
    pub force: bool,
    /// The daemon arm's compaction controller.
    pub compact: hugewise_promote::compact::Mode,
    /// The daemon arm's pacing: most of the faults its collapses may hold up, as a share of
    /// those taken (as `hugewise promote --fault-waits`).
    pub fault_waits: f64,
    /// The daemon arm faults in the page each collapse copies into first (see
    /// [`hugewise_promote::warm`]).
    pub warm: bool,
    /// What the daemon arm takes a page walk a huge page removes to cost, in nanoseconds (as
    /// `hugewise promote --walk-ns`).
    pub walk_ns: f64,
    /// The nice value the daemon arm's thread gives way with (as `hugewise promote --nice`).
    pub nice: i32,
    /// Run every round's arms a second time on a shaped machine (see [`super::shape`]): each
    /// workload then gives two entries, the machine as it was and shaped.
    pub shape: Option<Shape>,
}

/// Beside the region: the daemon's sample ring (2^20 slots of 8 bytes) and room for one
/// collapse's new 2 MiB page.
const BESIDE_REGION: u64 = (8 << 20) + (2 << 20);

/// The arms' order in a round on shared frames: each arm's backing is reached from the one
/// before by splitting huge pages in place, which keeps their physical pages; only the daemon
/// collapses, and it comes last.
pub const SHARED_ORDER: [Arm; 4] = [Arm::Ideal, Arm::Plan, Arm::Base, Arm::Daemon];

struct DaemonRun {
    reach_ms: Option<f64>,
    reach_90_ms: Option<f64>,
    compactions: u32,
    compaction_cpu_ns: u64,
    cpu_ns: u64,
    /// CPU of the intervals that began after the budget was reached, and when that was.
    steady_cpu_ns: u64,
    reached_at: Option<Instant>,
    steady_wall_ns: Option<u64>,
    /// The last look that promoted: when it began (from the daemon's start), when it was
    /// reported (an instant), and the daemon's CPU up to then. A daemon that stays below its budget (nothing else
    /// worth a collapse) is settled from then on.
    settled_ms: Option<f64>,
    settled_at: Option<Instant>,
    cpu_at_settle_ns: u64,
    promoted: u32,
    failed: u32,
    demoted: u32,
    swaps: u32,
    /// Candidates passed over as not worth their collapse, summed over the looks.
    not_worth: u32,
    collapse_ns: Vec<u64>,
}

/// Run the benchmark: every workload in turn, each with all its arms alternated round by
/// round. `progress` counts runs done of the total.
pub fn run(
    cfg: &Config,
    cancel: &AtomicBool,
    progress: Progress<'_>,
) -> Result<PromoteBenchReport> {
    run_on(&hugewise_env::Host::real(), cfg, cancel, progress)
}

/// [`run`] with the shaping of [`Config::shape`] journaled by `host`.
pub fn run_on(
    host: &hugewise_env::Host,
    cfg: &Config,
    cancel: &AtomicBool,
    progress: Progress<'_>,
) -> Result<PromoteBenchReport> {
    if cfg.rounds == 0 || cfg.reads == 0 {
        return Err(Error::Config("rounds and reads must be at least 1".into()));
    }
    if cfg.workloads.is_empty() {
        return Err(Error::Config(
            "name at least one workload (a Zipf exponent, a hot spot or nogain)".into(),
        ));
    }
    for w in &cfg.workloads {
        w.skew.check()?;
    }
    if cfg.cold_first && cfg.same_frames {
        return Err(Error::Config(
            "faulting coldest first orders the faults of each arm's fresh region; on shared \
             frames one region is collapsed whole: choose one"
                .into(),
        ));
    }
    // Each arm's region is dropped before the next is made: one at a time, every page touched.
    let implies = format!(
        "a region of {} with every page touched, one arm at a time, and the daemon's sample ring",
        cfg.bytes
    );
    crate::room::check(cfg.bytes, cfg.bytes.0 + BESIDE_REGION, &implies, cfg.force)?;
    if let Some(shape) = &cfg.shape {
        shape.check(host, cfg.bytes.0 + BESIDE_REGION)?;
    }
    let machines = if cfg.shape.is_some() { 2 } else { 1 };
    let per = u64::from(cfg.until.planned(cfg.rounds)) * Arm::ALL.len() as u64 * machines;
    let total = per * cfg.workloads.len() as u64;
    let mut workloads = Vec::with_capacity(cfg.workloads.len());
    let mut stopped = None;
    for (i, &workload) in cfg.workloads.iter().enumerate() {
        let before = per * i as u64;
        let ran = run_workload(host, cfg, workload, cancel, &mut |done, _| {
            progress(before + done, total)
        });
        let ran = match ran {
            // Stopped in this workload's first round: the workloads before it are kept.
            Err(Error::Interrupted) if !workloads.is_empty() => {
                stopped = Some(Stopped::Interrupted);
                break;
            }
            w => w?,
        };
        for mut w in ran {
            w.fill_headline();
            if w.stopped == Some(Stopped::Interrupted) {
                stopped = Some(Stopped::Interrupted);
            }
            workloads.push(w);
        }
        if stopped.is_some() {
            break;
        }
    }
    Ok(PromoteBenchReport { workloads, stopped })
}

fn run_workload(
    host: &hugewise_env::Host,
    cfg: &Config,
    workload: Workload,
    cancel: &AtomicBool,
    progress: Progress<'_>,
) -> Result<Vec<PromoteBenchWorkload>> {
    let Workload {
        skew,
        lines_per_page,
        chase,
    } = workload;
    let chunks = (cfg.bytes.0 as usize / HUGE).max(1);
    if chunks < 2 {
        return Err(Error::Config(
            "the region must hold at least two 2 MiB chunks".into(),
        ));
    }
    if !(0.0..=1.0).contains(&cfg.budget_share) {
        return Err(Error::Config(
            "the budget is a share between 0 and 1".into(),
        ));
    }
    let words = chunks * WORDS_PER_CHUNK;
    let stream = Stream::with_skew(chunks, skew, cfg.seed)
        .lines_per_page(lines_per_page)?
        .chase(chase);
    if cfg.cold_first && stream.hottest().len() < chunks {
        return Err(Error::Config(format!(
            "faulting coldest first ranks at most {} chunks, and the region has {chunks}: use a \
             region of at most {} GiB",
            stream.hottest().len(),
            (stream.hottest().len() * HUGE) >> 30
        )));
    }
    let budget_bytes = Limit::Share(cfg.budget_share).bytes((chunks * HUGE) as u64);
    let k = (budget_bytes / HUGE as u64) as usize;
    let plan = profile_plan(&stream, chunks, k, cfg.seed ^ 0x5eed);
    let coldest_first: Option<Vec<u32>> = cfg
        .cold_first
        .then(|| stream.hottest().iter().rev().copied().collect());
    let runs = Arm::ALL.len() as u64 * if cfg.shape.is_some() { 2 } else { 1 };
    let total = u64::from(cfg.until.planned(cfg.rounds)) * runs;
    let proc = ProcFs::default();
    let arms = Arms {
        cfg,
        stream: &stream,
        plan: &plan,
        coldest_first: coldest_first.as_deref(),
        words,
        chunks,
        budget_bytes,
        proc: &proc,
        me: std::process::id() as i32,
        cancel,
    };
    let stop = || cancel.load(Ordering::Relaxed);
    // Each sample with the machine it ran on (shaped or not), so that a round a signal cuts
    // short is dropped from both.
    let mut samples: Vec<(bool, PromoteBenchSample)> = Vec::new();
    let mut shaped_rounds = Vec::new();
    // How fragmented the machine as it is was, round by round.
    let mut unshaped_unusable: Vec<(u32, f64)> = Vec::new();
    let listed = match &cfg.shape {
        Some(shape) => shape.list_free_memory(host, &stop)?,
        None => None,
    };
    let (done, stopped) = cfg.until.rounds(
        cfg.rounds,
        &mut samples,
        &stop,
        |tagged| {
            let (plain, shaped) = split(tagged);
            let mut w = watched(&plain);
            if cfg.shape.is_some() {
                w.extend(watched(&shaped));
            }
            w
        },
        |round, samples| {
            // The machine as it is and shaped, in turn: one first in even rounds, the other in
            // odd ones.
            let machines: &[bool] = match cfg.shape {
                None => &[false],
                Some(_) if round % 2 == 0 => &[false, true],
                Some(_) => &[true, false],
            };
            for &shaped in machines {
                let held = match (&cfg.shape, shaped) {
                    (Some(shape), true) => {
                        let (held, record) = shape.apply(host, round, &stop)?;
                        shaped_rounds.push(record);
                        Some(held)
                    }
                    (Some(_), false) => {
                        let now = hugewise_env::state::measure(host).map_err(Error::from_env)?;
                        unshaped_unusable.push((round, now.unusable_share));
                        None
                    }
                    (None, _) => None,
                };
                run_round(&arms, round, &mut |sample| {
                    samples.push((shaped, sample));
                    progress(samples.len() as u64, total);
                })?;
                // An error above drops `held`, which puts the machine back as well.
                if let Some(held) = held {
                    super::shape::put_back(held)?;
                }
            }
            Ok(())
        },
    )?;
    for r in &mut shaped_rounds {
        r.unshaped_unusable_share = unshaped_unusable
            .iter()
            .find(|(round, _)| *round == r.round)
            .map(|&(_, u)| u);
    }
    let (plain, shaped) = split(&samples);
    let record = |samples: Vec<PromoteBenchSample>| -> PromoteBenchWorkload {
        let summary = summarize_arms(&samples);
        PromoteBenchWorkload {
            stopped: Some(stopped),
            workload: match skew {
                Skew::Zipf(s) => PromoteBenchWorkload::zipf_name(s, lines_per_page, chase),
                Skew::Hotspot { chunks, reads } => {
                    PromoteBenchWorkload::hotspot_name(chunks, reads, lines_per_page, chase)
                }
                Skew::NoGain { .. } => {
                    PromoteBenchWorkload::nogain_name(stream.span_bytes() as u64)
                }
            },
            bytes: (chunks * HUGE) as u64,
            unit: PromoteBenchWorkload::NS_PER_READ.into(),
            zipf_s: match skew {
                Skew::Zipf(s) => Some(s),
                Skew::Hotspot { .. } | Skew::NoGain { .. } => None,
            },
            hotspot: stream.hotspot(),
            nogain: matches!(skew, Skew::NoGain { .. }).then(|| NoGain {
                span_bytes: stream.span_bytes() as u64,
                work_per_read: super::stream::NOGAIN_WORK,
            }),
            lines_per_page: Some(lines_per_page),
            lines_staggered: lines_per_page < 64,
            chase,
            same_frames: cfg.same_frames,
            cold_first: cfg.cold_first,
            reads: cfg.reads,
            budget_share: cfg.budget_share,
            plan_chunks: plan.len() as u64,
            interval_ms: cfg.interval.as_millis() as u64,
            sample_every: cfg.sample_every,
            compact: Some(cfg.compact.name().into()),
            fault_waits: Some(cfg.fault_waits),
            walk_ns: Some(cfg.walk_ns),
            nice: Some(cfg.nice),
            samples,
            summary,
            // The headline is filled from the samples by the caller.
            ..PromoteBenchWorkload::default()
        }
    };
    let mut out = vec![record(plain.clone())];
    if let Some(shape) = &cfg.shape {
        let mut shaping = shape.record();
        shaping.listed_bytes = listed;
        shaped_rounds.retain(|r: &ShapedRound| r.round < done);
        shaping.rounds = shaped_rounds;
        shaping.compare(&plain, &shaped);
        out.push(PromoteBenchWorkload {
            shaped: Some(shaping),
            ..record(shaped)
        });
    }
    Ok(out)
}

/// The samples of the machine as it was, and of the shaped one.
fn split(
    tagged: &[(bool, PromoteBenchSample)],
) -> (Vec<PromoteBenchSample>, Vec<PromoteBenchSample>) {
    let pick = |want: bool| {
        tagged
            .iter()
            .filter(|(shaped, _)| *shaped == want)
            .map(|(_, s)| s.clone())
            .collect()
    };
    (pick(false), pick(true))
}

/// What every arm of a workload's rounds shares.
#[derive(Clone, Copy)]
struct Arms<'a> {
    cfg: &'a Config,
    stream: &'a Stream,
    /// The plan's chunks, hottest first.
    plan: &'a [u32],
    coldest_first: Option<&'a [u32]>,
    words: usize,
    chunks: usize,
    budget_bytes: u64,
    proc: &'a ProcFs,
    me: i32,
    cancel: &'a AtomicBool,
}

/// One round: every arm once, in the round's order, each sample handed to `done` as its arm
/// ends.
fn run_round(x: &Arms<'_>, round: u32, done: &mut dyn FnMut(PromoteBenchSample)) -> Result<()> {
    // Alternate the order within a round too: A B C D, then D C B A. On shared frames the
    // order follows the splits.
    let mut arms = Arm::ALL.to_vec();
    if x.cfg.same_frames {
        arms = SHARED_ORDER.to_vec();
    } else if round % 2 == 1 {
        arms.reverse();
    }
    // On shared frames, the round's one region, from arm to arm.
    let mut shared: Option<Region<u64>> = None;
    for arm in arms {
        done(run_arm(x, round, arm, &mut shared)?);
    }
    Ok(())
}

/// One arm's run: its region made (or split from the shared one), the reads timed, the
/// backing read back.
fn run_arm(
    x: &Arms<'_>,
    round: u32,
    arm: Arm,
    shared: &mut Option<Region<u64>>,
) -> Result<PromoteBenchSample> {
    let Arms {
        cfg,
        stream,
        plan,
        coldest_first,
        words,
        chunks,
        budget_bytes,
        proc,
        me,
        cancel,
    } = *x;
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
    let t0 = Instant::now();
    let mut collapse_ns = Vec::new();
    // Plan arm: its chunks made huge, and those that were not (after retries).
    let mut plan_outcomes = None;
    let mut fresh = None;
    let r: &Region<u64> = if cfg.same_frames {
        let r = match shared.take() {
            Some(r) => r,
            None => all_huge(words)?,
        };
        match arm {
            Arm::Plan => {
                let mut rest = vec![true; chunks];
                for &c in plan {
                    rest[c as usize] = false;
                }
                split_chunks(&Target::attach(proc, me, t0)?, &r, &rest)?;
                plan_outcomes = Some(huge_chunks(&r, plan)?);
            }
            Arm::Base => split_chunks(&Target::attach(proc, me, t0)?, &r, &vec![true; chunks])?,
            Arm::Ideal | Arm::Daemon => {}
        }
        shared.insert(r)
    } else {
        fresh.insert(make(arm, words, coldest_first)?)
    };
    if arm == Arm::Plan && !cfg.same_frames {
        let target = Target::attach(proc, me, t0)?;
        let steps: Vec<Step> = plan
            .iter()
            .map(|&c| {
                let a = r.addr() + c as usize * HUGE;
                Step {
                    at: Duration::ZERO,
                    range: a..a + HUGE,
                    kind: ActionKind::Promote,
                }
            })
            .collect();
        let done = replay(&target, &steps, t0, &AtomicBool::new(false), &mut |_| {})?;
        collapse_ns = (done.actions.iter())
            .filter(|a| !a.tried_again)
            .map(|a| a.latency_ns)
            .collect();
        let ok = done.actions.iter().filter(|a| a.outcome == "ok").count() as u32;
        plan_outcomes = Some((ok, plan.len() as u32 - ok.min(plan.len() as u32)));
    }
    let setup_ns = t0.elapsed().as_nanos() as u64;
    let q = quiet::wait_quiet(0.10, Duration::from_millis(200), 5);
    let seed = cfg.seed.wrapping_add(u64::from(round));
    let warm = (cfg.reads / 20).max(1);
    let warm_up = Pass {
        n: warm,
        seed: seed ^ 0xabcdef,
        sample: None,
        stop: cancel,
    };
    std::hint::black_box(stream.reads_until(r, warm_up));
    let ((ns, tail_ns), dr) = if arm == Arm::Daemon {
        let (ns, d) = timed_with_daemon(cfg, stream, r, seed, budget_bytes, cancel)?;
        collapse_ns = d.collapse_ns.clone();
        (ns, Some(d))
    } else {
        let timed = Pass {
            n: cfg.reads,
            seed,
            sample: None,
            stop: cancel,
        };
        (timed_in_halves(stream, r, timed), None)
    };
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
    let huge_share = r.backing()?.huge_bytes() as f64 / r.mapped_bytes() as f64;
    let (hot_huge, _) = huge_chunks(r, plan)?;
    Ok(PromoteBenchSample {
        huge_share,
        setup_ns,
        reach_budget_ms: dr.as_ref().and_then(|d| d.reach_ms),
        daemon_cpu_ns: dr.as_ref().map(|d| d.cpu_ns),
        wall_ns: ns,
        settled_ms: dr.as_ref().and_then(|d| d.settled_ms),
        daemon_steady_cpu_ns: dr
            .as_ref()
            .and_then(|d| d.steady_wall_ns.map(|_| d.steady_cpu_ns)),
        daemon_steady_wall_ns: dr.as_ref().and_then(|d| d.steady_wall_ns),
        promotions: dr
            .as_ref()
            .map(|d| (d.promoted, d.failed))
            .or(plan_outcomes),
        demotions: dr.as_ref().map(|d| (d.demoted, Some(d.swaps))),
        hot_chunks_huge: Some(hot_huge),
        not_worth: dr.as_ref().map(|d| d.not_worth),
        collapse_ns,
        quiet: q,
        reach_90_ms: dr.as_ref().and_then(|d| d.reach_90_ms),
        compactions: dr.as_ref().map(|d| (d.compactions, d.compaction_cpu_ns)),
        tail_time: Some(tail_ns as f64 / (cfg.reads - cfg.reads / 2).max(1) as f64),
        ..PromoteBenchSample::timed(round, arm, ns as f64 / cfg.reads as f64)
    })
}

/// The time of `pass`'s reads, and of their second half alone: the first half from the
/// pass's seed, the second from another, each its own pass, so that the loop that is timed
/// stays the one every arm runs.
fn timed_in_halves(stream: &Stream, r: &Region<u64>, pass: Pass<'_>) -> (u64, u64) {
    let first = pass.n / 2;
    let t = Instant::now();
    std::hint::black_box(stream.reads_until(r, Pass { n: first, ..pass }));
    let half = Instant::now();
    let second = Pass {
        n: pass.n - first,
        seed: pass.seed ^ 0x7a11_5eed,
        ..pass
    };
    std::hint::black_box(stream.reads_until(r, second));
    let end = Instant::now();
    (
        end.duration_since(t).as_nanos() as u64,
        end.duration_since(half).as_nanos() as u64,
    )
}

/// Time the reads while a daemon thread promotes the region within `budget_bytes`: the
/// whole, and the second half alone.
fn timed_with_daemon(
    cfg: &Config,
    stream: &Stream,
    r: &Region<u64>,
    seed: u64,
    budget_bytes: u64,
    cancel: &AtomicBool,
) -> Result<((u64, u64), DaemonRun)> {
    // In shared memory, beside where programs publish (a ring in a file on disk would add
    // writeback and write faults to the sampled reads), under a name of its own: a run of a
    // graph kernel in this process publishes at the program's name. Ctrl-C ends the reads and
    // drops the ring; a bench killed outright leaves it behind, and the next one removes it.
    hugewise_promote::channel::remove_dead_rings();
    let ring = hugewise_promote::channel::bench_path(std::process::id() as i32);
    let publisher = Publisher::create_at(&ring, 1 << 20)?;
    // Say what a sample stands for, as a cooperating program does: the daemon then weighs a
    // chunk's walks against what its collapse costs and leaves alone one that would not pay
    // (the no-gain workload's span, a Zipf tail).
    publisher.set_period(u64::from(cfg.sample_every));
    let t0 = Instant::now();
    // Only the workload's region: other memory of this process (a test beside it) is not the
    // daemon's to count or split.
    let target = Target::attach(&ProcFs::default(), std::process::id() as i32, t0)?
        .within(r.addr()..r.addr() + r.mapped_bytes());
    let dcfg = daemon::Config {
        interval: cfg.interval,
        limit: Limit::Bytes(budget_bytes),
        compact: hugewise_promote::compact::Settings {
            mode: cfg.compact,
            ..Default::default()
        },
        fault_waits: cfg.fault_waits,
        warm: cfg.warm,
        walk_ns: cfg.walk_ns,
        nice: cfg.nice,
        ..daemon::Config::default()
    };
    let policy = hugewise_promote::policy::by_name("pcc")
        .ok_or_else(|| Error::Config("no pcc policy".into()))?;
    let mut d = Daemon::new(policy, dcfg, t0);
    let samples = Subscriber::open_at(&ring, target.writer())?;
    d.add_with(target, Some(samples));
    let stop = AtomicBool::new(false);
    let ninety = hugewise_promote::compact::ninety_percent_of(budget_bytes);
    let log: Mutex<DaemonRun> = Mutex::new(DaemonRun {
        reach_ms: None,
        reach_90_ms: None,
        compactions: 0,
        compaction_cpu_ns: 0,
        cpu_ns: 0,
        steady_cpu_ns: 0,
        reached_at: None,
        steady_wall_ns: None,
        settled_ms: None,
        settled_at: None,
        cpu_at_settle_ns: 0,
        promoted: 0,
        failed: 0,
        demoted: 0,
        swaps: 0,
        not_worth: 0,
        collapse_ns: Vec::new(),
    });
    let (ns, end, res) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            d.run(&stop, &mut |iv, actions| {
                let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
                l.collapse_ns.extend(
                    actions
                        .iter()
                        .filter(|a| a.kind == ActionKind::Promote && !a.tried_again)
                        .map(|a| a.latency_ns),
                );
                l.cpu_ns += iv.cpu_ns;
                if let Some(c) = &iv.compaction {
                    l.compactions += 1;
                    l.compaction_cpu_ns += c.cpu_ns;
                }
                if l.reach_90_ms.is_none() && iv.huge_bytes_after >= ninety {
                    l.reach_90_ms = Some(iv.t_ms);
                }
                if l.reach_ms.is_some() {
                    l.steady_cpu_ns += iv.cpu_ns;
                }
                l.promoted += iv.promoted;
                if iv.promoted > 0 {
                    l.settled_ms = Some(iv.t_ms);
                    l.settled_at = Some(Instant::now());
                    l.cpu_at_settle_ns = l.cpu_ns;
                }
                l.failed += iv.failed;
                l.demoted += iv.demoted;
                l.swaps += iv.swaps.unwrap_or(0);
                l.not_worth += iv.not_worth.unwrap_or(0);
                if l.reach_ms.is_none() && iv.huge_bytes_after + HUGE as u64 > budget_bytes {
                    l.reach_ms = Some(iv.t_ms);
                    l.reached_at = Some(Instant::now());
                }
            })
        });
        let timed = Pass {
            n: cfg.reads,
            seed,
            sample: Some((&publisher, cfg.sample_every)),
            stop: cancel,
        };
        let ns = timed_in_halves(stream, r, timed);
        let end = Instant::now();
        stop.store(true, Ordering::Relaxed);
        (ns, end, h.join())
    });
    match res {
        Ok(r) => r?,
        Err(_) => return Err(Error::Config("the daemon thread panicked".into())),
    }
    drop(publisher);
    let mut run = log.into_inner().unwrap_or_else(|e| e.into_inner());
    // The steady state: from the budget's being reached to the clock's stop, or, for a
    // daemon that stayed below its budget, from its last promotion.
    match (run.reached_at, run.settled_at) {
        (Some(r), _) => {
            run.steady_wall_ns = Some(end.saturating_duration_since(r).as_nanos() as u64);
        }
        (None, Some(at)) => {
            run.steady_wall_ns = Some(end.saturating_duration_since(at).as_nanos() as u64);
            run.steady_cpu_ns = run.cpu_ns - run.cpu_at_settle_ns;
        }
        (None, None) => {}
    }
    Ok((ns, run))
}

fn in_round(samples: &[PromoteBenchSample], arm: Arm, round: u32) -> Option<f64> {
    samples
        .iter()
        .find(|s| s.arm == arm && s.round == round)
        .map(|s| s.time)
}

/// Per round that ran both, the base's time over `arm`'s.
fn speedups(samples: &[PromoteBenchSample], arm: Arm) -> Vec<f64> {
    samples
        .iter()
        .filter(|s| s.arm == arm)
        .filter_map(|s| Some(in_round(samples, Arm::Base, s.round)? / s.time))
        .collect()
}

/// The ratios `--until` watches: every arm's speedup over the base.
pub(crate) fn watched(samples: &[PromoteBenchSample]) -> Vec<Vec<f64>> {
    [Arm::Ideal, Arm::Plan, Arm::Daemon]
        .iter()
        .map(|&a| speedups(samples, a))
        .collect()
}

pub(crate) fn summarize_arms(samples: &[PromoteBenchSample]) -> Vec<PromoteBenchArm> {
    let in_round = |arm: Arm, round: u32| in_round(samples, arm, round);
    Arm::ALL
        .iter()
        .filter_map(|&a| {
            let mine: Vec<&PromoteBenchSample> = samples.iter().filter(|s| s.arm == a).collect();
            let ns: Vec<f64> = mine.iter().map(|s| s.time).collect();
            let speedups = speedups(samples, a);
            let shares: Vec<f64> = mine
                .iter()
                .filter_map(|s| {
                    let base = in_round(Arm::Base, s.round)?;
                    let ideal = base / in_round(Arm::Ideal, s.round)? - 1.0;
                    (ideal > 0.0).then(|| (base / s.time - 1.0) / ideal)
                })
                .collect();
            let huge: Vec<f64> = mine.iter().map(|s| s.huge_share).collect();
            let (speedup, speedup_ci95) = match a {
                Arm::Base => (None, None),
                _ => ratio(&speedups),
            };
            let (share, share_ci95) = match a {
                Arm::Base | Arm::Ideal => (None, None),
                _ => ratio(&shares),
            };
            // The figures against the ideal are filled from the samples with the headline.
            Some(PromoteBenchArm {
                speedup_vs_base: speedup,
                speedup_vs_base_ci95: speedup_ci95,
                share_of_ideal: share,
                share_of_ideal_ci95: share_ci95,
                huge_footprint_share: median(&huge).unwrap_or(0.0),
                ..PromoteBenchArm::timed(a, summarize(&ns)?)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One run at a time: each daemon manages its own region only, but two runs at once on two
    /// cores leave a daemon so little time that a short run may end before it promotes.
    static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn small(reads: u64) -> Config {
        Config {
            bytes: Bytes(16 << 20),
            workloads: vec![Workload {
                chase: true,
                ..Workload::zipf(1.0)
            }],
            reads,
            rounds: 1,
            until: Until::default(),
            budget_share: 0.25,
            interval: Duration::from_millis(10),
            sample_every: 64,
            seed: 5,
            same_frames: false,
            cold_first: false,
            force: false,
            compact: Default::default(),
            fault_waits: daemon::Config::default().fault_waits,
            warm: true,
            walk_ns: daemon::Config::default().walk_ns,
            nice: daemon::Config::default().nice,
            shape: None,
        }
    }

    /// Run `cfg` with its shaping journaled by `host`: the report and every progress call,
    /// or `None` (the test skipped) where THP at `always` leaves no 4 KiB arm to measure.
    fn counted(
        host: &hugewise_env::Host,
        cfg: &Config,
    ) -> Option<(PromoteBenchReport, Vec<(u64, u64)>)> {
        let mut calls = Vec::new();
        match run_on(host, cfg, &AtomicBool::new(false), &mut |done, total| {
            calls.push((done, total))
        }) {
            Ok(r) => Some((r, calls)),
            Err(Error::Config(m)) if m.contains("THP `always`") => {
                hugewise_sys::testing::skip(&m);
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_region_past_the_memory_available_is_refused_before_anything_is_touched() {
        let cfg = Config {
            bytes: Bytes(1 << 50),
            ..small(1000)
        };
        let e = run(&cfg, &AtomicBool::new(false), &mut |_, _| panic!("ran")).expect_err("refused");
        let m = e.to_string();
        for want in ["size 1024TiB", "available", "--force"] {
            assert!(m.contains(want), "{want}: {m}");
        }
    }

    #[test]
    fn a_raised_stop_flag_ends_the_bench_before_its_next_run() {
        let mut calls = 0;
        let e =
            run(&small(1000), &AtomicBool::new(true), &mut |_, _| calls += 1).expect_err("stopped");
        assert!(matches!(e, Error::Interrupted), "{e}");
        assert_eq!(calls, 0);
    }

    #[test]
    fn a_stop_in_the_middle_of_the_daemons_reads_ends_them_and_removes_its_ring() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        // Reads that would take hours: only the stop flag ends them.
        let cfg = small(1 << 40);
        let stream = Stream::new(8, 1.0, 5).chase(true);
        let r = make(Arm::Daemon, 8 * WORDS_PER_CHUNK, None).expect("region");
        let cancel = AtomicBool::new(false);
        let ((ns, _), _) = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                cancel.store(true, Ordering::Relaxed);
            });
            timed_with_daemon(&cfg, &stream, &r, 1, 4 * HUGE as u64, &cancel).expect("run")
        });
        // The run's clock starts after its own setup, which the flag's 300 ms already count:
        // a run stopped by the flag reads a little under 300 ms, one that stopped on its own
        // (reads that take hours) far less or never.
        assert!(ns >= 250_000_000, "stopped after {ns} ns, before the flag");
        let ring = hugewise_promote::channel::bench_path(std::process::id() as i32);
        assert!(!ring.exists(), "{} left behind", ring.display());
    }

    #[test]
    fn a_small_run_measures_every_arm_of_every_workload_within_the_budget() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let cfg = Config {
            bytes: Bytes(64 << 20),
            workloads: vec![Workload::zipf(1.0), Workload::zipf(1.5)],
            // Enough reads for the daemon's reads to span many intervals
            // even on a fast machine: it decides one interval after its
            // first samples, and a run that ends first promotes nothing.
            budget_share: 0.125,
            seed: 3,
            ..small(2_000_000)
        };
        let Some((r, calls)) = counted(&hugewise_env::Host::real(), &cfg) else {
            return;
        };
        // Progress counts over both workloads: 8 runs.
        assert_eq!(calls.len(), 8);
        assert_eq!(calls.last(), Some(&(8, 8)));
        let names: Vec<&str> = r.workloads.iter().map(|w| w.workload.as_str()).collect();
        assert_eq!(names, ["zipf:1", "zipf:1.5"]);
        for w in &r.workloads {
            assert_eq!((w.samples.len(), w.summary.len()), (4, 4));
            // 12.5 % of 32 chunks: a plan of 4.
            assert_eq!(w.plan_chunks, 4);
            let arm = |a: Arm| w.samples.iter().find(|s| s.arm == a).expect("arm");
            assert_eq!(arm(Arm::Base).huge_share, 0.0);
            assert_eq!(arm(Arm::Base).hot_chunks_huge, Some(0));
            // The plan's collapses that succeeded are its huge hot chunks, read back.
            let (made, _) = arm(Arm::Plan).promotions.expect("plan outcomes");
            assert_eq!(arm(Arm::Plan).hot_chunks_huge, Some(made));
            // The headline is the summaries' figures.
            let sum = |a: Arm| w.summary.iter().find(|s| s.arm == a).expect("arm");
            assert_eq!(w.ideal_speedup, sum(Arm::Ideal).speedup_vs_base);
            assert_eq!(w.plan_speedup, sum(Arm::Plan).speedup_vs_base);
            assert_eq!(w.daemon_speedup, sum(Arm::Daemon).speedup_vs_base);
            assert_eq!(
                w.huge_footprint_share,
                Some(sum(Arm::Plan).huge_footprint_share)
            );
            assert!(w.daemon_cpu_share.is_some_and(|c| c > 0.0), "{w:?}");
            // Every run timed its second half too, within the whole: half the reads take
            // less than all of them, so the tail's time per read is below twice the whole's.
            for s in &w.samples {
                let tail = s.tail_time.expect("the second half's time");
                assert!(tail > 0.0 && tail < 2.0 * s.time, "{s:?}");
            }
            assert!(sum(Arm::Daemon).tail_time_vs_ideal.is_some(), "{w:?}");
            if ProcFs::default().kpageflags().is_ok() {
                // The plan's chunks read back huge are the ones its steps report made: all 4,
                // unless the kernel refused one even after the retries (seen once in a full CI
                // run: 3 of 4).
                let plan = arm(Arm::Plan);
                let (ok, failed) = plan.promotions.expect("the plan's outcomes");
                assert_eq!(ok + failed, 4, "{plan:?}");
                assert!(ok >= 3, "{plan:?}");
                assert!(
                    (plan.huge_share - f64::from(ok) / 32.0).abs() < 1e-9,
                    "{plan:?}"
                );
                let d = arm(Arm::Daemon);
                assert!(d.huge_share <= 0.125 + 1e-9, "{d:?}");
                assert!(d.promotions.is_some_and(|(ok, _)| ok >= 1), "{d:?}");
                // Either at its budget or settled below it, and timed either way.
                assert!(
                    d.reach_budget_ms.is_some() || d.settled_ms.is_some(),
                    "{d:?}"
                );
            }
            assert!(w.summary[0].speedup_vs_base.is_none());
            assert!(w.summary[2].huge_footprint_share > 0.0);
        }
    }

    #[test]
    fn a_shaped_run_gives_the_workload_a_second_entry_measured_on_the_held_machine() {
        if !hugewise_sys::caps::is_root() {
            hugewise_sys::testing::skip("shaping the machine needs root");
            return;
        }
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let state = tempfile::tempdir().expect("state dir");
        let host = hugewise_env::Host::real_with_state(state.path());
        let available = hugewise_env::state::measure(&host)
            .expect("memory")
            .available();
        if available < 4 << 30 {
            hugewise_sys::testing::skip("under 4 GiB available: no room to hold 512 MiB of it");
            return;
        }
        // Hold 512 MiB: quick to take and to give back, and well above the floor.
        let leave = available - (512 << 20);
        let cfg = Config {
            rounds: 2,
            shape: Some(Shape {
                pressure_leave: Some(leave),
                fragment: None,
            }),
            ..small(200_000)
        };
        let Some((r, calls)) = counted(&host, &cfg) else {
            return;
        };
        // Two rounds of four arms on each machine.
        assert_eq!(calls.last(), Some(&(16, 16)));
        assert_eq!(r.workloads.len(), 2);
        let (plain, shaped) = (&r.workloads[0], &r.workloads[1]);
        assert_eq!(plain.workload, shaped.workload);
        assert!(plain.shaped.is_none());
        assert_eq!((plain.samples.len(), shaped.samples.len()), (8, 8));
        let sh = shaped.shaped.as_ref().expect("the shaped entry says so");
        assert_eq!(sh.pressure_leave_bytes, Some(leave));
        let rounds: Vec<u32> = sh.rounds.iter().map(|r| r.round).collect();
        assert_eq!(rounds, [0, 1]);
        for round in &sh.rounds {
            // The pressure was in force when the shaped arms ran: no more available than asked
            // (within the kernel's own movement in between).
            assert!(
                round.memory.available() < leave + (256 << 20),
                "{round:?} against {leave}"
            );
            assert_eq!(round.fragment_reached, None);
        }
        // Every comparison has a figure from both rounds (too few for an interval).
        assert!(
            sh.daemon_speedup_vs_unshaped.is_some_and(|x| x > 0.0),
            "{sh:?}"
        );
        assert!(sh.ideal_speedup_vs_unshaped.is_some(), "{sh:?}");
        assert!(sh.base_speedup_vs_unshaped.is_some(), "{sh:?}");
        assert!(sh.daemon_time_speedup_vs_unshaped.is_some(), "{sh:?}");
        assert!(sh.daemon_speedup_vs_unshaped_ci95.is_none());
        assert!(shaped.daemon_speedup.is_some());
    }

    #[test]
    fn on_the_no_gain_workload_the_daemon_declines_every_collapse() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let cfg = Config {
            bytes: Bytes(64 << 20),
            workloads: vec![Workload::nogain()],
            // About 0.1 s of reads: many looks at 10 ms.
            reads: 4_000_000,
            budget_share: 0.25,
            ..small(1)
        };
        let r = match run(&cfg, &AtomicBool::new(false), &mut |_, _| {}) {
            Ok(r) => r,
            Err(Error::Config(m)) if m.contains("THP `always`") => {
                hugewise_sys::testing::skip(&m);
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let w = &r.workloads[0];
        assert_eq!(w.workload, "nogain:256KiB");
        assert!(
            w.describe().contains("No gain expected"),
            "{}",
            w.describe()
        );
        // The profile saw one chunk: the plan is that chunk alone.
        assert_eq!(w.plan_chunks, 1);
        let d = w
            .samples
            .iter()
            .find(|s| s.arm == Arm::Daemon)
            .expect("daemon");
        // The span's 64 pages fit the TLB: a huge page would remove no walk, so the hot chunk
        // is passed over at every look that weighs it, and nothing is collapsed.
        assert_eq!(d.promotions, Some((0, 0)), "{d:?}");
        assert!(d.not_worth.is_some_and(|n| n >= 1), "{d:?}");
        assert_eq!(d.huge_share, 0.0, "{d:?}");
    }

    #[test]
    fn on_shared_frames_the_arms_run_in_split_order_with_the_backing_each_needs() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let cfg = Config {
            bytes: Bytes(64 << 20),
            workloads: vec![Workload {
                skew: Skew::Hotspot {
                    chunks: 0.1,
                    reads: 0.99,
                },
                lines_per_page: 1,
                chase: true,
            }],
            rounds: 2,
            budget_share: 0.125,
            same_frames: true,
            ..small(2_000_000)
        };
        let r = match run(&cfg, &AtomicBool::new(false), &mut |_, _| {}) {
            Ok(r) => r,
            Err(Error::Config(m))
                if m.contains("THP `always`")
                    || m.contains("MADV_COLLAPSE")
                    || m.contains("cannot share frames") =>
            {
                hugewise_sys::testing::skip(&m);
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let w = &r.workloads[0];
        assert!(w.same_frames);
        assert!(
            w.describe().contains("same physical pages"),
            "{}",
            w.describe()
        );
        let order: Vec<(u32, Arm)> = w.samples.iter().map(|s| (s.round, s.arm)).collect();
        let expected: Vec<(u32, Arm)> = (0..2)
            .flat_map(|round| SHARED_ORDER.iter().map(move |&a| (round, a)))
            .collect();
        assert_eq!(order, expected);
        for s in &w.samples {
            match s.arm {
                Arm::Ideal => assert_eq!(s.huge_share, 1.0, "{s:?}"),
                Arm::Base => assert_eq!(s.huge_share, 0.0, "{s:?}"),
                // The plan keeps its 4 chunks of 32 huge, every one of them.
                Arm::Plan => {
                    assert_eq!(s.promotions, Some((4, 0)), "{s:?}");
                    assert!((s.huge_share - 4.0 / 32.0).abs() < 1e-9, "{s:?}");
                }
                Arm::Daemon => assert!(s.huge_share <= 0.125 + 1e-9, "{s:?}"),
            }
        }
    }

    #[test]
    fn bad_exponents_are_refused_before_anything_is_mapped() {
        let mut cfg = Config {
            bytes: Bytes(64 << 20),
            workloads: vec![],
            budget_share: 0.1,
            ..small(1)
        };
        let msg = |cfg: &Config| match run(cfg, &AtomicBool::new(false), &mut |_, _| {}) {
            Err(Error::Config(m)) => m,
            other => panic!("{:?}", other.map(|r| r.workloads.len())),
        };
        assert!(msg(&cfg).contains("at least one"));
        cfg.workloads = vec![Workload::zipf(1.0), Workload::zipf(f64::NAN)];
        assert!(msg(&cfg).contains("not NaN"), "{}", msg(&cfg));
        let hot = |chunks, reads| Workload {
            skew: Skew::Hotspot { chunks, reads },
            ..Workload::hotspot()
        };
        cfg.workloads = vec![hot(1.0, 0.99)];
        assert!(msg(&cfg).contains("below 100 %"), "{}", msg(&cfg));
        cfg.workloads = vec![hot(0.04, 1.5)];
        assert!(
            msg(&cfg).contains("150.0000 % of the reads"),
            "{}",
            msg(&cfg)
        );
        cfg.workloads = vec![Workload {
            skew: Skew::NoGain { pages: 3 },
            ..Workload::nogain()
        }];
        assert!(msg(&cfg).contains("power of two"), "{}", msg(&cfg));
        cfg.workloads = vec![Workload::zipf(1.0)];
        (cfg.same_frames, cfg.cold_first) = (true, true);
        assert!(msg(&cfg).contains("choose one"), "{}", msg(&cfg));
    }
}
