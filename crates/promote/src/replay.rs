//! Replay of a promotion plan against one target: each step's range is promoted (or demoted)
//! when its time comes (times from the engine's start), on the calling thread or a background one, until the
//! plan ends, the target exits or the caller cancels. Every step is recorded, refusals included.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::action::{Action, ActionKind};
use crate::target::Target;
use crate::{Error, Result, HUGE};

/// One promotion or demotion to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// When, from the engine's start.
    pub at: Duration,
    /// Whole 2 MiB chunks of the target.
    pub range: Range<usize>,
    /// Promote or demote.
    pub kind: ActionKind,
}

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replayed {
    /// Every action taken, in order: one per 2 MiB chunk, so each has its own latency.
    pub actions: Vec<Action>,
    /// The target exited before the plan ended.
    pub target_gone: bool,
    /// The caller cancelled before the plan ended.
    pub cancelled: bool,
}

/// Times a step the kernel refused with `EAGAIN` is tried again.
pub const AGAIN_RETRIES: u32 = 2;

/// Pause before trying a step again.
const AGAIN_PAUSE: Duration = Duration::from_millis(20);

/// Apply `steps` (sorted by time) to `target` from `t0`, one 2 MiB chunk per call, sleeping
/// until each step is due in slices short enough to notice `cancel` within 50 ms. Each
/// collapse is preceded by a warm page (see [`crate::warm`]).
pub fn replay(
    target: &Target,
    steps: &[Step],
    t0: Instant,
    cancel: &AtomicBool,
    on_action: &mut dyn FnMut(&Action),
) -> Result<Replayed> {
    let mut out = Replayed::default();
    for step in steps {
        loop {
            if cancel.load(Ordering::Relaxed) {
                out.cancelled = true;
                return Ok(out);
            }
            let now = t0.elapsed();
            if now >= step.at {
                break;
            }
            std::thread::sleep((step.at - now).min(Duration::from_millis(50)));
        }
        for chunk in step.range.clone().step_by(HUGE) {
            if cancel.load(Ordering::Relaxed) {
                out.cancelled = true;
                return Ok(out);
            }
            for attempt in 0..=AGAIN_RETRIES {
                let done = match step.kind {
                    ActionKind::Promote => {
                        // As the daemon's: the copy lands on memory already backed.
                        crate::warm::warm_page();
                        target.promote(chunk..chunk + HUGE)
                    }
                    ActionKind::Demote => target.demote(chunk..chunk + HUGE),
                    ActionKind::Release => target.release(chunk..chunk + HUGE),
                };
                let a = match done {
                    Ok(a) => a,
                    Err(Error::Gone { .. }) => {
                        // No attempt followed the last one: it is the step's outcome.
                        if let Some(last) = out.actions.last_mut().filter(|_| attempt > 0) {
                            last.tried_again = false;
                        }
                        out.target_gone = true;
                        return Ok(out);
                    }
                    Err(e) => return Err(e),
                };
                let gone = a.outcome == "gone";
                let again = a.outcome == "EAGAIN" && attempt < AGAIN_RETRIES;
                let a = Action {
                    tried_again: again,
                    ..a
                };
                on_action(&a);
                out.actions.push(a);
                if gone {
                    out.target_gone = true;
                    return Ok(out);
                }
                if !again {
                    break;
                }
                // The kernel could not take the pages this time (pages still in a CPU's LRU
                // batch just after they were faulted, or being migrated): a plan's step is
                // due now, so it is tried again shortly, each attempt logged.
                std::thread::sleep(AGAIN_PAUSE);
            }
        }
    }
    Ok(out)
}
