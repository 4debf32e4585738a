//! What `hugewise bench pages` measured: one kernel under several layouts of its arrays, alternated round by round.

use serde::{Deserialize, Serialize};

use crate::graph::{GraphInfo, LoadStats, RegionReport};
use crate::kernel::Spec;
use crate::stats::{MedianInterval, Quiet, Stopped, Summary};

/// One timed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PagesSample {
    /// Round from 0.
    pub round: u32,
    /// Index of the variant.
    pub variant: usize,
    /// Kernel wall time.
    pub kernel_ns: u64,
    /// Sources, in original ids.
    pub sources: Vec<u32>,
    /// Others' CPU use just before.
    pub quiet: Option<Quiet>,
}

/// One variant over all rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PagesVariant {
    /// Its name, when the comparison named its layouts (studies do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Policies of the kernel's arrays, canonical.
    pub pages: String,
    /// Kernel time over rounds.
    pub kernel_ns: Summary,
    /// Policies of the graph's arrays when this variant has its own copy of the graph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_pages: Option<String>,
    /// Reordering of this variant's copy of the graph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<String>,
    /// Whether that copy came from the cache of reordered graphs, or was kept in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_cache: Option<crate::graph::CacheUse>,
    /// Its arrays were allocated before any copy of the graph.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernel_first: bool,
    /// Median over rounds of baseline time / this variant's time; `null` for the baseline.
    pub speedup_vs_first: Option<f64>,
    /// 95 % interval of that median, from the per-round ratios' order statistics (`null`
    /// with fewer than 6 rounds; absent in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_vs_first_ci95: Option<MedianInterval>,
    /// The kernel's arrays with their backing after the last round.
    pub regions: Vec<RegionReport>,
    /// Bytes in huge pages over every array (graph and kernel) / bytes mapped for them.
    pub huge_footprint_share: f64,
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PagesReport {
    /// Graph spec as given.
    pub graph_spec: String,
    /// The graph.
    pub graph: GraphInfo,
    /// Policies of the graph's arrays.
    pub graph_pages: String,
    /// The graph's arrays with their backing.
    pub graph_regions: Vec<RegionReport>,
    /// Kernel and settings.
    pub kernel: Spec,
    /// Worker threads.
    pub threads: usize,
    /// Rounds run: those asked for, or more with `--until`.
    pub rounds: u32,
    /// Why the rounds stopped: the rounds asked for ran, the interval grew narrow enough
    /// (`--until`), or a cap was hit. Absent in files from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// Load time.
    pub load: LoadStats,
    /// The page cache of the files the graph came from was dropped once they were read
    /// (`--drop-file-cache`, and a study run on a shaped machine). False in files from before
    /// it was kept (and left out of a file when false, as it was then).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub file_cache_dropped: bool,
    /// The variants' own copies of the graph were built one at a time, as their variants came
    /// up, because together they did not fit the memory available (or as asked with `--copies
    /// in-turn`). False when they were held together, and in files from before it was kept
    /// (left out of a file when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copies_in_turn: bool,
    /// Every sample, in the order run.
    pub samples: Vec<PagesSample>,
    /// Per variant, baseline first.
    pub summary: Vec<PagesVariant>,
}
