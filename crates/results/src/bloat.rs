//! What `hugewise bench bloat` measured: a real Redis server filled, read, partly emptied and
//! filled again (MEGA's pattern) under Linux's THP modes and under `hugewise exec`, with its
//! memory over time and each phase's throughput and latency from `redis-benchmark`.

use serde::{Deserialize, Serialize};

use crate::stats::{MedianInterval, Summary};

/// The whole benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BloatReport {
    /// `redis-server --version`.
    pub server_version: String,
    /// Keys in the key space.
    pub keys: u64,
    /// Bytes per value.
    pub value_bytes: u64,
    /// Share of the key space deleted and filled again.
    pub delete_share: f64,
    /// `redis-benchmark` clients.
    pub clients: u32,
    /// `redis-benchmark` pipeline depth.
    pub pipeline: u32,
    /// Rounds run; each runs every variant once, in an order that puts each variant right
    /// after every other equally often within a round over every n rounds (2n for an odd
    /// number).
    pub rounds: u32,
    /// Why the rounds stopped: all asked ran, or a signal ended the one under way (its runs
    /// dropped). Absent in files from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<crate::stats::Stopped>,
    /// Every run.
    pub runs: Vec<BloatRun>,
    /// Per variant, in the order given.
    pub variants: Vec<BloatVariant>,
}

/// One server's life under one variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BloatRun {
    /// Round number from 0.
    pub round: u32,
    /// The variant's label.
    pub variant: String,
    /// The phases in order: fill, read, delete, refill.
    pub phases: Vec<BloatPhase>,
    /// The server's memory, sampled as it ran.
    pub series: Vec<MemPoint>,
    /// Memory charged to the server's cgroup at the end (what the machine lost to it).
    pub final_charged_bytes: Option<u64>,
    /// Its resident set at the end.
    pub final_rss_bytes: Option<u64>,
    /// Its anonymous memory in huge pages at the end.
    pub final_anon_huge_bytes: Option<u64>,
    /// CPU time of the promotion daemon beside it, under an `exec:` variant with a policy
    /// (`null` otherwise, and in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_cpu_ns: Option<u64>,
    /// Wall time of that daemon's session, to set its CPU time against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_wall_ns: Option<u64>,
}

/// One `redis-benchmark` phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BloatPhase {
    /// `fill`, `read`, `delete` or `refill`.
    pub name: String,
    /// Requests sent.
    pub requests: u64,
    /// Requests per second.
    pub rps: f64,
    /// Median latency.
    pub p50_ms: Option<f64>,
    /// 99th percentile latency.
    pub p99_ms: Option<f64>,
    /// Memory charged to the server's cgroup right after.
    pub charged_bytes_after: Option<u64>,
    /// Resident set right after.
    pub rss_bytes_after: Option<u64>,
}

/// The server's memory at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemPoint {
    /// Since the server started.
    pub t_ms: u64,
    /// Resident set.
    pub rss_bytes: u64,
    /// Anonymous memory in huge pages.
    pub anon_huge_bytes: u64,
    /// Memory charged to its cgroup.
    pub charged_bytes: Option<u64>,
}

/// One variant over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BloatVariant {
    /// `never`, `madvise`, `always` (Linux's THP mode) or `exec:RULES`.
    pub label: String,
    /// Throughput of each phase (median over rounds), in phase order.
    pub rps: Vec<(String, f64)>,
    /// Geometric mean over phases of the throughput, median over rounds.
    pub rps_geomean: Summary,
    /// 99th percentile latency of the read phase.
    pub read_p99_ms: Option<Summary>,
    /// Memory charged at the end.
    pub final_charged_bytes: Option<Summary>,
    /// Median over rounds of this run's final charge minus `never`'s in the same round: the
    /// memory huge pages cost (`null` without a `never` variant).
    pub bloat_bytes: Option<f64>,
    /// Median over rounds of rps_geomean over `always`'s in the same round.
    pub throughput_vs_always: Option<f64>,
    /// 95 % interval of that median, from the per-round ratios' order statistics; absent with
    /// fewer than 6 rounds and in files from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_vs_always_ci95: Option<MedianInterval>,
    /// Median over rounds of this variant's bloat over `always`'s in the same round, over the
    /// rounds where `always`'s bloat is above 0: a round whose `never` run was charged more
    /// than `always`'s has no share to give. (In a file without `bloat_share_rounds`: the
    /// median bloat over `always`'s median bloat.)
    pub bloat_vs_always: Option<f64>,
    /// 95 % interval of that median; absent with fewer than 6 such rounds and in files from
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bloat_vs_always_ci95: Option<MedianInterval>,
    /// How many rounds gave a share (absent in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bloat_share_rounds: Option<u32>,
    /// Median over rounds of the promotion daemon's CPU time over its session's wall time,
    /// as a share of one core (absent without a daemon, and in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_core_share: Option<f64>,
}
