//! Argument groups and value parsers shared by several commands, and the usage error a handler
//! returns for a mistake found after parsing. Only clap types and their conversion to the
//! libraries' plain values live here.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use hugewise_console::emit::{self, Stream};
use hugewise_graph::cache::Cache;
use hugewise_graph::fits::{Fit, KERNEL_VERTEX_BYTES};
use hugewise_graph::kernels::Spec;
use hugewise_graph::layout::{parse_pages, ALL_REGIONS};
use hugewise_graph::load::{Input, LoadOptions};
use hugewise_graph::reorder::Method;
use hugewise_graph::settings::KernelSettings as Settings;
use hugewise_graph::Layout;
use hugewise_mem::{AllocOrder, Interval, PolicyMap, Share, ShareRange, Threads};
use hugewise_results::{Kind, Meta, Saved};

/// A command-line mistake found after parsing: `main` prints it as clap prints its own
/// (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A usage error, as the error of a handler.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// One worker thread per CPU.
pub fn cpus() -> usize {
    Threads::per_cpu().0
}

/// The `meta` block of this run.
pub fn meta() -> Meta {
    hugewise_bench::meta::collect(env!("CARGO_PKG_VERSION"), std::env::args().collect())
}

/// Output options shared by every command.
#[derive(Debug, Args)]
pub struct Output {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also save the JSON result to this file (atomically: never half written).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

impl Output {
    /// Save `result` if asked, then print it on stdout as JSON or as `text` renders it.
    pub fn emit<T: Kind>(&self, result: T, text: impl FnOnce(&T) -> String) -> anyhow::Result<()> {
        self.emit_to(Stream::Stdout, result, Some(text))
    }

    /// The same on `stream`; `None`: the text was shown as the work went.
    pub fn emit_to<T: Kind>(
        &self,
        stream: Stream,
        result: T,
        text: Option<impl FnOnce(&T) -> String>,
    ) -> anyhow::Result<()> {
        let value = Saved::new(meta(), result);
        Ok(emit::emit(
            stream,
            self.json,
            self.out.as_deref(),
            value,
            text,
        )?)
    }

    /// [`Output::emit`] with the `md` view when `markdown` is asked for, else `text`.
    pub fn emit_as<T: Kind>(
        &self,
        result: T,
        markdown: bool,
        text: fn(&T) -> String,
        md: fn(&T) -> String,
    ) -> anyhow::Result<()> {
        self.emit(result, if markdown { md } else { text })
    }

    /// Only `--json` (the command has no `--out`, or saves elsewhere).
    pub fn json(json: bool) -> Output {
        Output { json, out: None }
    }
}

/// Kernels `hugewise run` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KernelArg {
    /// Breadth-first search (parent tree).
    Bfs,
    /// Single-source shortest paths, delta-stepping (weighted).
    Sssp,
    /// PageRank.
    Pr,
    /// Connected components.
    Cc,
    /// Betweenness centrality, Brandes.
    Bc,
    /// Triangle counting (undirected).
    Tc,
}

impl KernelArg {
    /// The kernel with the GAP suite's benchmark settings.
    pub fn spec(self) -> Spec {
        Settings::default()
            .spec(&name(self))
            .unwrap_or_else(|e| unreachable!("every kernel argument is a kernel: {e}"))
    }
}

/// A value's name on the command line, which is the libraries' name for it (`round-robin`).
pub fn name(value: impl ValueEnum) -> String {
    let v = value.to_possible_value();
    v.map(|v| v.get_name().to_string()).unwrap_or_default()
}

/// How a graph is read or generated.
#[derive(Debug, Args)]
pub struct GraphInputArgs {
    /// kron:SCALE or kron:SCALE:EDGE_FACTOR (likewise urand); a shape: grid:WxH, road:WxH,
    /// chain:N, star:LEAVES; or a file: .el, .wel, .mtx (optionally .gz/.zst), .sg, .wsg, .hwg.
    #[arg(long, default_value = "kron:16", value_parser = Input::parse)]
    pub graph: Input,
    /// Seed for generators and source picking.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Give the graph weights: generators draw them (in [1, 255]; grid and road in metres,
    /// [1, 100000]), unweighted files get a hash of each edge's ends in [1, 255] (sssp does
    /// this by itself).
    #[arg(long)]
    pub weighted: bool,
    /// Make a text edge list undirected (generators are; GAP files say themselves).
    #[arg(long)]
    pub symmetrize: bool,
    /// Load even when the graph needs more memory than is available (MemAvailable and the
    /// memory cgroup's limit); only sensible with swap to spare.
    #[arg(long)]
    pub force: bool,
}

impl GraphInputArgs {
    /// How the libraries load the graph.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            seed: self.seed,
            weighted: self.weighted,
            symmetrize: self.symmetrize,
            fit: Fit {
                force: self.force,
                ..Fit::default()
            },
        }
    }

    /// Load options for a kernel run: the size check also counts the kernel's arrays.
    pub fn kernel_load_options(&self) -> LoadOptions {
        let mut o = self.load_options();
        o.fit.vertex_extra_bytes = KERNEL_VERTEX_BYTES;
        o
    }
}

/// Page policies, allocation order and vertex order, shared by `run` and `trace`.
#[derive(Debug, Args)]
pub struct Placement {
    /// Page policy per array, e.g. all=base,property=thp-prefix:2% (+lock after a policy locks
    /// that part in memory).
    #[arg(long, default_value = "all=system", value_parser = parse_pages)]
    pub pages: PolicyMap,
    /// Which arrays are faulted in first: natural, ARRAY-first, or a list.
    #[arg(long, default_value = "natural", value_parser = |s: &str| AllocOrder::parse(s, ALL_REGIONS))]
    pub alloc_order: AllocOrder,
    /// Reorder vertices after loading, hot first: dbg, degree-sort, hub-sort, hub-cluster,
    /// random. Timed apart; sources stay the same original vertices.
    #[arg(long, value_name = "METHOD")]
    pub reorder: Option<Method>,
    #[command(flatten)]
    pub cache: ReorderCacheArg,
}

impl Placement {
    /// The layout these flags ask for.
    pub fn layout(&self) -> Layout {
        Layout {
            pages: self.pages.clone(),
            order: self.alloc_order.clone(),
        }
    }
}

/// Where reordered graphs are kept, shared by `run`, `trace` and `bench pages`.
#[derive(Debug, Args)]
pub struct ReorderCacheArg {
    /// Where a reordered graph file is kept (2 GiB at kron:24), so that the next run of the
    /// same file with the same reordering reads it at the speed of a load instead of
    /// relabelling again (several loads' time); `off` keeps nothing. Files only, of 256 MiB of
    /// arrays or more, while 4 GiB stay free on the disk; a changed file is relabelled anew.
    /// [default: $HUGEWISE_CACHE_DIR, else $XDG_CACHE_HOME/hugewise, else ~/.cache/hugewise]
    #[arg(long, value_name = "DIR|off")]
    pub reorder_cache: Option<PathBuf>,
}

impl ReorderCacheArg {
    /// The cache these flags and the environment ask for, if any.
    pub fn cache(&self) -> Option<Cache> {
        Cache::chosen(self.reorder_cache.as_deref())
    }
}

/// A kernel's settings, shared by `run` and `trace`.
#[derive(Debug, Args)]
pub struct KernelSettings {
    /// Variant: bfs do|top-down (default do); pr pull-gs-balanced|pull|pull-gs|push (default
    /// pull-gs-balanced); cc afforest|sv (default afforest).
    #[arg(long)]
    pub mode: Option<String>,
    /// sssp: bucket width of delta-stepping [default: chosen from the graph's weights and
    /// degrees, and widened while rounds do little work].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub delta: Option<u32>,
    /// pr: stop when the scores' total change in an iteration is below this [default: 1e-4].
    #[arg(long)]
    pub tolerance: Option<f64>,
    /// pr: iteration cap [default: 1000].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iters: Option<u32>,
    /// bc: sources per trial [default: 4].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub sources: Option<u32>,
    /// bfs, sssp, bc: start from this vertex (the input's id); repeat for several, used in turn
    /// across trials (GAP's -r). Default: random vertices with edges, from --seed.
    #[arg(long = "source", value_name = "VERTEX")]
    pub source: Vec<u32>,
}

impl KernelSettings {
    /// Kernel `kernel` with these settings, which the graph library checks against it; a
    /// setting the kernel does not take is a usage error.
    pub fn spec(&self, kernel: KernelArg) -> anyhow::Result<Spec> {
        Settings {
            mode: self.mode.clone(),
            delta: self.delta,
            tolerance: self.tolerance,
            max_iters: self.max_iters,
            sources: self.sources,
            start: self.source.clone(),
        }
        .spec(&name(kernel))
        .map_err(|e| usage(e.to_string()))
    }
}

/// More rounds of an alternated comparison, until its ratios are known closely enough.
#[derive(Debug, Clone, Args)]
pub struct UntilArgs {
    /// Keep running rounds (`--rounds` is then the minimum) until every speedup's 95 %
    /// interval is at most this wide relative to its median (`3%`), or a cap is reached.
    #[arg(long, value_name = "PCT", value_parser = |s: &str| Share::parse_in(s, &ShareRange::WIDTH))]
    pub until: Option<Share>,
    /// With --until: rounds at most.
    #[arg(long, default_value_t = 20, requires = "until", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_rounds: u32,
    /// With --until: time at most (`90s`, `30m`, `2h`), checked between rounds.
    #[arg(long, default_value = "30m", requires = "until", value_parser = Interval::span)]
    pub max_time: std::time::Duration,
}

impl UntilArgs {
    /// The bench crate's plain config.
    pub fn until(&self) -> hugewise_bench::stats::Until {
        hugewise_bench::stats::Until {
            width_pct: self.until.map(Share::percent),
            max_rounds: self.max_rounds,
            max_time: self.max_time,
        }
    }
}
