//! `hugewise study`: a preset expanded into a plan, run with progress across runs, its
//! headlines printed and its report written.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use anyhow::Context;
use clap::Args;
use hugewise_console::emit::json_or_text;
use hugewise_console::progress::Mode;
use hugewise_console::study::{self, failures, Progress};
use hugewise_mem::Threads;
use hugewise_report::views;
use hugewise_study::presets;
use hugewise_study::runner;
use hugewise_study::slurm;

use crate::cli::args::{cpus, meta, Output};
use crate::signals::cancel_flag;

/// The presets, for `--help`.
pub fn help() -> String {
    format!("{}{EXAMPLES}{}", presets::listing(), slurm::HELP)
}

const EXAMPLES: &str = "
Examples:
  hugewise study quick                      the headline table and report.html in study-quick/
  hugewise study fragmentation --dry-run    the plan and its estimated time, nothing run
  hugewise study selectivity --quick        the shortened variant
  hugewise study pressure --resume          finish a study stopped by a crash or Ctrl-C
  hugewise study utility --run real-pr-kron22-frag50   one run of the plan

A study writes study.json (its plan) and runs/<id>.json (one result per run, as soon as it
exists, atomically) into --out, then prints its headlines against the seed papers' numbers and
writes report.html. Each run compares its layouts alternated round by round in one process,
so every ratio is measured in the same run; a sample timed while other processes kept the CPUs
busy is marked `*`. Runs in a machine shape (pressure, fragmentation) need root; the machine
is put back after each run, also on error or Ctrl-C.

";

/// `hugewise study`.
#[derive(Debug, Args)]
pub struct StudyArgs {
    /// The preset (see below).
    #[arg(value_parser = |s: &str| presets::about(s).map(|a| a.name.to_string()))]
    pub preset: String,
    /// The shortened variant: smaller graphs, fewer rounds and steps.
    #[arg(long)]
    pub quick: bool,
    /// The study directory [default: `study-PRESET`].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The Kronecker scale of the graph the measured runs of `page-size` and `quick` load
    /// (`kron:N`, in place of kron:24 and kron:22; --quick: 22 and 20); simulated curves keep
    /// their traces, and the shaped presets their scale. At 26 (8.3 GiB of graph) a run whose
    /// layouts need copies of the graph builds them one at a time (see `bench pages
    /// --copies`); SSSP's weighted kron:26 (16 GiB) and a copy do not fit 24 GiB, and its run is
    /// refused with the sizes (`--run pr-kron26` runs one kernel).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(8..=30))]
    pub scale: Option<u32>,
    /// Rounds per comparison, each running every layout once [default: 5, --quick 3].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Finish a study in --out: keep the runs already saved, run the rest.
    #[arg(long)]
    pub resume: bool,
    /// Print the plan and its estimated time; run nothing, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run only this run of the plan (repeatable); others in --out are kept.
    #[arg(long = "run", value_name = "ID")]
    pub runs: Vec<String>,
    /// Worker threads of each kernel, 1 or more (default: one per CPU).
    #[arg(long, value_parser = Threads::count)]
    pub threads: Option<usize>,
    /// Seed of generated graphs and of sources.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the plan (with --dry-run) or the headlines as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write a batch job of one task per run into --out instead of running (see below).
    #[arg(long, value_enum, value_name = "SCHEDULER", conflicts_with_all = ["dry_run", "resume", "runs"])]
    pub emit: Option<Emit>,
}

/// Schedulers a study can be handed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// A Slurm array job.
    Slurm,
}

/// Run the study (or print its plan, or write its batch job); 1 when a run failed.
pub fn run(a: StudyArgs, mode: Mode) -> anyhow::Result<u8> {
    let threads = a.threads.unwrap_or_else(cpus);
    let opts = presets::Options {
        quick: a.quick,
        scale: a.scale,
        repeat: a.repeat,
        threads,
    };
    let plan = presets::expand(&a.preset, &opts)?;
    if a.dry_run {
        Output::json(a.json).emit(plan, views::study::plan)?;
        return Ok(0);
    }
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("study-{}", a.preset)));
    if let Some(Emit::Slurm) = a.emit {
        // Nothing runs here: the plan and its array job are written into the directory.
        let exe = std::env::current_exe().context("finding the hugewise binary the tasks run")?;
        let job = slurm::SlurmJob {
            seed: Some(a.seed),
            ..slurm::SlurmJob::new(exe)
        };
        let e = slurm::emit(&plan, &job, &dir)
            .with_context(|| format!("writing a Slurm job into {}", dir.display()))?;
        json_or_text(a.json, &e, &e.describe())?;
        return Ok(0);
    }
    // A single run of a plan (a scheduler's task) shares the directory with its siblings.
    let resume = a.resume || !a.runs.is_empty();
    let plan = runner::prepare(&dir, &plan, meta(), resume)
        .with_context(|| format!("preparing {}", dir.display()))?;
    let cancel = cancel_flag()?;
    let mut progress = Progress::start(mode, &plan, &a.runs, &dir);
    let ropts = runner::Options {
        dir: dir.clone(),
        resume,
        only: a.runs.clone(),
        seed: a.seed,
        exe: std::env::current_exe().ok(),
    };
    let outcomes = runner::execute(&plan, &ropts, &meta, &mut progress, &|| {
        cancel.load(Ordering::Relaxed)
    });
    progress.finish();
    let outcomes = outcomes.with_context(|| {
        format!(
            "study {} in {} (finished runs are kept: --resume goes on)",
            plan.preset,
            dir.display()
        )
    })?;
    // The directory is read once, for the headlines and the report alike.
    study::finish(&dir, a.json, !a.runs.is_empty(), mode)?;
    Ok(u8::from(failures(&outcomes)))
}
