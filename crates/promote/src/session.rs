//! One promotion session as a user runs it: targets attached by pid or launched, a plan
//! replayed or the daemon run until the targets exit or the user stops it, and everything
//! that happened kept as data for the result file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hugewise_results::promote::PromoteReport;
use hugewise_results::AnyResult;
use hugewise_sys::proc::ProcFs;

use crate::daemon::Config as DaemonConfig;
use crate::target::launch;
pub use crate::target::LaunchOptions;
use crate::{plan, policy, Error};

use serde::{Deserialize, Serialize};

use crate::action::{Action, ActionKind};
use crate::daemon::{Daemon, Interval};
use crate::replay::{replay, Step};
use crate::target::Target;
use crate::Result;

/// Which processes a session manages.
#[derive(Debug, Clone, PartialEq)]
pub enum Targets {
    /// Running processes.
    Pids(Vec<i32>),
    /// A program to start (without address-space randomisation) and its arguments.
    Launch(Vec<String>),
}

/// What a session does to them.
// One is made per session: the daemon's settings inline cost nothing, and boxing them would
// only burden every place that names one.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Engine {
    /// Replay one configuration's plan from a `hugewise sim --plan` file.
    Plan {
        /// The plan file.
        file: PathBuf,
        /// Which policy's plan, when the file holds several.
        policy: Option<String>,
        /// Which budget's plan (a share, 0..=1), when the file holds several.
        budget_share: Option<f64>,
    },
    /// Run the online daemon.
    Daemon {
        /// Policy name (see [`policy::NAMES`]).
        policy: String,
        /// Its settings.
        config: DaemonConfig,
        /// The budget as the user wrote it, for the result.
        budget_label: String,
    },
}

/// A session.
#[derive(Debug, Clone)]
pub struct Config {
    /// Whom.
    pub targets: Targets,
    /// What.
    pub engine: Engine,
    /// Stop after this long (the targets keep running).
    pub duration: Option<Duration>,
    /// How a program to start is started (under the preload library or not).
    pub launch: LaunchOptions,
}

/// Sets its flag when dropped: the session's watcher thread stops when the engine returns and
/// also when it panics, which would otherwise leave the scope waiting for the watcher forever.
struct Finished<'a>(&'a AtomicBool, std::thread::Thread);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        // The watcher naps up to `WATCH_NAP`: woken, it ends with the session, not after.
        self.1.unpark();
    }
}

/// How often the session's watcher wakes to see whether the user cancelled or the time limit
/// passed: a Ctrl-C is heard within this, and each wakeup costs a settled daemon's session a
/// few microseconds of a core (20 ms naps cost it a tenth of its time on a large target).
const WATCH_NAP: Duration = Duration::from_millis(100);

/// Run a session until the plan is done (and a launched program has exited), the targets
/// exit, `duration` passes or `cancel` is set. `on_action` and `on_interval` hear progress.
pub fn run(
    cfg: &Config,
    cancel: &AtomicBool,
    on_action: &mut dyn FnMut(&Action),
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<PromoteReport> {
    let proc = ProcFs::default();
    let plan = read_plan(cfg)?;
    let t0 = Instant::now();
    let (mut child, targets) = match &cfg.targets {
        Targets::Pids(pids) if pids.is_empty() => {
            return Err(Error::Usage(
                "name a process (--pid) or a command to start".into(),
            ))
        }
        Targets::Pids(pids) => (
            None,
            pids.iter()
                .map(|&p| Target::attach(&proc, p, t0))
                .collect::<Result<Vec<_>>>()?,
        ),
        Targets::Launch(argv) => {
            let (program, args) = argv
                .split_first()
                .ok_or_else(|| Error::Usage("the command to start is empty".into()))?;
            if cfg.launch.preload.is_some() {
                hugewise_rules::protocol::sweep_orphans();
            }
            let l = launch(&proc, program, args, &cfg.launch, t0)?;
            (Some(l.child), vec![l.target])
        }
    };
    let pids: Vec<i32> = targets.iter().map(Target::pid).collect();
    // One flag for the session's own end: the user's cancel or the time limit.
    let stop = AtomicBool::new(false);
    let finished = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            while !finished.load(Ordering::Relaxed) {
                if cancel.load(Ordering::Relaxed) || cfg.duration.is_some_and(|d| t0.elapsed() >= d)
                {
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
                let left = cfg.duration.map(|d| d.saturating_sub(t0.elapsed()));
                std::thread::park_timeout(left.map_or(WATCH_NAP, |l| l.min(WATCH_NAP)));
            }
        });
        let _done = Finished(&finished, watcher.thread().clone());
        engine(cfg, plan, targets, t0, &stop, on_action, on_interval)
    });
    let EngineDone {
        log,
        policy: policy_name,
        budget,
        interval_ms,
        sampled,
        nice,
    } = match result {
        Ok(v) => v,
        Err(e) => {
            if let Some(c) = child.as_mut() {
                // The session failed, not the program: let it run to its end as it would have.
                let _ = c.wait();
            }
            remove_logs(cfg);
            return Err(e);
        }
    };
    let command_exit = match child.as_mut() {
        Some(c) => c.wait().ok().and_then(|s| s.code()),
        None => None,
    };
    remove_logs(cfg);
    let totals = log.totals();
    Ok(PromoteReport {
        mode: match cfg.engine {
            Engine::Plan { .. } => "plan".into(),
            Engine::Daemon { .. } => "daemon".into(),
        },
        policy: policy_name,
        budget,
        interval_ms,
        compact: match &cfg.engine {
            Engine::Daemon { config, .. } => Some(config.compact.mode.name().to_string()),
            Engine::Plan { .. } => None,
        },
        fault_waits: match &cfg.engine {
            Engine::Daemon { config, .. } => Some(config.fault_waits),
            Engine::Plan { .. } => None,
        },
        walk_ns: match &cfg.engine {
            Engine::Daemon { config, .. } => Some(config.walk_ns),
            Engine::Plan { .. } => None,
        },
        nice,
        pids,
        sampled_pids: sampled,
        command: match &cfg.targets {
            Targets::Launch(argv) => Some(argv.clone()),
            Targets::Pids(_) => None,
        },
        command_exit,
        gone: log.gone,
        cancelled: cancel.load(Ordering::Relaxed),
        wall_ns: t0.elapsed().as_nanos() as u64,
        totals,
        actions: log.actions,
        intervals: log.intervals,
    })
}

/// The preload settings under which `hugewise promote` starts a program: every allocation
/// that holds whole 2 MiB chunks gets `thp`, held to `limit` (the daemon's budget, which the
/// library's advice counts against).
pub fn preload_for(
    library: PathBuf,
    limit: crate::budget::Limit,
) -> hugewise_rules::protocol::Preload {
    use hugewise_rules::budget::Budget;
    use hugewise_rules::rules::{Placement, Rule, Rules, Sizes};
    let min_size = hugewise_rules::protocol::DEFAULT_MIN_SIZE;
    let rules = Rules(vec![Rule {
        sizes: Sizes {
            min: min_size,
            max: u64::MAX,
        },
        name: None,
        site: None,
        placement: Placement::Thp,
    }]);
    hugewise_rules::protocol::Preload {
        budget: Some(match limit {
            crate::budget::Limit::Bytes(b) => Budget::Bytes(b),
            crate::budget::Limit::Share(s) => Budget::Share(s),
        }),
        min_size,
        ..hugewise_rules::protocol::Preload::new(library, rules)
    }
}

/// The allocation logs the started program's processes kept under the preload library: read
/// by now, and nobody else's to read.
fn remove_logs(cfg: &Config) {
    if let (Targets::Launch(_), Some(p)) = (&cfg.targets, &cfg.launch.preload) {
        p.remove_logs();
    }
}

/// What an engine's run leaves for the report.
struct EngineDone {
    log: Log,
    /// The policy's name (a plan's label).
    policy: String,
    budget: Option<String>,
    interval_ms: Option<u64>,
    /// Pids that published samples.
    sampled: Vec<i32>,
    /// The nice value the daemon's thread ran at (`None` for a plan).
    nice: Option<i32>,
}

/// The steps of the plan `cfg` replays, and its label: read before a program is started or a
/// process attached, so that a plan that cannot be replayed is refused before anything runs.
fn read_plan(cfg: &Config) -> Result<Option<(Vec<Step>, String)>> {
    let Engine::Plan {
        file,
        policy,
        budget_share,
    } = &cfg.engine
    else {
        return Ok(None);
    };
    let plans = match hugewise_sys::read::result(file).map_err(Error::PlanFile)? {
        AnyResult::Plans(p) => p.result,
        other => {
            return Err(Error::Usage(format!(
                "{}: a {} result, not a promotion plan (make one with hugewise sim --plan)",
                file.display(),
                other.schema()
            )))
        }
    };
    let (i, p) = plan::select(&plans, policy.as_deref(), *budget_share)?;
    let steps = plan::steps(i, p, &|a| Some(a))?;
    Ok(Some((steps, p.policy_label.clone())))
}

fn engine(
    cfg: &Config,
    plan: Option<(Vec<Step>, String)>,
    mut targets: Vec<Target>,
    t0: Instant,
    stop: &AtomicBool,
    on_action: &mut dyn FnMut(&Action),
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<EngineDone> {
    match &cfg.engine {
        Engine::Plan { file, .. } => {
            if targets.len() != 1 {
                return Err(Error::Usage("a plan is replayed on one process".into()));
            }
            let (steps, label) = plan.ok_or_else(|| {
                Error::Usage(format!("{}: the plan was not read", file.display()))
            })?;
            let target = targets.remove(0);
            let log = run_plan(&target, &steps, t0, stop, on_action)?;
            Ok(EngineDone {
                log,
                policy: label,
                budget: None,
                interval_ms: None,
                sampled: Vec::new(),
                nice: None,
            })
        }
        Engine::Daemon {
            policy: name,
            config,
            budget_label,
        } => {
            let policy = policy::by_name(name).ok_or_else(|| {
                Error::Usage(format!(
                    "unknown policy {name} (known: {})",
                    policy::NAMES.join(", ")
                ))
            })?;
            let mut d = Daemon::new(policy, config.clone(), t0);
            for t in targets {
                d.add(t);
            }
            let log = run_daemon(&mut d, t0, stop, &mut |iv, actions| {
                for a in actions {
                    on_action(a);
                }
                on_interval(iv);
            })?;
            // Targets may have opened their channel after the daemon attached.
            Ok(EngineDone {
                log,
                policy: name.clone(),
                budget: Some(budget_label.clone()),
                interval_ms: Some(config.interval.as_millis() as u64),
                sampled: d.sampled(),
                nice: d.nice(),
            })
        }
    }
}
pub use hugewise_results::promote::Totals;

/// What a session did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Log {
    /// Every action, in order.
    pub actions: Vec<Action>,
    /// Every interval of the daemon (empty for a replay).
    pub intervals: Vec<Interval>,
    /// Targets that exited while the session ran.
    pub gone: Vec<i32>,
    /// The user stopped the session.
    pub cancelled: bool,
    /// Wall time of the session.
    pub wall_ns: u64,
}

fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    Some(sorted[i.min(sorted.len() - 1)])
}

impl Log {
    /// Totals over the log.
    pub fn totals(&self) -> Totals {
        let promotes: Vec<&Action> = self
            .actions
            .iter()
            .filter(|a| a.kind == ActionKind::Promote && a.outcome != "gone" && !a.tried_again)
            .collect();
        let mut lat: Vec<u64> = promotes
            .iter()
            .filter(|a| a.latency_ns > 0)
            .map(|a| a.latency_ns)
            .collect();
        lat.sort_unstable();
        let promoted = promotes.iter().filter(|a| a.succeeded()).count() as u64;
        let cpu: Option<u64> =
            (!self.intervals.is_empty()).then(|| self.intervals.iter().map(|i| i.cpu_ns).sum());
        let compactions: Vec<_> = self
            .intervals
            .iter()
            .filter_map(|i| i.compaction.as_ref())
            .collect();
        let compaction_cpu: Option<u64> =
            (!compactions.is_empty()).then(|| compactions.iter().map(|c| c.cpu_ns).sum());
        Totals {
            promoted,
            promote_failed: promotes.len() as u64 - promoted,
            demoted: self
                .actions
                .iter()
                .filter(|a| a.kind == ActionKind::Demote && a.succeeded() && a.outcome == "ok")
                .count() as u64,
            released: self
                .actions
                .iter()
                .filter(|a| a.kind == ActionKind::Release && a.succeeded())
                .count() as u64,
            // Unknown (`null`) for a replay, and when any interval did not count them.
            swaps: if self.intervals.is_empty() {
                None
            } else {
                self.intervals.iter().map(|i| i.swaps.map(u64::from)).sum()
            },
            huge_bytes_final: self.intervals.last().map(|i| i.huge_bytes_after),
            collapse_p50_ns: percentile(&lat, 0.5),
            collapse_p99_ns: percentile(&lat, 0.99),
            daemon_cpu_ns: cpu,
            daemon_core_share: cpu
                .filter(|_| self.wall_ns > 0)
                .map(|c| c as f64 / self.wall_ns as f64),
            reach_budget_ms: self
                .intervals
                .iter()
                .find(|i| i.budget_bytes > 0 && i.huge_bytes_after + (2 << 20) > i.budget_bytes)
                .map(|i| i.t_ms),
            paced: self
                .intervals
                .iter()
                .filter_map(|i| i.paced.map(u64::from))
                .reduce(|a, b| a + b),
            held_back: self
                .intervals
                .iter()
                .filter_map(|i| i.held_back.map(u64::from))
                .reduce(|a, b| a + b),
            compactions: (!compactions.is_empty()).then_some(compactions.len() as u64),
            compaction_cpu_ns: compaction_cpu,
            compaction_core_share: compaction_cpu
                .filter(|_| self.wall_ns > 0)
                .map(|c| c as f64 / self.wall_ns as f64),
        }
    }
}

/// Replay `steps` on `target` until done, the target exits or `cancel` is set.
pub fn run_plan(
    target: &Target,
    steps: &[Step],
    t0: Instant,
    cancel: &AtomicBool,
    on_action: &mut dyn FnMut(&Action),
) -> Result<Log> {
    let r = replay(target, steps, t0, cancel, on_action)?;
    Ok(Log {
        actions: r.actions,
        intervals: Vec::new(),
        gone: if r.target_gone {
            vec![target.pid()]
        } else {
            Vec::new()
        },
        cancelled: r.cancelled,
        wall_ns: t0.elapsed().as_nanos() as u64,
    })
}

/// Run `daemon` until its targets exit or `cancel` is set; `on_interval` hears each interval.
pub fn run_daemon(
    daemon: &mut Daemon,
    t0: Instant,
    cancel: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval, &[Action]),
) -> Result<Log> {
    let mut log = Log::default();
    daemon.run(cancel, &mut |iv, actions| {
        on_interval(iv, actions);
        log.gone.extend(&iv.gone);
        log.actions.extend_from_slice(actions);
        log.intervals.push(iv.clone());
    })?;
    log.cancelled = cancel.load(std::sync::atomic::Ordering::Relaxed);
    log.wall_ns = t0.elapsed().as_nanos() as u64;
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_engine_still_stops_the_watcher() {
        let finished = AtomicBool::new(false);
        let t0 = Instant::now();
        let r = std::panic::catch_unwind(|| {
            std::thread::scope(|s| {
                let watcher = s.spawn(|| {
                    // Bounded, so that a missing guard fails the test instead of hanging it.
                    while !finished.load(Ordering::Relaxed)
                        && t0.elapsed() < Duration::from_secs(10)
                    {
                        std::thread::park_timeout(Duration::from_secs(10));
                    }
                });
                let _done = Finished(&finished, watcher.thread().clone());
                panic!("the engine failed");
            })
        });
        assert!(r.is_err());
        assert!(finished.load(Ordering::Relaxed));
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    }

    fn action(kind: ActionKind, outcome: &str, latency_ns: u64, after: Option<u64>) -> Action {
        Action {
            t_ms: 0.0,
            pid: 1,
            start: 0,
            len_bytes: 2 << 20,
            kind,
            outcome: outcome.into(),
            latency_ns,
            huge_bytes_after: after,
            tried_again: false,
        }
    }

    #[test]
    fn totals_count_what_read_back() {
        let log = Log {
            actions: vec![
                action(ActionKind::Promote, "ok", 300, Some(2 << 20)),
                action(ActionKind::Promote, "ok", 100, Some(2 << 20)),
                // The kernel said yes but the chunk did not read back huge: a failure.
                action(ActionKind::Promote, "ok", 200, Some(0)),
                action(ActionKind::Promote, "EAGAIN", 50, Some(0)),
                // An attempt tried again: neither a failure nor a collapse's latency.
                Action {
                    tried_again: true,
                    ..action(ActionKind::Promote, "EAGAIN", 9_000, Some(0))
                },
                action(ActionKind::Promote, "gone", 0, None),
                action(ActionKind::Demote, "ok", 10, Some(0)),
            ],
            intervals: vec![Interval {
                t_ms: 1000.0,
                budget_bytes: 4 << 20,
                huge_bytes_after: 4 << 20,
                cpu_ns: 5_000_000,
                ..Interval::default()
            }],
            wall_ns: 1_000_000_000,
            ..Log::default()
        };
        let t = log.totals();
        assert_eq!((t.promoted, t.promote_failed, t.demoted), (2, 2, 1));
        // Latencies 50, 100, 200, 300: the median index rounds (3 * 0.5 = 1.5) to 2.
        assert_eq!(
            (t.collapse_p50_ns, t.collapse_p99_ns),
            (Some(200), Some(300))
        );
        assert_eq!(t.daemon_core_share, Some(0.005));
        assert_eq!(t.reach_budget_ms, Some(1000.0));
        assert_eq!(t.huge_bytes_final, Some(4 << 20));
        // The interval did not say how many of its splits were swaps: unknown, not none.
        assert_eq!(t.swaps, None);
        // No compaction: absent, not zero.
        assert_eq!((t.compactions, t.compaction_cpu_ns), (None, None));
    }

    #[test]
    fn compactions_add_up_to_their_share_of_a_core() {
        let free = hugewise_results::promote::FreeBlocks {
            free_bytes: 0,
            free_2m_blocks: 0,
            unusable_index: 0.0,
        };
        let compaction = |cpu_ns| hugewise_results::promote::Compaction {
            t_ms: 0.0,
            why: String::new(),
            aim_bytes: 2 << 20,
            lever: "node".into(),
            nodes: vec![0],
            wall_ns: cpu_ns,
            cpu_ns,
            migrated_bytes: None,
            before: free,
            after: free,
            error: None,
        };
        let log = Log {
            intervals: vec![
                Interval {
                    compaction: Some(compaction(30_000_000)),
                    ..Interval::default()
                },
                Interval::default(),
                Interval {
                    compaction: Some(compaction(10_000_000)),
                    ..Interval::default()
                },
            ],
            wall_ns: 4_000_000_000,
            ..Log::default()
        };
        let t = log.totals();
        // 40 ms over 4 s: 1 % of a core.
        assert_eq!(t.compactions, Some(2));
        assert_eq!(t.compaction_cpu_ns, Some(40_000_000));
        assert_eq!(t.compaction_core_share, Some(0.01));
    }

    #[test]
    fn swaps_add_up_over_intervals_and_are_unknown_for_a_replay() {
        let iv = |swaps| Interval {
            swaps,
            ..Interval::default()
        };
        let daemon = |ivs: Vec<Interval>| {
            Log {
                intervals: ivs,
                ..Log::default()
            }
            .totals()
            .swaps
        };
        assert_eq!(daemon(vec![iv(Some(1)), iv(Some(0)), iv(Some(2))]), Some(3));
        assert_eq!(daemon(vec![iv(Some(1)), iv(None)]), None);
        assert_eq!(Log::default().totals().swaps, None);
    }
}
