//! What `hugewise bench randread` measured: random reads on 4 KiB, THP and collapsed pages, alternated per round.

use serde::{Deserialize, Serialize};

use crate::stats::{MedianInterval, Quiet, Stopped, Summary};

/// One way of backing the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// 4 KiB pages.
    Base,
    /// THP at fault time.
    Thp,
    /// 4 KiB at fault time, then `MADV_COLLAPSE`d.
    BaseCollapsed,
}

impl Variant {
    /// All variants, base first (the baseline).
    pub const ALL: [Variant; 3] = [Variant::Base, Variant::Thp, Variant::BaseCollapsed];

    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Base => "base",
            Variant::Thp => "thp",
            Variant::BaseCollapsed => "base-collapsed",
        }
    }
}

/// One timed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandreadSample {
    /// Round number from 0.
    pub round: u32,
    /// Variant.
    pub variant: Variant,
    /// Nanoseconds per read.
    pub ns_per_read: f64,
    /// Share of the region in huge pages, read from the kernel before timing.
    pub huge_share: f64,
    /// Time to create and populate (and collapse) the region.
    pub setup_ns: u64,
    /// Others' CPU use just before.
    pub quiet: Option<Quiet>,
}

/// Per-variant summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandreadVariant {
    /// Variant.
    pub variant: Variant,
    /// ns per read over rounds.
    pub ns_per_read: Summary,
    /// Median over rounds of base / this variant in the same round (`null` for base itself).
    pub speedup_vs_base: Option<f64>,
    /// 95 % interval of that median, from the per-round ratios' order statistics (`null`
    /// with fewer than 6 rounds; absent in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_vs_base_ci95: Option<MedianInterval>,
    /// Median huge-page share.
    pub huge_share: f64,
}

/// The benchmark result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandreadReport {
    /// Region size.
    pub bytes: u64,
    /// Reads per sample.
    pub reads: u64,
    /// Rounds run: those asked for, or more with `--until`.
    pub rounds: u32,
    /// Why the rounds stopped: the rounds asked for ran, the interval grew narrow enough
    /// (`--until`), or a cap was hit. Absent in files from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// Seed.
    pub seed: u64,
    /// Every sample, in the order run.
    pub samples: Vec<RandreadSample>,
    /// Summaries, base first.
    pub summary: Vec<RandreadVariant>,
}
