//! What `hugewise env` reports: the machine's settings and memory state, what shaping did,
//! how a command run in the shaped machine ended, and what restoring put back.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::machine::{HugetlbPool, SwapArea, ThpSettings};

/// Default safety floor: shaping never leaves less than this available.
pub const DEFAULT_FLOOR: u64 = 1 << 30;

/// The size of the blocks fragmentation is counted in (2 MiB).
pub const BLOCK_BYTES: u64 = 2 << 20;

/// A snapshot of memory, in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryState {
    /// MemFree (on kernels that initialise memory lazily, more than the buddy allocator holds).
    pub mem_free_bytes: u64,
    /// MemAvailable: free plus what reclaim could free; `null` on kernels without it.
    pub mem_available_bytes: Option<u64>,
    /// Free memory in the buddy allocator's lists, all zones (`/proc/buddyinfo`).
    pub buddy_free_bytes: u64,
    /// Free blocks of 2 MiB or larger, counted in 2 MiB blocks.
    pub free_2m_blocks: u64,
    /// Free memory in blocks smaller than 2 MiB: unusable for a 2 MiB page without compaction.
    pub unusable_bytes: u64,
    /// `unusable_bytes / buddy_free_bytes`: the fragmentation level, 0 to 1.
    pub unusable_share: f64,
    /// Free memory parked in per-CPU lists, outside buddyinfo (`null` when zoneinfo is absent).
    pub pcp_free_bytes: Option<u64>,
    /// Mlocked.
    pub mlocked_bytes: Option<u64>,
    /// AnonHugePages.
    pub anon_huge_bytes: Option<u64>,
    /// Memory in hugetlb pools.
    pub hugetlb_bytes: Option<u64>,
    /// Swap space.
    pub swap_total_bytes: Option<u64>,
}

impl MemoryState {
    /// MemAvailable, or MemFree on kernels without it.
    pub fn available(&self) -> u64 {
        self.mem_available_bytes.unwrap_or(self.mem_free_bytes)
    }
}

/// A knob write and what the kernel made of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobSet {
    /// The knob.
    pub knob: String,
    /// The file.
    pub path: String,
    /// Its value before.
    pub old: String,
    /// The value asked for.
    pub asked: String,
    /// What the kernel reports after the write (a hugetlb pool may grow less than asked).
    pub now: String,
}

/// What putting the machine back did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreReport {
    /// Changes undone (or skipped, with why), newest first.
    pub undone: Vec<Undone>,
    /// Changes that could not be undone, with the error; they stay in the journal.
    pub failed: Vec<Undone>,
}

impl RestoreReport {
    /// Whether everything was put back.
    pub fn complete(&self) -> bool {
        self.failed.is_empty()
    }
}

/// What undoing a change did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undone {
    /// The change.
    pub change: String,
    /// `restored`, or why it was skipped, and anything worth knowing.
    pub outcome: String,
}

/// How long a change is meant to last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifetime {
    /// Undone when the run that made it ends (`hugewise env with`, holders).
    Run,
    /// Kept until `hugewise env restore` (`hugewise env thp ...` on its own).
    Kept,
}

/// A pending journal entry, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingChange {
    /// Sequence number.
    pub seq: u64,
    /// `run` or `kept`.
    pub lifetime: Lifetime,
    /// Who made it.
    pub pid: i32,
    /// What it is.
    pub change: String,
}

/// Everything `env show` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvShow {
    /// THP, mTHP and khugepaged settings.
    pub thp: ThpSettings,
    /// hugetlb pools.
    pub hugetlb: Vec<HugetlbPool>,
    /// `vm.*` settings hugewise may change, by name (`null` when absent).
    pub vm: BTreeMap<String, Option<String>>,
    /// Memory state.
    pub memory: MemoryState,
    /// Active swap areas.
    pub swaps: Vec<SwapArea>,
    /// Memory cgroups named `hugewise-*` that exist now.
    pub hugewise_cgroups: Vec<PathBuf>,
    /// The journal.
    pub journal: PathBuf,
    /// Changes it has not undone yet; `null` when the journal could not be read (see
    /// `unread`).
    pub pending: Option<Vec<PendingChange>>,
    /// What could not be read, and what would read it; absent when everything was read (and
    /// in results written before 2026-11-28).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
}

/// A khugepaged setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KhugepagedSetting {
    /// Pages scanned per wake-up.
    PagesToScan,
    /// Sleep between scans.
    ScanSleepMillisecs,
    /// Sleep after an allocation failure.
    AllocSleepMillisecs,
    /// Empty PTEs allowed in a range it collapses.
    MaxPtesNone,
    /// Whether it compacts to find 2 MiB blocks.
    Defrag,
}

/// How much to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PressureTarget {
    /// Take until MemAvailable is this many bytes.
    Leave(u64),
    /// Take this many bytes.
    Take(u64),
}

/// Which pages the holder takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PressurePages {
    /// 4 KiB pages: the buddy allocator serves them from its smallest free blocks first, so
    /// the holder eats existing fragmentation and leaves whole 2 MiB blocks behind.
    Base,
    /// Whole 2 MiB blocks only, so that fragmented free memory stays as it is; taking stops
    /// when no free 2 MiB block is left.
    WholeBlocks,
}

/// What holding memory (`env pressure`) did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PressureReport {
    /// What was asked.
    pub target: PressureTarget,
    /// Pages taken.
    pub pages: PressurePages,
    /// The safety floor.
    pub floor_bytes: u64,
    /// Bytes held.
    pub held_bytes: u64,
    /// True when [`PressurePages::WholeBlocks`] ran out of free 2 MiB blocks before the target.
    pub ran_out_of_2m_blocks: bool,
    /// Memory before.
    pub before: MemoryState,
    /// Memory after.
    pub after: MemoryState,
    /// Time taken.
    pub seconds: f64,
}

/// What to reach.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FragmentTarget {
    /// This share (0 to 1) of free memory unusable for 2 MiB pages.
    Level(f64),
    /// This many bytes of free memory in broken blocks, whatever the free total (used when
    /// pressure will take whole blocks afterwards and the level is meant for what remains).
    UnusableBytes(u64),
}

/// What keeps each broken 2 MiB block broken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FragmentPages {
    /// One mlocked page per block, which compaction may not move while
    /// `vm.compact_unevictable_allowed` is 0: the seeds' fragmentation, that no compaction undoes.
    #[default]
    Unmovable,
    /// One ordinary anonymous page per block, as other programs' memory leaves free memory:
    /// compaction can move it and make the block whole again.
    Movable,
}

impl FragmentPages {
    /// Whether this is the seeds' kind, which saved results leave unsaid (results from before
    /// the kind existed have none, and read as it).
    pub fn is_unmovable(&self) -> bool {
        *self == FragmentPages::Unmovable
    }

    /// The name the CLI and reports use.
    pub fn name(self) -> &'static str {
        match self {
            FragmentPages::Unmovable => "unmovable",
            FragmentPages::Movable => "movable",
        }
    }
}

/// What fragmenting (`env fragment`) did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FragmentReport {
    /// What was asked.
    pub target: FragmentTarget,
    /// What kind of page keeps a block broken (absent: unmovable).
    #[serde(default, skip_serializing_if = "FragmentPages::is_unmovable")]
    pub pages: FragmentPages,
    /// Tolerance on the level (share of free memory).
    pub tolerance: f64,
    /// Whether the target was reached within the tolerance.
    pub reached: bool,
    /// 2 MiB blocks broken by a kept page.
    pub pinned_blocks: u64,
    /// Rounds of measure and correct.
    pub rounds: u32,
    /// Most memory taken at once while looking for whole blocks.
    pub peak_taken_bytes: u64,
    /// Memory before.
    pub before: MemoryState,
    /// Memory after.
    pub after: MemoryState,
    /// Time taken.
    pub seconds: f64,
    /// Why the target was not reached, when it was not.
    pub note: Option<String>,
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// Region size.
    pub region_bytes: u64,
    /// Bytes backed by 2 MiB pages.
    pub huge_bytes: u64,
    /// `huge_bytes / region_bytes`.
    pub huge_share: f64,
    /// THP mode at the time (`madvise` and `always` honour the probe's MADV_HUGEPAGE).
    pub thp_enabled: String,
    /// THP fault-time defrag policy at the time.
    pub thp_defrag: Option<String>,
    /// Time to fault the region in.
    pub fault_seconds: f64,
}

/// What a cgroup saw while a command ran in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// The limit set, in bytes.
    pub limit_bytes: u64,
    /// Highest memory use (`memory.max_usage_in_bytes` or `memory.peak`); `null` when the
    /// kernel does not report it.
    pub peak_bytes: Option<u64>,
    /// Times the limit was hit (v1 `memory.failcnt`, v2 `max` events).
    pub limit_hits: Option<u64>,
    /// Processes killed by the OOM killer inside the cgroup.
    pub oom_kills: Option<u64>,
}

/// How large a THP probe to run after shaping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProbeSize {
    /// No probe.
    Off,
    /// All that is available but 256 MiB, at most 4 GiB: about what a workload starting now
    /// could take.
    #[default]
    Auto,
    /// This many bytes.
    Bytes(u64),
}

/// A swap file to add.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapPlan {
    /// Size.
    pub bytes: u64,
    /// Where.
    pub path: PathBuf,
}

/// What to make of the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Plan {
    /// THP mode.
    pub thp_enabled: Option<String>,
    /// THP defrag policy.
    pub thp_defrag: Option<String>,
    /// mTHP modes by size in KiB.
    pub mthp: Vec<(u64, String)>,
    /// khugepaged settings.
    pub khugepaged: Vec<(KhugepagedSetting, u64)>,
    /// hugetlb pool sizes (page size in KiB, pages).
    pub hugetlb: Vec<(u64, u64)>,
    /// `vm.page-cluster`.
    pub page_cluster: Option<u32>,
    /// `vm.compaction_proactiveness` (0 to 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_proactiveness: Option<u32>,
    /// A swap file.
    pub swap: Option<SwapPlan>,
    /// Drop the page cache first (also done whenever fragmenting: reclaim while breaking
    /// blocks would scatter freed cache pages through them).
    pub drop_caches: bool,
    /// Compact memory first.
    pub compact: bool,
    /// Memory pressure.
    pub pressure: Option<PressureTarget>,
    /// Fragmentation level (0 to 1) of the free memory that remains.
    pub fragment: Option<f64>,
    /// What keeps the broken blocks broken (absent: unmovable).
    #[serde(default, skip_serializing_if = "FragmentPages::is_unmovable")]
    pub fragment_pages: FragmentPages,
    /// Tolerance on the fragmentation level.
    pub fragment_tolerance: f64,
    /// Safety floor: never leave less available while shaping.
    pub floor_bytes: u64,
    /// Run the command in a memory cgroup with this limit.
    pub limit_bytes: Option<u64>,
    /// THP probe after shaping.
    pub probe: ProbeSize,
}

impl Plan {
    /// An empty plan with the default floor and tolerance.
    pub fn new() -> Plan {
        Plan {
            floor_bytes: DEFAULT_FLOOR,
            fragment_tolerance: 0.02,
            ..Plan::default()
        }
    }
}

/// What shaping did and measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeReport {
    /// The plan.
    pub plan: Plan,
    /// Memory before anything was done.
    pub before: MemoryState,
    /// Settings written (fragmentation's own knobs included).
    pub settings: Vec<KnobSet>,
    /// One-off actions (dropping caches, compaction).
    pub actions: Vec<String>,
    /// Pressure taken with base pages.
    pub pressure: Option<PressureReport>,
    /// Fragmentation.
    pub fragment: Option<FragmentReport>,
    /// Pressure taken in whole 2 MiB blocks after fragmenting.
    pub pressure_whole_blocks: Option<PressureReport>,
    /// Memory once shaped: what a workload starts in.
    pub shaped: MemoryState,
    /// The THP probe.
    pub probe: Option<ProbeReport>,
    /// Memory after the probe (its faults may compact or reclaim).
    pub after_probe: Option<MemoryState>,
    /// Warnings: targets missed, pools that grew less than asked.
    pub warnings: Vec<String>,
}

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Exit code, `null` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// Wall time.
    pub wall_seconds: f64,
    /// The memory cgroup it ran in, when limited.
    pub cgroup: Option<PathBuf>,
    /// What the cgroup saw.
    pub cgroup_usage: Option<Usage>,
    /// The reads of the cgroup's `memory.stat` made while the command ran; absent in results
    /// written before 2026-11-27, `null` when not limited or when the reading thread failed.
    #[serde(default)]
    pub stats_flush: Option<crate::telemetry::StatsFlush>,
    /// What the command left running in its process group when it ended, and how it was
    /// ended; `null` when nothing was left.
    pub left_running: Option<String>,
}

impl RunOutcome {
    /// The exit code a shell would report: the command's, or 128 + signal.
    pub fn shell_code(&self) -> u8 {
        crate::exit::shell_code(self.exit_code, self.signal)
    }
}

/// What putting the machine back did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinishReport {
    /// Changes undone.
    pub restore: RestoreReport,
    /// Memory after everything was given back.
    pub after: MemoryState,
}

/// `env thp|hugetlb|khugepaged|page-cluster`: the settings written, kept until `env restore`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetReport {
    /// Each write: old value, asked, what the kernel reports now.
    pub settings: Vec<KnobSet>,
}

/// `env compact|drop-caches`: memory before and after a one-off action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionReport {
    /// `compact` or `drop-caches`.
    pub action: String,
    /// Before.
    pub before: MemoryState,
    /// After.
    pub after: MemoryState,
}

/// `env swap`: the swap file made and the swap areas afterwards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwapReport {
    /// The swap file.
    pub file: PathBuf,
    /// Its size.
    pub size_bytes: u64,
    /// Swap areas after it was enabled.
    pub swaps: Vec<SwapArea>,
}

/// `env with|pressure|fragment|limit`: what shaping did, how the command ended (`null` for a
/// hold), what restoring put back, and the error that ended the run early, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapedRun {
    /// What shaping did and measured.
    pub shape: Option<ShapeReport>,
    /// How the command ended.
    pub run: Option<RunOutcome>,
    /// What restoring put back.
    pub finish: Option<FinishReport>,
    /// Why the command could not be run, if it could not.
    pub error: Option<String>,
}
