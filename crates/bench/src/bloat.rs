//! Memory bloat on a real server (MEGA's Redis pattern): Debian's `redis-server`, started on a
//! loopback port of its own inside a memory cgroup, is filled, read, partly emptied and filled
//! again by `redis-benchmark`, under each of Linux's THP modes and under `hugewise exec` with
//! page rules. Each phase's throughput and latency come from `redis-benchmark`; the memory the
//! server costs the machine is the cgroup's charge (a huge page partly freed stays charged
//! even where the process's resident set no longer counts it), sampled as it runs.
//!
//! Every change (THP mode, cgroup, the server) is made through an env session that puts it
//! back when the run ends, also on error or Ctrl-C.

use std::io::Write;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hugewise_env::{Host, Knob, Lifetime, Session};
use hugewise_exec::run::{self as exec, Config as ExecConfig};
use hugewise_promote::budget::Limit;
use hugewise_promote::daemon::Config as DaemonConfig;
use hugewise_promote::session::Engine;
use hugewise_results::bloat::{BloatPhase, BloatReport, BloatRun, BloatVariant, MemPoint};
use hugewise_rules::Rules;
use hugewise_sys::proc::{Pid, ProcFs};
use hugewise_sys::sysfs::memcg_counters;

use crate::stats::{median, ratio, summarize, Until};
use crate::{Error, Result};

/// One way of running the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Variant {
    /// Plainly, with THP `enabled` set to this mode (`never`, `madvise`, `always`).
    Thp(String),
    /// Under `hugewise exec` with these rules, THP `enabled` at `madvise`, and the promotion
    /// daemon with this policy (budget: all of it) when one is named: `POLICY`, or
    /// `POLICY@N` for a daemon whose thread gives way at nice value N (0 unless told, as
    /// `hugewise promote --nice`).
    Exec(Rules, Option<String>),
}

impl Variant {
    /// `never`, `madvise`, `always` or `exec:RULES`.
    pub fn label(&self) -> String {
        match self {
            Variant::Thp(m) => m.clone(),
            Variant::Exec(r, None) => format!("exec:{r}"),
            Variant::Exec(r, Some(p)) => format!("exec:{r}+{p}"),
        }
    }

    /// Variants separated by `;` (rules hold commas).
    pub fn parse_list(text: &str) -> Result<Vec<Variant>> {
        text.split(';')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| match v {
                "never" | "madvise" | "always" => Ok(Variant::Thp(v.to_string())),
                other => match other.strip_prefix("exec:") {
                    Some(spec) => {
                        let (rules, policy) = match spec.rsplit_once('+') {
                            Some((r, p)) => (r, Some(p.trim())),
                            None => (spec, None),
                        };
                        if let Some(p) = policy {
                            let (p, _) = daemon_of(p)
                                .map_err(|e| Error::Config(format!("variant '{other}': {e}")))?;
                            if !hugewise_promote::policy::NAMES.contains(&p) {
                                return Err(Error::Config(format!(
                                    "variant '{other}': unknown policy '{p}' (known: {})",
                                    hugewise_promote::policy::NAMES.join(", ")
                                )));
                            }
                        }
                        Ok(Variant::Exec(
                            Rules::parse(rules)?,
                            policy.map(String::from),
                        ))
                    }
                    None => Err(Error::Config(format!(
                        "variant '{other}': use never, madvise, always or exec:RULES[+POLICY]"
                    ))),
                },
            })
            .collect()
    }
}

/// The policy and the nice value of a variant's daemon, `POLICY[@N]`.
fn daemon_of(spec: &str) -> std::result::Result<(&str, i32), String> {
    let lowest = hugewise_sys::priority::LOWEST;
    match spec.split_once('@') {
        None => Ok((spec, hugewise_promote::daemon::Config::default().nice)),
        Some((p, n)) => match n.trim().parse::<i32>() {
            Ok(n) if (0..=lowest).contains(&n) => Ok((p.trim(), n)),
            _ => Err(format!(
                "'@{n}' is not a nice value of 0 to {lowest} for the daemon's thread"
            )),
        },
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// `redis-server`.
    pub server: PathBuf,
    /// `redis-benchmark`.
    pub benchmark: PathBuf,
    /// Keys in the key space.
    pub keys: u64,
    /// Bytes per value.
    pub value_bytes: u64,
    /// Share of the key space deleted, then filled again.
    pub delete_share: f64,
    /// `redis-benchmark` clients.
    pub clients: u32,
    /// `redis-benchmark` pipeline depth.
    pub pipeline: u32,
    /// Rounds.
    pub rounds: u32,
    /// Variants, in order.
    pub variants: Vec<Variant>,
    /// The preload library (for `exec:` variants).
    pub preload: Option<PathBuf>,
    /// How often the server's memory is read.
    pub sample_every: Duration,
    /// Pause after the last phase before the final reading (the allocator's purge delay).
    pub settle: Duration,
}

impl Config {
    /// The defaults for `keys` keys of `value_bytes` over `rounds` rounds of `variants`
    /// (`never;always;exec:*=thp`): 50 clients, pipeline 16, memory read every 200 ms, 12 s to
    /// settle, Debian's `redis-server` and `redis-benchmark` from the PATH, and the preload
    /// library (`preload`, else beside hugewise) when a variant runs under exec.
    pub fn new(
        keys: u64,
        value_bytes: u64,
        delete_share: f64,
        rounds: u32,
        variants: &str,
        preload: Option<&Path>,
    ) -> Result<Config> {
        let variants = Variant::parse_list(variants)?;
        let needs_preload = variants.iter().any(|v| matches!(v, Variant::Exec(..)));
        Ok(Config {
            server: "redis-server".into(),
            benchmark: "redis-benchmark".into(),
            keys,
            value_bytes,
            delete_share,
            clients: 50,
            pipeline: 16,
            rounds,
            preload: if needs_preload {
                Some(exec::find_preload(preload)?)
            } else {
                None
            },
            variants,
            sample_every: Duration::from_millis(200),
            settle: Duration::from_secs(12),
        })
    }
}

/// A loopback port no one listens on now.
fn free_port() -> Result<u16> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| Error::Config(format!("no free loopback port for redis-server: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::Config(format!("no free loopback port: {e}")))
}

fn wait_ready(port: u16, alive: &dyn Fn() -> bool) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) {
            let _ = s.write_all(b"PING\r\n");
            return Ok(());
        }
        if !alive() {
            return Err(Error::Config(
                "redis-server exited before it accepted connections".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(Error::Config(format!(
        "redis-server did not accept connections on port {port} within 15 s"
    )))
}

fn shutdown(port: u16) {
    if let Ok(mut s) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) {
        let _ = s.write_all(b"SHUTDOWN NOSAVE\r\n");
    }
}

fn server_args(cfg: &Config, port: u16, dir: &Path) -> Vec<String> {
    let mut argv = vec![cfg.server.display().to_string()];
    for (k, v) in [
        ("--port", port.to_string()),
        ("--bind", "127.0.0.1".into()),
        ("--save", String::new()),
        ("--appendonly", "no".into()),
        ("--daemonize", "no".into()),
        ("--protected-mode", "no".into()),
        ("--dir", dir.display().to_string()),
        ("--logfile", String::new()),
        // Redis turns THP off for itself (prctl) unless told not to: the machine's mode, or
        // hugewise's advice, is what is compared here.
        ("--disable-thp", "no".into()),
    ] {
        argv.push(k.into());
        argv.push(v);
    }
    argv
}

/// One `redis-benchmark` call; its CSV line's rps, p50 and p99.
fn phase(
    cfg: &Config,
    port: u16,
    name: &str,
    requests: u64,
    args: &[String],
    stop: &dyn Fn() -> bool,
) -> Result<BloatPhase> {
    let mut child = Command::new(&cfg.benchmark)
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "--csv"])
        .args([
            "-c",
            &cfg.clients.to_string(),
            "-P",
            &cfg.pipeline.to_string(),
        ])
        .args([
            "-n",
            &requests.max(1).to_string(),
            "-r",
            &cfg.keys.to_string(),
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Config(format!("cannot run {}: {e}", cfg.benchmark.display())))?;
    // Its output is a few lines: the pipes cannot fill while it runs.
    while child.try_wait().ok().flatten().is_none() {
        if stop() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Interrupted);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Error::Config(format!("reading {}'s output: {e}", cfg.benchmark.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .rev()
        .find(|l| !l.starts_with("\"test\"") && l.starts_with('"'))
        .ok_or_else(|| {
            Error::Config(format!(
                "redis-benchmark printed no result for the {name} phase: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        })?;
    let cells: Vec<f64> = row
        .split("\",\"")
        .skip(1)
        .map(|c| c.trim_matches('"').parse().unwrap_or(f64::NAN))
        .collect();
    let get = |i: usize| cells.get(i).copied().filter(|x| x.is_finite());
    Ok(BloatPhase {
        name: name.into(),
        requests,
        rps: get(0).ok_or_else(|| {
            Error::Config(format!("redis-benchmark's {name} line has no rps: {row}"))
        })?,
        p50_ms: get(3),
        p99_ms: get(5),
        charged_bytes_after: None,
        rss_bytes_after: None,
    })
}

struct Memory<'a> {
    proc: &'a ProcFs,
    cgroup: &'a Path,
}

impl Memory<'_> {
    fn read(&self, pid: u32, t0: Instant) -> Option<MemPoint> {
        let r = self.proc.smaps_rollup(Pid::Id(pid as i32)).ok()?;
        Some(MemPoint {
            t_ms: t0.elapsed().as_millis() as u64,
            rss_bytes: r.rss_bytes,
            anon_huge_bytes: r.anon_huge_bytes,
            charged_bytes: memcg_counters(self.cgroup).ok().and_then(|c| c.usage_bytes),
        })
    }
}

/// The server's life under one variant: start, phases, stop.
fn one_run(
    cfg: &Config,
    host: &Host,
    variant: &Variant,
    round: u32,
    stop: &dyn Fn() -> bool,
) -> Result<BloatRun> {
    let mut session = Session::open(host, Lifetime::Run)?;
    let mode = match variant {
        Variant::Thp(m) => m.as_str(),
        Variant::Exec(..) => "madvise",
    };
    session.set(Knob::ThpEnabled, mode)?;
    let available = host.proc.meminfo()?.available_bytes.unwrap_or(0);
    let limit = available.saturating_sub(4 << 30).clamp(1 << 30, 64 << 30);
    let cgroup = session.create_cgroup(limit)?;
    let port = free_port()?;
    // The server's working directory, removed however the run ends.
    let scratch = tempfile::Builder::new()
        .prefix("hugewise-bloat.")
        .tempdir()
        .map_err(|source| Error::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    let dir = scratch.path().to_path_buf();
    let argv = server_args(cfg, port, &dir);
    let pid = AtomicU32::new(0);
    let series = Mutex::new(Vec::new());
    let proc = ProcFs::default();
    let mem = Memory {
        proc: &proc,
        cgroup: &cgroup.path,
    };
    let t0 = Instant::now();
    let done = AtomicBool::new(false);
    // The memory sampler's own switch: it stops before the last reading, the server after.
    let sampling = AtomicBool::new(true);
    // A plain server is started from this thread: the kernel signals a child whose parent
    // *thread* exits (tie_to_parent), so it must not come from a short-lived one.
    let mut plain: Option<Child> = match variant {
        Variant::Thp(_) => {
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            hugewise_sys::process::join_cgroup_at_exec(&mut cmd, &cgroup.procs_file())?;
            hugewise_sys::process::tie_to_parent(&mut cmd);
            let child = cmd
                .spawn()
                .map_err(|e| Error::Config(format!("cannot start {}: {e}", argv[0])))?;
            pid.store(child.id(), Ordering::Release);
            Some(child)
        }
        Variant::Exec(..) => None,
    };
    let result = std::thread::scope(|s| -> Result<(Vec<BloatPhase>, Option<MemPoint>, Daemon)> {
        // The daemon's CPU and wall time under an `exec:` variant with a policy.
        let server = s.spawn(|| -> Result<Daemon> {
            match variant {
                Variant::Thp(_) => Ok(None),
                Variant::Exec(rules, policy) => {
                    let preload = cfg.preload.clone().ok_or_else(|| {
                        Error::Config("an exec: variant needs the preload library".into())
                    })?;
                    let report = exec::run_with(
                        &ExecConfig {
                            argv: argv.clone(),
                            rules: rules.clone(),
                            min_size: hugewise_rules::protocol::DEFAULT_MIN_SIZE,
                            preload,
                            interval: Duration::from_millis(500),
                            stdout_file: Some(dir.join("server.out")),
                            cgroup_procs: Some(cgroup.procs_file()),
                            profile: false,
                            hot_arena: hugewise_rules::protocol::DEFAULT_HOT_ARENA,
                            promote: match policy.as_deref().map(daemon_of) {
                                None => None,
                                Some(Err(e)) => return Err(Error::Config(e)),
                                Some(Ok((p, nice))) => Some(Engine::Daemon {
                                    policy: p.to_string(),
                                    config: DaemonConfig {
                                        limit: Limit::Share(1.0),
                                        nice,
                                        ..DaemonConfig::default()
                                    },
                                    budget_label: "100%".into(),
                                }),
                            },
                        },
                        &done,
                        &mut |p| pid.store(p, Ordering::Release),
                        |_| {},
                    )?;
                    Ok(report
                        .promote
                        .and_then(|p| Some((p.totals.daemon_cpu_ns?, p.wall_ns))))
                }
            }
        });
        let started = Instant::now();
        while pid.load(Ordering::Acquire) == 0 {
            if (server.is_finished() && pid.load(Ordering::Acquire) == 0)
                || started.elapsed() > Duration::from_secs(15)
            {
                done.store(true, Ordering::Relaxed);
                return match server.join() {
                    Ok(Err(e)) => Err(e),
                    _ => Err(Error::Config("redis-server did not start".into())),
                };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let server_pid = pid.load(Ordering::Acquire);
        // A zombie still has a /proc entry: read its state.
        let alive = || {
            std::fs::read_to_string(format!("/proc/{server_pid}/stat")).is_ok_and(|st| {
                st.rsplit(')')
                    .next()
                    .is_some_and(|r| !r.trim_start().starts_with('Z'))
            })
        };
        let (mem, series, done, sampling) = (&mem, &series, &done, &sampling);
        let sampler = s.spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                if let (Some(p), Ok(mut v)) = (mem.read(server_pid, t0), series.lock()) {
                    v.push(p);
                }
                std::thread::sleep(cfg.sample_every);
            }
        });
        let phases = (|| -> Result<Vec<BloatPhase>> {
            wait_ready(port, &alive)?;
            let value = cfg.value_bytes.to_string();
            let deleted = ((cfg.keys as f64 * cfg.delete_share).round() as u64).max(1);
            let plan: [(&str, u64, Vec<String>); 4] = [
                (
                    "fill",
                    cfg.keys,
                    vec!["-t".into(), "set".into(), "-d".into(), value.clone()],
                ),
                ("read", cfg.keys, vec!["-t".into(), "get".into()]),
                (
                    "delete",
                    deleted,
                    vec!["DEL".into(), "key:__rand_int__".into()],
                ),
                (
                    "refill",
                    deleted,
                    vec!["-t".into(), "set".into(), "-d".into(), value],
                ),
            ];
            let mut out = Vec::new();
            for (name, n, args) in plan {
                if stop() {
                    return Err(Error::Interrupted);
                }
                let mut p = phase(cfg, port, name, n, &args, stop)?;
                if let Some(m) = mem.read(server_pid, t0) {
                    p.charged_bytes_after = m.charged_bytes;
                    p.rss_bytes_after = Some(m.rss_bytes);
                }
                out.push(p);
            }
            let settled = Instant::now();
            while settled.elapsed() < cfg.settle {
                if stop() {
                    return Err(Error::Interrupted);
                }
                std::thread::sleep(Duration::from_millis(20).min(cfg.settle));
            }
            Ok(out)
        })();
        // The sampler stops before the last reading, and the server after it: a sample taken
        // while the server exits reads its charge already freed beside the resident size read
        // an instant before, and once came after this reading as the series' last (a charge
        // of 4 MiB against 1.7 GiB resident).
        sampling.store(false, Ordering::Relaxed);
        let _ = sampler.join();
        let last = mem.read(server_pid, t0);
        if let (Some(m), Ok(mut v)) = (last, series.lock()) {
            v.push(m);
        }
        shutdown(port);
        done.store(true, Ordering::Relaxed);
        let served = server.join();
        phases.and_then(|p| match served {
            Ok(Err(e)) => Err(e),
            Ok(Ok(daemon)) => Ok((p, last, daemon)),
            // A run whose server thread panicked measured what it says only by chance.
            Err(_) => Err(Error::Config("the thread serving the run panicked".into())),
        })
    });
    if let Some(child) = plain.as_mut() {
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    drop(scratch);
    drop(session);
    let (phases, last, daemon) = result?;
    let series = series.into_inner().unwrap_or_default();
    Ok(BloatRun {
        round,
        variant: variant.label(),
        phases,
        final_charged_bytes: last.and_then(|m| m.charged_bytes),
        final_rss_bytes: last.map(|m| m.rss_bytes),
        final_anon_huge_bytes: last.map(|m| m.anon_huge_bytes),
        daemon_cpu_ns: daemon.map(|d| d.0),
        daemon_wall_ns: daemon.map(|d| d.1),
        series,
    })
}

/// A promotion daemon's CPU time and its session's wall time, in nanoseconds.
type Daemon = Option<(u64, u64)>;

/// `redis-server --version`'s first words.
fn version(server: &Path) -> Result<String> {
    let out = Command::new(server)
        .arg("--version")
        .output()
        .map_err(|e| {
            Error::Config(format!(
                "cannot run {} ({e}): install Debian's redis-server (apt-get install redis-server \
             redis-tools)",
                server.display()
            ))
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" "))
}

/// Run every variant once per round (in [`crate::order`]'s order); `progress` gets runs done
/// and the total.
pub fn run(
    cfg: &Config,
    host: &Host,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<BloatReport> {
    if cfg.rounds == 0 || cfg.variants.is_empty() || cfg.keys == 0 {
        return Err(Error::Config(
            "at least one key, one variant and one round".into(),
        ));
    }
    if !(0.0..=1.0).contains(&cfg.delete_share) {
        return Err(Error::Config("the deleted share lies in 0..=100%".into()));
    }
    let server_version = version(&cfg.server)?;
    let total = u64::from(cfg.rounds) * cfg.variants.len() as u64;
    let mut runs = Vec::new();
    // A signal keeps the rounds finished before it and drops the one under way.
    let (rounds, stopped) = Until::default().rounds(
        cfg.rounds,
        &mut runs,
        stop,
        |_| Vec::new(),
        |round, runs| {
            // Each variant runs after every other equally often (see `order`): in this VM
            // what the previous run freed changes the next one's first touch.
            let order = crate::order::balanced(cfg.variants.len(), round);
            for v in order.iter().map(|&k| &cfg.variants[k]) {
                runs.push(one_run(cfg, host, v, round, stop)?);
                progress(runs.len() as u64, total);
            }
            Ok(())
        },
    )?;
    Ok(BloatReport {
        stopped: Some(stopped),
        server_version,
        keys: cfg.keys,
        value_bytes: cfg.value_bytes,
        delete_share: cfg.delete_share,
        clients: cfg.clients,
        pipeline: cfg.pipeline,
        rounds,
        variants: summarize_variants(&cfg.variants, &runs),
        runs,
    })
}

fn geomean(phases: &[BloatPhase]) -> f64 {
    let logs: Vec<f64> = phases.iter().map(|p| p.rps.max(1e-9).ln()).collect();
    (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp()
}

fn summarize_variants(variants: &[Variant], runs: &[BloatRun]) -> Vec<BloatVariant> {
    let of = |label: &str, round: u32| runs.iter().find(|r| r.variant == label && r.round == round);
    // Per round that ran both, `f` of `label`'s run against `base`'s.
    let in_rounds = |label: &str, f: &dyn Fn(&BloatRun, &BloatRun) -> Option<f64>, base: &str| {
        runs.iter()
            .filter(|r| r.variant == label)
            .filter_map(|r| Some((r.round, f(r, of(base, r.round)?)?)))
            .collect::<Vec<(u32, f64)>>()
    };
    let bloats = |label: &str| {
        in_rounds(
            label,
            &|r, b| Some(r.final_charged_bytes? as f64 - b.final_charged_bytes? as f64),
            "never",
        )
    };
    let values = |v: &[(u32, f64)]| v.iter().map(|x| x.1).collect::<Vec<f64>>();
    let always_bloats = bloats("always");
    variants
        .iter()
        .filter_map(|v| {
            let label = v.label();
            let mine: Vec<&BloatRun> = runs.iter().filter(|r| r.variant == label).collect();
            let names: Vec<String> = mine
                .first()?
                .phases
                .iter()
                .map(|p| p.name.clone())
                .collect();
            let rps = names
                .iter()
                .filter_map(|n| {
                    let xs: Vec<f64> = mine
                        .iter()
                        .filter_map(|r| r.phases.iter().find(|p| &p.name == n).map(|p| p.rps))
                        .collect();
                    Some((n.clone(), median(&xs)?))
                })
                .collect();
            let geo: Vec<f64> = mine.iter().map(|r| geomean(&r.phases)).collect();
            let p99: Vec<f64> = mine
                .iter()
                .filter_map(|r| r.phases.iter().find(|p| p.name == "read")?.p99_ms)
                .collect();
            let charged: Vec<f64> = mine
                .iter()
                .filter_map(|r| r.final_charged_bytes.map(|b| b as f64))
                .collect();
            let my_bloats = bloats(&label);
            let my_bloat = median(&values(&my_bloats));
            let (throughput_vs_always, throughput_vs_always_ci95) = ratio(&values(&in_rounds(
                &label,
                &|r, a| Some(geomean(&r.phases) / geomean(&a.phases)),
                "always",
            )));
            let shares: Vec<f64> = my_bloats
                .iter()
                .filter_map(|&(round, m)| {
                    let a = always_bloats.iter().find(|x| x.0 == round)?.1;
                    (a > 0.0).then_some(m / a)
                })
                .collect();
            Some(BloatVariant {
                rps,
                rps_geomean: summarize(&geo)?,
                read_p99_ms: summarize(&p99),
                final_charged_bytes: summarize(&charged),
                bloat_bytes: my_bloat,
                throughput_vs_always,
                throughput_vs_always_ci95,
                bloat_vs_always: ratio(&shares).0,
                bloat_vs_always_ci95: ratio(&shares).1,
                bloat_share_rounds: Some(shares.len() as u32),
                daemon_core_share: median(
                    &mine
                        .iter()
                        .filter_map(|r| match (r.daemon_cpu_ns, r.daemon_wall_ns) {
                            (Some(c), Some(w)) if w > 0 => Some(c as f64 / w as f64),
                            _ => None,
                        })
                        .collect::<Vec<f64>>(),
                ),
                label,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(variant: &str, round: u32, rps: [f64; 2], charged: u64) -> BloatRun {
        BloatRun {
            round,
            variant: variant.into(),
            phases: ["fill", "read"]
                .iter()
                .zip(rps)
                .map(|(n, rps)| BloatPhase {
                    name: (*n).into(),
                    requests: 10,
                    rps,
                    p50_ms: Some(1.0),
                    p99_ms: Some(2.0),
                    charged_bytes_after: None,
                    rss_bytes_after: None,
                })
                .collect(),
            series: Vec::new(),
            final_charged_bytes: Some(charged),
            final_rss_bytes: None,
            final_anon_huge_bytes: None,
            daemon_cpu_ns: None,
            daemon_wall_ns: None,
        }
    }

    #[test]
    fn bloat_and_throughput_are_measured_against_never_and_always_in_the_same_round() {
        let v = Variant::parse_list("never; always ;exec:*=thp").expect("parse");
        assert_eq!(v[2].label(), "exec:*=thp");
        assert!(Variant::parse_list("sometimes").is_err());
        let m = Variant::parse_list("exec:*=system+mega").expect("with a policy");
        assert_eq!(m[0].label(), "exec:*=system+mega");
        let m = Variant::parse_list("exec:*=system+mega@0").expect("at nice 0");
        assert_eq!(m[0].label(), "exec:*=system+mega@0");
        assert_eq!(daemon_of("mega@0"), Ok(("mega", 0)));
        assert_eq!(daemon_of("mega"), Ok(("mega", 0)));
        for bad in [
            "exec:*=system+mega@20",
            "exec:*=system+mega@x",
            "exec:*=system+nope@3",
        ] {
            assert!(Variant::parse_list(bad).is_err(), "{bad}");
        }
        assert!(Variant::parse_list("exec:*=system+magic").is_err());
        let mut exec_run = run("exec:*=thp", 0, [180.0, 180.0], 1200);
        // A daemon beside it: 30 ms of CPU over a 2 s session.
        exec_run.daemon_cpu_ns = Some(30_000_000);
        exec_run.daemon_wall_ns = Some(2_000_000_000);
        let runs = [
            run("never", 0, [100.0, 100.0], 1000),
            run("always", 0, [200.0, 200.0], 3000),
            exec_run,
        ];
        let out = summarize_variants(&v, &runs);
        let exec = &out[2];
        assert_eq!(exec.daemon_core_share, Some(0.015));
        assert_eq!(out[1].daemon_core_share, None);
        assert_eq!(exec.bloat_bytes, Some(200.0));
        assert_eq!(exec.bloat_vs_always, Some(0.1));
        assert!((exec.throughput_vs_always.expect("ratio") - 0.9).abs() < 1e-9);
        assert_eq!(out[0].bloat_bytes, Some(0.0));
        assert_eq!(
            exec.rps,
            vec![("fill".into(), 180.0), ("read".into(), 180.0)]
        );
    }

    #[test]
    fn the_shares_intervals_come_from_the_rounds_and_skip_a_round_with_no_bloat_to_share() {
        let v = Variant::parse_list("never;always;exec:*=thp").expect("parse");
        let mut runs = Vec::new();
        for r in 0..7u32 {
            // Round 6's `never` run was charged more than the others: `always` has no bloat
            // there to take a share of.
            let never = if r == 6 { 5000 } else { 1000 };
            runs.push(run("never", r, [100.0, 100.0], never));
            runs.push(run("always", r, [200.0, 200.0], 3000));
            let rps = 180.0 + f64::from(r);
            runs.push(run(
                "exec:*=thp",
                r,
                [rps, rps],
                1000 + 200 * u64::from(r + 1),
            ));
        }
        let out = summarize_variants(&v, &runs);
        let exec = &out[2];
        // Seven throughput ratios, 0.90 to 0.93: at seven rounds the extremes cover 98.4 %.
        let t = exec.throughput_vs_always_ci95.expect("seven rounds");
        assert!(
            (t.lo - 0.90).abs() < 1e-9 && (t.hi - 0.93).abs() < 1e-9,
            "{t:?}"
        );
        // Six shares, 0.1 to 0.6 (round 6's left out).
        let b = exec.bloat_vs_always_ci95.expect("six rounds with a share");
        assert!(
            (b.lo - 0.1).abs() < 1e-9 && (b.hi - 0.6).abs() < 1e-9,
            "{b:?}"
        );
        // The share is their median, as its interval is of: between 0.3 and 0.4.
        assert!(exec
            .bloat_vs_always
            .is_some_and(|x| (x - 0.35).abs() < 1e-9));
        assert_eq!(exec.bloat_share_rounds, Some(6));
        // With one round fewer, five shares are too few for 95 %.
        let out = summarize_variants(&v, &runs[3..]);
        assert!(out[2].bloat_vs_always_ci95.is_none());
        assert!(out[2].throughput_vs_always_ci95.is_some(), "six ratios");
    }
}
