//! `hugewise study`: a preset expanded into a plan, run with progress across runs, its
//! headlines printed and its report written.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use hugewise_report::studyview;
use hugewise_results::collection;
use hugewise_results::study::{PlannedRun, StudyPlan};
use hugewise_results::Saved;
use hugewise_study::presets::{self, PRESETS};
use hugewise_study::runner::{self, Observer, Outcome};
use hugewise_study::slurm;
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::args::{cpus, parse_threads};
use crate::output::meta;
use crate::progress::Mode;
use crate::signals::cancel_flag;

/// The presets, for `--help`.
pub fn help() -> String {
    let mut s = String::from("Presets (each answers one question):\n");
    for p in PRESETS {
        s.push_str(&format!(
            "  {}\n      {}\n      Reproduces {}.\n      Needs {}.\n",
            p.name, p.question, p.reproduces, p.needs
        ));
    }
    s.push_str(
        "
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

",
    );
    s.push_str(slurm::HELP);
    s
}

/// `hugewise study`.
#[derive(Debug, Args)]
pub struct StudyArgs {
    /// The preset (see below).
    #[arg(value_parser = parse_preset)]
    pub preset: String,
    /// The shortened variant: smaller graphs, fewer rounds and steps.
    #[arg(long)]
    pub quick: bool,
    /// The study directory [default: `study-PRESET`].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
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
    #[arg(long, value_parser = parse_threads)]
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

fn parse_preset(s: &str) -> Result<String, String> {
    presets::about(s)
        .map(|a| a.name.to_string())
        .map_err(|e| e.to_string())
}

fn duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s < 60 {
        format!("{s} s")
    } else {
        format!("{} min {:02} s", s / 60, s % 60)
    }
}

/// Progress across runs: a bar in estimated seconds on a terminal (so its rate and ETA are the
/// study's), one line per finished run otherwise.
struct Progress {
    mode: Mode,
    bar: ProgressBar,
    total_est: f64,
    done_est: f64,
    run_est: f64,
    run_label: String,
    phase: String,
    started: Instant,
    real_per_est: Option<f64>,
}

impl Progress {
    fn new(mode: Mode, plan: &StudyPlan, chosen: f64) -> Progress {
        let bar = if mode == Mode::Terminal {
            let b = ProgressBar::new(chosen.ceil().max(1.0) as u64);
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
        let _ = plan;
        Progress {
            mode,
            bar,
            total_est: chosen,
            done_est: 0.0,
            run_est: 0.0,
            run_label: String::new(),
            phase: String::new(),
            started: Instant::now(),
            real_per_est: None,
        }
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
        self.started = Instant::now();
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

/// `--emit slurm`: the plan and its array job in `dir`; nothing runs here.
fn emit_slurm(plan: &StudyPlan, dir: &Path, seed: u64, json: bool) -> anyhow::Result<u8> {
    let exe = std::env::current_exe().context("finding the hugewise binary the tasks run")?;
    let job = slurm::SlurmJob {
        seed: Some(seed),
        ..slurm::SlurmJob::new(exe)
    };
    let e = slurm::emit(plan, &job, dir)
        .with_context(|| format!("writing a Slurm job into {}", dir.display()))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&e)?);
    } else {
        print!("{}", e.describe());
    }
    Ok(0)
}

/// Run the study (or print its plan, or write its batch job); 1 when a run failed.
pub fn run(a: StudyArgs, mode: Mode) -> anyhow::Result<u8> {
    let opts = presets::Options {
        quick: a.quick,
        repeat: a.repeat,
        threads: a.threads.unwrap_or_else(cpus),
    };
    let plan = presets::expand(&a.preset, &opts)?;
    if a.dry_run {
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&Saved::new(meta(), plan))?
            );
        } else {
            print!("{}", studyview::plan(&plan));
        }
        return Ok(0);
    }
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("study-{}", a.preset)));
    if let Some(Emit::Slurm) = a.emit {
        return emit_slurm(&plan, &dir, a.seed, a.json);
    }
    // A single run of a plan (a scheduler's task) shares the directory with its siblings.
    let resume = a.resume || !a.runs.is_empty();
    let plan = runner::prepare(&dir, &plan, meta(), resume)
        .with_context(|| format!("preparing {}", dir.display()))?;
    let cancel = cancel_flag()?;
    let chosen: f64 = plan
        .runs
        .iter()
        .filter(|r| a.runs.is_empty() || a.runs.contains(&r.id))
        .map(|r| r.estimate_s)
        .sum();
    let mut progress = Progress::new(mode, &plan, chosen);
    if mode != Mode::Off {
        progress.say(format!(
            "study {}{}: {} runs, about {} by estimate; results in {}",
            plan.preset,
            if plan.quick { " --quick" } else { "" },
            if a.runs.is_empty() {
                plan.runs.len()
            } else {
                a.runs.len()
            },
            duration(chosen),
            dir.display()
        ));
    }
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
    progress.bar.finish_and_clear();
    let outcomes = outcomes.with_context(|| {
        format!(
            "study {} in {} (finished runs are kept: --resume goes on)",
            plan.preset,
            dir.display()
        )
    })?;
    let failed: Vec<&(String, Outcome)> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
        .collect();
    // The directory is read once, for the headlines and the report alike.
    let c = collection::load(std::slice::from_ref(&dir), &hugewise_sys::read::result)
        .with_context(|| format!("reading the results in {}", dir.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&c.headlines(0))?);
    } else {
        print!("{}", studyview::finished(&c, 0));
    }
    // Runs picked with --run are a scheduler's tasks, running at once beside each other: each
    // writes its own result file only, and the report is left to whoever reads the whole
    // directory.
    if a.runs.is_empty() {
        let report = dir.join("report.html");
        hugewise_bench::save::write_atomic(&report, hugewise_report::html::render(&c).as_bytes())?;
        if mode != Mode::Off {
            eprintln!("report: {}", report.display());
        }
    }
    if !failed.is_empty() {
        for (id, o) in &failed {
            if let Outcome::Failed(e) = o {
                eprintln!("hugewise: run {id} failed: {e}");
            }
        }
        eprintln!(
            "hugewise: {} of {} runs failed; fix the cause and give --resume to run them again",
            failed.len(),
            outcomes.len()
        );
        return Ok(1);
    }
    Ok(0)
}
