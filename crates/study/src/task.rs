//! A scheduler's task: one run of a study's plan, asked of `hugewise worker` by a typed
//! [`StudyTask`] (a Slurm array job's script hands every task the same request file; the
//! task's index picks its run).

use std::path::{Path, PathBuf};

use hugewise_bench::worker::StudyTask;
use hugewise_bench::{Error, Result};
use hugewise_results::meta::Meta;
use hugewise_results::study::StudyPlan;
use hugewise_sys::read::{bounded_string, Bound};
use serde::{Deserialize, Serialize};

use crate::presets;
use crate::runner::{self, Observer, Outcome};

/// The environment variable holding a Slurm array task's index.
pub const ARRAY_INDEX: &str = "SLURM_ARRAY_TASK_ID";

/// The file, in a study directory, listing the plan's run ids one a line: line `i` (from 0)
/// is array task `i`'s.
pub fn runs_file(dir: &Path) -> PathBuf {
    dir.join("slurm").join("runs.txt")
}

/// The file, in a study directory, holding the [`StudyTask`] request every array task sends.
pub fn request_file(dir: &Path) -> PathBuf {
    dir.join("slurm").join("task.json")
}

/// The task that runs the run `run` of `plan` in `dir` (`None`: the run an array task's index
/// picks), with the options it was expanded with.
pub fn request(plan: &StudyPlan, dir: &Path, seed: u64, run: Option<String>) -> StudyTask {
    StudyTask {
        dir: dir.to_path_buf(),
        preset: plan.preset.clone(),
        quick: plan.quick,
        scale: plan.scale,
        repeat: plan.repeat,
        threads: plan.threads.max(1),
        seed,
        run,
    }
}

/// What a served task replies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskReply {
    /// The run's id.
    pub run: String,
    /// Its result file.
    pub path: PathBuf,
    /// Whether an earlier task had already finished it (nothing ran).
    pub kept: bool,
    /// Wall time of the run, shaping included (`None` when kept).
    pub wall_s: Option<f64>,
}

/// A task checked against its study directory: the plan saved there and the run to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The study's plan, as `dir/study.json` holds it.
    pub plan: StudyPlan,
    /// The run's id.
    pub run: String,
}

/// Find the task's run (by id, or by the array task's index) and check that the preset,
/// expanded again with the task's options, is the study the directory holds.
pub fn prepare(task: &StudyTask, meta: &dyn Fn() -> Meta) -> Result<Prepared> {
    let run = match &task.run {
        Some(id) => id.clone(),
        None => array_run(&task.dir, std::env::var(ARRAY_INDEX).ok().as_deref())?,
    };
    let plan = presets::expand(
        &task.preset,
        &presets::Options {
            quick: task.quick,
            scale: task.scale,
            repeat: Some(task.repeat),
            threads: task.threads,
        },
    )?;
    let plan = runner::prepare(&task.dir, &plan, meta(), true)?;
    if !plan.runs.iter().any(|r| r.id == run) {
        return Err(Error::Config(format!(
            "the study in {} has no run {run:?}",
            task.dir.display()
        )));
    }
    Ok(Prepared { plan, run })
}

/// Run the prepared task's run in its study directory, reporting to `obs`. A run that fails
/// is an error, so that the scheduler counts the task as failed.
pub fn serve(
    task: &StudyTask,
    prepared: &Prepared,
    meta: &dyn Fn() -> Meta,
    obs: &mut dyn Observer,
    cancel: &dyn Fn() -> bool,
) -> Result<TaskReply> {
    let id = &prepared.run;
    let opts = runner::Options {
        dir: task.dir.clone(),
        resume: true,
        only: vec![id.clone()],
        seed: task.seed,
        exe: std::env::current_exe().ok(),
    };
    let outcomes = runner::execute(&prepared.plan, &opts, meta, obs, cancel)?;
    match outcomes.into_iter().find(|(run, _)| run == id) {
        Some((run, Outcome::Done { path, wall_s, .. })) => Ok(TaskReply {
            run,
            path,
            kept: false,
            wall_s: Some(wall_s),
        }),
        Some((run, Outcome::Kept(path))) => Ok(TaskReply {
            run,
            path,
            kept: true,
            wall_s: None,
        }),
        Some((run, Outcome::Failed(why))) => Err(Error::Config(format!("run {run}: {why}"))),
        None => Err(Error::Config(format!("run {id} did not run"))),
    }
}

/// The run id on line `index` (from 0) of the study's runs file.
fn array_run(dir: &Path, index: Option<&str>) -> Result<String> {
    let index = index.ok_or_else(|| {
        Error::Config(format!(
            "the task names no run and {ARRAY_INDEX} is not set: run the study's script with \
             sbatch, as an array job"
        ))
    })?;
    let i: usize = index.trim().parse().map_err(|_| {
        Error::Config(format!(
            "{ARRAY_INDEX}={index:?} is not an array task's index"
        ))
    })?;
    let path = runs_file(dir);
    let text = bounded_string(&path, Bound::SETTINGS).map_err(|source| Error::Open {
        path: path.clone(),
        source,
    })?;
    text.lines()
        .nth(i)
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            Error::Config(format!(
                "{}: no run for array task {i} (the file lists {})",
                path.display(),
                text.lines().count()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with_runs(runs: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(d.path().join("slurm")).expect("mkdir");
        std::fs::write(runs_file(d.path()), runs).expect("runs.txt");
        d
    }

    #[test]
    fn an_array_index_picks_its_line_from_zero() {
        let d = dir_with_runs("a\nb\nc");
        assert_eq!(array_run(d.path(), Some("0")).expect("run"), "a");
        assert_eq!(array_run(d.path(), Some("2")).expect("run"), "c");
    }

    #[test]
    fn an_index_past_the_runs_or_not_a_number_or_missing_is_refused_by_name() {
        let d = dir_with_runs("a\nb");
        let past = array_run(d.path(), Some("2"))
            .expect_err("refused")
            .to_string();
        assert!(
            past.contains("no run for array task 2") && past.contains("lists 2"),
            "{past}"
        );
        let bad = array_run(d.path(), Some("x1"))
            .expect_err("refused")
            .to_string();
        assert!(bad.contains(ARRAY_INDEX), "{bad}");
        let none = array_run(d.path(), None).expect_err("refused").to_string();
        assert!(none.contains("sbatch"), "{none}");
    }

    #[test]
    fn a_missing_runs_file_is_named() {
        let d = tempfile::tempdir().expect("tmp");
        let e = array_run(d.path(), Some("0")).expect_err("refused");
        let chain = format!("{e} {:?}", std::error::Error::source(&e));
        assert!(chain.contains("runs.txt"), "{chain}");
    }
}
