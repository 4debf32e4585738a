//! `hugewise bench pages`: one graph kernel under several page layouts of its own arrays,
//! alternated round by round on one loaded graph.

use anyhow::Context;
use clap::Args;
use hugewise_bench::pagebench::{self, Variant};
use hugewise_console::progress::{self, Mode, Steps, Unit};
use hugewise_mem::PolicyMap;
use hugewise_report::views;

use crate::cli::args::{
    cpus, parse_pages, parse_threads, usage, GraphInputArgs, KernelArg, Output, ReorderCacheArg,
    UntilArgs,
};

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
    /// graph (other page policies for its arrays, or reordered vertices), built once.
    #[arg(long = "compare", value_name = "PAGES", value_parser = parse_variant)]
    pub compare: Vec<Variant>,
    /// Rounds; each runs every variant once: 6 by default, the fewest whose
    /// speedups get a 95 % interval.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// More rounds until the intervals are narrow enough.
    #[command(flatten)]
    pub until: UntilArgs,
    /// Worker threads, 1 or more (default: one per CPU).
    #[arg(long, value_parser = parse_threads)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub cache: ReorderCacheArg,
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
            0 => ["all=base", "all=base,property=thp"]
                .iter()
                .map(|s| Ok(Variant::parse(s)?))
                .collect(),
            1 => Err(usage(
                "give --compare twice or more: a baseline and what to compare with it",
            )),
            _ => Ok(self.compare.clone()),
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
    };
    let steps = Steps::new(progress, "loading", Unit::Items);
    let r = progress::with_reads(&steps, || {
        pagebench::run(&cfg, &mut steps.counting("samples"))
    })
    .with_context(|| format!("comparing page layouts for {}", cfg.kernel.name()))?;
    steps.finish();
    if a.markdown {
        a.output.emit(r, views::run::pagebench_markdown)
    } else {
        a.output.emit(r, views::run::pagebench)
    }
}

/// A layout to compare: the kernel's arrays, optionally on a copy of the graph of its own.
fn parse_variant(s: &str) -> Result<Variant, String> {
    Variant::parse(s).map_err(|e| e.to_string())
}
