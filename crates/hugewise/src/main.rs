//! The hugewise binary: parse arguments, call the libraries, print, map to an exit code.
#![forbid(unsafe_code)]

mod cli;
mod envcli;
mod envcmd;
mod execcmd;
mod output;
mod profilecmd;
mod progress;
mod promotecmd;
mod reportcmd;
mod signals;
mod simcmd;
mod studycmd;

use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;
use clap::Parser;
use cli::{BenchCommand, Cli, Command, ConvertArgs, GraphCommand};
use hugewise_report::views;
use hugewise_study::graphrun;
use hugewise_study::{faultlat, pagebench, randread, swap};
use hugewise_sys::machine;
use hugewise_sys::proc::ProcFs;
use hugewise_sys::sysfs::SysFs;
pub(crate) use output::{emit, meta};
use progress::{Mode, Steps, Unit};
pub(crate) use signals::cancel_flag;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = run(cli.command, Mode::detect(cli.no_progress));
    match result {
        Ok(code) => ExitCode::from(signals::exit_code(code)),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hugewise: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(signals::exit_code(1))
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// A command-line mistake found after parsing: clap's message format and exit code 2.
fn usage_error(message: String) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ArgumentConflict, message)
        .exit()
}

/// Progress that ends the loading step and starts counting `phase` at the first count.
fn counting<'a>(steps: &'a Steps, phase: &'static str) -> impl FnMut(u64, u64) + 'a {
    move |done, total| {
        steps.phase(phase);
        steps.update(done, total);
    }
}

/// `graph gen` and `graph convert`.
fn write_graph(a: ConvertArgs, progress: Mode) -> anyhow::Result<()> {
    let cfg = graphrun::WriteConfig {
        input: a.input.graph.clone(),
        load: a.input.load_options(),
        reorder: a.reorder,
        out: a.out.clone(),
    };
    let steps = Steps::new(progress, "loading", Unit::Items);
    let r = progress::with_reads(&steps, || {
        graphrun::write(&cfg, &mut |phase| steps.phase(phase))
    })
    .with_context(|| format!("saving {} to {}", a.input.graph, a.out.display()))?;
    steps.finish();
    output::emit_to(
        output::Stream::Stdout,
        a.json,
        None,
        r,
        Some(views::graph_written),
    )
}

/// `hugewise run`: in this process, or under `--memory` as a supervisor of a worker that runs
/// inside the memory cgroup (`--contained`).
fn run_kernel(a: cli::RunArgs, progress: Mode) -> anyhow::Result<()> {
    let kernel = a
        .settings
        .to_settings()
        .spec(a.kernel.name())
        .unwrap_or_else(|e| usage_error(e.to_string()));
    let threads = match (a.threads, a.overcommit) {
        (Some(t), _) => t,
        (None, Some(cli::Overcommit::Factor(f))) => cpus() * f as usize,
        (None, _) => cpus(),
    };
    let r = if let (Some(share), false) = (a.memory, a.contained) {
        let plan = swap::Plan {
            share,
            swap: match a.swap.as_str() {
                "none" => swap::SwapSource::Existing,
                _ => swap::SwapSource::File(a.swap_file.clone()),
            },
            page_cluster: a.page_cluster,
            stats_flush: a.stats_flush.0,
        };
        let exe = std::env::current_exe().context("finding this program to run the worker")?;
        let mut worker = vec![exe.display().to_string()];
        worker.extend(std::env::args().skip(1));
        worker.push("--contained".into());
        let cancel = cancel_flag()?;
        swap::supervise(&hugewise_env::Host::real(), &plan, &worker, &|| {
            cancel.load(std::sync::atomic::Ordering::Relaxed)
        })
        .with_context(|| {
            format!(
                "running {} on {} under --memory",
                kernel.name(),
                a.input.graph
            )
        })?
    } else {
        let cfg = graphrun::Config {
            input: a.input.graph.clone(),
            load: a.input.kernel_load_options(),
            layout: a.place.layout(),
            kernel,
            reorder: a.place.reorder,
            reorder_cache: a.place.cache.cache(),
            trials: a.trials,
            sources: a.settings.source.clone(),
            verify: a.verify,
            threads,
            sample_every: a.sample_every,
            replay: a.promote.clone().map(|plan| graphrun::Replay {
                plan,
                policy: a.plan_policy.clone(),
                budget_share: a.plan_budget,
            }),
        };
        let mut contain = |fp: &graphrun::Footprint| {
            swap::contain_worker(
                fp,
                &mut std::io::stdin().lock(),
                &mut std::io::stdout().lock(),
            )
        };
        let extras = graphrun::Extras {
            telemetry: a.telemetry,
            contain: a.contained.then_some(&mut contain as graphrun::Contain<'_>),
            auto_overcommit: a.overcommit == Some(cli::Overcommit::Auto),
        };
        // A page cluster without --memory is set here, in a session of its own.
        let mut session = match (a.page_cluster, a.memory) {
            (Some(n), None) => {
                let mut s = hugewise_env::Session::open(
                    &hugewise_env::Host::real(),
                    hugewise_env::Lifetime::Run,
                )?;
                s.set(hugewise_env::Knob::PageCluster, &n.to_string())?;
                Some(s)
            }
            _ => None,
        };
        let steps = Steps::new(progress, "loading", Unit::Items);
        let r = match session.as_mut() {
            None => progress::with_reads(&steps, || {
                graphrun::run_with(&cfg, extras, &mut counting(&steps, "trials"))
            }),
            // The machine was changed: Ctrl-C or SIGTERM puts it back before this process
            // ends, rather than killing it with the change in place.
            Some(s) => {
                let cancel = cancel_flag()?;
                let done = std::sync::atomic::AtomicBool::new(false);
                std::thread::scope(|scope| {
                    scope.spawn(|| {
                        use std::sync::atomic::Ordering::Relaxed;
                        while !done.load(Relaxed) {
                            if cancel.load(Relaxed) {
                                s.restore();
                                eprintln!("hugewise: interrupted; vm.page-cluster is put back");
                                std::process::exit(signals::exit_code(1).into());
                            }
                            std::thread::sleep(std::time::Duration::from_millis(50));
                        }
                    });
                    let r = graphrun::run_with(&cfg, extras, &mut counting(&steps, "trials"));
                    done.store(true, std::sync::atomic::Ordering::Relaxed);
                    r
                })
            }
        }
        .with_context(|| format!("running {} on {}", kernel.name(), a.input.graph));
        steps.finish();
        if let Some(s) = session.as_mut() {
            s.restore();
        }
        let r = r?;
        if a.contained {
            // The supervisor reads the result and reports it.
            serde_json::to_writer(std::io::stdout().lock(), &r)?;
            return Ok(());
        }
        r
    };
    let (failed, trials) = (r.failed_verification(), r.trials.len());
    emit(&a.output, r, views::run)?;
    match failed {
        0 => Ok(()),
        n => anyhow::bail!(
            "{n} of {trials} trials failed verification (each trial's verify_error says why)"
        ),
    }
}

/// Run one command; returns the exit code.
fn run(command: Command, progress: Mode) -> anyhow::Result<u8> {
    let done: anyhow::Result<()> = match command {
        // The command run in a shaped machine decides the exit code.
        Command::Env(cmd) => {
            return envcmd::run(cmd, progress).map(|code| code.clamp(0, 255) as u8)
        }
        Command::Promote(a) => return promotecmd::promote(a, &*cancel_flag()?),
        Command::Exec(a) => return execcmd::exec(a, progress, &*cancel_flag()?),
        Command::Profile(a) => return profilecmd::profile(a, progress, &*cancel_flag()?),
        Command::Study(a) => return studycmd::study(a, progress),
        Command::Trace(a) => simcmd::trace(a, progress),
        Command::Sim(a) => simcmd::sim(a, progress),
        Command::Report(a) => reportcmd::report(&a),
        Command::Sys(a) => {
            let r = machine::gather(&ProcFs::default(), &SysFs::default())
                .context("reading the machine's huge-page state")?;
            emit(&a.output, r, views::machine)
        }
        Command::Faultlat(a) => {
            let cfg = faultlat::Config {
                bytes: a.size,
                policy: a.policy,
                then_collapse: a.then_collapse,
                force: a.force,
            };
            let steps = Steps::new(progress, "faulting", Unit::Bytes);
            let r = faultlat::run(&cfg, &mut |done, total| {
                steps.update(done, total);
                if done == total && cfg.then_collapse {
                    steps.phase("collapsing");
                }
            })
            .context("fault-latency run")?;
            steps.finish();
            emit(&a.output, r, views::faultlat)
        }
        Command::Run(a) => run_kernel(a, progress),
        Command::Graph(GraphCommand::Info(a)) => {
            let steps = Steps::new(progress, "loading", Unit::Items);
            let r = progress::with_reads(&steps, || {
                graphrun::info(&a.input.graph, a.input.load_options())
            })
            .with_context(|| format!("loading {}", a.input.graph))?;
            steps.finish();
            emit(&a.output, r, views::graph_info)
        }
        Command::Graph(GraphCommand::Gen(a) | GraphCommand::Convert(a)) => write_graph(a, progress),
        Command::Bench(BenchCommand::Pages(a)) => {
            let variants = a.variants().unwrap_or_else(|m| usage_error(m));
            let cfg = pagebench::Config {
                input: a.input.graph.clone(),
                load: a.input.kernel_load_options(),
                graph_pages: a.graph_pages.clone(),
                kernel: a.kernel.spec(),
                variants,
                rounds: a.rounds,
                threads: a.threads.unwrap_or_else(cpus),
                reorder_cache: a.cache.cache(),
            };
            let steps = Steps::new(progress, "loading", Unit::Items);
            let r = progress::with_reads(&steps, || {
                pagebench::run(&cfg, &mut counting(&steps, "samples"))
            })
            .with_context(|| format!("comparing page layouts for {}", cfg.kernel.name()))?;
            steps.finish();
            if a.markdown {
                emit(&a.output, r, views::pagebench_markdown)
            } else {
                emit(&a.output, r, views::pagebench)
            }
        }
        Command::Bench(BenchCommand::Promote(a)) => {
            promotecmd::bench(a, progress, &*cancel_flag()?)
        }
        Command::Bench(BenchCommand::Exec(a)) => execcmd::bench(a, progress, &*cancel_flag()?),
        Command::Bench(BenchCommand::Bloat(a)) => execcmd::bloat(a, progress, &*cancel_flag()?),
        Command::Bench(BenchCommand::Packing(a)) => {
            profilecmd::bench(a, progress, &*cancel_flag()?)
        }
        Command::Bench(BenchCommand::Randread(a)) => {
            let cfg = randread::Config {
                bytes: a.size,
                reads: a.reads,
                rounds: a.rounds,
                seed: a.seed,
                force: a.force,
            };
            let steps = Steps::new(progress, "samples", Unit::Items);
            let r = randread::run(&cfg, &mut |done, total| steps.update(done, total))
                .context("random-read benchmark")?;
            steps.finish();
            if a.markdown {
                emit(&a.output, r, views::randread_markdown)
            } else {
                emit(&a.output, r, views::randread)
            }
        }
    };
    done.map(|()| 0)
}
