//! One promotion session as a user runs it: targets attached by pid or launched, a plan
//! replayed or the daemon run until the targets exit or the user stops it, and everything
//! that happened kept as data for the result file.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::action::{Action, ActionKind};
use crate::daemon::{Daemon, Interval};
use crate::replay::{replay, Step};
use crate::target::Target;
use crate::Result;
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
            .filter(|a| a.kind == ActionKind::Promote && a.outcome != "gone")
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
        Totals {
            promoted,
            promote_failed: promotes.len() as u64 - promoted,
            demoted: self
                .actions
                .iter()
                .filter(|a| a.kind == ActionKind::Demote && a.succeeded() && a.outcome == "ok")
                .count() as u64,
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
    }
}
