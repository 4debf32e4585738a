//! `hugewise promote` and `hugewise bench promote`: arguments to the promote and study crates'
//! configs, the call, and the output.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use hugewise_mem::{Amount, Bytes};
use hugewise_promote::budget::{Limit, Share};
use hugewise_promote::{daemon, session};
use hugewise_report::promoteview;
use hugewise_study::promotebench;

use crate::cli::parse_count;
use crate::envcli::parse_duration;
use crate::output::Output;

/// The daemon's policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// pcc for a target that publishes access samples, mega for one that does not.
    Auto,
    /// Most sampled chunks first, counts halved every interval (needs access samples).
    Pcc,
    /// Mapped and used chunks; demotes those that stop being either.
    Mega,
    /// Widest access coverage first.
    Hawkeye,
    /// What khugepaged would do: address order, no ranking.
    Linux,
}

impl PolicyArg {
    pub(crate) fn name(self) -> &'static str {
        match self {
            PolicyArg::Auto => "auto",
            PolicyArg::Pcc => "pcc",
            PolicyArg::Mega => "mega",
            PolicyArg::Hawkeye => "hawkeye",
            PolicyArg::Linux => "linux",
        }
    }
}

/// How targets share the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShareArg {
    /// Best chunks first, whichever process they belong to.
    Highest,
    /// Each process's best in turn.
    RoundRobin,
}

/// `hugewise promote`.
#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// A running process to manage; repeat for several (they share the budget).
    #[arg(long = "pid", value_name = "PID", conflicts_with = "command")]
    pub pids: Vec<i32>,
    /// Replay this plan (`hugewise sim --plan`) instead of running the daemon.
    #[arg(long, value_name = "FILE", conflicts_with = "policy")]
    pub plan: Option<PathBuf>,
    /// With --plan: the policy whose plan to replay, when the file holds several.
    #[arg(long, value_name = "NAME", requires = "plan")]
    pub plan_policy: Option<String>,
    /// With --plan: the budget whose plan to replay (a share such as 4%), when the file holds
    /// several.
    #[arg(long, value_name = "SHARE", requires = "plan")]
    pub plan_budget: Option<Amount>,
    /// The daemon's policy. The first interval says, per target, which signal it acts on.
    #[arg(long, value_enum, default_value = "auto")]
    pub policy: PolicyArg,
    /// Most memory huge at once: a share of the targets' mapped memory (2%) or a size (512MiB).
    #[arg(long, default_value = "2%")]
    pub budget: Amount,
    /// Time between two looks at the targets (90s, 0.5s, 200ms, 2m).
    #[arg(long, default_value = "1s", value_parser = crate::cli::parse_interval)]
    pub interval: Duration,
    /// How several targets share the budget.
    #[arg(long, value_enum, default_value = "highest")]
    pub share: ShareArg,
    /// A factor on one process's scores (PID=FACTOR); repeat for several.
    #[arg(long = "bias", value_name = "PID=FACTOR", value_parser = parse_bias)]
    pub bias: Vec<(i32, f64)>,
    /// Most promotions per interval.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_promotions: u32,
    /// Most 2 MiB chunks whose page tables are read per target and interval (0: all); a
    /// larger target is swept over several intervals, which bounds the daemon's CPU time.
    #[arg(long, default_value_t = 2048, value_name = "CHUNKS")]
    pub scan_chunks: usize,
    /// pcc only: the most the daemon thins a program's samples while its looks find nothing to
    /// do (it asks for one in 4, 16, 64, ... of the usual, for all again when it fills or
    /// empties the budget, one step more when it swaps a chunk); 1 keeps every sample.
    #[arg(long, default_value_t = 64, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(hugewise_sys::shm::MAX_THINNING)))]
    pub max_thinning: u32,
    /// Stop after this long (the targets keep running).
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Print every action as it happens (on stderr).
    #[arg(long)]
    pub actions: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
    /// A program to start without address-space randomisation and promote until it exits.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

fn parse_bias(s: &str) -> Result<(i32, f64), String> {
    let (p, f) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}': expected PID=FACTOR"))?;
    let pid = p
        .trim()
        .parse()
        .map_err(|_| format!("'{p}' is not a pid"))?;
    let f: f64 = f
        .trim()
        .parse()
        .map_err(|_| format!("'{f}' is not a number"))?;
    if !(f > 0.0 && f.is_finite()) {
        return Err(format!("'{s}': the factor must be positive"));
    }
    Ok((pid, f))
}

pub(crate) fn limit(a: Amount) -> Limit {
    match a {
        Amount::Bytes(b) => Limit::Bytes(b.0),
        Amount::Percent(p) => Limit::Share(p / 100.0),
    }
}

fn share(a: Amount) -> anyhow::Result<f64> {
    match a {
        Amount::Percent(p) => Ok(p / 100.0),
        Amount::Bytes(_) => anyhow::bail!("--plan-budget takes a share such as 4%"),
    }
}

/// Run `hugewise promote`; the exit code is the started command's when there is one.
pub fn promote(a: PromoteArgs, cancel: &std::sync::atomic::AtomicBool) -> anyhow::Result<u8> {
    let engine = match &a.plan {
        Some(file) => session::Engine::Plan {
            file: file.clone(),
            policy: a.plan_policy.clone(),
            budget_share: a.plan_budget.map(share).transpose()?,
        },
        None => session::Engine::Daemon {
            policy: a.policy.name().to_string(),
            config: daemon::Config {
                interval: a.interval,
                limit: limit(a.budget),
                share: match a.share {
                    ShareArg::Highest => Share::HighestFirst,
                    ShareArg::RoundRobin => Share::RoundRobin,
                },
                bias: a.bias.iter().copied().collect::<HashMap<_, _>>(),
                max_promotions: a.max_promotions as usize,
                scan_chunks: a.scan_chunks,
                max_thinning: a.max_thinning,
                ..daemon::Config::default()
            },
            budget_label: budget_label(a.budget),
        },
    };
    let cfg = session::Config {
        targets: if a.command.is_empty() {
            session::Targets::Pids(a.pids.clone())
        } else {
            session::Targets::Launch(a.command.clone())
        },
        engine,
        duration: a.duration,
    };
    let live = std::io::stderr().is_terminal();
    let verbose = a.actions;
    let r = session::run(
        &cfg,
        cancel,
        &mut |act| {
            if verbose {
                eprintln!("{}", promoteview::action_line(act));
            }
        },
        &mut |iv| {
            // What the daemon has to say goes above the status line, once.
            for note in &iv.notes {
                if live {
                    eprint!("\r\x1b[2K");
                }
                eprintln!("hugewise promote: {note}");
            }
            if live {
                // One status line, rewritten in place.
                eprint!("\r\x1b[2K{}", promoteview::interval_line(iv));
            }
        },
    )
    .context("promotion session")?;
    if live && r.mode == "daemon" {
        eprintln!();
    }
    let code = r.command_exit.unwrap_or(0).clamp(0, 255) as u8;
    // A command hugewise started owns stdout (its output may be piped on); the session's
    // report then goes to stderr, as `env with` and `exec` do.
    let stream = if a.command.is_empty() {
        crate::output::Stream::Stdout
    } else {
        crate::output::Stream::Stderr
    };
    crate::output::emit_to(
        stream,
        a.output.json,
        a.output.out.as_ref(),
        r,
        Some(promoteview::session),
    )?;
    Ok(code)
}

pub(crate) fn budget_label(a: Amount) -> String {
    match a {
        Amount::Bytes(Bytes(b)) => hugewise_report::fmt::bytes(b),
        Amount::Percent(p) => format!("{p}%"),
    }
}

/// `hugewise bench promote`.
#[derive(Debug, Args)]
pub struct BenchPromoteArgs {
    /// Region size.
    #[arg(long, default_value = "8GiB", allow_negative_numbers = true)]
    pub size: Bytes,
    /// Zipf exponents over the 2 MiB chunks' ranks, comma-separated: one workload each, run in
    /// turn, each against its own base and ideal [default: 1, without --hotspot].
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub zipf: Vec<f64>,
    /// Hot spots, comma-separated, each `CHUNKS:READS` in percent: READS of the reads spread
    /// evenly over CHUNKS of the 2 MiB chunks (scattered over the region), the rest evenly over
    /// the others (`4%:99%`). One workload each, run after the Zipf ones.
    #[arg(long, value_delimiter = ',', num_args = 1.., value_name = "CHUNKS:READS", value_parser = parse_hotspot)]
    pub hotspot: Vec<(f64, f64)>,
    /// Timed reads per run (k/M/G suffixes are decimal).
    #[arg(long, default_value = "200M", value_parser = parse_count)]
    pub reads: u64,
    /// Rounds; each runs every arm once, alternated.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Share of the region the plan and the daemon may make huge.
    #[arg(long, default_value = "4%")]
    pub budget: Amount,
    /// The daemon's interval.
    #[arg(long, default_value = "1s", value_parser = crate::cli::parse_interval)]
    pub interval: Duration,
    /// One access in this many is published to the daemon.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub sample_every: u32,
    /// Seed of the permutation and the reads.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Cache lines of each 4 KiB page the reads go to, a power of two from 1 to 64 (every
    /// line); they start at an offset that moves from page to page, so they fill every cache
    /// set. With 1 the hot chunks' data fits the caches while their pages overflow the TLB:
    /// records a page apart whose headers alone are read, where walks of 4 KiB page tables
    /// are the reads' cost.
    #[arg(long, default_value_t = 64, value_name = "LINES")]
    pub lines_per_page: u32,
    /// Make each read's address wait for the word read before it, as a pointer chase or a
    /// traversal does: a page walk then cannot overlap other reads, and its whole latency is
    /// the read's. The addresses are the same as without it.
    #[arg(long)]
    pub chase: bool,
    /// Run every arm of a round on the same physical pages: the region is faulted with 4 KiB
    /// pages and collapsed whole, then split in place from arm to arm (ideal, plan, base, then
    /// the daemon from 4 KiB pages). Arms then differ in their page tables only, not in where
    /// their memory landed, which in a virtual machine decides how the host maps it; the
    /// order within a round is fixed.
    #[arg(long)]
    pub same_frames: bool,
    /// Fault each arm's region chunk by chunk, coldest first, as a program that fills its bulk
    /// data before its hot index. Where huge pages are scarce (under `hugewise env with
    /// --pressure-leave … --fragment …`), the ideal arm is then Linux THP at fault spending
    /// them on cold chunks, against the plan and the daemon choosing hot ones; its huge share
    /// says what the kernel gave.
    #[arg(long, conflicts_with = "same_frames")]
    pub cold_first: bool,
    /// Run even when the region is larger than the memory available; only sensible with swap
    /// to spare.
    #[arg(long)]
    pub force: bool,
    /// A graph kernel instead of Zipf reads: the graph as `hugewise run --graph` takes it
    /// (save a large one as .hwg first). Each arm is then its own `hugewise run` process.
    #[arg(long, value_name = "GRAPH", conflicts_with_all = ["zipf", "hotspot", "size", "reads", "seed", "lines_per_page", "chase", "same_frames", "cold_first", "force"])]
    pub graph: Option<String>,
    /// With --graph: the kernel.
    #[arg(long, value_enum, default_value = "pr", requires = "graph")]
    pub kernel: crate::cli::KernelArg,
    /// With --graph: timed trials per run, after the run's untimed warm-up (sampled for the
    /// daemon, whose ramp happens in it if the warm-up lasts long enough) and, for the plan,
    /// one more trial in which its steps are made (in every arm, for a kernel whose trials
    /// start from different sources, so that all arms time the same ones).
    #[arg(long, default_value_t = 1, requires = "graph", value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: u32,
    /// With --graph: the plan to replay (from `hugewise sim --plan`, with a `pcc` plan at the
    /// budget). Without it, one is made first from a trace of the kernel (PageRank: one
    /// iteration) and kept in the work directory.
    #[arg(long, value_name = "FILE", requires = "graph")]
    pub plan: Option<PathBuf>,
    /// With --graph: where the plan, its trace (removed once simulated) and the arms' result
    /// files go.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "bench-promote.work",
        requires = "graph"
    )]
    pub work_dir: PathBuf,
    /// With --graph: one more argument for every arm's `hugewise run` and for the plan's
    /// trace (repeat it: --run-arg=--threads --run-arg=2).
    #[arg(
        long = "run-arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        requires = "graph"
    )]
    pub run_args: Vec<String>,
    /// Print a Markdown table instead of the terminal table.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// `4%:99%` (the % signs optional) as shares: (0.04, 0.99).
fn parse_hotspot(s: &str) -> Result<(f64, f64), String> {
    let pct = |p: &str| {
        let v: f64 = p.trim().trim_end_matches('%').parse().ok()?;
        (v.is_finite()).then_some(v / 100.0)
    };
    let (chunks, reads) = s
        .split_once(':')
        .and_then(|(c, r)| Some((pct(c)?, pct(r)?)))
        .ok_or_else(|| format!("'{s}': a hot spot is CHUNKS:READS in percent, such as 4%:99%"))?;
    if !(chunks > 0.0 && chunks < 1.0 && (0.0..=1.0).contains(&reads)) {
        return Err(format!(
            "'{s}': the hot chunks are above 0% and below 100%, the reads from 0% to 100%"
        ));
    }
    Ok((chunks, reads))
}

/// Run `hugewise bench promote`.
pub fn bench(
    a: BenchPromoteArgs,
    progress: crate::progress::Mode,
    cancel: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<()> {
    if let Some(graph) = a.graph.clone() {
        return bench_graph(a, graph, progress, cancel);
    }
    let budget_share = match a.budget {
        Amount::Percent(p) => p / 100.0,
        Amount::Bytes(b) => b.0 as f64 / a.size.0.max(1) as f64,
    };
    let cfg = promotebench::Config {
        bytes: a.size,
        skews: {
            let zipf = if a.zipf.is_empty() && a.hotspot.is_empty() {
                vec![1.0]
            } else {
                a.zipf
            };
            zipf.into_iter()
                .map(promotebench::Skew::Zipf)
                .chain(
                    a.hotspot
                        .into_iter()
                        .map(|(chunks, reads)| promotebench::Skew::Hotspot { chunks, reads }),
                )
                .collect()
        },
        reads: a.reads,
        rounds: a.rounds,
        budget_share,
        interval: a.interval,
        sample_every: a.sample_every,
        seed: a.seed,
        lines_per_page: a.lines_per_page,
        chase: a.chase,
        same_frames: a.same_frames,
        cold_first: a.cold_first,
        force: a.force,
    };
    let steps = crate::progress::Steps::new(progress, "runs", crate::progress::Unit::Items);
    let r = promotebench::run(&cfg, cancel, &mut |done, total| steps.update(done, total))
        .context("promotion benchmark")?;
    steps.finish();
    if a.markdown {
        crate::emit(&a.output, r, promoteview::bench_markdown)
    } else {
        crate::emit(&a.output, r, promoteview::bench)
    }
}

/// `hugewise bench promote --graph`: the four arms on a graph kernel.
fn bench_graph(
    a: BenchPromoteArgs,
    graph: String,
    progress: crate::progress::Mode,
    cancel: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<()> {
    let Amount::Percent(p) = a.budget else {
        anyhow::bail!(
            "--budget: with --graph the budget is a share of the run's footprint (4%), not a size"
        );
    };
    let cfg = hugewise_study::promotegraph::Config {
        exe: std::env::current_exe().context("finding the hugewise binary the arms run")?,
        kernel: a.kernel.name().to_string(),
        takes_sources: a.kernel.spec().sources_per_trial() > 0,
        graph,
        run_args: a.run_args,
        trials: a.trials,
        rounds: a.rounds,
        budget_share: p / 100.0,
        interval: a.interval,
        sample_every: a.sample_every,
        plan: a.plan,
        work_dir: a.work_dir,
    };
    let steps = crate::progress::Steps::new(progress, "runs", crate::progress::Unit::Items);
    let w = hugewise_study::promotegraph::run(&cfg, cancel, &mut |done, total| {
        steps.update(done, total)
    })
    .context("promotion benchmark on a graph kernel")?;
    steps.finish();
    let r = promotebench::Report { workloads: vec![w] };
    if a.markdown {
        crate::emit(&a.output, r, promoteview::bench_markdown)
    } else {
        crate::emit(&a.output, r, promoteview::bench)
    }
}

pub(crate) const HELP: &str = "Examples:
  hugewise promote --pid 4242 --budget 2%
                         the daemon, on what the program publishes (hugewise.h) or maps:
                         pcc on its access samples, else mega on its mapped pages
  hugewise promote --pid 4242 --pid 4243 --budget 1GiB --share round-robin --bias 4243=2
                         two programs share one budget; the second's scores count double
  hugewise promote --policy mega --budget 4% -- ./my-program --its-args
                         start a program and promote it until it exits
  hugewise promote --plan plan.json --plan-policy pcc --plan-budget 4% -- ./traced-program
                         replay a plan made by hugewise sim --plan from a trace of the program
  hugewise promote --pid 4242 --for 60s --actions --out promote.json

Promotion is MADV_COLLAPSE through process_madvise; demotion is MADV_COLD on 4 KiB of a huge
page, which makes the kernel split it. Every action is read back from the kernel (pagemap), and
the budget counts the huge pages the kernel reports, its own THP included. The target is never
stopped or signalled. Needs ptrace access to the target and CAP_SYS_NICE (root has both).
How it works: docs/promotion.md.";

pub(crate) const BENCH_HELP: &str = "Examples:
  hugewise bench promote                           8 GiB, 5 rounds (about 15 minutes)
  hugewise bench promote --size 2GiB --rounds 2 --reads 50M   a quicker look
  hugewise bench promote --zipf 1,1.5 --json     two workloads: a long tail and a sharp hot set
  hugewise bench promote --zipf 1.2 --budget 2% --markdown
  hugewise bench promote --hotspot 4%:99% --lines-per-page 1 --chase
                         99 % of dependent reads on 4 % of the chunks, one line of each page
  hugewise bench promote --hotspot 1%:99% --lines-per-page 1 --chase --same-frames
                         99 % on 1 % of the chunks, every arm of a round on the same pages
  hugewise env with --pressure-leave 10GiB --fragment 50% -- \
    hugewise bench promote --hotspot 1%:99% --lines-per-page 1 --chase --cold-first
                         huge pages scarce: Linux THP at fault (the ideal arm, cold chunks
                         faulted first) against the plan and the daemon
  hugewise bench promote --graph k26.hwg --kernel pr --rounds 3 --out bp-pr.json
                         PageRank on kron:26 (hugewise graph gen --graph kron:26 --out k26.hwg)
  hugewise bench promote --graph kron:20 --rounds 1 --plan plan.json   a quick look, a given plan

Arms: base (4 KiB pages), ideal (every chunk huge), plan (the chunks a sampled profile ranks
highest, collapsed before the clock starts), daemon (the pcc policy on samples the workload
publishes, promoting while the clock runs). The plan and the daemon get the same budget.
Share of ideal is (speedup - 1) / (ideal speedup - 1) in the same round, its median over rounds;
saving share is (base - arm) / (base - ideal) from the medians of times over the ideal's,
steadier when the ideal gains little in some rounds. With --same-frames the order is fixed
(ideal, plan, base, daemon): the ideal runs right after the whole region was collapsed, the
plan keeps its chunks of that collapse, and the daemon starts from 4 KiB pages. Needs THP
`madvise` so that the base arm faults 4 KiB pages. --json gives one object per workload under
`workloads`, its headline first: workload, ideal_speedup, plan_speedup, daemon_speedup, their
shares of the ideal (per round, and of its saving: plan_share_of_ideal_saving,
daemon_share_of_ideal_saving), huge_footprint_share (the plan's, read back from the
kernel), the daemon's, reach_budget_ms and daemon_cpu_share.

With --graph each arm is a `hugewise run` process of its own (a fresh load, so the ideal has the
graph's arrays huge too): base all=system, ideal all=thp, plan --promote with a pcc plan, daemon
under `hugewise promote --policy pcc`. Its times are the kernel's seconds per timed trial.";

#[cfg(test)]
mod tests {
    use super::parse_hotspot;

    #[test]
    fn hot_spots_parse_as_shares_and_bad_ones_name_themselves() {
        assert_eq!(parse_hotspot("4%:99%"), Ok((0.04, 0.99)));
        let (c, r) = parse_hotspot(" 1 : 99.9 ").expect("no % signs");
        assert!(
            (c - 0.01).abs() < 1e-12 && (r - 0.999).abs() < 1e-12,
            "{c} {r}"
        );
        for bad in [
            "4%", "x:99%", "0%:99%", "100%:50%", "4%:101%", "4%:-1%", "nan:5",
        ] {
            let e = parse_hotspot(bad).expect_err(bad);
            assert!(e.contains(&format!("'{bad}'")), "{e}");
        }
    }
}
