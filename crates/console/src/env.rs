//! A machine being shaped: one progress step per phase (bytes for memory taken, blocks for
//! fragmentation), and each stage's report on stderr as it is reached.

use hugewise_env::scoped::{self, Plan, Stage, Then};
use hugewise_env::Host;
use hugewise_report::views;
use hugewise_results::env::ShapedRun;

use crate::progress::{Mode, Steps, Unit};
use crate::{Error, Result};

/// Shape this machine by `plan`, do `then` and put everything back (see
/// [`scoped::shape_and`]), showing progress by `mode` and, when `text`, each stage's report
/// on stderr.
pub fn shape_and(
    plan: &Plan,
    then: &Then,
    cancel: &dyn Fn() -> bool,
    mode: Mode,
    text: bool,
) -> Result<ShapedRun> {
    let mut sink = steps(mode);
    let mut show = |stage: Stage<'_>| {
        if text {
            eprint!("{}", stage_text(stage));
        }
    };
    match scoped::shape_and(&Host::real(), plan, then, cancel, &mut sink, &mut show) {
        Ok(r) => Ok(r),
        Err(hugewise_env::Error::Interrupted) => Err(Error::Interrupted),
        Err(e) => Err(e.into()),
    }
}

/// What a stage shows.
fn stage_text(stage: Stage<'_>) -> String {
    match stage {
        Stage::Shaped(r) => views::env::shape(r),
        Stage::Holding(Some(d)) => format!(
            "hugewise: holding for {:.0} s (Ctrl-C ends it early)\n",
            d.as_secs_f64()
        ),
        Stage::Holding(None) => "hugewise: holding until Ctrl-C\n".to_string(),
        Stage::Ran(r) => views::env::run_outcome(r),
        Stage::Finished(f) => views::env::finish(f),
    }
}

/// Progress of shaping: a step per phase.
fn steps(mode: Mode) -> impl FnMut(&str, u64, u64) {
    let mut current: Option<(String, Steps)> = None;
    move |phase: &str, done: u64, total: u64| {
        if current.as_ref().is_none_or(|(p, _)| p != phase) {
            if let Some((_, s)) = current.take() {
                s.finish();
            }
            let unit = if phase == "fragment" {
                Unit::Items
            } else {
                Unit::Bytes
            };
            current = Some((phase.to_string(), Steps::new(mode, phase, unit)));
        }
        if let Some((_, s)) = &current {
            s.update(done, total);
        }
    }
}
