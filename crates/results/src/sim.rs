//! What `hugewise sim` reports: utility curves (walks and estimated speedup per share of the
//! footprint promoted), the model it used, and reuse distance.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A finished set of curves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curves {
    /// The trace.
    pub trace: PathBuf,
    /// Its regions.
    pub regions: Vec<RegionInfo>,
    /// Accesses counted (the trace's, its warm-up left out).
    pub accesses: u64,
    /// Leading accesses of stream 0 simulated as warm-up and not counted (the trace's
    /// first-touch prologue).
    #[serde(default)]
    pub warmup_accesses: u64,
    /// Streams (cores).
    pub streams: u16,
    /// Bytes the budgets are shares of.
    pub footprint_bytes: u64,
    /// TLB shape.
    pub tlb: TlbRecord,
    /// Clock.
    pub timing: Timing,
    /// Where the clock came from.
    pub timing_source: String,
    /// The cost model behind `est_speedup`.
    pub cost_model: CostModel,
    /// Configurations simulated.
    pub configurations: usize,
    /// Wall seconds of the simulation (decode included).
    pub sim_wall_s: f64,
    /// Every point, `none` and `all` first.
    pub points: Vec<Point>,
    /// Reuse distance at 4 KiB and 2 MiB, with the pages' classes (`null`: not asked for).
    pub reuse: Option<[Granularity; 2]>,
}

impl Curves {
    /// Of the page-table reads that making every page huge removes (`none`'s less `all`'s),
    /// the share `at` removes: what the budget bought of what huge pages can buy, read off the
    /// walks themselves rather than the cost model's estimate. `None` without both references,
    /// or where huge pages remove no read.
    pub fn share_of_reads_removed(&self, at: &Point) -> Option<f64> {
        let point = |name: &str| self.points.iter().find(|p| p.policy == name);
        let (none, all) = (point("none")?, point("all")?);
        let removable = none.walk_reads.saturating_sub(all.walk_reads);
        (removable > 0).then(|| (none.walk_reads as f64 - at.walk_reads as f64) / removable as f64)
    }
}

/// One point of a curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Policy name (`pcc`).
    pub policy: String,
    /// Policy with all its settings.
    pub policy_label: String,
    /// Budget as a share of the footprint (`null` for `none` and `all`).
    pub budget_share: Option<f64>,
    /// Accesses simulated.
    pub accesses: u64,
    /// L1 TLB misses.
    pub l1_misses: u64,
    /// Page walks.
    pub walks: u64,
    /// Page-table reads of those walks.
    pub walk_reads: u64,
    /// Walks per 1 000 accesses.
    pub walks_per_kacc: f64,
    /// L1 misses / accesses.
    pub l1_miss_rate: f64,
    /// Walks / L1 misses.
    pub l2_miss_rate: Option<f64>,
    /// Walks per page size (4 KiB, 2 MiB, 1 GiB).
    pub walks_by_size: [u64; 3],
    /// Walks per region of the trace, in [`Curves::regions`]' order, then those outside every
    /// region (empty in results older than this field).
    #[serde(default)]
    pub walks_by_region: Vec<u64>,
    /// Promotions done.
    pub promotions: u64,
    /// Demotions done.
    pub demotions: u64,
    /// Bytes in huge pages at the end.
    pub huge_bytes: u64,
    /// Most bytes in huge pages at once.
    pub peak_huge_bytes: u64,
    /// `huge_bytes` / footprint.
    pub huge_share: f64,
    /// Estimated speedup over `none` (an estimate from the cost model, not a measurement).
    pub est_speedup: f64,
    /// Physical memory under the simulated policy (`null`: not modelled, `sim` without
    /// `--phys`).
    #[serde(default)]
    pub phys: Option<PhysRecord>,
}

/// What the simulated physical memory went through under one configuration: the free 2 MiB
/// blocks promotions need, what compaction moved to make them, and the latency the model
/// gives each promotion. Every figure here is simulated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhysRecord {
    /// The model's settings (`mega:memory=…:others=…:fragment=…`).
    pub label: String,
    /// 2 MiB blocks of physical memory.
    pub blocks: u64,
    /// Blocks free (no page in use, none pinned) before the trace.
    pub free_blocks_start: u64,
    /// Blocks free at the end.
    pub free_blocks_end: u64,
    /// Blocks holding one unmovable page (the fragmentation).
    pub pinned_blocks: u64,
    /// Promotions that got a block.
    pub placed: u64,
    /// Promotions refused for want of a free block (a policy may ask again later).
    pub refused_no_block: u64,
    /// Blocks freed by compaction (on demand and periodic).
    pub blocks_compacted: u64,
    /// 4 KiB pages compaction moved.
    pub pages_moved: u64,
    /// Pages moved per block freed (`null`: none freed).
    pub pages_per_block: Option<f64>,
    /// Base pages the program touched first that found no room at all.
    pub oom_pages: u64,
    /// Promotion latency implied by the model (collapse + pages moved to find the block), µs:
    /// median, 99th and 99.9th percentile, and the largest (`null`: no promotion).
    pub latency_us: Option<[f64; 4]>,
    /// Free blocks and pages moved so far, sampled at every compaction interval.
    pub series: Vec<PhysSample>,
}

/// One sample of [`PhysRecord::series`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PhysSample {
    /// Simulated time, accesses since the trace's start.
    pub at_access: u64,
    /// Blocks free.
    pub free_blocks: u64,
    /// Pages moved so far.
    pub pages_moved: u64,
    /// Promotions refused for want of a block so far.
    pub refused_no_block: u64,
}

/// A region of the trace, for results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionInfo {
    /// Name.
    pub name: String,
    /// First address.
    pub base: u64,
    /// Bytes.
    pub bytes: u64,
}

/// The TLB organisation a simulation modelled, as the result records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlbRecord {
    /// Preset or file name.
    pub name: String,
    /// First-level structures.
    pub l1: Vec<TlbLevel>,
    /// Second-level structures.
    pub l2: Vec<TlbLevel>,
    /// Page-walk caches, if modelled.
    pub pwc: Option<PwcRecord>,
}

/// One TLB structure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlbLevel {
    /// Entries.
    pub entries: u32,
    /// Ways.
    pub ways: u32,
    /// Page sizes it holds (`4k`, `2m`, `1g`).
    pub sizes: Vec<String>,
}

/// Entries of the page-walk caches per level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PwcRecord {
    /// PML4 entries.
    pub pml4: u32,
    /// PDPT entries.
    pub pdpt: u32,
    /// PD entries.
    pub pd: u32,
}

/// How seconds of a real run map to simulated accesses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Accesses the traced program makes per second (calibration).
    pub accesses_per_s: f64,
    /// Policy intervals are divided by this (1: real time), so that a trace of a few seconds
    /// still holds several intervals.
    pub time_scale: f64,
}

impl Timing {
    /// Accesses in `seconds` of policy time.
    pub fn accesses(&self, seconds: f64) -> u64 {
        ((seconds * self.accesses_per_s / self.time_scale).round() as u64).max(1)
    }
}

/// The fitted or assumed coefficients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Seconds per access, translation aside.
    pub s_per_access: f64,
    /// Seconds per page-table read of a walk.
    pub s_per_walk_read: f64,
    /// Whether fitted to measured runs (else assumed).
    pub calibrated: bool,
    /// Why it is not calibrated, when it is not.
    pub note: Option<String>,
}

impl CostModel {
    /// Estimated seconds for `accesses` with `reads` page-table reads.
    pub fn seconds(&self, accesses: u64, reads: u64) -> f64 {
        accesses as f64 * self.s_per_access + reads as f64 * self.s_per_walk_read
    }
}

/// One histogram bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// Smallest distance counted.
    pub from: u64,
    /// Distances are below this.
    pub below: u64,
    /// Reuses at such distances.
    pub reuses: u64,
}

/// One class of pages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Class {
    /// Pages in it.
    pub pages: u64,
    /// Their share of all pages.
    pub share_of_pages: f64,
    /// Accesses to them.
    pub accesses: u64,
    /// Their reuses at distance ≥ 1 024 (the threshold of `hugewise_sim::reuse`) (each a TLB miss in an LRU TLB of that size).
    pub long_reuses: u64,
    /// Their share of all long reuses.
    pub share_of_long_reuses: f64,
}

/// The classification.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Classes {
    /// Pages reused mostly within 1 024 distinct pages.
    pub tlb_friendly: Class,
    /// TLB-sensitive pages (reused mostly beyond the threshold) with at least the mean number
    /// of long reuses of TLB-sensitive pages: high-reuse TLB-sensitive data.
    pub hubs: Class,
    /// TLB-sensitive pages reused less often than that, and pages never reused.
    pub low_reuse: Class,
    /// The long reuses a page needs to be a HUB (the mean over TLB-sensitive pages).
    pub hub_min_long_reuses: f64,
}

/// Results at one page size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Granularity {
    /// Page size.
    pub page_bytes: u64,
    /// Accesses.
    pub accesses: u64,
    /// Distinct pages.
    pub pages: u64,
    /// First touches (no reuse distance).
    pub cold: u64,
    /// Reuse-distance histogram (log2 buckets).
    pub histogram: Vec<Bucket>,
    /// Page classes.
    pub classes: Classes,
}

/// `hugewise sim reuse`: exact reuse distance at 4 KiB and 2 MiB.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReuseReport {
    /// The trace.
    pub trace: PathBuf,
    /// 4 KiB pages, then 2 MiB pages.
    pub granularities: [Granularity; 2],
}
