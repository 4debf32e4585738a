//! `hugewise bench packing`: a program profiled once, then run alternated on 4 KiB pages only,
//! under THP always and THP for everything, and with its hot call sites packed into a hot arena (with and
//! without huge pages, to tell packing's gain from the huge pages').

use serde::{Deserialize, Serialize};

use crate::exec::ProfileReport;
use crate::stats::{MedianInterval, Quiet, Summary};

/// The benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackingReport {
    /// The command, program first.
    pub command: Vec<String>,
    /// Rounds run (those asked for, or more with `--until`); each runs every variant once, in
    /// an order that puts each variant right after every other equally often within a round
    /// over every 10 rounds.
    pub rounds: u32,
    /// Why the rounds stopped: the rounds asked for ran, the interval grew narrow enough
    /// (`--until`), or a cap was hit. Absent in files from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<crate::stats::Stopped>,
    /// The line `KEY=SECONDS` the program prints for its timed phase (`null`: wall time only).
    pub metric: Option<String>,
    /// The profile run and the placement the packed variants use.
    pub profile: ProfileReport,
    /// Every run.
    pub samples: Vec<PackingSample>,
    /// Per variant, the 4 KiB baseline first.
    pub variants: Vec<PackingVariant>,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackingSample {
    /// Round number from 0.
    pub round: u32,
    /// The variant's label.
    pub variant: String,
    /// From start to exit.
    pub wall_ns: u64,
    /// The time the program measured itself; `null` without a metric.
    pub metric_s: Option<f64>,
    /// Highest anonymous memory in huge pages of the program's process (smaps_rollup).
    pub peak_huge_bytes: Option<u64>,
    /// Highest resident set of the program's process.
    pub peak_rss_bytes: Option<u64>,
    /// Others' CPU use just before.
    pub quiet: Option<Quiet>,
}

/// One variant over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackingVariant {
    /// `4k`, `thp-always`, `thp-all` (THP always with glibc's heap grown 64 MiB at a time, so
    /// that all of it can be huge), `packed-4k` or `packed`.
    pub label: String,
    /// The THP mode it ran under.
    pub thp: String,
    /// Whether it ran under `hugewise exec --placement`.
    pub placement: bool,
    /// Wall time.
    pub wall_ns: Summary,
    /// The program's own time; `null` without a metric.
    pub metric_s: Option<Summary>,
    /// Median over rounds of the 4 KiB run's time over this one's in the same round (the
    /// program's own time when it prints one); `null` for the baseline.
    pub speedup_vs_4k: Option<f64>,
    /// 95 % interval of that median, from the per-round ratios' order statistics (`null`
    /// with fewer than 6 rounds; absent in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_vs_4k_ci95: Option<MedianInterval>,
    /// Median peak huge bytes.
    pub huge_bytes: Option<f64>,
    /// Those over THP for everything's (`thp-all`; `null` when that ran no huge page).
    pub huge_share_of_thp_all: Option<f64>,
}
