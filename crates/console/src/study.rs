//! A study as it runs: a bar across its runs in estimated seconds on a terminal (so that its
//! rate and ETA are the study's), one line per finished run with the time left, and what
//! failed and its headlines at the end.

use std::path::Path;
use std::time::Duration;

use hugewise_bench::save;
use hugewise_bench::worker::StudyTask;
use hugewise_results::collection;
use hugewise_results::meta::Meta;
use hugewise_results::study::{PlannedRun, StudyPlan};
use hugewise_study::runner::{Observer, Outcome};
use hugewise_study::task::{self, TaskReply};
use hugewise_sys::read;
use indicatif::{ProgressBar, ProgressStyle};

use crate::emit::json_stdout;
use crate::progress::Mode;
use crate::{Error, Result};

/// `59 s`, `2 min 05 s` from a minute on, `1 h 11 min` from an hour.
pub fn duration(s: f64) -> String {
    hugewise_report::fmt::duration(s)
}

/// Progress across a study's runs; an [`Observer`] of its runner.
pub struct Progress {
    mode: Mode,
    bar: ProgressBar,
    total_est: f64,
    done_est: f64,
    run_est: f64,
    run_label: String,
    phase: String,
    /// Real seconds per estimated second, from the runs done so far.
    real_per_est: Option<f64>,
}

impl Progress {
    /// Progress over the runs of `plan` that will run (`only`, or all when empty), with a
    /// first line saying how many, how long by estimate and where their results go.
    pub fn start(mode: Mode, plan: &StudyPlan, only: &[String], dir: &Path) -> Progress {
        let chosen: Vec<&PlannedRun> = plan
            .runs
            .iter()
            .filter(|r| only.is_empty() || only.contains(&r.id))
            .collect();
        let total_est: f64 = chosen.iter().map(|r| r.estimate_s).sum();
        let bar = if mode == Mode::Terminal {
            let b = ProgressBar::new(total_est.ceil().max(1.0) as u64);
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {percent:>3}% ETA {eta}  {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        } else {
            ProgressBar::hidden()
        };
        let p = Progress {
            mode,
            bar,
            total_est,
            done_est: 0.0,
            run_est: 0.0,
            run_label: String::new(),
            phase: String::new(),
            real_per_est: None,
        };
        // The count is of the ids asked for, as given (an unknown one fails in the runner).
        let runs = if only.is_empty() {
            plan.runs.len()
        } else {
            only.len()
        };
        p.say(format!(
            "study {}{}{}: {runs} runs, about {} by estimate; results in {}",
            plan.preset,
            if plan.quick { " --quick" } else { "" },
            plan.scale
                .map_or(String::new(), |s| format!(" --scale {s}")),
            duration(total_est),
            dir.display()
        ));
        p
    }

    /// Clear the bar: the runs are over.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn say(&self, line: String) {
        match self.mode {
            Mode::Off => {}
            Mode::Terminal => self.bar.println(line),
            Mode::Lines => eprintln!("{line}"),
        }
    }

    fn redraw(&self) {
        self.bar
            .set_message(format!("{}: {}", self.run_label, self.phase));
    }
}

impl Observer for Progress {
    fn started(&mut self, index: usize, total: usize, run: &PlannedRun) {
        self.run_est = run.estimate_s;
        self.run_label = format!("[{}/{}] {}", index + 1, total, run.id);
        self.phase = "starting".into();
        self.bar.set_position(self.done_est as u64);
        self.redraw();
    }

    fn phase(&mut self, phase: &str) {
        self.phase = phase.to_string();
        self.redraw();
    }

    fn progress(&mut self, done: u64, total: u64) {
        if total > 0 && self.phase == "timing" {
            let within = self.run_est * done as f64 / total as f64;
            self.bar.set_position((self.done_est + within) as u64);
        }
    }

    fn finished(&mut self, _index: usize, run: &PlannedRun, outcome: &Outcome) {
        self.done_est += run.estimate_s;
        self.bar.set_position(self.done_est as u64);
        let status = match outcome {
            Outcome::Done {
                wall_s,
                busy_samples,
                ..
            } => {
                let ratio = wall_s / run.estimate_s.max(1.0);
                self.real_per_est = Some(match self.real_per_est {
                    Some(r) => 0.5 * (r + ratio),
                    None => ratio,
                });
                format!(
                    "done in {}{}",
                    duration(*wall_s),
                    if *busy_samples > 0 {
                        format!(", {busy_samples} samples timed while the machine was busy (*)")
                    } else {
                        String::new()
                    }
                )
            }
            Outcome::Kept(_) => "kept (finished before)".into(),
            Outcome::Failed(e) => format!("FAILED: {e}"),
        };
        let left = (self.total_est - self.done_est).max(0.0) * self.real_per_est.unwrap_or(1.0);
        self.say(format!(
            "{} {status}{}",
            self.run_label,
            if left >= 1.0 {
                format!("; about {} left", duration(left))
            } else {
                String::new()
            }
        ));
    }
}

/// A study's end: its directory read once, its headlines printed (as JSON when `json`), and
/// unless `only_some` runs ran (a scheduler's tasks, beside each other) its report.html
/// written and named on stderr when progress is shown.
pub fn finish(dir: &Path, json: bool, only_some: bool, mode: Mode) -> Result<()> {
    let c = collection::load(std::slice::from_ref(&dir.to_path_buf()), &read::result).map_err(
        |source| Error::Results {
            dir: dir.to_path_buf(),
            source,
        },
    )?;
    if json {
        json_stdout(&c.headlines(0))?;
    } else {
        print!("{}", hugewise_report::views::study::finished(&c, 0));
    }
    // Runs picked with --run are a scheduler's tasks, running at once beside each other: each
    // writes its own result file only, and the report is left to whoever reads the whole
    // directory.
    if !only_some {
        let report = dir.join("report.html");
        save::write_atomic(&report, hugewise_report::html::render(&c).as_bytes())?;
        if mode != Mode::Off {
            eprintln!("report: {}", report.display());
        }
    }
    Ok(())
}

/// Say which runs failed and how to run them again; true when one did.
pub fn failures(outcomes: &[(String, Outcome)]) -> bool {
    let mut failed = 0;
    for (id, o) in outcomes {
        if let Outcome::Failed(e) = o {
            eprintln!("hugewise: run {id} failed: {e}");
            failed += 1;
        }
    }
    if failed > 0 {
        eprintln!(
            "hugewise: {failed} of {} runs failed; fix the cause and give --resume to run them \
             again",
            outcomes.len()
        );
    }
    failed > 0
}

/// Serve a scheduler's task (`hugewise worker` with a study request): its run checked against
/// the study directory, then run with progress over that run alone.
pub fn serve_task(
    mode: Mode,
    t: &StudyTask,
    meta: &dyn Fn() -> Meta,
    cancel: &std::sync::atomic::AtomicBool,
) -> hugewise_bench::Result<TaskReply> {
    let prepared = task::prepare(t, meta)?;
    let only = std::slice::from_ref(&prepared.run);
    let mut progress = Progress::start(mode, &prepared.plan, only, &t.dir);
    let reply = task::serve(t, &prepared, meta, &mut progress, &|| {
        cancel.load(std::sync::atomic::Ordering::Relaxed)
    });
    progress.finish();
    reply
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn durations_read_in_seconds_then_minutes() {
        assert_eq!(duration(59.4), "59 s");
        assert_eq!(duration(125.0), "2 min 05 s");
        assert_eq!(duration(-3.0), "0 s");
    }
}
