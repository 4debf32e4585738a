//! The hugewise binary: parse arguments, call the libraries, print, map to an exit code.
#![forbid(unsafe_code)]

mod cli;
mod envcli;
mod envcmd;
mod simcmd;

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use clap::CommandFactory;
use clap::Parser;
use cli::{BenchCommand, Cli, Command, GraphCommand, GraphInputArgs, Output};
use hugewise_graph::load::LoadOptions;
use hugewise_graph::Layout;
use hugewise_results::{Kind, Meta, Saved};
use hugewise_study::graphrun;
use hugewise_study::{faultlat, pagebench, randread, save};
use hugewise_sys::machine;
use hugewise_sys::proc::ProcFs;
use hugewise_sys::sysfs::SysFs;
use indicatif::{ProgressBar, ProgressStyle};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let progress = !cli.no_progress && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let result = run(cli.command, progress);
    match result {
        Ok(0) => ExitCode::SUCCESS,
        Ok(code) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hugewise: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(1)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn meta() -> Meta {
    hugewise_study::meta::collect(env!("CARGO_PKG_VERSION"), std::env::args().collect())
}

/// A progress bar in bytes or items on stderr; hidden when stderr is not a terminal.
fn bar(enabled: bool, msg: &str, in_bytes: bool) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let template = if in_bytes {
        "{msg:>12} [{bar:30}] {bytes}/{total_bytes} {elapsed}"
    } else {
        "{msg:>12} [{bar:30}] {pos}/{len} {elapsed}"
    };
    let b = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(template) {
        b.set_style(style.progress_chars("=> "));
    }
    b.set_message(msg.to_string());
    b
}

/// A spinner with elapsed time for work whose length is unknown up front (it turns into a bar
/// once a caller sets a length); hidden when stderr is not a terminal.
fn spinner(enabled: bool, msg: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg:>10} {pos}/{len} {elapsed}") {
        b.set_style(style);
    }
    b.set_message(msg.to_string());
    b.enable_steady_tick(std::time::Duration::from_millis(120));
    b
}

/// Save `result` (with the meta block) if asked, then print it as JSON or as `text` renders it.
fn emit<T: Kind>(out: &Output, result: T, text: impl FnOnce(&T) -> String) -> anyhow::Result<()> {
    let value = Saved::new(meta(), result);
    if let Some(path) = &out.out {
        save::write_json(path, &value)?;
    }
    let mut stdout = std::io::stdout().lock();
    if out.json {
        // Serialise first: serde_json would wrap a closed pipe's io::Error and hide it.
        let text = serde_json::to_vec_pretty(&value)?;
        stdout.write_all(&text)?;
        writeln!(stdout)?;
    } else {
        stdout.write_all(text(&value.result).as_bytes())?;
    }
    stdout.flush()?;
    Ok(())
}

fn load_options(a: &GraphInputArgs) -> LoadOptions {
    LoadOptions {
        seed: a.seed,
        weighted: a.weighted,
        symmetrize: a.symmetrize,
    }
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

/// Progress that renames the spinner's phase (e.g. from "loading" to "trials") once counting
/// starts.
fn phase_progress<'a>(b: &'a ProgressBar, phase: &'static str) -> impl FnMut(u64, u64) + 'a {
    move |done, total| {
        if done == 1 {
            b.set_message(phase);
        }
        b.set_length(total);
        b.set_position(done);
    }
}

/// A flag that SIGINT, SIGTERM and SIGHUP raise instead of killing hugewise, polled by long work
/// (simulations, shaping) so that it stops cleanly and puts the machine back first.
fn cancel_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&flag))
            .context("installing signal handlers")?;
    }
    Ok(flag)
}

/// Run one command; returns the exit code.
fn run(command: Command, progress: bool) -> anyhow::Result<u8> {
    let done: anyhow::Result<()> = match command {
        // The command run in a shaped machine decides the exit code.
        Command::Env(cmd) => {
            return envcmd::run(cmd, progress).map(|code| code.clamp(0, 255) as u8)
        }
        Command::Trace(a) => simcmd::trace(a, progress),
        Command::Sim(a) => simcmd::sim(a, progress),
        Command::Report(a) => {
            let r = hugewise_results::read(&a.file)?;
            let style = if a.markdown {
                hugewise_report::Style::Markdown
            } else {
                hugewise_report::Style::Text
            };
            let Some(text) = hugewise_report::render(&r, style) else {
                usage_error(format!(
                    "--markdown: a {} result has no Markdown table (bench pages and bench \
                     randread have)",
                    r.schema()
                ))
            };
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
            Ok(())
        }
        Command::Sys(a) => {
            let r = machine::gather(&ProcFs::default(), &SysFs::default())
                .context("reading the machine's huge-page state")?;
            emit(&a.output, r, hugewise_report::views::machine)
        }
        Command::Faultlat(a) => {
            let cfg = faultlat::Config {
                bytes: a.size,
                policy: a.policy,
                then_collapse: a.then_collapse,
            };
            let b = bar(progress, "faulting", true);
            let mut phase_total = 0;
            let r = faultlat::run(&cfg, &mut |done, total| {
                if total != phase_total {
                    phase_total = total;
                    b.set_length(total);
                }
                if done == total && cfg.then_collapse {
                    b.set_message("collapsing");
                }
                b.set_position(done);
            })
            .context("fault-latency run")?;
            b.finish_and_clear();
            emit(&a.output, r, hugewise_report::views::faultlat)
        }
        Command::Run(a) => {
            let layout = a.place.layout();
            let kernel = a
                .settings
                .spec(a.kernel.name())
                .unwrap_or_else(|m| usage_error(m));
            let threads = match (a.threads, a.overcommit) {
                (Some(t), _) => t.max(1),
                (None, Some(f)) => cpus() * f.max(1) as usize,
                (None, None) => cpus(),
            };
            let cfg = graphrun::Config {
                input: a.input.graph.clone(),
                load: load_options(&a.input),
                layout,
                kernel,
                reorder: a.place.reorder,
                trials: a.trials,
                sources: a.settings.source.clone(),
                verify: a.verify,
                threads,
            };
            let b = spinner(progress, "loading");
            let r = graphrun::run(&cfg, &mut phase_progress(&b, "trials"))
                .with_context(|| format!("running {} on {}", kernel.name(), a.input.graph))?;
            b.finish_and_clear();
            let (failed, trials) = (r.failed_verification(), r.trials.len());
            emit(&a.output, r, hugewise_report::views::run)?;
            match failed {
                0 => Ok(()),
                n => anyhow::bail!(
                    "{n} of {trials} trials failed verification (each trial's verify_error says why)"
                ),
            }
        }
        Command::Graph(GraphCommand::Info(a)) => {
            let b = spinner(progress, "loading");
            let r = graphrun::info(&a.input.graph, load_options(&a.input))
                .with_context(|| format!("loading {}", a.input.graph))?;
            b.finish_and_clear();
            emit(&a.output, r, hugewise_report::views::graph_info)
        }
        Command::Graph(GraphCommand::Convert(a)) => {
            let ext = a.out.extension().and_then(|e| e.to_str()).unwrap_or("");
            if !matches!(ext, "hwg" | "sg" | "wsg") {
                anyhow::bail!(
                    "{}: write .hwg (hugewise), .sg or .wsg (GAP)",
                    a.out.display()
                );
            }
            let b = spinner(progress, "loading");
            let (g, _) = hugewise_graph::load::load(
                &a.input.graph,
                load_options(&a.input),
                &Layout::default(),
                &mut |_| Ok(()),
            )
            .with_context(|| format!("loading {}", a.input.graph))?;
            let g = match a.reorder {
                Some(m) => {
                    b.set_message("reordering");
                    let seed = a.input.seed;
                    hugewise_graph::reorder::reorder(&g, m, seed, &Layout::default())
                        .context("reordering")?
                        .0
                }
                None => g,
            };
            b.set_message("writing");
            match ext {
                "hwg" => save::write_atomic_with(&a.out, &mut |w| {
                    hugewise_graph::io::hwg::write_to(&g, w)
                })?,
                "sg" | "wsg" => {
                    if (ext == "wsg") != g.weighted() {
                        anyhow::bail!(
                            "{}: a {} graph goes to a .{} file",
                            a.out.display(),
                            if g.weighted() {
                                "weighted"
                            } else {
                                "unweighted"
                            },
                            if g.weighted() { "wsg" } else { "sg" }
                        );
                    }
                    save::write_atomic_with(&a.out, &mut |w| {
                        hugewise_graph::io::gap::write_to(&g, w)
                    })?
                }
                _ => unreachable!("checked before loading"),
            }
            b.finish_and_clear();
            eprintln!(
                "wrote {} ({} vertices, {} edges)",
                a.out.display(),
                g.n(),
                g.edges()
            );
            Ok(())
        }
        Command::Bench(BenchCommand::Pages(a)) => {
            let kernel = a.kernel_spec().unwrap_or_else(|m| usage_error(m));
            let variants = a.variants().unwrap_or_else(|m| usage_error(m));
            let cfg = pagebench::Config {
                input: a.input.graph.clone(),
                load: load_options(&a.input),
                graph_pages: a.graph_pages.clone(),
                kernel,
                variants,
                rounds: a.rounds,
                threads: a.threads.unwrap_or_else(cpus).max(1),
            };
            let b = spinner(progress, "loading");
            let r = pagebench::run(&cfg, &mut phase_progress(&b, "samples"))
                .with_context(|| format!("comparing page layouts for {}", kernel.name()))?;
            b.finish_and_clear();
            if a.markdown {
                emit(&a.output, r, hugewise_report::views::pagebench_markdown)
            } else {
                emit(&a.output, r, hugewise_report::views::pagebench)
            }
        }
        Command::Bench(BenchCommand::Randread(a)) => {
            let cfg = randread::Config {
                bytes: a.size,
                reads: a.reads,
                rounds: a.rounds,
                seed: a.seed,
            };
            let b = bar(progress, "samples", false);
            let r = randread::run(&cfg, &mut |done, total| {
                b.set_length(total);
                b.set_position(done);
            })
            .context("random-read benchmark")?;
            b.finish_and_clear();
            if a.markdown {
                emit(&a.output, r, hugewise_report::views::randread_markdown)
            } else {
                emit(&a.output, r, hugewise_report::views::randread)
            }
        }
    };
    done.map(|()| 0)
}
