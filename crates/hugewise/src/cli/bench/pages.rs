//! `hugewise bench pages`: one graph kernel under several page layouts of its own arrays,
//! alternated round by round on one loaded graph.

use std::sync::atomic::Ordering;

use anyhow::Context;
use clap::Args;
use hugewise_bench::pagebench::{self, Variant};
use hugewise_console::progress::{self, Mode, Steps, Unit};
use hugewise_graph::layout::parse_pages;
use hugewise_mem::{PolicyMap, Threads};
use hugewise_report::views::run as view;

use crate::cli::args::{
    cpus, usage, GraphInputArgs, KernelArg, Output, ReorderCacheArg, UntilArgs,
};
use crate::signals::cancel_flag;

/// `hugewise bench pages`.
#[derive(Debug, Args)]
pub struct PagesArgs {
    /// Kernel.
    #[arg(value_enum)]
    pub kernel: KernelArg,
    /// Graph.
    #[command(flatten)]
    pub input: GraphInputArgs,
    /// Page policies of the graph's arrays, shared by every variant.
    #[arg(long, default_value = "all=base", value_parser = parse_pages)]
    pub graph_pages: PolicyMap,
    /// A layout of the kernel's arrays (property, frontier); give two or more, baseline
    /// first [default: all=base and all=base,property=thp].
    /// Also `PAGES;graph:PAGES;reorder:dbg;name:NAME` for a variant with its own copy of the
    /// graph (other page policies for its arrays, or reordered vertices; see --copies).
    #[arg(long = "compare", value_name = "PAGES", value_parser = Variant::parse)]
    pub compare: Vec<Variant>,
    /// Rounds; each runs every variant once: 6 by default, the fewest whose
    /// speedups get a 95 % interval.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// More rounds until the intervals are narrow enough.
    #[command(flatten)]
    pub until: UntilArgs,
    /// Worker threads, 1 or more (default: one per CPU).
    #[arg(long, value_parser = Threads::count)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub cache: ReorderCacheArg,
    /// Drop the page cache of the files the graph is read from as soon as each is read (the
    /// input, a reordered copy from the cache): on a fragmented machine (`env with
    /// --fragment`) that cache's large folios hold the whole 2 MiB blocks the graph's copies
    /// and the kernel's arrays would otherwise get as huge pages. The next load reads the
    /// disk again.
    #[arg(long)]
    pub drop_file_cache: bool,
    /// How the variants' own copies of the graph are held: `auto` holds them all from the
    /// start when they fit the memory available beside the kernels' arrays, and otherwise
    /// builds each when its variant comes up in a round, freeing the one before (untimed: the
    /// graph copied and faulted in anew, 8.3 GiB at kron:26; the result says which); `held` and `in-turn`
    /// choose.
    #[arg(long, value_enum, default_value_t = CopiesArg::Auto)]
    pub copies: CopiesArg,
    /// Print a Markdown table instead of the terminal table.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

impl PagesArgs {
    /// The layouts to compare, baseline first, or a usage error.
    fn variants(&self) -> anyhow::Result<Vec<Variant>> {
        match self.compare.len() {
            0 => Ok(Variant::defaults()?),
            1 => Err(usage(
                "give --compare twice or more: a baseline and what to compare with it",
            )),
            _ => Ok(self.compare.clone()),
        }
    }
}

/// `--copies`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CopiesArg {
    /// Held together where they fit, else in turn.
    Auto,
    /// Every copy held from the start.
    Held,
    /// One copy at a time.
    InTurn,
}

impl CopiesArg {
    fn copies(self) -> pagebench::Copies {
        match self {
            CopiesArg::Auto => pagebench::Copies::Auto,
            CopiesArg::Held => pagebench::Copies::Held,
            CopiesArg::InTurn => pagebench::Copies::InTurn,
        }
    }
}

/// Compare the layouts.
pub fn run(a: PagesArgs, progress: Mode) -> anyhow::Result<()> {
    let cfg = pagebench::Config {
        input: a.input.graph.clone(),
        load: a.input.kernel_load_options(),
        graph_pages: a.graph_pages.clone(),
        kernel: a.kernel.spec(),
        variants: a.variants()?,
        rounds: a.rounds,
        until: a.until.until(),
        threads: a.threads.unwrap_or_else(cpus),
        reorder_cache: a.cache.cache(),
        drop_file_cache: a.drop_file_cache,
        copies: a.copies.copies(),
    };
    let cancel = cancel_flag()?;
    let steps = Steps::new(progress, "loading", Unit::Items);
    let r = progress::with_reads(&steps, || {
        pagebench::run_with(&cfg, &mut steps.counting("samples"), &|| {
            cancel.load(Ordering::Relaxed)
        })
    })
    .with_context(|| format!("comparing page layouts for {}", cfg.kernel.name()))?;
    steps.finish();
    a.output
        .emit_as(r, a.markdown, view::pagebench, view::pagebench_markdown)
}
