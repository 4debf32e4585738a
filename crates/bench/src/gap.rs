//! `hugewise bench gap`: the user's own build of the GAP benchmark suite and hugewise's
//! kernels on the same graph file, the same threads and the same start vertices, alternated
//! round by round.
//!
//! GAP's binaries read `.sg` and `.wsg` only, so any other input is converted once (and the
//! files reused while newer than the input). Each round runs GAP's binary as a child process
//! for a few trials (the last is timed: GAP allocates its arrays afresh in every trial, and the
//! first pays the first touch, as hugewise's untimed warm-up does) and hugewise's kernel in
//! process as many times, the last timed as GAP's is; which goes first alternates. Each side's
//! timed trial thus follows one of its own from the same source: timing hugewise's first run
//! of a round, seconds after its last, measured pages gone cold while GAP ran (on this VM a
//! page untouched for 2 s takes milliseconds to read again, a small BFS on cnr-2000 1.9 ms
//! instead of 7 µs), which GAP's second trial never meets. GAP's time is the "Trial Time" it
//! prints itself, so neither side's time includes loading. The ratio is GAP's time over hugewise's within a round.
//! The first round verifies both (GAP's `-v`, unless [`Config::gap_verify`] is off; hugewise's
//! verifier always).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hugewise_graph::kernels::{pick_sources, Kernel, Outcome, Spec, SpecExt};
use hugewise_graph::load::{load, Input, LoadOptions};
use hugewise_graph::{Csr, Layout};
use hugewise_results::gapbench::{Converted, GapBenchReport, GapKernel, GapSample};
use hugewise_results::kernel::PrMode;

use crate::quiet;
use crate::stats::{median, ratio, summarize, Stopped, Until};
use crate::{Error, Progress, Result};

/// GAP's binaries, in the order the suite's benchmark runs them.
pub const KERNELS: [&str; 6] = ["bfs", "sssp", "pr", "cc", "bc", "tc"];

/// What to compare.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The directory holding GAP's binaries (`bfs`, `sssp`, `pr`, `cc`, `bc`, `tc`).
    pub gap_dir: PathBuf,
    /// The graph: a file (any kind hugewise reads) or a generator.
    pub input: Input,
    /// Symmetrize a text edge list.
    pub symmetrize: bool,
    /// Where converted files go (`None`: beside the input file, or the current directory for
    /// a generator).
    pub convert_dir: Option<PathBuf>,
    /// Kernels, by GAP's binary names.
    pub kernels: Vec<String>,
    /// Threads of both.
    pub threads: usize,
    /// Rounds, at least.
    pub rounds: u32,
    /// More rounds until every ratio's interval is narrow enough.
    pub until: Until,
    /// Seed of the start vertices (and of a generator).
    pub seed: u64,
    /// Trials each side runs per round, from the same source (the last is timed); at least 1.
    pub gap_trials: u32,
    /// PageRank: tolerance and iteration cap (GAP's `-t`, `-i`; the suite's are 1e-4, 1000).
    pub pr_tolerance: f64,
    /// PageRank's cap.
    pub pr_max_iters: u32,
    /// PageRank: hugewise's mode.
    pub pr_mode: PrMode,
    /// SSSP: bucket width of both (GAP's `-d`; the suite's is 2 on kron and urand).
    pub sssp_delta: u32,
    /// BC: sources a trial (GAP's `-i`; the suite's is 4). GAP's `-r` starts every one of them
    /// from the same vertex, so hugewise is given that vertex as many times.
    pub bc_sources: u32,
    /// Longest GAP's output may be; more is an error.
    pub max_output_bytes: u64,
    /// Whether GAP's first round verifies too (its `-v`). Some of its verifiers are serial and
    /// far slower than the kernel (TC's on kron:22 ran past 13 minutes); hugewise's side
    /// verifies either way.
    pub gap_verify: bool,
}

impl Config {
    /// The suite's settings for `gap_dir`, `input` and `kernels`.
    pub fn new(gap_dir: PathBuf, input: Input, kernels: Vec<String>) -> Config {
        Config {
            gap_dir,
            input,
            symmetrize: false,
            convert_dir: None,
            kernels,
            threads: 2,
            rounds: 6,
            until: Until::default(),
            seed: 1,
            gap_trials: 2,
            pr_tolerance: 1e-4,
            pr_max_iters: 1000,
            pr_mode: PrMode::PullGsBalanced,
            sssp_delta: 2,
            bc_sources: 4,
            max_output_bytes: 16 << 20,
            gap_verify: true,
        }
    }

    fn spec(&self, kernel: &str) -> Result<Spec> {
        let mut spec = Spec::default_for(kernel)
            .ok_or_else(|| Error::Config(format!("unknown kernel {kernel}")))?;
        match &mut spec {
            Spec::Sssp { delta } => *delta = Some(self.sssp_delta),
            Spec::Pr {
                mode,
                tolerance,
                max_iters,
            } => {
                *mode = self.pr_mode;
                *tolerance = self.pr_tolerance;
                *max_iters = self.pr_max_iters;
            }
            Spec::Bc { sources } => *sources = self.bc_sources,
            _ => {}
        }
        Ok(spec)
    }

    /// GAP's arguments for `kernel` on `file`, from `source`, verifying or not (never when
    /// `gap_verify` is off).
    fn gap_args(
        &self,
        kernel: &str,
        file: &Path,
        source: Option<u32>,
        verify: bool,
    ) -> Vec<String> {
        let mut a = vec!["-f".to_string(), file.display().to_string()];
        if let Some(s) = source {
            a.extend(["-r".into(), s.to_string()]);
        }
        match kernel {
            "sssp" => a.extend(["-d".into(), self.sssp_delta.to_string()]),
            // `-l` prints one line per iteration: the iteration count.
            "pr" => a.extend([
                "-i".into(),
                self.pr_max_iters.to_string(),
                "-t".into(),
                self.pr_tolerance.to_string(),
                "-l".into(),
            ]),
            "bc" => a.extend(["-i".into(), self.bc_sources.to_string()]),
            _ => {}
        }
        a.extend(["-n".into(), self.gap_trials.to_string()]);
        if verify && self.gap_verify {
            a.push("-v".into());
        }
        a
    }
}

/// What one run of a GAP binary printed, understood.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GapOutput {
    /// Vertices and edges from "Graph has N nodes and M (un)directed edges", and whether
    /// directed.
    pub graph: Option<(u64, u64, bool)>,
    /// Every "Trial Time", in seconds.
    pub trials_s: Vec<f64>,
    /// Per trial, the iteration lines GAP's `-l` log printed before its "Trial Time" (PageRank
    /// prints one per iteration).
    pub steps: Vec<u32>,
    /// Every "Verification: PASS|FAIL".
    pub verified: Vec<bool>,
}

/// Understand `text`, printed by GAP's `binary`. Lines this does not know are skipped (GAP
/// prints read and build times, kernel logs, top scores); a known label with a value that does
/// not parse is an error naming the binary and the line.
pub fn parse_gap_output(binary: &str, text: &str) -> Result<GapOutput> {
    let bad = |n: usize, line: &str, what: &str| {
        Error::Gap(format!(
            "{binary}: line {} of its output, {:?}: {what}",
            n + 1,
            line.chars().take(120).collect::<String>()
        ))
    };
    let mut out = GapOutput::default();
    let mut steps = 0u32;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Graph has ") {
            // "Graph has 1024 nodes and 4096 undirected edges for degree: 4"
            let w: Vec<&str> = rest.split_whitespace().collect();
            let parsed = match w.as_slice() {
                [nodes, "nodes", "and", edges, kind, "edges", ..] => {
                    match (nodes.parse::<u64>(), edges.parse::<u64>(), *kind) {
                        (Ok(v), Ok(e), "directed") => Some((v, e, true)),
                        (Ok(v), Ok(e), "undirected") => Some((v, e, false)),
                        _ => None,
                    }
                }
                _ => None,
            };
            out.graph =
                Some(parsed.ok_or_else(|| bad(n, line, "expected 'Graph has N nodes and M ...'"))?);
        } else if let Some(v) = label(t, "Trial Time") {
            let s: f64 = v
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| bad(n, line, "a trial time that is no number of seconds"))?;
            out.trials_s.push(s);
            out.steps.push(steps);
            steps = 0;
        } else if let Some(v) = label(t, "Verification") {
            out.verified.push(match v {
                "PASS" => true,
                "FAIL" => false,
                _ => return Err(bad(n, line, "expected PASS or FAIL")),
            });
        } else if is_step(t) {
            steps += 1;
        }
    }
    if out.trials_s.is_empty() {
        return Err(Error::Gap(format!(
            "{binary}: no 'Trial Time:' line in its output (is it GAP's {binary}?); it \
             printed: {:?}",
            text.lines().take(5).collect::<Vec<_>>()
        )));
    }
    Ok(out)
}

/// The value after `name:` in GAP's "Label:   value" lines.
fn label<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.strip_prefix(name)?.strip_prefix(':').map(str::trim)
}

/// An iteration line of PageRank's `-l` log: an iteration number, then the change.
fn is_step(line: &str) -> bool {
    let mut w = line.split_whitespace();
    matches!(
        (w.next(), w.next(), w.next()),
        (Some(i), Some(e), None) if i.parse::<u32>().is_ok() && e.parse::<f64>().is_ok()
    )
}

/// Run GAP's `binary` from `dir` with `args` on `threads` threads; its output, understood.
fn run_gap(
    dir: &Path,
    binary: &str,
    args: &[String],
    threads: usize,
    max_bytes: u64,
) -> Result<GapOutput> {
    let path = dir.join(binary);
    let what = |m: String| Error::Gap(format!("{}: {m}", path.display()));
    let mut child = Command::new(&path)
        .args(args)
        .env("OMP_NUM_THREADS", threads.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| what(format!("cannot start it: {e}")))?;
    // Its stderr is read beside its stdout, so that neither pipe can fill and stall it while
    // the other is read; past the bound, it is stopped before anything waits for its end.
    let stderr = child.stderr.take().map(|e| {
        std::thread::spawn(move || {
            let mut err = String::new();
            let _ = e.take(64 << 10).read_to_string(&mut err);
            err
        })
    });
    let mut text = String::new();
    let read = child
        .stdout
        .take()
        .map(|o| o.take(max_bytes + 1).read_to_string(&mut text));
    if (text.len() as u64) > max_bytes {
        let _ = child.kill();
        let _ = child.wait();
        return Err(what(format!("printed more than {max_bytes} bytes")));
    }
    let err = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    let status = child
        .wait()
        .map_err(|e| what(format!("waiting for it: {e}")))?;
    if let Some(Err(e)) = read {
        return Err(what(format!("its output is not text: {e}")));
    }
    if !status.success() {
        return Err(what(format!(
            "{status} with arguments {}: {}",
            args.join(" "),
            err.trim().chars().take(400).collect::<String>()
        )));
    }
    parse_gap_output(binary, &text)
}

/// The file GAP reads for an (un)weighted kernel: the input when it is already that kind, else
/// a converted copy, written once.
fn gap_file(cfg: &Config, weighted: bool, made: &mut Vec<Converted>) -> Result<PathBuf> {
    let ext = if weighted { "wsg" } else { "sg" };
    let (stem, dir, input_time) = match &cfg.input {
        Input::File(p) => {
            if p.extension().and_then(|e| e.to_str()) == Some(ext) {
                return Ok(p.clone());
            }
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("graph");
            // `road.el.gz` -> `road`.
            let stem = name.split('.').next().unwrap_or(name).to_string();
            let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
            let time = std::fs::metadata(p).and_then(|m| m.modified()).ok();
            (stem, dir, time)
        }
        other => (
            format!("{}-seed{}", other.to_string().replace(':', "_"), cfg.seed),
            PathBuf::from("."),
            None,
        ),
    };
    let dir = cfg.convert_dir.clone().unwrap_or(dir);
    let sym = if cfg.symmetrize { "-sym" } else { "" };
    let path = dir.join(format!("{stem}{sym}.{ext}"));
    let fresh = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .is_some_and(|t| input_time.is_none_or(|i| t >= i));
    if fresh {
        made.push(Converted {
            path: path.display().to_string(),
            written: false,
            wall_ns: None,
        });
        return Ok(path);
    }
    let t = Instant::now();
    let (g, _) = load(
        &cfg.input,
        LoadOptions {
            seed: cfg.seed,
            weighted,
            symmetrize: cfg.symmetrize,
            fit: Default::default(),
        },
        &Layout::default(),
        &mut |_| Ok(()),
    )?;
    hugewise_graph::save::save(&g, &path)?;
    made.push(Converted {
        path: path.display().to_string(),
        written: true,
        wall_ns: Some(t.elapsed().as_nanos() as u64),
    });
    Ok(path)
}

/// Run the comparison; `progress` counts rounds done of every kernel's. `cancel` raised keeps
/// the kernels and rounds done (see [`crate::stats::Until::rounds`]); the kernels after are not
/// run.
pub fn run(cfg: &Config, cancel: &AtomicBool, progress: Progress<'_>) -> Result<GapBenchReport> {
    if cfg.kernels.is_empty() || cfg.rounds == 0 || cfg.gap_trials == 0 {
        return Err(Error::Config(
            "compare at least one kernel over at least one round of at least one GAP trial".into(),
        ));
    }
    for k in &cfg.kernels {
        if !KERNELS.contains(&k.as_str()) {
            return Err(Error::Config(format!(
                "unknown kernel {k} (GAP's are {})",
                KERNELS.join(", ")
            )));
        }
        let bin = cfg.gap_dir.join(k);
        if !bin.is_file() {
            return Err(Error::Config(format!(
                "{}: no GAP binary there (build GAP with `make` in its folder, and give that \
                 folder as --gap-dir)",
                bin.display()
            )));
        }
    }
    let crate::pool::KernelPool { pool, bound_to } =
        crate::pool::kernel_pool(cfg.threads, crate::pool::Binding::from_env()?)?;
    let mut converted = Vec::new();
    // The unweighted file first (most kernels), the weighted one when SSSP asks.
    let mut order: Vec<&String> = cfg.kernels.iter().filter(|k| *k != "sssp").collect();
    order.extend(cfg.kernels.iter().filter(|k| *k == "sssp"));
    let total = cfg.until.planned(cfg.rounds) as u64 * order.len() as u64;
    let mut done = 0u64;
    let mut loaded: Option<(bool, PathBuf, Csr)> = None;
    let mut kernels = Vec::new();
    let mut rounds_run = 0;
    let mut stopped = None;
    for name in order {
        if cancel.load(Ordering::Relaxed) {
            if kernels.is_empty() {
                return Err(Error::Interrupted);
            }
            stopped = Some(Stopped::Interrupted);
            break;
        }
        let spec = cfg.spec(name)?;
        let weighted = spec.needs_weights();
        if loaded.as_ref().is_none_or(|(w, _, _)| *w != weighted) {
            // The other graph goes before this one is loaded: two would need twice the memory.
            drop(loaded.take());
            let file = gap_file(cfg, weighted, &mut converted)?;
            let (g, _) = pool.install(|| {
                load(
                    &Input::File(file.clone()),
                    LoadOptions {
                        seed: cfg.seed,
                        weighted,
                        symmetrize: false,
                        fit: Default::default(),
                    },
                    &Layout::default(),
                    &mut |_| Ok(()),
                )
            })?;
            loaded = Some((weighted, file, g));
        }
        let Some((_, file, g)) = loaded.as_ref() else {
            unreachable!("loaded above")
        };
        spec.check(g)?;
        let on = OnGraph { file, g };
        let compared = compare(cfg, name, spec, on, &pool, cancel, &mut |_| {
            done += 1;
            progress(done, total);
        });
        let (k, r, s) = match compared {
            // Stopped in this kernel's first round: the kernels before it are kept.
            Err(Error::Interrupted) if !kernels.is_empty() => {
                stopped = Some(Stopped::Interrupted);
                break;
            }
            c => c?,
        };
        rounds_run = rounds_run.max(r);
        stopped = Some(s);
        kernels.push(k);
        if s == Stopped::Interrupted {
            break;
        }
    }
    let Some((_, _, g)) = loaded.as_ref() else {
        return Err(Error::Config("no kernel ran".into()));
    };
    Ok(GapBenchReport {
        gap_dir: cfg.gap_dir.display().to_string(),
        input: cfg.input.to_string(),
        vertices: g.n() as u64,
        edges: g.edges(),
        directed: g.directed(),
        threads: cfg.threads,
        threads_bound_to: bound_to,
        gap_trials: cfg.gap_trials,
        hugewise_trials: Some(cfg.gap_trials),
        rounds: rounds_run,
        stopped,
        seed: cfg.seed,
        converted,
        kernels,
    })
}

/// The graph a kernel is compared on: GAP's file of it and hugewise's load.
struct OnGraph<'a> {
    file: &'a Path,
    g: &'a Csr,
}

/// One kernel, alternated round by round.
fn compare(
    cfg: &Config,
    name: &str,
    spec: Spec,
    on: OnGraph<'_>,
    pool: &rayon::ThreadPool,
    cancel: &AtomicBool,
    round_done: &mut dyn FnMut(u32),
) -> Result<(GapKernel, u32, Stopped)> {
    let OnGraph { file, g } = on;
    let takes_source = spec.sources_per_trial() > 0;
    let planned = cfg.until.planned(cfg.rounds) as usize;
    let sources = if takes_source {
        pick_sources(g, cfg.seed, planned + 1)?
    } else {
        Vec::new()
    };
    // GAP's `-r` gives every source of a trial; BC's iterations then all start there.
    let mine = |round: usize| -> Vec<u32> {
        sources
            .get(round)
            .map(|&s| vec![s; spec.sources_per_trial()])
            .unwrap_or_default()
    };
    let mut kernel: Box<dyn Kernel> = pool.install(|| spec.create(&Layout::default(), g.n()))?;
    // Warm-up: creates edge-sized arrays and takes first-touch costs out of the timing.
    pool.install(|| kernel.run(g, &mine(planned)))?;
    let mut notes = Vec::new();
    let mut gap_verified = None;
    let mut hw_verified = None;
    let mut hw_error = None;
    let mut samples: Vec<GapSample> = Vec::new();
    let ratios = |s: &[GapSample]| -> Vec<f64> {
        s.iter()
            .map(|x| x.gap_ns as f64 / x.hugewise_ns.max(1) as f64)
            .collect()
    };
    let (rounds, stopped) = cfg.until.rounds(
        cfg.rounds,
        &mut samples,
        &|| cancel.load(Ordering::Relaxed),
        |s| vec![ratios(s)],
        |round, samples| {
            let source = sources.get(round as usize).copied();
            let verify = round == 0;
            let args = cfg.gap_args(name, file, source, verify);
            let quiet = quiet::wait_quiet(
                hugewise_results::stats::BUSY_SHARE,
                Duration::from_millis(200),
                5,
            );
            let gap_first = round % 2 == 0;
            let mut gap = None;
            let mut ours = None;
            for side in [gap_first, !gap_first] {
                if side {
                    gap = Some(run_gap(
                        &cfg.gap_dir,
                        name,
                        &args,
                        cfg.threads,
                        cfg.max_output_bytes,
                    )?);
                } else {
                    let src = mine(round as usize);
                    ours = Some(crate::pool::awake(pool, || -> Result<u64> {
                        // As GAP's: the trials before the timed one are run and dropped.
                        for _ in 1..cfg.gap_trials {
                            kernel.run(g, &src)?;
                        }
                        let t = Instant::now();
                        kernel.run(g, &src)?;
                        Ok(t.elapsed().as_nanos() as u64)
                    })?);
                }
            }
            let (Some(gap), Some(hugewise_ns)) = (gap, ours) else {
                unreachable!("both sides ran")
            };
            if verify {
                check_graph(name, &gap, g, &mut notes);
                gap_verified = gap.verified.iter().copied().reduce(|a, b| a && b);
                let src = mine(round as usize);
                match kernel.verify(g, &src) {
                    Ok(()) => hw_verified = Some(true),
                    Err(e) => {
                        hw_verified = Some(false);
                        hw_error = Some(e);
                    }
                }
            }
            let last = gap.trials_s.len() - 1;
            samples.push(GapSample {
                round,
                source,
                gap_ns: (gap.trials_s[last] * 1e9) as u64,
                gap_trials_ns: gap.trials_s.iter().map(|s| (s * 1e9) as u64).collect(),
                hugewise_ns,
                gap_iterations: (name == "pr").then(|| gap.steps[last]),
                hugewise_iterations: match kernel.outcome(g) {
                    Outcome::Pr { iterations, .. } => Some(iterations),
                    _ => None,
                },
                gap_first,
                quiet,
            });
            round_done(round);
            Ok(())
        },
    )?;
    let gap_ns: Vec<f64> = samples.iter().map(|s| s.gap_ns as f64).collect();
    let hw_ns: Vec<f64> = samples.iter().map(|s| s.hugewise_ns as f64).collect();
    let (r, ci) = ratio(&ratios(&samples));
    let iters = |f: &dyn Fn(&GapSample) -> Option<u32>| {
        let v: Vec<f64> = samples.iter().filter_map(|s| f(s).map(f64::from)).collect();
        median(&v).map(|m| m.round() as u32)
    };
    let mut k = GapKernel {
        kernel: name.to_string(),
        spec,
        file: file.display().to_string(),
        gap_args: cfg.gap_args(name, file, takes_source.then_some(0), false),
        gap_ns: summarize(&gap_ns),
        hugewise_ns: summarize(&hw_ns),
        ratio: r,
        ratio_ci95: ci,
        gap_iterations: iters(&|s| s.gap_iterations),
        hugewise_iterations: iters(&|s| s.hugewise_iterations),
        gap_iteration_cap: (name == "pr").then_some(cfg.pr_max_iters),
        gap_verified,
        hugewise_verified: hw_verified,
        hugewise_verify_error: hw_error,
        notes,
        samples,
    };
    if takes_source {
        if let Some(i) = k.gap_args.iter().position(|a| a == "-r") {
            k.gap_args[i + 1] = "<source>".into();
        }
    }
    if !cfg.gap_verify {
        k.notes
            .push("GAP's own verification skipped (--skip-gap-verify)".into());
    }
    if k.gap_capped() {
        k.notes.push(format!(
            "GAP's pr stopped at its cap of {} iterations (-i), not at the tolerance",
            cfg.pr_max_iters
        ));
    }
    Ok((k, rounds, stopped))
}

/// Note where GAP describes the graph otherwise than hugewise loaded it.
fn check_graph(name: &str, gap: &GapOutput, g: &Csr, notes: &mut Vec<String>) {
    if let Some((n, m, directed)) = gap.graph {
        if n != g.n() as u64 || m != g.edges() || directed != g.directed() {
            notes.push(format!(
                "GAP's {name} read {n} vertices and {m} {} edges; hugewise {} and {} {}",
                if directed { "directed" } else { "undirected" },
                g.n(),
                g.edges(),
                if g.directed() {
                    "directed"
                } else {
                    "undirected"
                },
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by hand after GAP's printing helpers: labels padded to 21 columns, times with 5
    /// decimals; PageRank's `-l` log prints the iteration and the change.
    const PR: &str = "Read Time:           0.01234
Build Time:          0.00321
Graph has 1024 nodes and 4096 undirected edges for degree: 4
    0                0.61000
    1                0.05100
    2                0.00042
    3                0.00004
Trial Time:          0.00210
    0                0.61000
    1                0.05100
    2                0.00042
Trial Time:          0.00190
Total Error:         0.00002
Verification:           PASS
Verification Time:   0.00100
Average Time:        0.00200
";

    #[test]
    fn gaps_pagerank_output_gives_trials_iterations_and_verification() {
        let o = parse_gap_output("pr", PR).expect("parses");
        assert_eq!(o.graph, Some((1024, 4096, false)));
        assert_eq!(o.trials_s, [0.0021, 0.0019]);
        assert_eq!(o.steps, [4, 3]);
        assert_eq!(o.verified, [true]);
    }

    #[test]
    fn a_bfs_log_and_a_failed_verification_are_read() {
        let text = "Graph has 10 nodes and 30 directed edges for degree: 3
Trial Time:          0.10000
Verification:           FAIL
Verification Time:   0.00100
Trial Time:          0.20000
Verification:           PASS
";
        let o = parse_gap_output("bfs", text).expect("parses");
        assert_eq!(o.graph, Some((10, 30, true)));
        assert_eq!(o.trials_s, [0.1, 0.2]);
        assert_eq!(o.verified, [false, true]);
    }

    #[test]
    fn output_that_is_not_gaps_is_an_error_naming_the_binary_and_line() {
        let e = parse_gap_output("bfs", "Trial Time: soon\n").expect_err("bad time");
        let m = e.to_string();
        assert!(
            m.contains("bfs") && m.contains("line 1") && m.contains("soon"),
            "{m}"
        );
        let e = parse_gap_output("cc", "hello\nVerification: MAYBE\n").expect_err("bad verdict");
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = parse_gap_output("tc", "No graph input specified.\n").expect_err("no trial");
        assert!(e.to_string().contains("no 'Trial Time:'"), "{e}");
        let e = parse_gap_output("pr", "Graph has many nodes\nTrial Time: 1\n").expect_err("graph");
        assert!(e.to_string().contains("Graph has N nodes"), "{e}");
    }

    #[test]
    fn gap_gets_the_suites_flags() {
        let cfg = Config::new("/gap".into(), Input::File("g.sg".into()), vec![]);
        let f = Path::new("g.sg");
        assert_eq!(
            cfg.gap_args("pr", f, None, false).join(" "),
            "-f g.sg -i 1000 -t 0.0001 -l -n 2"
        );
        assert_eq!(
            cfg.gap_args("bc", f, Some(7), true).join(" "),
            "-f g.sg -r 7 -i 4 -n 2 -v"
        );
        assert_eq!(
            cfg.gap_args("sssp", Path::new("g.wsg"), Some(3), false)
                .join(" "),
            "-f g.wsg -r 3 -d 2 -n 2"
        );
        // With GAP's verification off, the first round asks for none.
        let cfg = Config {
            gap_verify: false,
            ..cfg
        };
        assert_eq!(cfg.gap_args("tc", f, None, true).join(" "), "-f g.sg -n 2");
    }
}
