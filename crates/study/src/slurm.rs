//! A study as a Slurm array job: one array task per planned run, each handing `hugewise
//! worker` the same typed request ([`crate::task`]) on whichever node Slurm gives it, running
//! the run its array index picks and writing its own `DIR/runs/<id>.json`. Tasks never write the same file, so the directory fills up
//! exactly as a local run would fill it, and `hugewise report` reads or merges it the same way.
//!
//! Slurm does the scheduling; [`emit`] only writes files beside the plan:
//!
//! - `DIR/study.json`: the plan every task reads, so that all of them run the same plan;
//! - `DIR/slurm/runs.txt`: one run id per line; array task `i` runs the id on line `i`
//!   (counting from 0);
//! - `DIR/slurm/task.json`: the request every task sends its worker (the study's preset,
//!   options and directory, as versioned data: no command line to keep in step with flags);
//! - `DIR/slurm/study.sbatch`: the batch script, with its resources as `#SBATCH` lines.
//!
//! An array job asks for the same resources in every task, so the script asks for what the
//! largest run needs: the longest estimate times a margin, and the largest memory estimate.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use hugewise_mem::Bytes;
use hugewise_results::study::{PlannedRun, StudyPlan};
use serde::Serialize;

use hugewise_bench::save::write_atomic;
use hugewise_bench::{Error, Result};

use hugewise_bench::worker::{self, Request};

use crate::{runner, task};

/// What `hugewise study --help` says about `--emit slurm`.
pub const HELP: &str = "\
Sweeps on a Slurm cluster (--emit slurm):
  hugewise study page-size --out /shared/page-size --emit slurm
  sbatch --exclusive /shared/page-size/slurm/study.sbatch
  hugewise report /shared/page-size /shared/other-cluster/page-size --out report.html

--emit slurm runs nothing: it writes the plan (DIR/study.json), DIR/slurm/runs.txt (one run id
per line), DIR/slurm/task.json (the request each task hands this hugewise) and
DIR/slurm/study.sbatch, an array job of one task per run, and prints the sbatch command.
Array task i runs the run on line i of runs.txt, as `hugewise study PRESET --out DIR --run ID`
would, and writes DIR/runs/<id>.json on its own, so tasks never share a file; submitting again runs only the
runs without a result. DIR and this hugewise binary must be at the same paths on the compute
nodes (a shared file system). The script asks for the plan's threads (--cpus-per-task), the
largest run's memory estimate (--mem; a whole node when runs shape the machine, which also
needs root there) and the longest run's time estimate with a margin (--time); options given
to sbatch override the script's (--partition, --account, --mem). Timed runs want a quiet
node: --exclusive keeps other jobs off it; without it the quiet check may wait, and marks
samples timed beside other work.";

/// Memory each array task asks for (`--mem`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mem {
    /// The largest run's estimate; `fallback_bytes` for runs with none (graphs read from
    /// files). Plans with shaped runs ask for the whole node.
    Estimate {
        /// Asked for when a run has no estimate.
        fallback_bytes: u64,
    },
    /// This much, whatever the runs are.
    Bytes(u64),
    /// All of a node's memory (`--mem=0`).
    WholeNode,
}

impl Default for Mem {
    fn default() -> Mem {
        Mem::Estimate {
            fallback_bytes: 4 << 30,
        }
    }
}

/// How the array job is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmJob {
    /// The hugewise binary the tasks run (made absolute); it must exist at this path on the
    /// compute nodes.
    pub hugewise: PathBuf,
    /// `--job-name`; `hugewise-<preset>` when `None`.
    pub job_name: Option<String>,
    /// `--mem`.
    pub mem: Mem,
    /// `--time` is the longest run's estimate times this, plus [`SlurmJob::time_slack_s`].
    pub time_margin: f64,
    /// Added to every task's time limit: start-up, loading, a slow node.
    pub time_slack_s: u64,
    /// A time limit of its own instead of the estimate's.
    pub time_s: Option<u64>,
    /// `--exclusive`: no other job shares the node while a run is timed.
    pub exclusive: bool,
    /// At most this many tasks at once (`--array=0-N%K`).
    pub max_parallel: Option<usize>,
    /// More `#SBATCH` options, as sbatch takes them (`--partition=short`, `--account=x`).
    pub sbatch_args: Vec<String>,
    /// `--seed` of each task (the plan does not hold it); hugewise's default when `None`.
    pub seed: Option<u64>,
}

impl SlurmJob {
    /// A job running `hugewise` with the defaults: memory and time from the plan's estimates
    /// (time: 3x plus 5 minutes), nodes shared.
    pub fn new(hugewise: impl Into<PathBuf>) -> SlurmJob {
        SlurmJob {
            hugewise: hugewise.into(),
            job_name: None,
            mem: Mem::default(),
            time_margin: 3.0,
            time_slack_s: 300,
            time_s: None,
            exclusive: false,
            max_parallel: None,
            sbatch_args: Vec::new(),
            seed: None,
        }
    }
}

/// What [`emit`] wrote and how to submit it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Emitted {
    /// The study directory, absolute.
    pub dir: PathBuf,
    /// The plan the tasks read.
    pub plan: PathBuf,
    /// One run id per line.
    pub runs: PathBuf,
    /// The request every task sends its worker.
    pub task: PathBuf,
    /// The batch script.
    pub script: PathBuf,
    /// Array tasks (one per run).
    pub tasks: usize,
    /// `--cpus-per-task`.
    pub cpus_per_task: usize,
    /// `--mem` per task; `null` for the whole node.
    pub mem_bytes: Option<u64>,
    /// `--time` per task.
    pub time_limit_s: u64,
    /// The command that submits the job.
    pub submit: String,
    /// Things to know before submitting.
    pub notes: Vec<String>,
}

impl Emitted {
    /// What `hugewise study --emit slurm` prints: the files, the resources, the notes, and
    /// the commands to submit and to read the results.
    pub fn describe(&self) -> String {
        let mem = self.mem_bytes.map_or("a whole node's memory".into(), |b| {
            format!("{} of memory", Bytes(b))
        });
        let mut s = format!(
            "a Slurm array job of {} task{}, one per run, in {}:\n  {}  the plan every task \
             reads\n  {}  one run id per line\n  {}  the request each task hands \
             its worker\n  {}  {} CPUs, {mem}, at most {} per task\n",
            self.tasks,
            if self.tasks == 1 { "" } else { "s" },
            self.dir.display(),
            self.plan.display(),
            self.runs.display(),
            self.task.display(),
            self.script.display(),
            self.cpus_per_task,
            slurm_time(self.time_limit_s),
        );
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s.push_str(&format!(
            "submit: {}\nthen:   hugewise report {} --out report.html\n",
            self.submit,
            shell_quote(&self.dir.to_string_lossy())
        ));
        s
    }
}

/// Write `plan` and its array job into the study directory `dir` (created if missing).
///
/// A directory already holding the same plan keeps it (and the results beside it: a sweep can
/// be submitted again for the runs that failed); one holding another study is refused, as
/// `hugewise study --resume` refuses it.
pub fn emit(plan: &StudyPlan, job: &SlurmJob, dir: &Path) -> Result<Emitted> {
    check_ids(&plan.runs)?;
    let dir = absolute(dir)?;
    check_dir(&dir)?;
    if let Some(a) = job.sbatch_args.iter().find(|a| a.contains('\n')) {
        return Err(Error::Config(format!("sbatch option {a:?} has a newline")));
    }
    let hugewise = absolute(&job.hugewise)?;
    let meta = hugewise_bench::meta::collect(env!("CARGO_PKG_VERSION"), std::env::args().collect());
    let plan = &runner::prepare(&dir, plan, meta, true)?;
    let plan_path = dir.join(runner::PLAN_FILE);
    let slurm_dir = dir.join("slurm");
    std::fs::create_dir_all(&slurm_dir).map_err(|source| Error::Write {
        path: slurm_dir.clone(),
        source,
    })?;

    let runs_path = task::runs_file(&dir);
    let ids: Vec<&str> = plan.runs.iter().map(|r| r.id.as_str()).collect();
    write_atomic(&runs_path, ids.join("\n").as_bytes())?;
    let task_path = task::request_file(&dir);
    let request = task::request(plan, &dir, job.seed.unwrap_or(1), None);
    let line = worker::encode(&Request::Study(request))?;
    write_atomic(&task_path, line.trim_end().as_bytes())?;

    let resources = Resources::of(plan, job);
    let script_path = slurm_dir.join("study.sbatch");
    let script = script(plan, job, &resources, &dir, &hugewise);
    write_atomic(&script_path, script.trim_end().as_bytes())?;

    let mut notes = resources.notes;
    if !job.exclusive {
        notes.push(
            "nodes are shared: add --exclusive (to sbatch or the script) so that no other job \
             runs beside a timed run"
                .into(),
        );
    }
    if plan.runs.len() > 1000 {
        notes.push(format!(
            "{} tasks: more than Slurm's default MaxArraySize allows (1001); ask the cluster's \
             limit with `scontrol show config | grep MaxArraySize`",
            plan.runs.len()
        ));
    }
    Ok(Emitted {
        submit: format!("sbatch {}", shell_quote(&script_path.to_string_lossy())),
        dir,
        plan: plan_path,
        runs: runs_path,
        task: task_path,
        script: script_path,
        tasks: plan.runs.len(),
        cpus_per_task: resources.cpus,
        mem_bytes: resources.mem_bytes,
        time_limit_s: resources.time_s,
        notes,
    })
}

/// Run ids become file names and lines of `runs.txt`: they must be unique, non-empty, and
/// hold no separator.
fn check_ids(runs: &[PlannedRun]) -> Result<()> {
    if runs.is_empty() {
        return Err(Error::Config(
            "the plan has no runs: nothing to submit".into(),
        ));
    }
    let mut seen = HashSet::new();
    for r in runs {
        let id = r.id.as_str();
        if id.is_empty() || id.starts_with('.') || id.chars().any(|c| c == '/' || c.is_control()) {
            return Err(Error::Config(format!(
                "run id {id:?} cannot name a result file"
            )));
        }
        if !seen.insert(id) {
            return Err(Error::Config(format!(
                "run id {id:?} appears twice in the plan"
            )));
        }
    }
    Ok(())
}

/// sbatch reads `#SBATCH` values in double quotes, up to the end of the line.
fn check_dir(dir: &Path) -> Result<()> {
    let s = dir.to_string_lossy();
    if s.contains('"') || s.contains('\n') {
        return Err(Error::Config(format!(
            "{s}: a study directory for Slurm cannot have a double quote or a newline in its \
             path (sbatch's #SBATCH lines cannot hold them)"
        )));
    }
    Ok(())
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::Config(format!("{}: {e}", p.display())))
}

/// What every task asks for.
struct Resources {
    cpus: usize,
    mem_bytes: Option<u64>,
    time_s: u64,
    notes: Vec<String>,
}

impl Resources {
    fn of(plan: &StudyPlan, job: &SlurmJob) -> Resources {
        let mut notes = Vec::new();
        let shaped = plan.runs.iter().any(|r| !r.shape.is_none());
        let mem_bytes = match job.mem {
            Mem::Bytes(b) => Some(b),
            Mem::WholeNode => None,
            Mem::Estimate { .. } if shaped => {
                notes.push(
                    "runs shape the machine (pressure or fragmentation): each task asks for a \
                     whole node's memory and needs root there"
                        .into(),
                );
                None
            }
            Mem::Estimate { fallback_bytes } => {
                let estimates: Vec<Option<u64>> = plan.runs.iter().map(memory_bytes).collect();
                let known = estimates.iter().flatten().copied().max();
                if estimates.iter().any(Option::is_none) {
                    Some(known.unwrap_or(0).max(fallback_bytes))
                } else {
                    known
                }
            }
        };
        let longest = plan.runs.iter().map(|r| r.estimate_s).fold(0.0, f64::max);
        let time_s = job.time_s.unwrap_or_else(|| {
            let t = (longest.max(0.0) * job.time_margin.max(1.0)).ceil() as u64;
            // Whole minutes: the granularity Slurm schedules in.
            (t + job.time_slack_s).div_ceil(60) * 60
        });
        Resources {
            cpus: plan.threads.max(1),
            mem_bytes,
            time_s,
            notes,
        }
    }
}

/// Memory a run asks for: the plan's footprint estimate, a quarter more (what the estimate
/// leaves out: frontiers, the builder's temporaries when the run generates the study's graph),
/// and the process itself. `None` where the plan has no estimate (graphs read from files).
fn memory_bytes(run: &PlannedRun) -> Option<u64> {
    const PROCESS: u64 = 256 << 20;
    let f = run.footprint_bytes?;
    Some(f.saturating_add(f / 4).saturating_add(PROCESS))
}

/// The batch script. Paths go into `#SBATCH` lines in double quotes (sbatch's own quoting)
/// and into the shell part in single quotes.
fn script(
    plan: &StudyPlan,
    job: &SlurmJob,
    res: &Resources,
    dir: &Path,
    hugewise: &Path,
) -> String {
    let dir_s = dir.to_string_lossy();
    let name = job
        .job_name
        .clone()
        .unwrap_or_else(|| format!("hugewise-{}", plan.preset));
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let last = plan.runs.len() - 1;
    let array = match job.max_parallel {
        Some(k) => format!("0-{last}%{}", k.max(1)),
        None => format!("0-{last}"),
    };
    // `%` starts a replacement in sbatch's file name patterns; `%%` is a plain one.
    let output = format!("{}/slurm/%A_%a.out", dir_s.replace('%', "%%"));
    let mut s = String::new();
    let mut line = |l: &str| {
        s.push_str(l);
        s.push('\n');
    };
    line("#!/bin/bash");
    line(&format!(
        "# hugewise study {}{}: one array task per run of study.json; task i runs the run id",
        plan.preset,
        crate::runner::options(plan)
    ));
    line("# on line i (from 0) of slurm/runs.txt and writes runs/<id>.json.");
    line("# Submit with `sbatch` and this file; options given to sbatch override these.");
    line(&format!("#SBATCH --job-name={name}"));
    line(&format!("#SBATCH --array={array}"));
    line(&format!("#SBATCH --output=\"{output}\""));
    line(&format!("#SBATCH --cpus-per-task={}", res.cpus));
    line(&format!(
        "#SBATCH --mem={}",
        res.mem_bytes
            .map_or("0".into(), |b| format!("{}M", b.div_ceil(1 << 20)))
    ));
    line(&format!("#SBATCH --time={}", slurm_time(res.time_s)));
    if job.exclusive {
        line("#SBATCH --exclusive");
    }
    for a in &job.sbatch_args {
        line(&format!("#SBATCH {a}"));
    }
    line("set -euo pipefail");
    line(&format!("dir={}", shell_quote(&dir_s)));
    line(&format!(
        "hugewise={}",
        shell_quote(&hugewise.to_string_lossy())
    ));
    line(": \"${SLURM_ARRAY_TASK_ID:?run this script with sbatch, as an array job}\"");
    // The worker reads the task's run id from runs.txt at the array index, expands the preset
    // again with the request's options and checks it against study.json before it runs.
    line("exec \"$hugewise\" worker < \"$dir/slurm/task.json\"");
    s
}

/// `D-HH:MM:SS`, one of the forms sbatch's `--time` takes.
fn slurm_time(s: u64) -> String {
    format!(
        "{}-{:02}:{:02}:{:02}",
        s / 86_400,
        s / 3600 % 24,
        s / 60 % 60,
        s % 60
    )
}

/// `s` as one word for bash: in single quotes unless it is plain.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_results::study::{Shape, Work};
    use hugewise_results::Saved;
    use std::process::Command;

    const MIB: u64 = 1 << 20;

    fn run(id: &str, footprint_bytes: Option<u64>, estimate_s: f64) -> PlannedRun {
        PlannedRun {
            id: id.into(),
            label: format!("run {id}"),
            shape: Shape::default(),
            work: Work::Faultlat {
                size_bytes: 64 * MIB,
                policy: "base".into(),
                then_collapse: false,
            },
            estimate_s,
            footprint_bytes,
        }
    }

    /// Runs of 10, 20, 30 ... seconds and 100, 200, 300 ... MiB.
    fn plan(ids: &[&str]) -> StudyPlan {
        StudyPlan {
            preset: "smoke".into(),
            question: "does it run".into(),
            reproduces: "nothing".into(),
            quick: true,
            scale: None,
            repeat: 1,
            threads: 2,
            runs: ids
                .iter()
                .zip(1..)
                .map(|(id, i)| run(id, Some(i * 100 * MIB), 10.0 * i as f64))
                .collect(),
            estimate_s: 0.0,
            claims: Vec::new(),
        }
    }

    fn sbatch_value<'a>(script: &'a str, option: &str) -> Option<&'a str> {
        script.lines().find_map(|l| {
            l.strip_prefix("#SBATCH ")?
                .strip_prefix(option)?
                .strip_prefix('=')
        })
    }

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).expect("read")
    }

    #[test]
    fn one_task_per_run_with_the_plans_resources() {
        let d = tempfile::tempdir().expect("tmp");
        let p = plan(&["a", "b", "c"]);
        let e = emit(&p, &SlurmJob::new("/opt/hugewise"), d.path()).expect("emit");
        let script = read(&e.script);
        assert_eq!(sbatch_value(&script, "--array"), Some("0-2"));
        assert_eq!(sbatch_value(&script, "--cpus-per-task"), Some("2"));
        assert_eq!(sbatch_value(&script, "--job-name"), Some("hugewise-smoke"));
        // The longest run (30 s) times 3, plus 5 minutes, in whole minutes.
        assert_eq!(sbatch_value(&script, "--time"), Some("0-00:07:00"));
        assert_eq!(e.time_limit_s, 420);
        // The largest footprint (300 MiB), a quarter more, and 256 MiB for the process.
        assert_eq!(e.mem_bytes, Some(631 * MIB));
        assert_eq!(sbatch_value(&script, "--mem"), Some("631M"));
        assert!(!script.contains("--exclusive"));
        assert_eq!(read(&e.runs), "a\nb\nc\n");
        let saved = Saved::<StudyPlan>::from_json(&read(&e.plan)).expect("plan");
        assert_eq!(saved.result, p);
        assert!(d.path().join("runs").is_dir());
        assert!(e.submit.starts_with("sbatch /"), "{}", e.submit);
        assert!(e.notes.iter().any(|n| n.contains("--exclusive")));
        let text = e.describe();
        for want in [
            "3 tasks",
            "2 CPUs",
            "631MiB of memory",
            "at most 0-00:07:00",
            "note: nodes are shared",
            "task.json  the request each task hands its worker",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
        assert!(text.contains(&e.submit), "{text}");
    }

    #[test]
    fn every_task_runs_its_own_id_with_paths_that_need_quoting() {
        let d = tempfile::tempdir().expect("tmp");
        let dir = d.path().join("my study's 100% dir");
        // A stand-in for hugewise that prints its arguments, one a line, then its stdin.
        let bin = d.path().join("bin dir");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let fake = bin.join("huge wise");
        std::fs::write(
            &fake,
            "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\ncat\n",
        )
        .expect("fake");
        let ok = Command::new("chmod")
            .arg("+x")
            .arg(&fake)
            .status()
            .expect("chmod");
        assert!(ok.success());
        let ids = ["pages-bfs-0", "run with space", "curve$HOME"];
        let mut job = SlurmJob::new(&fake);
        job.exclusive = true;
        job.seed = Some(7);
        job.sbatch_args = vec!["--partition=short".into()];
        let e = emit(&plan(&ids), &job, &dir).expect("emit");
        let script = read(&e.script);
        assert!(script.contains("\n#SBATCH --exclusive\n"), "{script}");
        assert!(script.contains("\n#SBATCH --partition=short\n"), "{script}");
        let output = sbatch_value(&script, "--output").expect("output");
        let escaped = dir.display().to_string().replace('%', "%%");
        assert_eq!(output, format!("\"{escaped}/slurm/%A_%a.out\""));
        // Every task hands its worker the same typed request; the worker picks the run.
        let want = Request::Study(hugewise_bench::worker::StudyTask {
            dir: dir.clone(),
            preset: "smoke".into(),
            quick: true,
            scale: None,
            repeat: 1,
            threads: 2,
            seed: 7,
            run: None,
        });
        for i in ["0", "2"] {
            let o = Command::new("bash")
                .arg(&e.script)
                .env("SLURM_ARRAY_TASK_ID", i)
                .output()
                .expect("bash");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let out = String::from_utf8_lossy(&o.stdout).to_string();
            let (command, request) = out.split_once('\n').expect("two parts");
            assert_eq!(command, "worker", "task {i}");
            assert_eq!(worker::decode(request).expect("request"), want, "task {i}");
        }
        assert_eq!(read(&e.task), worker::encode(&want).expect("encode"));
        // Outside an array job, a task fails and says why, before the worker starts.
        let o = Command::new("bash")
            .arg(&e.script)
            .env_remove("SLURM_ARRAY_TASK_ID")
            .output()
            .expect("bash");
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("run this script with sbatch"));
        assert!(o.stdout.is_empty());
    }

    #[test]
    fn ids_and_directories_sbatch_cannot_take_are_refused_before_writing() {
        let d = tempfile::tempdir().expect("tmp");
        let job = SlurmJob::new("/opt/hugewise");
        for (ids, says) in [
            (&["a", "a"][..], "twice"),
            (&["a/b"][..], "cannot name"),
            (&["a\nb"][..], "cannot name"),
            (&[][..], "no runs"),
        ] {
            let e = emit(&plan(ids), &job, d.path()).expect_err("refused");
            assert!(e.to_string().contains(says), "{ids:?}: {e}");
        }
        let quoted = d.path().join("a\"b");
        let e = emit(&plan(&["a"]), &job, &quoted).expect_err("quote");
        assert!(e.to_string().contains("double quote"), "{e}");
        assert!(!quoted.exists());
        assert_eq!(std::fs::read_dir(d.path()).expect("ls").count(), 0);
    }

    #[test]
    fn a_directory_holding_another_study_is_refused() {
        let d = tempfile::tempdir().expect("tmp");
        let job = SlurmJob::new("/opt/hugewise");
        let first = emit(&plan(&["a", "b"]), &job, d.path()).expect("emit");
        let saved = read(&first.plan);
        // The same plan again keeps the saved one (and any results beside it).
        emit(&plan(&["a", "b"]), &job, d.path()).expect("same plan");
        assert_eq!(read(&first.plan), saved);
        let e = emit(&plan(&["a", "b", "c"]), &job, d.path()).expect_err("another plan");
        assert!(
            e.to_string().contains("differs from the one asked for"),
            "{e}"
        );
        assert!(
            e.to_string().contains("2 runs then, 3 now; 1 new: c"),
            "{e}"
        );
    }

    #[test]
    fn memory_follows_the_largest_run_and_shaped_runs_take_the_node() {
        let mut p = plan(&["small", "large"]);
        let job = SlurmJob::new("/opt/hugewise");
        assert_eq!(Resources::of(&p, &job).mem_bytes, Some(506 * MIB));

        // A run without an estimate (a graph from a file) asks for the fallback, if larger.
        p.runs.push(run("file", None, 1.0));
        assert_eq!(Resources::of(&p, &job).mem_bytes, Some(4 << 30));

        p.runs[0].shape.fragment = Some(0.5);
        let r = Resources::of(&p, &job);
        assert_eq!(r.mem_bytes, None);
        assert!(r.notes.iter().any(|n| n.contains("root")));
        let text = script(&p, &job, &r, Path::new("/s"), Path::new("/h"));
        assert_eq!(sbatch_value(&text, "--mem"), Some("0"));

        let job = SlurmJob {
            mem: Mem::Bytes(3 << 30),
            time_s: Some(90_061),
            max_parallel: Some(2),
            ..job
        };
        let r = Resources::of(&p, &job);
        let text = script(&p, &job, &r, Path::new("/s"), Path::new("/h"));
        assert_eq!(sbatch_value(&text, "--mem"), Some("3072M"));
        assert_eq!(sbatch_value(&text, "--time"), Some("1-01:01:01"));
        assert_eq!(sbatch_value(&text, "--array"), Some("0-2%2"));
    }
}
