//! Telemetry sampled while a run runs (CPU split, faults, swap traffic, the swap device's queue,
//! the memory cgroup's events), its summaries, and what a run under a memory limit and an
//! automatic overcommit factor record.
//!
//! Every counter is a difference over one interval; a counter this machine does not offer (no
//! swap device, no cgroup, no readahead counters) is `null`, never 0.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One interval of telemetry: counters are what happened between the previous sample and this
/// one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// End of the interval, from the sampler's start.
    pub t_ms: f64,
    /// Length of the interval.
    pub interval_ms: f64,
    /// Shares of all CPUs' time in user (with nice), system (with irq and softirq), idle and
    /// iowait; `null` when `/proc/stat` could not be read.
    pub cpu: Option<CpuSplit>,
    /// Minor faults of the run's process.
    pub minor_faults: Option<u64>,
    /// Major faults (page-ins from swap or files) of the run's process.
    pub major_faults: Option<u64>,
    /// Pages swapped in, machine-wide (`pswpin`).
    pub pswpin_pages: Option<u64>,
    /// Pages swapped out, machine-wide (`pswpout`).
    pub pswpout_pages: Option<u64>,
    /// Swap readahead pages that were used (`swap_ra_hit`); `null` where the kernel has no such
    /// counter.
    pub swap_ra_hit_pages: Option<u64>,
    /// Swap readahead pages read (`swap_ra`); `null` where absent.
    pub swap_ra_pages: Option<u64>,
    /// The swap device's counters; `null` when no swap device is known.
    pub disk: Option<DiskDelta>,
    /// The memory cgroup's counters; `null` when the run is not in one.
    pub cgroup: Option<CgroupSample>,
}

/// Shares of CPU time over an interval (they sum to about 1 with steal).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuSplit {
    /// User and nice.
    pub user_share: f64,
    /// System, irq and softirq.
    pub system_share: f64,
    /// Idle.
    pub idle_share: f64,
    /// Idle with I/O outstanding.
    pub iowait_share: f64,
}

/// A block device's counters over an interval (`/sys/block/DEV/stat`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DiskDelta {
    /// Reads completed.
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Writes completed.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Requests in flight at the end of the interval.
    pub in_flight: u64,
    /// Mean requests in flight over the interval (time in queue / interval).
    pub mean_queue_depth: f64,
    /// Share of the interval the device was busy.
    pub busy_share: f64,
}

/// A memory cgroup's state at the end of an interval, and its events over the interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CgroupSample {
    /// Memory charged now.
    pub usage_bytes: Option<u64>,
    /// Swap the cgroup's pages use now (`swap` of `memory.stat`).
    pub swap_bytes: Option<u64>,
    /// Times the limit was hit during the interval.
    pub limit_hits: Option<u64>,
    /// Major faults of the cgroup during the interval (`pgmajfault`).
    pub major_faults: Option<u64>,
}

/// What a stretch of telemetry comes to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Length of the stretch.
    pub wall_ms: f64,
    /// Samples in it.
    pub samples: usize,
    /// Mean CPU split over the stretch; `null` when not read.
    pub cpu: Option<CpuSplit>,
    /// Pages swapped in per second.
    pub page_ins_per_s: Option<f64>,
    /// Pages swapped out per second.
    pub page_outs_per_s: Option<f64>,
    /// The process's major faults per second.
    pub major_faults_per_s: Option<f64>,
    /// Share of swap readahead that was used (`swap_ra_hit / swap_ra`); `null` without
    /// readahead counters or readahead.
    pub readahead_hit_share: Option<f64>,
    /// The swap device's mean queue depth (requests in flight, time-weighted).
    pub mean_queue_depth: Option<f64>,
    /// The swap device's reads per second.
    pub disk_reads_per_s: Option<f64>,
    /// The swap device's bytes read per second.
    pub disk_read_bytes_per_s: Option<f64>,
}

/// The telemetry of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Telemetry {
    /// The sampling interval asked.
    pub interval_ms: f64,
    /// The swap device sampled (`/sys/block` name); `null` when none was found.
    pub swap_device: Option<String>,
    /// The memory cgroup sampled; `null` when none.
    pub cgroup: Option<PathBuf>,
    /// Wall time the sampler spent reading, over the time it ran: its overhead on one CPU.
    pub sampler_busy_share: f64,
    /// Every sample.
    pub samples: Vec<Sample>,
    /// Over the whole run.
    pub summary: Summary,
}

/// A run held to a share of its footprint in a memory cgroup, with swap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryLimit {
    /// The share asked (0..1).
    pub share: f64,
    /// The footprint the share is of: the graph's and the kernel's arrays.
    pub footprint_bytes: u64,
    /// The cgroup's limit.
    pub limit_bytes: u64,
    /// The cgroup.
    pub cgroup: PathBuf,
    /// The swap file hugewise made for the run; `null` when existing swap was used.
    pub swap_file: Option<PathBuf>,
    /// Its size.
    pub swap_bytes: Option<u64>,
    /// `vm.page-cluster` during the run (swap readahead of 2^N pages); `null` when left as it
    /// was.
    pub page_cluster: Option<u32>,
    /// Time to copy the graph's arrays into memory charged to the cgroup (kept apart from
    /// load and kernel time).
    pub settle_ns: u64,
    /// The cgroup's peak, limit hits and OOM kills at the end.
    pub peak_bytes: Option<u64>,
    /// Times the limit was hit.
    pub limit_hits: Option<u64>,
    /// OOM kills inside the cgroup.
    pub oom_kills: Option<u64>,
    /// The supervisor's reads of the cgroup's `memory.stat` during the run (`null`: none,
    /// `--stats-flush off` or a result from before them).
    #[serde(default)]
    pub stats_flush: Option<StatsFlush>,
}

/// Reads of a cgroup's `memory.stat` at a fixed interval while a command runs in it: each makes
/// the kernel flush the cgroup's statistics. On cgroup v1, BFS with a locked hot prefix at 65 %
/// of its footprint was OOM-killed with swap to spare in 8 of 22 runs without them and none of
/// 22 with them (docs/benchmarks-log.md, "Stale statistics and the OOM killer").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsFlush {
    /// Time between reads.
    pub interval_ms: f64,
    /// Reads made.
    pub reads: u64,
    /// Wall time the reads took, summed (the reading thread's, outside the run's cgroup).
    pub busy_ms: f64,
    /// Why the reads stopped before the run ended (a read failed); `null`: they went on to
    /// the end.
    #[serde(default)]
    pub stopped: Option<String>,
}

/// How `--overcommit auto` chose its factor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OvercommitChoice {
    /// The factor tried at each trial, in order.
    pub factors: Vec<u32>,
    /// The factor settled on.
    pub chosen: u32,
    /// Why, step by step.
    pub reasons: Vec<String>,
    /// Trials run while exploring, before the factor was settled (`null`: the trials ran out
    /// first); the trials after them ran at the factor settled on, or at another whose median
    /// overtook it (`reasons` says when).
    #[serde(default)]
    pub settled_after: Option<usize>,
}
