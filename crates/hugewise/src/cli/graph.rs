//! `hugewise graph`: make, convert and describe graphs.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use hugewise_bench::run;
use hugewise_graph::reorder::Method;
use hugewise_report::views;

use hugewise_console::progress::{self, Mode, Steps, Unit};

use crate::cli::args::{GraphInputArgs, Output};

/// `hugewise graph ...`.
#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Generate a graph (kron:SCALE, urand:SCALE, grid:WxH, road:WxH, chain:N, star:N) and
    /// save it: hugewise's binary CSR (.hwg, the fastest to load) or the GAP suite's format
    /// (.sg, or .wsg when weighted).
    #[command(after_help = "Examples:
  hugewise graph gen --graph kron:24 --out kron24.hwg
  hugewise graph gen --graph urand:20 --weighted --out urand20.wsg     (GAP's sssp reads it)
  hugewise graph gen --graph road:1000x1000 --weighted --out road.wsg  (weights in metres)
  hugewise graph gen --graph kron:20 --reorder dbg --out kron20-dbg.hwg --json

Any input `graph convert` takes works here too; the two differ in name only.")]
    Gen(ConvertArgs),
    /// Convert a graph file (or a generated graph) and save it: hugewise's binary CSR (.hwg,
    /// the fastest to load) or the GAP suite's format (.sg, or .wsg when weighted).
    #[command(after_help = "Examples:
  hugewise graph convert --graph kron:20 --out kron20.sg          (GAP's programs read it)
  hugewise graph convert --graph kron:20 --weighted --out kron20.wsg
  hugewise graph convert --graph data/cnr-2000.el.zst --out cnr.hwg
  hugewise graph convert --graph web.mtx --reorder dbg --out web-dbg.hwg
  hugewise graph convert --graph g.el --out g.hwg --json > g-convert.json

The text or --json result (what was written, load and write times) goes to stdout;
`hugewise report` renders a saved --json result.")]
    Convert(ConvertArgs),
    /// Load a graph and describe it: vertices, edges, degrees, bytes per array.
    #[command(after_help = "Examples:
  hugewise graph info --graph kron:20
  hugewise graph info --graph data/cnr-2000.el.zst")]
    Info(InfoArgs),
}

/// `hugewise graph gen|convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Graph.
    #[command(flatten)]
    pub input: GraphInputArgs,
    /// Reorder the vertices before saving (see `hugewise run --help`).
    #[arg(long, value_name = "METHOD")]
    pub reorder: Option<Method>,
    /// Output file: .hwg, .sg, or .wsg for weighted graphs; written atomically.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Print the result (what was written, and how long it took) as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `hugewise graph info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Graph.
    #[command(flatten)]
    pub input: GraphInputArgs,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// Run one `hugewise graph` command.
pub fn run(cmd: GraphCommand, progress: Mode) -> anyhow::Result<()> {
    match cmd {
        GraphCommand::Info(a) => info(a, progress),
        GraphCommand::Gen(a) | GraphCommand::Convert(a) => write(a, progress),
    }
}

/// `graph info`.
fn info(a: InfoArgs, progress: Mode) -> anyhow::Result<()> {
    let steps = Steps::new(progress, "loading", Unit::Items);
    let r = progress::with_reads(&steps, || run::info(&a.input.graph, a.input.load_options()))
        .with_context(|| format!("loading {}", a.input.graph))?;
    steps.finish();
    a.output.emit(r, views::run::graph_info)
}

/// `graph gen` and `graph convert`.
fn write(a: ConvertArgs, progress: Mode) -> anyhow::Result<()> {
    let cfg = run::WriteConfig {
        input: a.input.graph.clone(),
        load: a.input.load_options(),
        reorder: a.reorder,
        out: a.out.clone(),
    };
    let steps = Steps::new(progress, "loading", Unit::Items);
    let r = progress::with_reads(&steps, || run::write(&cfg, &mut |phase| steps.phase(phase)))
        .with_context(|| format!("saving {} to {}", a.input.graph, a.out.display()))?;
    steps.finish();
    Output::json(a.json).emit(r, views::run::graph_written)
}
