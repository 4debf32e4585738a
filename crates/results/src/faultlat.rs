//! What `hugewise faultlat` measured: page-fault latencies of a fresh region and its backing;
//! and what `hugewise bench faultlat` measured: those latencies with the daemon collapsing
//! beside the faults, against the faults alone.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::backing::Backing;
use crate::stats::{MedianInterval, Quiet, Stopped, Summary};

/// Latency distribution in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Events.
    pub count: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest.
    pub max_ns: u64,
    /// Sum of all events.
    pub total_ns: u64,
}

/// The collapse phase of `then_collapse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollapsePhase {
    /// 2 MiB pieces asked.
    pub pieces: u64,
    /// Pieces the kernel collapsed.
    pub collapsed: u64,
    /// Refusals by errno name.
    pub refused: BTreeMap<String, u64>,
    /// Time per `MADV_COLLAPSE` call.
    pub latency: Latency,
    /// Backing after the collapse.
    pub backing: Backing,
}

/// The result of one fault-latency run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultlatReport {
    /// Region size.
    pub bytes: u64,
    /// Page policy while faulting.
    pub policy: String,
    /// Pages written (one byte per 4 KiB).
    pub touches: u64,
    /// Touches that faulted.
    pub faults: u64,
    /// Faults that needed I/O (should be 0 for fresh anonymous memory).
    pub major_faults: u64,
    /// Latency of the touches that faulted.
    pub fault_latency: Latency,
    /// Wall time of the whole touch loop, timing overhead included.
    pub touch_wall_ns: u64,
    /// Median cost of one timestamp pair, included in every latency above.
    pub timer_overhead_ns: u64,
    /// Backing after faulting, read from the kernel.
    pub backing: Backing,
    /// The collapse phase, when asked.
    pub collapse: Option<CollapsePhase>,
}

/// One way of running the faults in `hugewise bench faultlat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultArm {
    /// 4 KiB faults with nothing beside them.
    Alone,
    /// The same, the daemon collapsing the region beside them, paced by the faults.
    Daemon,
    /// The same daemon with its pacing off: each collapse made whatever the faults.
    Unpaced,
}

impl FaultArm {
    /// Every arm, the baseline first.
    pub const ALL: [FaultArm; 3] = [FaultArm::Alone, FaultArm::Daemon, FaultArm::Unpaced];

    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            FaultArm::Alone => "alone",
            FaultArm::Daemon => "daemon",
            FaultArm::Unpaced => "unpaced",
        }
    }
}

/// One arm's run in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultBenchSample {
    /// Round number from 0.
    pub round: u32,
    /// Arm.
    pub arm: FaultArm,
    /// Touches that faulted.
    pub faults: u64,
    /// Latency of the touches that faulted.
    pub fault_latency: Latency,
    /// Wall time of the whole touch loop.
    pub touch_wall_ns: u64,
    /// Daemon arms: chunks the daemon collapsed while the faults ran (`null` alone).
    pub collapses: Option<u32>,
    /// Daemon arms: candidates whose collapse waited because the region was faulting
    /// (`null` alone).
    pub paced: Option<u32>,
    /// Daemon arms: the median latency of the collapses it made, what a fault that comes
    /// meanwhile waits (`null` alone, when it made none, and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collapse_p50_ns: Option<u64>,
    /// Others' CPU use just before.
    pub quiet: Option<Quiet>,
    /// What the guest handed back to its host around the arm, where the kernel counts it
    /// (absent elsewhere and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handback: Option<Handback>,
}

/// What a guest handed back to its host around one run (free page reporting). A page handed
/// back costs a host fault at its next first touch, so how much the guest had handed back
/// decides how many of a run's faults the host pays for too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handback {
    /// Time waited before the run for reporting to go quiet, in milliseconds (`null` when
    /// the run did not wait).
    pub waited_ms: Option<u64>,
    /// Whether reporting went still within the wait's cap (`null` when the run did not wait).
    pub still: Option<bool>,
    /// Memory reported between the previous run's end (or the first reading) and this run's
    /// start, in KiB.
    pub before_kib: u64,
    /// Memory reported while this run faulted, in KiB.
    pub during_kib: u64,
}

/// One arm over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultBenchArm {
    /// Arm.
    pub arm: FaultArm,
    /// p50 fault latency over rounds, in nanoseconds.
    pub p50_ns: Summary,
    /// p99.9 fault latency over rounds, in nanoseconds.
    pub p999_ns: Summary,
    /// Median over rounds of this arm's p99.9 over the alone arm's in the same round: how
    /// much longer the slow faults are beside the daemon (`null` for the alone arm).
    pub p999_vs_alone: Option<f64>,
    /// 95 % interval of that median, from the per-round ratios' order statistics (`null`
    /// with fewer than 6 rounds).
    pub p999_vs_alone_ci95: Option<MedianInterval>,
    /// The same for the median fault.
    pub p50_vs_alone: Option<f64>,
    /// Median collapses a run made (`null` alone).
    pub collapses: Option<f64>,
    /// Median over runs of their median collapse latency (`null` alone, and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collapse_p50_ns: Option<f64>,
}

/// What `hugewise bench faultlat` measured: a fresh region faulted with 4 KiB pages, alone
/// and with the daemon collapsing it beside the faults, alternated round by round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultBenchReport {
    /// Region size.
    pub bytes: u64,
    /// The daemon's policy.
    pub policy: String,
    /// Its budget, as a share of the region (0–1).
    pub budget_share: f64,
    /// The share of the faults its collapses may hold up (`--fault-waits`) in the daemon arm.
    pub fault_waits: f64,
    /// Whether the daemon faulted in the page each collapse copies into first (`null` in
    /// results from before it could).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<bool>,
    /// The nice value the daemon's thread was asked to give way with (`--nice`; `null` in
    /// results from before it could, which ran at their creator's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// The daemon's interval in milliseconds.
    pub interval_ms: u64,
    /// Where the daemon ran: `process` (its own, as under `hugewise promote`) or `thread` (of
    /// the faulting process); `null` in results from before it could run apart, where it ran
    /// in a thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_in: Option<String>,
    /// Rounds run.
    pub rounds: u32,
    /// Why the rounds stopped.
    pub stopped: Option<Stopped>,
    /// Whether each arm waited for the guest's free page reporting to go still first
    /// (`--settle`); absent in results from before it could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<bool>,
    /// Every sample, in the order run.
    pub samples: Vec<FaultBenchSample>,
    /// Per arm, alone first.
    pub summary: Vec<FaultBenchArm>,
}
