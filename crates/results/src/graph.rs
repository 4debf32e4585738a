//! A graph and its arrays as results describe them: size, load and reorder times, and each
//! array's page policy and backing.

use serde::{Deserialize, Serialize};

use crate::backing::Backing;

/// Size and backing of one array, for results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionReport {
    /// Array name.
    pub name: String,
    /// Page policy asked for.
    pub policy: String,
    /// Bytes of data.
    pub data_bytes: u64,
    /// Backing read from the kernel.
    pub backing: Backing,
    /// Bytes locked in memory from the start of the array, read from the kernel for a region
    /// asked to lock (`+lock`); absent for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_bytes: Option<u64>,
}

/// Where the build spent its time, and what it removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildStats {
    /// Vertices.
    pub vertices: u64,
    /// Arcs placed before duplicates were removed.
    pub arcs_placed: u64,
    /// Arcs kept.
    pub arcs: u64,
    /// Self-loops dropped.
    pub self_loops: u64,
    /// Pass 1 (count).
    pub count_ns: u64,
    /// Array creation (faults the pages in).
    pub alloc_ns: u64,
    /// Pass 2 (place).
    pub place_ns: u64,
    /// Sort, de-duplicate, compact.
    pub normalize_ns: u64,
}

/// How a load went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadStats {
    /// Wall time from the start of reading to a finished CSR.
    pub load_ns: u64,
    /// The builder's breakdown.
    pub build: BuildStats,
}

/// Time spent reordering, kept apart from loading and from the kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReorderStats {
    /// Method.
    pub method: String,
    /// Computing the new order (0 when the reordered graph was read from the cache: this run
    /// computed nothing, and the reading is the load's time).
    pub order_ns: u64,
    /// Building the relabelled CSR (0 when read from the cache, as `order_ns`).
    pub relabel_ns: u64,
    /// What the cache of reordered graphs did: the graph read from it (order and relabelling
    /// then take no time), or relabelled here and kept for later runs, or not kept and why.
    /// Absent when no cache was asked for or the input is not a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheUse>,
}

/// What became of a run's reordering in the cache of reordered graphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheOutcome {
    /// Read from the cache: the input itself was not loaded, nothing was relabelled.
    Hit,
    /// Relabelled here, then written to the cache for later runs.
    Stored,
    /// Relabelled here and not written (the note says why).
    NotStored,
}

/// One run's use of the cache of reordered graphs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheUse {
    /// Read, written or neither.
    pub outcome: CacheOutcome,
    /// The cache entry (a directory).
    pub path: std::path::PathBuf,
    /// Size of the reordered graph and its permutation on disk (0 when not written).
    pub bytes: u64,
    /// Time to read the entry (a hit) or to write and sync it (stored).
    pub ns: u64,
    /// Why an entry found was not used, or why none was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The graph as loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphInfo {
    /// Vertices.
    pub vertices: u64,
    /// Edges as GAP counts them.
    pub edges: u64,
    /// Stored out-arcs.
    pub arcs: u64,
    /// Directed.
    pub directed: bool,
    /// Weighted.
    pub weighted: bool,
    /// Bytes of the CSR arrays.
    pub data_bytes: u64,
}

/// Out-degree statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Degrees {
    /// Largest out-degree.
    pub max: u64,
    /// Mean out-degree.
    pub mean: f64,
    /// Median out-degree.
    pub median: u64,
    /// Vertices with no out-arcs.
    pub isolated: u64,
}

/// What `hugewise graph gen|convert` wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphWritten {
    /// The graph as given (generator or file).
    pub graph_spec: String,
    /// The graph as saved.
    pub graph: GraphInfo,
    /// Load (or generation) time.
    pub load: LoadStats,
    /// Reordering time; `null` when not reordered.
    pub reorder: Option<ReorderStats>,
    /// The file written.
    pub file: std::path::PathBuf,
    /// Its format: `hwg`, `sg` or `wsg`.
    pub format: String,
    /// Its size.
    pub file_bytes: u64,
    /// Time to write it, synced to disk.
    pub write_ns: u64,
}
