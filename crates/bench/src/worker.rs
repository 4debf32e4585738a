//! Typed requests to hugewise's own child processes: what a benchmark, a study or `run
//! --memory` asks a `hugewise worker` to do, as versioned serde data built here and parsed
//! by the same types, and the worker's side that serves them.
//!
//! The protocol: the caller starts `EXE worker` ([`command`]) and writes one JSON line on its
//! stdin, an envelope `{"version": VERSION, "request": …}`. A contained run then talks with its
//! supervisor on the same pipes ([`crate::run::memory`]). The worker ends by writing its
//! result as JSON on stdout and exiting 0, or by printing its error on stderr and exiting
//! non-zero. A request of another version, or with a field this build does not know, is
//! refused by name: the sender and the worker are always the same build, so either means a
//! stale binary.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hugewise_promote::budget::{Limit, Share};
use hugewise_promote::{daemon, session};
use hugewise_results::meta::Meta;
use hugewise_results::promote::PromoteReport;
use hugewise_results::run::RunReport;
use hugewise_results::sim::Curves;
use hugewise_results::Saved;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{capture, run, Error, Progress, Result};

/// The protocol's version: raise it whenever a request or a reply changes shape.
pub const VERSION: u32 = 1;

/// The binary's hidden command that serves one request.
pub const COMMAND: &str = "worker";

/// The longest request line a worker reads: requests are settings, never data.
pub const MAX_REQUEST_BYTES: u64 = 1 << 20;

/// What a worker is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Request {
    /// A graph kernel's trials; replies a [`RunReport`].
    Run(RunRequest),
    /// A kernel's accesses recorded to a trace; replies a
    /// [`hugewise_results::capture::CaptureReport`].
    Trace(capture::Config),
    /// Policies simulated over a trace, their plans saved; replies the [`Curves`].
    Simulate(SimulateRequest),
    /// The online daemon promoting a run started for it; replies a [`PromotedRun`].
    Promote(PromoteRequest),
    /// The daemon of `bench faultlat` on a range of the process that asks, until its stdin
    /// closes; replies a [`crate::faultbench::Made`].
    Daemon(crate::faultbench::DaemonRequest),
    /// One run of a study's plan, as a scheduler's task runs it. Served by `hugewise-study`
    /// (which builds on this crate), not by [`serve`].
    Study(StudyTask),
}

impl Request {
    /// The request's kind, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Request::Run(_) => "run",
            Request::Trace(_) => "trace",
            Request::Simulate(_) => "simulate",
            Request::Promote(_) => "promote",
            Request::Daemon(_) => "daemon",
            Request::Study(_) => "study",
        }
    }

    /// Whether serving it polls the cancel flag (and so ends cleanly by itself); the others
    /// are best left to a signal's default action, as the commands they stand for are.
    pub fn polls_cancel(&self) -> bool {
        matches!(
            self,
            Request::Simulate(_) | Request::Promote(_) | Request::Daemon(_) | Request::Study(_)
        )
    }
}

/// A run of a graph kernel: what [`run::run_with`] takes, as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// What to run (threads resolved by the sender, which runs on the same machine).
    pub config: run::Config,
    /// Sample telemetry at this interval over the trials.
    pub telemetry: Option<Duration>,
    /// Choose the overcommit factor trial by trial (`config.threads` is the CPU count then).
    pub auto_overcommit: bool,
    /// Once loaded, tell the footprint to a supervisor on stdout and move into the cgroup it
    /// answers with on stdin ([`crate::run::memory::supervise`] sets this).
    pub contained: bool,
}

impl RunRequest {
    /// A plain run of `config`.
    pub fn new(config: run::Config) -> RunRequest {
        RunRequest {
            config,
            telemetry: None,
            auto_overcommit: false,
            contained: false,
        }
    }

    /// Run it in this process. A contained run talks with its supervisor over `supervisor`
    /// (its answers, then where to write).
    pub fn run(
        &self,
        supervisor: Option<(&mut dyn BufRead, &mut dyn Write)>,
        progress: Progress<'_>,
    ) -> Result<RunReport> {
        let mut contain = match (self.contained, supervisor) {
            (false, _) => None,
            (true, Some((input, output))) => Some(move |fp: &run::Footprint| {
                run::memory::contain_worker(fp, &mut *input, &mut *output)
            }),
            (true, None) => {
                return Err(Error::Config(
                    "a contained run needs its supervisor's pipes".into(),
                ))
            }
        };
        let extras = run::Extras {
            telemetry: self.telemetry,
            contain: contain.as_mut().map(|c| c as run::Contain<'_>),
            auto_overcommit: self.auto_overcommit,
        };
        run::run_with(&self.config, extras, progress)
    }
}

/// Policies simulated over a trace, as `hugewise sim --plan` does with the trace's own clock
/// and warm-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulateRequest {
    /// The trace.
    pub trace: PathBuf,
    /// Policies in the simulator's grammar (`pcc`, `pcc:interval=10s`).
    pub policies: Vec<String>,
    /// Budgets as shares of the footprint (0..=1).
    pub budgets: Vec<f64>,
    /// TLB organisation: a preset name or a TOML file.
    pub tlb: String,
    /// Where every configuration's promotion plan is saved.
    pub plan: PathBuf,
}

/// The online daemon on a run it starts without address-space randomisation, until the run
/// ends: what `hugewise promote --policy … -- hugewise run …` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromoteRequest {
    /// The daemon's policy (see [`hugewise_promote::policy::NAMES`]).
    pub policy: String,
    /// Share of the target's mapped memory that may be huge (0..=1].
    pub budget_share: f64,
    /// Time between two looks at the target.
    pub interval: Duration,
    /// The run to promote, itself a worker.
    pub target: RunRequest,
    /// The daemon's compaction controller (`off`, `auto`, `always`; absent: `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact: Option<String>,
    /// The daemon's pacing, a share of the target's faults its collapses may hold up (absent:
    /// the daemon's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_waits: Option<f64>,
    /// Whether the daemon faults in the page each collapse copies into first (absent: it
    /// does, the daemon's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<bool>,
    /// What the daemon takes a page walk a huge page removes to cost, in nanoseconds (absent:
    /// the daemon's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk_ns: Option<f64>,
    /// The nice value the daemon's thread gives way with, 0 to 19 (absent: the daemon's
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
}

/// One run of a study's plan in its directory: what a scheduler's task asks. The preset is
/// expanded again with the plan's own options and checked against the plan saved in `dir`, so
/// that a task of another study, or of a changed preset, is refused before it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyTask {
    /// The study directory (absolute: a task starts wherever the scheduler puts it).
    pub dir: PathBuf,
    /// The preset's name.
    pub preset: String,
    /// The shortened variant.
    pub quick: bool,
    /// The Kronecker scale of the measured runs' graph, when asked (`--scale`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<u32>,
    /// Rounds per comparison.
    pub repeat: u32,
    /// Worker threads of each kernel.
    pub threads: usize,
    /// Seed of graphs and sources.
    pub seed: u64,
    /// Which run: `Some(id)`, or `None` for the one a Slurm array task's index picks (line
    /// `SLURM_ARRAY_TASK_ID` of `slurm/runs.txt`, from 0).
    pub run: Option<String>,
}

/// What a [`PromoteRequest`] replies: the session and the run it promoted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromotedRun {
    /// The daemon's session.
    pub session: PromoteReport,
    /// The target run's result.
    pub run: RunReport,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<R> {
    version: u32,
    request: R,
}

/// `request` as the line a worker reads, newline included.
pub fn encode(request: &Request) -> Result<String> {
    let mut line = serde_json::to_string(&Envelope {
        version: VERSION,
        request,
    })
    .map_err(|e| Error::Config(format!("encoding a {} request: {e}", request.kind())))?;
    line.push('\n');
    Ok(line)
}

/// The request in `line`: its version checked before its fields, so that a request from
/// another build says so rather than naming a field.
pub fn decode(line: &str) -> Result<Request> {
    let bad = |what: String| Error::Config(format!("the worker's request: {what}"));
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| bad(format!("not JSON ({e})")))?;
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Err(bad(format!(
                "version {v}, but this hugewise serves version {VERSION}: the program that \
                 sent it is another build"
            )))
        }
        None => return Err(bad("no version".into())),
    }
    serde_json::from_value::<Envelope<Request>>(value)
        .map(|e| e.request)
        .map_err(|e| bad(e.to_string()))
}

/// Read one request line from `input`, at most [`MAX_REQUEST_BYTES`].
pub fn read_request(input: &mut dyn BufRead) -> Result<Request> {
    let mut line = String::new();
    input
        .take(MAX_REQUEST_BYTES + 1)
        .read_line(&mut line)
        .map_err(|e| Error::Config(format!("reading the worker's request: {e}")))?;
    if line.len() as u64 > MAX_REQUEST_BYTES {
        return Err(Error::Config(format!(
            "the worker's request is longer than {MAX_REQUEST_BYTES} bytes"
        )));
    }
    if line.trim().is_empty() {
        return Err(Error::Config(
            "no request on stdin (`hugewise worker` is started by hugewise itself)".into(),
        ));
    }
    decode(&line)
}

/// Serve `request` (read from `input` by [`read_request`]) and write its reply as JSON on
/// `output`; a contained run talks with its supervisor over both first. `meta` describes this
/// program for the files a request saves.
pub fn serve(
    request: Request,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
    meta: &dyn Fn() -> Meta,
    cancel: &AtomicBool,
) -> Result<()> {
    match request {
        Request::Run(r) => {
            let report = r.run(Some((&mut *input, &mut *output)), &mut |_, _| {})?;
            reply(output, &report)
        }
        Request::Trace(c) => reply(output, &capture::capture(&c)?),
        Request::Simulate(s) => reply(output, &simulate(&s, meta, cancel)?),
        Request::Promote(p) => reply(output, &promote(&p, cancel)?),
        Request::Daemon(d) => crate::faultbench::serve(&d, input, output, cancel),
        Request::Study(_) => Err(Error::Config(
            "a study task is served by the study library, not the bench's worker".into(),
        )),
    }
}

/// Write `value` as the worker's reply.
pub fn reply<T: Serialize>(output: &mut dyn Write, value: &T) -> Result<()> {
    serde_json::to_writer(&mut *output, value)
        .map_err(std::io::Error::from)
        .and_then(|()| output.flush())
        .map_err(|e| Error::Config(format!("writing the worker's result: {e}")))
}

fn simulate(s: &SimulateRequest, meta: &dyn Fn() -> Meta, cancel: &AtomicBool) -> Result<Curves> {
    let policies = s
        .policies
        .iter()
        .map(|p| p.parse::<hugewise_sim::PolicySpec>())
        .collect::<hugewise_sim::Result<Vec<_>>>()?;
    let spec = hugewise_sim::CurveSpec {
        policies,
        budgets: s.budgets.clone(),
        tlb: hugewise_sim::TlbConfig::resolve(&s.tlb)?,
        accesses_per_s: None,
        time_scale: None,
        calibration: None,
        reuse: false,
        warmup_accesses: None,
        phys: None,
    };
    let (curves, plans) = hugewise_sim::curve::run(&s.trace, &spec, &(), cancel)?;
    if curves.accesses == 0 {
        return Err(Error::Config(format!(
            "{} holds no accesses",
            s.trace.display()
        )));
    }
    plans.validate().map_err(|e| {
        Error::Config(format!(
            "the simulator made a plan a promotion engine would refuse: {e}"
        ))
    })?;
    crate::save::write_json(&s.plan, &Saved::new(meta(), plans))?;
    Ok(curves)
}

/// The daemon on a run this worker starts, as `hugewise promote -- CMD` starts its command:
/// without address-space randomisation, attached at once, waited for once it ends.
fn promote(p: &PromoteRequest, cancel: &AtomicBool) -> Result<PromotedRun> {
    let fault_waits = match p.fault_waits {
        None => daemon::Config::default().fault_waits,
        Some(w) if w.is_finite() && w >= 0.0 => w,
        Some(w) => {
            return Err(Error::Config(format!(
                "promote request: fault_waits {w} is not a share of 0 or more"
            )))
        }
    };
    let walk_ns = match p.walk_ns {
        None => daemon::Config::default().walk_ns,
        Some(ns) if daemon::walk_ns_valid(ns) => ns,
        Some(ns) => {
            return Err(Error::Config(format!(
                "promote request: walk_ns {ns} is not a cost above 0 and at most {} ns",
                daemon::MAX_WALK_NS
            )))
        }
    };
    let nice = match p.nice {
        None => daemon::Config::default().nice,
        Some(n) if (0..=hugewise_sys::priority::LOWEST).contains(&n) => n,
        Some(n) => {
            return Err(Error::Config(format!(
                "promote request: nice {n} is not a value of 0 to {}",
                hugewise_sys::priority::LOWEST
            )))
        }
    };
    let compact = match p.compact.as_deref() {
        None => hugewise_promote::compact::Mode::default(),
        Some(name) => hugewise_promote::compact::Mode::from_name(name).ok_or_else(|| {
            Error::Config(format!(
                "promote request: compact '{name}' is not off, auto or always"
            ))
        })?,
    };
    let exe = std::env::current_exe()
        .map_err(|e| Error::Config(format!("finding this program to run the target: {e}")))?;
    let mut child = start(&exe, hugewise_sys::lock::exec_without_aslr)?;
    let target = Request::Run(p.target.clone());
    let started = send(&mut child, &target).and_then(|()| {
        (child.stdout.take()).ok_or_else(|| Error::Config("the target has no stdout".into()))
    });
    let mut stdout = match started {
        Ok(s) => s,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).map(|_| s)
    });
    let cfg = session::Config {
        targets: session::Targets::Pids(vec![child.id() as i32]),
        engine: session::Engine::Daemon {
            policy: p.policy.clone(),
            config: daemon::Config {
                interval: p.interval,
                limit: Limit::Share(p.budget_share),
                share: Share::HighestFirst,
                compact: hugewise_promote::compact::Settings {
                    mode: compact,
                    ..Default::default()
                },
                fault_waits,
                warm: p.warm.unwrap_or(true),
                walk_ns,
                nice,
                ..daemon::Config::default()
            },
            budget_label: format!("{}%", p.budget_share * 100.0),
        },
        duration: None,
        // The run was started here (its request on a pipe), as the arm it is measured
        // against: the daemon alone, on the samples the run publishes.
        launch: session::LaunchOptions::default(),
    };
    let session = session::run(&cfg, cancel, &mut |_| {}, &mut |_| {});
    // The session failed, not the run: the run goes on to its end, as it would have.
    let status = child.wait();
    let text = reader.join().ok().and_then(|r| r.ok()).unwrap_or_default();
    let session = session?;
    finished(&exe, &target, status, text, String::new()).map(|run| PromotedRun { session, run })
}

/// `EXE worker`: the command that serves a request (written on its stdin).
pub fn command(exe: &Path) -> Command {
    let mut c = Command::new(exe);
    c.arg(COMMAND);
    c
}

/// Start `exe worker` with its stdin and stdout piped to this process and its stderr this
/// process's, once `prepare` has set what else the command needs.
pub fn start(exe: &Path, prepare: impl FnOnce(&mut Command)) -> Result<Child> {
    let mut c = command(exe);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    prepare(&mut c);
    c.spawn()
        .map_err(|e| Error::Config(format!("starting {}: {e}", exe.display())))
}

/// Write `request` on `child`'s stdin and close it.
fn send(child: &mut Child, request: &Request) -> Result<()> {
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| Error::Config("the worker has no stdin".into()))?;
    send_first(&mut stdin, request)
}

/// Send `request` on the open stdin of a worker that keeps talking on it afterwards (a
/// contained run and its supervisor).
pub fn send_first(stdin: &mut dyn Write, request: &Request) -> Result<()> {
    stdin
        .write_all(encode(request)?.as_bytes())
        .and_then(|()| stdin.flush())
        .map_err(|e| {
            Error::Config(format!(
                "sending the worker its {} request: {e}",
                request.kind()
            ))
        })
}

/// Have `exe worker` serve `request`, and read its reply. Its stderr is kept for the error
/// when it fails; `cancel` set while it ran makes a failure [`Error::Interrupted`] (Ctrl-C
/// reaches the worker too).
pub fn call<T: DeserializeOwned>(exe: &Path, request: &Request, cancel: &AtomicBool) -> Result<T> {
    let mut child = command(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Config(format!("starting {}: {e}", exe.display())))?;
    let sent = send(&mut child, request);
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Error::Config("the worker has no pipes".into()));
    };
    // Both read beside the wait, so that neither pipe fills and blocks the worker.
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut text = String::new();
    let read = out.read_to_string(&mut text);
    let status = child.wait();
    let stderr = errors.join().unwrap_or_default();
    if cancel.load(Ordering::Relaxed) && !status.as_ref().is_ok_and(|s| s.success()) {
        return Err(Error::Interrupted);
    }
    sent?;
    read.map_err(|e| Error::Config(format!("reading the worker's result: {e}")))?;
    finished(exe, request, status, text, stderr)
}

/// The reply of a worker that ended with `status` after writing `text` (and `stderr`, when
/// it was kept).
pub(crate) fn finished<T: DeserializeOwned>(
    exe: &Path,
    request: &Request,
    status: std::io::Result<std::process::ExitStatus>,
    text: String,
    stderr: String,
) -> Result<T> {
    let status =
        status.map_err(|e| Error::Config(format!("waiting for {}: {e}", exe.display())))?;
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        let said = tail.into_iter().rev().collect::<Vec<_>>().join(" / ");
        return Err(Error::Config(format!(
            "the {} worker ({} {COMMAND}) failed ({status}){}",
            request.kind(),
            exe.display(),
            if said.is_empty() {
                " (see above)".to_string()
            } else {
                format!(": {said}")
            }
        )));
    }
    serde_json::from_str(&text)
        .map_err(|e| Error::Config(format!("the {} worker's result: {e}", request.kind())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_graph::kernels::Spec;
    use hugewise_graph::load::{Input, LoadOptions};
    use hugewise_graph::reorder::Method;
    use hugewise_graph::Layout;

    fn run_request() -> RunRequest {
        RunRequest {
            config: run::Config {
                input: Input::parse("kron:10").expect("spec"),
                load: LoadOptions {
                    seed: 3,
                    weighted: false,
                    symmetrize: true,
                    fit: Default::default(),
                },
                layout: Layout::parse("all=base,property=thp-prefix:2%+lock", "property-first")
                    .expect("layout"),
                kernel: Spec::default_for("pr").expect("pr"),
                reorder: Some(Method::Dbg),
                reorder_cache: Some(
                    hugewise_graph::cache::Cache::new("/tmp/cache").min_graph_bytes(0),
                ),
                trials: 2,
                sources: vec![1, 2],
                verify: true,
                threads: 2,
                sample_every: Some(64),
                replay: Some(run::Replay {
                    plan: "plan.json".into(),
                    policy: Some("pcc".into()),
                    budget_share: Some(0.04),
                }),
            },
            telemetry: Some(Duration::from_millis(100)),
            auto_overcommit: true,
            contained: false,
        }
    }

    #[test]
    fn every_request_comes_back_as_it_went() {
        let run = run_request();
        let requests = [
            Request::Run(run.clone()),
            Request::Trace(capture::Config {
                input: Input::parse("road:30x20").expect("shape"),
                load: run.config.load,
                layout: Layout::default(),
                kernel: Spec::default_for("bfs").expect("bfs"),
                threads: 1,
                reorder: None,
                reorder_cache: None,
                sources: Vec::new(),
                out: "t.hwt".into(),
                rate_runs: 1,
                verify: false,
                calibrate_runs: 0,
            }),
            Request::Simulate(SimulateRequest {
                trace: "t.hwt".into(),
                policies: vec!["pcc".into()],
                budgets: vec![0.04],
                tlb: "haswell".into(),
                plan: "plan.json".into(),
            }),
            Request::Promote(PromoteRequest {
                policy: "pcc".into(),
                budget_share: 0.04,
                interval: Duration::from_millis(1500),
                compact: Some("off".into()),
                fault_waits: Some(0.0002),
                warm: Some(false),
                walk_ns: Some(45.0),
                nice: Some(0),
                target: RunRequest {
                    config: run::Config {
                        input: Input::File("/g/k.hwg".into()),
                        ..run.config.clone()
                    },
                    ..run
                },
            }),
        ];
        for r in requests {
            let line = encode(&r).expect("encode");
            assert!(
                line.ends_with('\n') && !line.trim_end().contains('\n'),
                "{line}"
            );
            assert_eq!(decode(&line).expect("decode"), r, "{line}");
            assert_eq!(read_request(&mut line.as_bytes()).expect("read"), r);
        }
    }

    #[test]
    fn another_version_or_an_unknown_field_is_refused_by_name() {
        let line = encode(&Request::Run(run_request())).expect("encode");
        let mut v: serde_json::Value = serde_json::from_str(&line).expect("json");
        v["version"] = serde_json::json!(VERSION + 1);
        let e = decode(&v.to_string()).expect_err("version").to_string();
        assert!(e.contains(&format!("version {}", VERSION + 1)), "{e}");
        assert!(e.contains(&format!("serves version {VERSION}")), "{e}");

        v["version"] = serde_json::json!(VERSION);
        v["request"]["run"]["config"]["turbo"] = serde_json::json!(true);
        let e = decode(&v.to_string()).expect_err("field").to_string();
        assert!(e.contains("unknown field `turbo`"), "{e}");

        let mut v: serde_json::Value = serde_json::from_str(&line).expect("json");
        v["request"]["run"]["config"]["layout"]["pages"] = serde_json::json!("all=giant");
        let e = decode(&v.to_string()).expect_err("policy").to_string();
        assert!(e.contains("giant"), "{e}");

        let e = decode(r#"{"request": {}}"#).expect_err("none").to_string();
        assert!(e.contains("no version"), "{e}");
        let e = read_request(&mut "".as_bytes())
            .expect_err("empty")
            .to_string();
        assert!(e.contains("no request"), "{e}");
        let long = format!(
            "{{\"version\": 1, \"pad\": \"{}\"}}\n",
            "x".repeat(MAX_REQUEST_BYTES as usize)
        );
        let e = read_request(&mut long.as_bytes())
            .expect_err("long")
            .to_string();
        assert!(e.contains("longer than"), "{e}");
    }

    #[test]
    fn a_contained_run_needs_its_supervisor() {
        let r = RunRequest {
            contained: true,
            ..RunRequest::new(run_request().config)
        };
        let e = r.run(None, &mut |_, _| {}).expect_err("no pipes");
        assert!(e.to_string().contains("supervisor"), "{e}");
    }

    #[test]
    fn a_run_served_here_replies_its_report() {
        let mut c = run_request().config;
        c.reorder = None;
        c.reorder_cache = None;
        c.replay = None;
        c.sample_every = None;
        c.layout = Layout::parse("all=base", "natural").expect("layout");
        let line = encode(&Request::Run(RunRequest::new(c))).expect("encode");
        let mut input = line.as_bytes();
        let request = read_request(&mut input).expect("read");
        assert!(!request.polls_cancel());
        let mut out = Vec::new();
        let meta = || -> Meta { crate::meta::collect("test", Vec::new()) };
        serve(
            request,
            &mut input,
            &mut out,
            &meta,
            &AtomicBool::new(false),
        )
        .expect("serve");
        let r: RunReport = serde_json::from_slice(&out).expect("a run report");
        assert_eq!(r.trials.len(), 2);
        assert!(r.trials.iter().all(|t| t.verified == Some(true)));
        assert_eq!(r.graph.vertices, 1024);
    }

    #[test]
    fn a_promote_request_with_a_cost_out_of_bounds_is_refused_by_name() {
        for (waits, walk, nice, field) in [
            (Some(-0.1), None, None, "fault_waits -0.1"),
            (None, Some(0.0), None, "walk_ns 0"),
            (None, Some(-3.0), None, "walk_ns -3"),
            (None, Some(f64::NAN), None, "walk_ns NaN"),
            (None, Some(daemon::MAX_WALK_NS * 2.0), None, "walk_ns 20000"),
            (None, None, Some(-1), "nice -1"),
            (None, None, Some(20), "nice 20"),
        ] {
            let p = PromoteRequest {
                policy: "pcc".into(),
                budget_share: 0.04,
                interval: Duration::from_millis(500),
                compact: None,
                fault_waits: waits,
                warm: None,
                walk_ns: walk,
                nice,
                target: run_request(),
            };
            let e = promote(&p, &AtomicBool::new(false)).expect_err(field);
            assert!(e.to_string().contains(field), "{field}: {e}");
        }
    }
}
