//! What `hugewise faultlat` measured: page-fault latencies of a fresh region and its backing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::backing::Backing;

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
