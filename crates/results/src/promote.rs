//! What `hugewise promote` did (every action on a target's memory, every interval of the
//! daemon, and totals) and what `hugewise bench promote` measured.

use serde::{Deserialize, Serialize};

use crate::stats::{BootstrapInterval, MedianInterval, Quiet, Stopped, Summary};

/// What was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    /// Collapse into 2 MiB pages (`MADV_COLLAPSE`).
    Promote,
    /// Split back into 4 KiB pages.
    Demote,
    /// Split a huge page the program had partly freed, so that the freed part goes back to
    /// the kernel.
    Release,
}

/// One action on one range of one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// Milliseconds since the engine started.
    pub t_ms: f64,
    /// The target.
    pub pid: i32,
    /// First address of the range.
    pub start: usize,
    /// Length of the range.
    pub len_bytes: u64,
    /// What was asked.
    pub kind: ActionKind,
    /// `ok`, `gone` (the target exited), or the errno's name (`EAGAIN`, `ENOMEM`, ...).
    pub outcome: String,
    /// How long the kernel call took.
    pub latency_ns: u64,
    /// Bytes of the range in 2 MiB pages afterwards, read back from the kernel; `null` when
    /// they could not be read (target gone, frames hidden).
    pub huge_bytes_after: Option<u64>,
    /// The kernel could not take the pages this time (`EAGAIN`) and the same range was tried
    /// again: an attempt, not the range's outcome, which the next action of the range gives.
    /// Totals and failure counts leave such attempts out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tried_again: bool,
}

impl Action {
    /// The call did what was asked: the kernel said yes and the backing read back agrees.
    pub fn succeeded(&self) -> bool {
        self.outcome == "ok"
            && match (self.kind, self.huge_bytes_after) {
                (ActionKind::Promote, Some(h)) => h == self.len_bytes,
                (ActionKind::Demote | ActionKind::Release, Some(h)) => h == 0,
                (_, None) => true,
            }
    }
}

/// What one interval saw and did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Milliseconds since the daemon started.
    pub t_ms: f64,
    /// Targets looked at.
    pub targets: usize,
    /// Targets that had exited and were dropped, their share returned to the pool.
    pub gone: Vec<i32>,
    /// Bytes mapped in the targets' private anonymous memory.
    pub mapped_bytes: u64,
    /// The budget this interval.
    pub budget_bytes: u64,
    /// Huge bytes read from the kernel before acting.
    pub huge_bytes_before: u64,
    /// Huge bytes after acting (before plus what each action read back).
    pub huge_bytes_after: u64,
    /// Successful promotions.
    pub promoted: u32,
    /// Successful demotions.
    pub demoted: u32,
    /// Demotions (read back split) made to give a huge chunk's place to a hotter candidate
    /// (counted when the split reads back, whether or not the promotion after it succeeds);
    /// the rest of `demoted` are the policy's own (`mega`'s) or follow the budget down.
    /// `null` in results from before swaps were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swaps: Option<u32>,
    /// Huge pages the program had partly freed, split so that the freed part goes back to the
    /// kernel (counted apart from demotions).
    #[serde(default)]
    pub released: u32,
    /// Actions the kernel refused or that did not read back as asked.
    pub failed: u32,
    /// Access samples read.
    pub samples: u64,
    /// Samples overwritten before the daemon could read them.
    pub samples_lost: u64,
    /// Time spent reading the targets' chunks and samples.
    pub scan_ns: u64,
    /// Chunks whose page tables were read this interval (the others are as last read);
    /// `null` in results from before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks_read: Option<u64>,
    /// One sample in how many the daemon asked the sampling targets to publish after this
    /// look (1: all; it thins while its looks find nothing to do); `null` when no target took
    /// the request, and in results from before it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_thinning: Option<u32>,
    /// CPU time of the daemon's thread since its look before ended: this look's work and
    /// the wait before it (its wakeups). Older results counted the look's work alone.
    pub cpu_ns: u64,
    /// Candidates left on 4 KiB pages because their sampled walks would save less than their
    /// collapse costs (only for targets that say their sampling period); `null` when none
    /// were, and in results from before it was weighed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_worth: Option<u32>,
    /// Candidates whose collapse waited for a later look because their target was faulting
    /// and the share of its faults a collapse may hold up was spent (see `--fault-waits`);
    /// `null` when none did, and in results from before collapses were paced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paced: Option<u32>,
    /// Candidates whose collapse the look held back after the kernel had refused several in a
    /// row for want of memory (they wait for room, as refused ones do); `null` when none were,
    /// and in results from before looks held back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_back: Option<u32>,
    /// What the daemon found worth saying this interval, once each: which signal a policy
    /// acts on and why, a target's sample ring or allocation log refused and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Huge chunks of lower-priority targets split at the end of this interval so that
    /// compaction could move their pages, after one that made no block; `null` when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room_splits: Option<u32>,
    /// The compaction the daemon made at the end of this interval (`--compact`), if it made
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    /// Why the daemon did not compact although collapses were refused or slowed by direct
    /// compaction this interval; `null` when nothing waited, or it compacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_declined: Option<String>,
}

/// Free memory as a 2 MiB allocation sees it, from `/proc/buddyinfo` (the nodes compacted,
/// or the whole machine).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FreeBlocks {
    /// Free memory in the buddy allocator.
    pub free_bytes: u64,
    /// Free blocks of order 9 (2 MiB), counting each larger block as the 2 MiB blocks it
    /// holds.
    pub free_2m_blocks: u64,
    /// The unusable free space index at order 9: the share (0–1) of free memory that no free
    /// 2 MiB block holds.
    pub unusable_index: f64,
}

/// One compaction the daemon asked of the kernel: when, why, what it cost and what it freed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compaction {
    /// Milliseconds since the daemon started, when the compaction began.
    pub t_ms: f64,
    /// Why (the controller's reason, with the numbers it weighed).
    pub why: String,
    /// The room it was asked to make: 2 MiB blocks wanted by the refused collapses, bounded
    /// by the budget left, the blocks the index said were missing and the most per interval.
    pub aim_bytes: u64,
    /// The lever: `node` (`/sys/devices/system/node/nodeN/compact`, node by node) or
    /// `compact_memory` (`vm.compact_memory`, every node, when the kernel has no per-node
    /// file).
    pub lever: String,
    /// Nodes compacted (every node for `compact_memory`).
    pub nodes: Vec<u32>,
    /// Wall time of the kernel's compaction.
    pub wall_ns: u64,
    /// CPU time the daemon's thread spent in it (the kernel compacts in the writer's context).
    pub cpu_ns: u64,
    /// Bytes the kernel migrated meanwhile (`pgmigrate_success` of `/proc/vmstat`, which
    /// counts other migrations on the machine too); `null` when unreadable.
    pub migrated_bytes: Option<u64>,
    /// Free memory before.
    pub before: FreeBlocks,
    /// Free memory after.
    pub after: FreeBlocks,
    /// The kernel's error, when the write failed (`null`: it compacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Totals over a session's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Promotions that read back huge.
    pub promoted: u64,
    /// Promotions the kernel refused or that did not read back huge.
    pub promote_failed: u64,
    /// Demotions that read back split.
    pub demoted: u64,
    /// Partly freed huge pages split so that the freed part went back to the kernel.
    #[serde(default)]
    pub released: u64,
    /// Of `demoted`, those made to give a huge chunk's place to a hotter candidate (`null` for
    /// a replay, and when an interval did not count them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swaps: Option<u64>,
    /// Huge bytes in the targets at the end, read back from the kernel (`null` when unknown).
    pub huge_bytes_final: Option<u64>,
    /// Median `MADV_COLLAPSE` latency of one call (`null` without promotions).
    pub collapse_p50_ns: Option<u64>,
    /// 99th percentile of the same.
    pub collapse_p99_ns: Option<u64>,
    /// CPU time the daemon's thread used (`null` for a replay).
    pub daemon_cpu_ns: Option<u64>,
    /// That CPU time as a share of one core over the session's wall time.
    pub daemon_core_share: Option<f64>,
    /// Milliseconds from the start until the huge bytes first reached the budget (`null` if
    /// they never did, or for a replay).
    pub reach_budget_ms: Option<f64>,
    /// Collapses put off to a later look because their target was faulting (absent when none
    /// were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paced: Option<u64>,
    /// Collapses held back after refusals for want of memory, over every look (absent when
    /// none were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_back: Option<u64>,
    /// Compactions the daemon made (absent when it made none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compactions: Option<u64>,
    /// Their CPU time (absent when none were made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_cpu_ns: Option<u64>,
    /// That CPU time as a share of one core over the session's wall time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_core_share: Option<f64>,
}

/// A promotion session as saved by `hugewise promote`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromoteReport {
    /// `daemon` or `plan`.
    pub mode: String,
    /// The daemon's policy, or the plan's (`pcc`, `mega`, ...).
    pub policy: String,
    /// The budget as given (`4%`, `512MiB`), for the daemon; `null` for a plan.
    pub budget: Option<String>,
    /// The daemon's interval in milliseconds; `null` for a plan.
    pub interval_ms: Option<u64>,
    /// The daemon's compaction mode (`auto`, `off`, `always`); absent for a plan and in
    /// results from before the daemon compacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact: Option<String>,
    /// The daemon's pacing: most of a target's faults its collapses may hold up, as a share of
    /// those taken (`--fault-waits`); absent for a plan and in results from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_waits: Option<f64>,
    /// What the daemon took a page walk a huge page removes to cost, in nanoseconds
    /// (`--walk-ns`); absent for a plan and in results from before it was a choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk_ns: Option<f64>,
    /// The nice value the daemon's thread ran at (`--nice`, or higher where hugewise already
    /// had less priority); absent for a plan, where it could not be set, and in results from
    /// before it could give way (they ran at their creator's, 0 unless started under `nice`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// The targets' pids.
    pub pids: Vec<i32>,
    /// Pids that published access samples.
    pub sampled_pids: Vec<i32>,
    /// The command hugewise started, when it started one.
    pub command: Option<Vec<String>>,
    /// Its exit code (`null` when it did not exit by itself or none was started).
    pub command_exit: Option<i32>,
    /// Targets that exited while the session ran.
    pub gone: Vec<i32>,
    /// The user stopped the session.
    pub cancelled: bool,
    /// Wall time of the session.
    pub wall_ns: u64,
    /// Totals.
    pub totals: Totals,
    /// Every action, in order.
    pub actions: Vec<Action>,
    /// Every interval of the daemon (empty for a plan).
    pub intervals: Vec<Interval>,
}

/// One way of running the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arm {
    /// 4 KiB pages.
    Base,
    /// Every chunk huge (THP at fault).
    Ideal,
    /// The plan's chunks collapsed before the clock starts.
    Plan,
    /// The online daemon promoting while the clock runs.
    Daemon,
}

impl Arm {
    /// All arms, base first (the baseline).
    pub const ALL: [Arm; 4] = [Arm::Base, Arm::Ideal, Arm::Plan, Arm::Daemon];

    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Arm::Base => "base",
            Arm::Ideal => "ideal",
            Arm::Plan => "plan",
            Arm::Daemon => "daemon",
        }
    }
}

/// One timed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromoteBenchSample {
    /// Round number from 0.
    pub round: u32,
    /// Arm.
    pub arm: Arm,
    /// The run's time in the workload's unit ([`PromoteBenchWorkload::unit`]): nanoseconds
    /// per read for Zipf reads, the timed trials' median kernel seconds for a graph kernel.
    #[serde(alias = "ns_per_read")]
    pub time: f64,
    /// Share of the region in 2 MiB pages when the clock stopped, read from the kernel.
    pub huge_share: f64,
    /// Time to create and fill the region (and collapse, for `plan`). On shared frames: for
    /// `ideal`, creating, filling and collapsing the whole region; for `plan` and `base`,
    /// the splits that arm needed; for `daemon`, nothing.
    pub setup_ns: u64,
    /// Daemon arm: from the clock's start until the huge bytes first reached the budget
    /// (`null` if they never did, and for other arms).
    pub reach_budget_ms: Option<f64>,
    /// Daemon arm: CPU time of the daemon's thread over the run.
    pub daemon_cpu_ns: Option<u64>,
    /// Daemon arm: wall time of the run, to set the CPU time against.
    pub wall_ns: u64,
    /// Daemon arm: from the daemon's start (just before the clock's) until the last look
    /// that promoted began (`null` if none did). Below the budget, the daemon settled in that
    /// look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_ms: Option<f64>,
    /// Daemon arm: CPU time of the intervals after the one that reached the budget, the
    /// steady state after the ramp's collapses, or, for a daemon that stayed below its budget,
    /// after its last promotion (`null` if it did neither, or reached it at its last look).
    /// Results of `bench promote --graph` saved before 2026-11-29's night counted the interval
    /// that reached it too.
    #[serde(default)]
    pub daemon_steady_cpu_ns: Option<u64>,
    /// Daemon arm: wall time from the budget's being reached (or the daemon's settling) to
    /// the clock's stop; under `bench promote --graph`, from the start of the look after the
    /// one that reached it (that look's end) to the session's.
    #[serde(default)]
    pub daemon_steady_wall_ns: Option<u64>,
    /// Daemon arm: promotions that succeeded, and that failed. Plan arm: the plan's chunks
    /// made huge, and those that were not (a kernel refusal after the retries).
    pub promotions: Option<(u32, u32)>,
    /// Daemon arm: huge chunks split back over the run, and how many of them were split to
    /// give their place to a hotter chunk (the rest are the policy's own demotions or follow
    /// the budget down as the program frees memory). `null` for the other arms and in results
    /// from before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demotions: Option<(u32, Option<u32>)>,
    /// How many of the plan's chunks (the hottest by the sampled profile) were huge when the
    /// clock stopped, read back from the kernel: whether an arm's huge pages went to the hot
    /// chunks (THP at fault under `cold_first`, the daemon's choice). `null` for graph
    /// kernels and in results from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_chunks_huge: Option<u32>,
    /// Daemon arm: candidates it passed over at a look because their walks would not pay for
    /// their collapse, summed over its looks (a chunk declined at ten looks counts ten).
    /// `null` for the other arms, for a target that did not say its sampling period, and in
    /// results from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_worth: Option<u32>,
    /// Plan and daemon arms: latency of each `MADV_COLLAPSE` of one 2 MiB chunk, in order.
    pub collapse_ns: Vec<u64>,
    /// Others' CPU use just before.
    pub quiet: Option<Quiet>,
    /// Daemon arm: from the clock's start until the huge bytes first reached 90 % of the
    /// budget (`null` if they never did, for the other arms, and in results from before it
    /// was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach_90_ms: Option<f64>,
    /// Daemon arm: compactions its controller made (`--compact`), and their CPU time (`null`
    /// for the other arms and in results from before they were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compactions: Option<(u32, u64)>,
    /// The time of the second half of the timed reads alone, in the workload's unit: past
    /// the daemon's ramp in a run of the default length, so that what the daemon costs once
    /// its chunks are huge shows apart from how long it took to make them so. `null` for
    /// graph kernels and in results from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_time: Option<f64>,
}

impl PromoteBenchSample {
    /// A run of `arm` in `round` that took `time`, every other field empty or zero: the
    /// caller sets what it measured (`huge_share`, `setup_ns` and `wall_ns` at least).
    pub fn timed(round: u32, arm: Arm, time: f64) -> Self {
        PromoteBenchSample {
            round,
            arm,
            time,
            huge_share: 0.0,
            setup_ns: 0,
            reach_budget_ms: None,
            settled_ms: None,
            daemon_cpu_ns: None,
            wall_ns: 0,
            daemon_steady_cpu_ns: None,
            daemon_steady_wall_ns: None,
            promotions: None,
            demotions: None,
            hot_chunks_huge: None,
            not_worth: None,
            collapse_ns: Vec::new(),
            quiet: None,
            reach_90_ms: None,
            compactions: None,
            tail_time: None,
        }
    }
}

/// Per-arm summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromoteBenchArm {
    /// Arm.
    pub arm: Arm,
    /// Time over rounds, in the workload's unit.
    #[serde(alias = "ns_per_read")]
    pub time: Summary,
    /// Median over rounds of base / this arm in the same round (`null` for base).
    pub speedup_vs_base: Option<f64>,
    /// 95 % interval of that median, from the per-round values' order statistics (`null`
    /// with fewer than 6 rounds; absent in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_vs_base_ci95: Option<MedianInterval>,
    /// Median over rounds of (speedup - 1) / (ideal speedup - 1) in the same round: the share
    /// of the ideal's gain reached (`null` for base and ideal, or when the ideal gained
    /// nothing).
    pub share_of_ideal: Option<f64>,
    /// 95 % interval of that median, from the per-round values' order statistics (`null`
    /// with fewer than 6 rounds; absent in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_of_ideal_ci95: Option<MedianInterval>,
    /// Median huge-page share of the region, read from the kernel.
    pub huge_footprint_share: f64,
    /// Median over rounds of this arm's time over the ideal's in the same round (`null` for
    /// the ideal, and where no round ran both). An arm as fast as the ideal is at 1.
    #[serde(default)]
    pub time_vs_ideal: Option<f64>,
    /// 95 % interval of that median (see `speedup_vs_base_ci95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_vs_ideal_ci95: Option<MedianInterval>,
    /// The share of the time the ideal saves that this arm saves, (base - arm) / (base -
    /// ideal), from the medians of times over the ideal's: (b - a) / (b - 1) with a and b this
    /// arm's and the base's `time_vs_ideal`. `share_of_ideal` divides by each round's own gain,
    /// which in a round where the ideal gained little turns a few per cent of noise into
    /// hundreds of per cent of share; here the steady arm, the ideal, is the yardstick, and
    /// the noisy one, the base, enters once, as a median (`null` for base and ideal, or when
    /// the base was not slower than the ideal at the median).
    #[serde(default)]
    pub share_of_ideal_saving: Option<f64>,
    /// 95 % interval of that share: a percentile bootstrap over the rounds that ran this arm,
    /// the base and the ideal (a function of two medians has no order statistic of its own;
    /// `null` with fewer than 6 such rounds or where a resample shows no saving).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_of_ideal_saving_ci95: Option<BootstrapInterval>,
    /// `time_vs_ideal` over the second half of the reads alone
    /// ([`PromoteBenchSample::tail_time`]): the daemon once its ramp is over (`null` for the
    /// ideal and where the samples have no tail times).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_time_vs_ideal: Option<f64>,
    /// Its 95 % interval (see `speedup_vs_base_ci95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_time_vs_ideal_ci95: Option<MedianInterval>,
    /// `share_of_ideal_saving` over the second half of the reads alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_share_of_ideal_saving: Option<f64>,
}

impl PromoteBenchArm {
    /// `arm`'s summary of `time`, every figure set against another arm still empty.
    pub fn timed(arm: Arm, time: Summary) -> Self {
        PromoteBenchArm {
            arm,
            time,
            speedup_vs_base: None,
            speedup_vs_base_ci95: None,
            share_of_ideal: None,
            share_of_ideal_ci95: None,
            huge_footprint_share: 0.0,
            time_vs_ideal: None,
            time_vs_ideal_ci95: None,
            share_of_ideal_saving: None,
            share_of_ideal_saving_ci95: None,
            tail_time_vs_ideal: None,
            tail_time_vs_ideal_ci95: None,
            tail_share_of_ideal_saving: None,
        }
    }
}

/// The benchmark result: one entry per workload, each with its own base and ideal arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "BenchCompat")]
pub struct PromoteBenchReport {
    /// Workloads in the order run.
    pub workloads: Vec<PromoteBenchWorkload>,
    /// `interrupted` when a signal ended the bench before every workload it was asked for
    /// had run (one cut short in its first round is absent; one cut later says so itself);
    /// absent when every workload ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
}

/// Version 1 held one workload at the top level; it reads as a report of that one workload.
#[derive(Deserialize)]
#[serde(untagged)]
enum BenchCompat {
    Workloads {
        workloads: Vec<PromoteBenchWorkload>,
        #[serde(default)]
        stopped: Option<Stopped>,
    },
    One(Box<PromoteBenchWorkload>),
}

impl From<BenchCompat> for PromoteBenchReport {
    fn from(c: BenchCompat) -> Self {
        let (workloads, stopped) = match c {
            BenchCompat::Workloads {
                mut workloads,
                stopped,
            } => {
                for w in &mut workloads {
                    w.fill_vs_ideal();
                }
                (workloads, stopped)
            }
            BenchCompat::One(mut w) => {
                if w.workload.is_empty() {
                    w.workload =
                        PromoteBenchWorkload::zipf_name(w.zipf_s.unwrap_or(1.0), 64, false);
                }
                w.fill_headline();
                (vec![*w], None)
            }
        };
        PromoteBenchReport { workloads, stopped }
    }
}

/// One workload measured in every arm: the headline first (what `--json` users compare), then
/// how it was run, every sample and the per-arm summaries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromoteBenchWorkload {
    /// The workload's name: `zipf:S` for Zipf reads with exponent S, `hot:C%:R%` for R % of
    /// the reads over C % of the chunks, then `:lines:L` when they keep to L cache lines of
    /// each page and `:chase` when each waited for the one before.
    #[serde(default)]
    pub workload: String,
    /// All huge over 4 KiB pages: median of same-round ratios.
    #[serde(default)]
    pub ideal_speedup: Option<f64>,
    /// Its 95 % interval (see [`PromoteBenchArm::speedup_vs_base_ci95`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ideal_speedup_ci95: Option<MedianInterval>,
    /// The plan over 4 KiB pages.
    #[serde(default)]
    pub plan_speedup: Option<f64>,
    /// Its 95 % interval (see [`PromoteBenchArm::speedup_vs_base_ci95`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_speedup_ci95: Option<MedianInterval>,
    /// The daemon over 4 KiB pages.
    #[serde(default)]
    pub daemon_speedup: Option<f64>,
    /// Its 95 % interval (see [`PromoteBenchArm::speedup_vs_base_ci95`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_speedup_ci95: Option<MedianInterval>,
    /// The plan's share of the ideal's gain, (speedup - 1) / (ideal - 1) per round, median.
    #[serde(default)]
    pub plan_share_of_ideal: Option<f64>,
    /// Its 95 % interval (see [`PromoteBenchArm::speedup_vs_base_ci95`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_share_of_ideal_ci95: Option<MedianInterval>,
    /// The daemon's share of the ideal's gain.
    #[serde(default)]
    pub daemon_share_of_ideal: Option<f64>,
    /// Its 95 % interval (see [`PromoteBenchArm::speedup_vs_base_ci95`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_share_of_ideal_ci95: Option<MedianInterval>,
    /// The plan's share of the time the ideal saves (see
    /// [`PromoteBenchArm::share_of_ideal_saving`]): steadier than the per-round share when
    /// rounds differ in how much the ideal gains.
    #[serde(default)]
    pub plan_share_of_ideal_saving: Option<f64>,
    /// Its 95 % interval (see [`PromoteBenchArm::share_of_ideal_saving_ci95`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_share_of_ideal_saving_ci95: Option<BootstrapInterval>,
    /// The same for the daemon.
    #[serde(default)]
    pub daemon_share_of_ideal_saving: Option<f64>,
    /// Its 95 % interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_share_of_ideal_saving_ci95: Option<BootstrapInterval>,
    /// Share (0..=1) of the region the plan made huge, read back from the kernel (median).
    #[serde(default)]
    pub huge_footprint_share: Option<f64>,
    /// The same for the daemon, when the clock stopped.
    #[serde(default)]
    pub daemon_huge_footprint_share: Option<f64>,
    /// Median time from the clock's start until the daemon's huge bytes reached the budget
    /// (`null` when it never did in a majority of rounds).
    #[serde(default)]
    pub reach_budget_ms: Option<f64>,
    /// Median CPU time of the daemon's thread over the run's wall time (of one core).
    #[serde(default)]
    pub daemon_cpu_share: Option<f64>,
    /// The same from the moment the budget was reached (or the daemon settled below it) to
    /// the end: what the daemon costs once its promotions are done (its scans and sample
    /// counting).
    #[serde(default)]
    pub daemon_steady_cpu_share: Option<f64>,
    /// Median time from the daemon's start until its last look that promoted began, in
    /// rounds where it stayed below its budget (`null` when it reached the budget in most
    /// rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_ms: Option<f64>,
    /// The daemon arm's compaction controller (`off`, `auto`, `always`); absent in results
    /// from before it was a choice (the daemon's default then, `auto`, or none at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact: Option<String>,
    /// The daemon arm's pacing (`--fault-waits`): most of the target's faults its collapses
    /// may hold up, as a share of those taken; absent in results from before it was a choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_waits: Option<f64>,
    /// What the daemon arm took a page walk a huge page removes to cost, in nanoseconds
    /// (`--walk-ns`); absent in results from before it was a choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk_ns: Option<f64>,
    /// The nice value the daemon arm's thread was asked to give way with (`--nice`); absent
    /// in results from before it could (they ran at their creator's, 0 unless started under
    /// `nice`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// Median time from the clock's start until the daemon's huge bytes reached 90 % of the
    /// budget (`null` when they did not in a majority of rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach_90_ms: Option<f64>,
    /// Median number of compactions of a daemon run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_compactions: Option<f64>,
    /// Median CPU time of the daemon's compactions over the run's wall time (of one core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_compaction_cpu_share: Option<f64>,
    /// Unit of every `time`: `ns/read` (Zipf reads) or `s` (a graph kernel's timed trial).
    #[serde(default = "ns_per_read_unit")]
    pub unit: String,
    /// Region size (a graph workload: the base arm's footprint, as its run read it back).
    pub bytes: u64,
    /// Zipf exponent (`null` for a graph workload or a hot spot).
    #[serde(default)]
    pub zipf_s: Option<f64>,
    /// The hot spot the reads were drawn from, when they were not Zipf's: the shares as drawn
    /// (the chunks rounded to whole ones, the reads to 2^-32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hotspot: Option<Hotspot>,
    /// The reads of a workload no huge page should speed up: where they went and the work
    /// between them. Absent for every other workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nogain: Option<NoGain>,
    /// Cache lines of each 4 KiB page the reads go to (64: all of them). Absent in files
    /// from before the choice, which read every line, and for a graph workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines_per_page: Option<u32>,
    /// The lines read began at an offset that moved from page to page (so that they fell in
    /// every cache set). Absent in files from before, whose reads kept to the first lines of
    /// each page, all in the same 1/64 of the caches' sets.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lines_staggered: bool,
    /// Each read's address waited for the read before it (a chase). Absent when not, and
    /// for a graph workload.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chase: bool,
    /// Every arm of a round ran on the same physical pages: the region was collapsed whole,
    /// then split in place from arm to arm (ideal, plan, base, then the daemon from 4 KiB
    /// pages), so arms differ in their page tables only, not in where their memory landed.
    /// Absent when each arm mapped its region afresh.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub same_frames: bool,
    /// Each arm's region was faulted chunk by chunk, coldest first (THP at fault then spends
    /// scarce huge pages on cold chunks). Absent when faulted in address order.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cold_first: bool,
    /// Reads per run (Zipf), or timed trials per run after one untimed warm-up (graph).
    pub reads: u64,
    /// These arms ran on a machine shaped before each round (memory pressure, fragmentation)
    /// and given back after it, in the same rounds as the entry before this one, which ran
    /// the same workload on the machine as it was: what shaping was asked, what it gave,
    /// and the speedups set against the unshaped ones round by round. Absent for an
    /// unshaped entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaped: Option<Shaping>,
    /// A graph kernel's workload: what ran and where its plan came from.
    #[serde(default)]
    pub graph: Option<GraphWorkload>,
    /// Budget as a share of the region.
    pub budget_share: f64,
    /// Chunks in the plan.
    pub plan_chunks: u64,
    /// Daemon interval.
    pub interval_ms: u64,
    /// Sampling period of the daemon arm.
    pub sample_every: u32,
    /// Why its rounds stopped (see `--until`). Absent in files from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// Every sample, in the order run.
    pub samples: Vec<PromoteBenchSample>,
    /// Summaries, base first.
    pub summary: Vec<PromoteBenchArm>,
}

/// The middle value of `v` (the upper of the two middle ones for an even count), `None` when
/// empty.
fn upper_median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// A share as a percentage to four decimals, without trailing zeros (0.999 is `99.9`).
fn percent(share: f64) -> String {
    format!("{}", (share * 1e6).round() / 1e4)
}

fn ns_per_read_unit() -> String {
    PromoteBenchWorkload::NS_PER_READ.into()
}

/// A workload's arms run again on a shaped machine, round by round beside the unshaped ones
/// (`bench promote --shape-pressure-leave … --shape-fragment …`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Shaping {
    /// What the memory pressure left available, as asked (`null`: no pressure).
    pub pressure_leave_bytes: Option<u64>,
    /// The share of free memory asked to be useless for 2 MiB pages (`null`: none).
    pub fragment: Option<f64>,
    /// Free memory the kernel had not yet put in its buddy allocator's lists, put there once
    /// before the first round (see `docs/environment.md`), so that every round's unshaped
    /// arms find the machine its shaped ones start from (`null`: none was outside them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listed_bytes: Option<u64>,
    /// What each round's shaping gave, in the order run.
    pub rounds: Vec<ShapedRound>,
    /// Median over rounds of the daemon's speedup on the shaped machine over its speedup on
    /// the unshaped one in the same round (each over that machine's own 4 KiB arm): 1 when
    /// scarce huge pages cost the daemon nothing.
    pub daemon_speedup_vs_unshaped: Option<f64>,
    /// Its 95 % interval (see [`PromoteBenchArm::speedup_vs_base_ci95`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_speedup_vs_unshaped_ci95: Option<MedianInterval>,
    /// Median over rounds of the share of the daemon's unshaped gain it kept shaped, (shaped
    /// speedup − 1) / (unshaped speedup − 1), over the rounds whose unshaped daemon gained:
    /// stricter than the ratio of speedups (1.10x against 1.22x is a ratio of 0.90 and a
    /// share of 45 %).
    #[serde(default)]
    pub daemon_gain_vs_unshaped: Option<f64>,
    /// Its 95 % interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_gain_vs_unshaped_ci95: Option<MedianInterval>,
    /// The same for the ideal arm (THP at fault).
    pub ideal_speedup_vs_unshaped: Option<f64>,
    /// Its 95 % interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ideal_speedup_vs_unshaped_ci95: Option<MedianInterval>,
    /// Median over rounds of the 4 KiB arm's time on the unshaped machine over its time on
    /// the shaped one: above 1 when the same pages ran faster shaped, which moves every
    /// shaped speedup's yardstick.
    pub base_speedup_vs_unshaped: Option<f64>,
    /// Its 95 % interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_speedup_vs_unshaped_ci95: Option<MedianInterval>,
    /// Median over rounds of the daemon's time on the unshaped machine over its time on the
    /// shaped one: the daemon's own times set side by side, whatever its 4 KiB yardstick did.
    pub daemon_time_speedup_vs_unshaped: Option<f64>,
    /// Its 95 % interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_time_speedup_vs_unshaped_ci95: Option<MedianInterval>,
}

/// What one round's shaping gave, measured once it was done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapedRound {
    /// Round number from 0.
    pub round: u32,
    /// Seconds the shaping took.
    pub seconds: f64,
    /// The fragmentation level was reached within its tolerance (`null`: none asked).
    pub fragment_reached: Option<bool>,
    /// Memory as shaping left it.
    pub memory: crate::env::MemoryState,
    /// What shaping warned of (a level not reached, memory left outside the lists).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The share of free memory in blocks under 2 MiB just before the round's unshaped arms:
    /// how unfragmented the machine "as it is" was (`null` when not measured).
    #[serde(default)]
    pub unshaped_unusable_share: Option<f64>,
}

impl Shaping {
    /// Set the speedups against the unshaped entry's, round by round, from both entries'
    /// samples (a round missing an arm on either machine is left out).
    pub fn compare(&mut self, unshaped: &[PromoteBenchSample], shaped: &[PromoteBenchSample]) {
        let time = |v: &[PromoteBenchSample], arm: Arm, round: u32| {
            v.iter()
                .find(|s| s.arm == arm && s.round == round)
                .map(|s| s.time)
        };
        let rounds: Vec<u32> = {
            let mut r: Vec<u32> = shaped.iter().map(|s| s.round).collect();
            r.sort_unstable();
            r.dedup();
            r
        };
        let per_round = |f: &dyn Fn(u32) -> Option<f64>| -> Vec<f64> {
            rounds.iter().filter_map(|&r| f(r)).collect()
        };
        let speedup_ratio = |arm: Arm| {
            per_round(&|r| {
                let u = time(unshaped, Arm::Base, r)? / time(unshaped, arm, r)?;
                let s = time(shaped, Arm::Base, r)? / time(shaped, arm, r)?;
                Some(s / u)
            })
        };
        let gain_share = |arm: Arm| {
            per_round(&|r| {
                let u = time(unshaped, Arm::Base, r)? / time(unshaped, arm, r)? - 1.0;
                let s = time(shaped, Arm::Base, r)? / time(shaped, arm, r)? - 1.0;
                (u > 0.0).then(|| s / u)
            })
        };
        let time_ratio =
            |arm: Arm| per_round(&|r| Some(time(unshaped, arm, r)? / time(shaped, arm, r)?));
        let pair = |v: Vec<f64>| {
            (
                crate::stats::median(&v),
                crate::stats::median_interval(&v, 0.95),
            )
        };
        (
            self.daemon_speedup_vs_unshaped,
            self.daemon_speedup_vs_unshaped_ci95,
        ) = pair(speedup_ratio(Arm::Daemon));
        (
            self.daemon_gain_vs_unshaped,
            self.daemon_gain_vs_unshaped_ci95,
        ) = pair(gain_share(Arm::Daemon));
        (
            self.ideal_speedup_vs_unshaped,
            self.ideal_speedup_vs_unshaped_ci95,
        ) = pair(speedup_ratio(Arm::Ideal));
        (
            self.base_speedup_vs_unshaped,
            self.base_speedup_vs_unshaped_ci95,
        ) = pair(time_ratio(Arm::Base));
        (
            self.daemon_time_speedup_vs_unshaped,
            self.daemon_time_speedup_vs_unshaped_ci95,
        ) = pair(time_ratio(Arm::Daemon));
    }

    /// One line on what shaping was asked: `pressure leaving 12 GiB, 50 % fragmented`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = self.pressure_leave_bytes {
            parts.push(match b {
                b if b >= 1 << 30 => {
                    format!("pressure leaving {:.1} GiB", b as f64 / (1u64 << 30) as f64)
                }
                b => format!("pressure leaving {} MiB", b >> 20),
            });
        }
        if let Some(f) = self.fragment {
            parts.push(format!("{} % of free memory fragmented", percent(f)));
        }
        if parts.is_empty() {
            "nothing shaped".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Reads drawn from a hot spot: a share of them spread evenly over a share of the chunks, the
/// rest evenly over the others.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Hotspot {
    /// Share of the chunks that are hot (0–1).
    pub chunks: f64,
    /// Share of the reads that go to them (0–1).
    pub reads: f64,
}

/// Reads that huge pages should not speed up: all within a span whose 4 KiB pages fit the
/// first-level TLB, each followed by dependent arithmetic, over a region whose every page is
/// mapped but never read again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NoGain {
    /// Bytes of the span the reads go to, inside one 2 MiB chunk.
    pub span_bytes: u64,
    /// Dependent multiply-xor steps after each read.
    pub work_per_read: u32,
}

/// A graph kernel run as a `bench promote` workload: each arm is its own run process, the
/// daemon's started by a promoting one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphWorkload {
    /// Kernel name (`pr`, `bfs`, ...).
    pub kernel: String,
    /// The graph as given (`kron:22`, a file).
    pub graph: String,
    /// The plan file replayed in the plan arm.
    pub plan: String,
    /// The plan was made by this benchmark (a trace and `sim --plan`), in this many seconds;
    /// `null` when it was given.
    pub plan_made_s: Option<f64>,
    /// The kernel's settings every arm ran with (`null` in results saved before they were
    /// recorded).
    #[serde(default)]
    pub spec: Option<crate::kernel::Spec>,
    /// Threads of every arm's run, when given (`null`: one per CPU).
    #[serde(default)]
    pub threads: Option<usize>,
}

impl PromoteBenchWorkload {
    /// Unit of Zipf workloads' times.
    pub const NS_PER_READ: &'static str = "ns/read";
    /// Unit of graph workloads' times.
    pub const SECONDS: &'static str = "s";

    /// The name of Zipf reads with exponent `s` over `lines` cache lines of each page:
    /// `zipf:S`, then `:lines:L` when the reads keep to fewer than all 64 and `:chase` when
    /// each waited for the one before.
    pub fn zipf_name(s: f64, lines: u32, chase: bool) -> String {
        Self::name_with(format!("zipf:{s}"), lines, chase)
    }

    /// The name of reads from a hot spot: `hot:C%:R%`, with the same suffixes as
    /// [`Self::zipf_name`].
    pub fn hotspot_name(chunks: f64, reads: f64, lines: u32, chase: bool) -> String {
        Self::name_with(
            format!("hot:{}%:{}%", percent(chunks), percent(reads)),
            lines,
            chase,
        )
    }

    /// The name of the workload no huge page should speed up: `nogain:K KiB`.
    pub fn nogain_name(span_bytes: u64) -> String {
        format!("nogain:{}KiB", span_bytes >> 10)
    }

    fn name_with(mut name: String, lines: u32, chase: bool) -> String {
        if lines < 64 {
            name.push_str(&format!(":lines:{lines}"));
        }
        if chase {
            name.push_str(":chase");
        }
        name
    }

    /// One line on what the workload was.
    pub fn describe(&self) -> String {
        let reads = |what: String| {
            let lines = match self.lines_per_page {
                Some(l) if l < 64 => format!(
                    ", {l} {}cache line{} of each 4 KiB page",
                    if self.lines_staggered {
                        "staggered "
                    } else {
                        "leading "
                    },
                    if l == 1 { "" } else { "s" }
                ),
                _ => String::new(),
            };
            let chase = if self.chase {
                ", each read waiting for the one before"
            } else {
                ""
            };
            let frames = if self.same_frames {
                "; every arm of a round on the same physical pages"
            } else if self.cold_first {
                "; chunks faulted coldest first"
            } else {
                ""
            };
            format!(
                "{what} over {} MiB{lines}{chase}: {} reads per run{frames}",
                self.bytes >> 20,
                self.reads
            )
        };
        if let (None, Some(n)) = (&self.graph, self.nogain) {
            return format!(
                "No gain expected: dependent reads over {} KiB ({} pages, within the first-level \
                 TLB's reach), {} multiply-xor steps after each, in a region of {} MiB mapped \
                 and cold: {} reads per run",
                n.span_bytes >> 10,
                n.span_bytes / 4096,
                n.work_per_read,
                self.bytes >> 20,
                self.reads
            );
        }
        match (&self.graph, self.zipf_s, self.hotspot) {
            (Some(g), _, _) => format!(
                "{} on {}: {} timed trial{} per run after a warm-up, footprint {} MiB",
                g.kernel,
                g.graph,
                self.reads,
                if self.reads == 1 { "" } else { "s" },
                self.bytes >> 20
            ),
            (None, Some(s), _) => reads(format!("Zipf reads (s = {s})")),
            (None, None, Some(h)) => reads(format!(
                "Reads from a hot spot ({}% of them over {}% of the chunks)",
                percent(h.reads),
                percent(h.chunks)
            )),
            (None, None, None) => self.workload.clone(),
        }
    }

    /// Fill, where missing, each arm's time over the ideal's (median over the rounds that ran
    /// both) and its share of the time the ideal saves, from the samples: files from before
    /// these were kept read with them too.
    pub fn fill_vs_ideal(&mut self) {
        let whole = |s: &PromoteBenchSample| Some(s.time);
        let tail = |s: &PromoteBenchSample| s.tail_time;
        let (base, found) = self.vs_ideal(whole);
        let (tail_base, tail_found) = self.vs_ideal(tail);
        let saving = |base: Option<f64>, mine: Option<f64>| {
            base.zip(mine)
                .and_then(|(base, mine)| saving_of(base, mine))
        };
        for ((s, mine), tail) in self.summary.iter_mut().zip(found).zip(tail_found) {
            if s.arm == Arm::Ideal {
                continue;
            }
            if s.tail_time_vs_ideal.is_none() && !tail.is_empty() {
                s.tail_time_vs_ideal_ci95 = crate::stats::median_interval(&tail, 0.95);
                s.tail_time_vs_ideal = crate::stats::median(&tail);
                if s.arm != Arm::Base {
                    s.tail_share_of_ideal_saving = saving(tail_base, s.tail_time_vs_ideal);
                }
            }
            if s.arm != Arm::Base && s.share_of_ideal_saving_ci95.is_none() {
                s.share_of_ideal_saving_ci95 = saving_interval(&self.samples, s.arm);
            }
            if s.time_vs_ideal.is_some() {
                continue;
            }
            s.time_vs_ideal_ci95 = crate::stats::median_interval(&mine, 0.95);
            let mine = crate::stats::median(&mine);
            s.time_vs_ideal = mine;
            if s.arm != Arm::Base {
                s.share_of_ideal_saving = saving(base, mine);
            }
        }
        let arm = |a: Arm| self.summary.iter().find(|s| s.arm == a);
        self.plan_share_of_ideal_saving = arm(Arm::Plan).and_then(|s| s.share_of_ideal_saving);
        self.daemon_share_of_ideal_saving = arm(Arm::Daemon).and_then(|s| s.share_of_ideal_saving);
        self.plan_share_of_ideal_saving_ci95 =
            arm(Arm::Plan).and_then(|s| s.share_of_ideal_saving_ci95);
        self.daemon_share_of_ideal_saving_ci95 =
            arm(Arm::Daemon).and_then(|s| s.share_of_ideal_saving_ci95);
    }

    /// Per summarized arm, its times over the ideal's in each round that ran both, timed by
    /// `time` (a sample without that time is left out), and the base's median of them.
    fn vs_ideal(
        &self,
        time: impl Fn(&PromoteBenchSample) -> Option<f64>,
    ) -> (Option<f64>, Vec<Vec<f64>>) {
        let ideal_in = |round: u32| {
            self.samples
                .iter()
                .find(|s| s.arm == Arm::Ideal && s.round == round)
                .and_then(&time)
        };
        let ratios = |a: Arm| -> Vec<f64> {
            self.samples
                .iter()
                .filter(|s| s.arm == a)
                .filter_map(|s| Some(time(s)? / ideal_in(s.round)?))
                .collect()
        };
        let base = crate::stats::median(&ratios(Arm::Base));
        (base, self.summary.iter().map(|s| ratios(s.arm)).collect())
    }

    /// Set the headline fields from the summaries and samples.
    pub fn fill_headline(&mut self) {
        self.fill_vs_ideal();
        let arm = |a: Arm| self.summary.iter().find(|s| s.arm == a);
        self.ideal_speedup = arm(Arm::Ideal).and_then(|s| s.speedup_vs_base);
        self.plan_speedup = arm(Arm::Plan).and_then(|s| s.speedup_vs_base);
        self.daemon_speedup = arm(Arm::Daemon).and_then(|s| s.speedup_vs_base);
        self.plan_share_of_ideal = arm(Arm::Plan).and_then(|s| s.share_of_ideal);
        self.daemon_share_of_ideal = arm(Arm::Daemon).and_then(|s| s.share_of_ideal);
        self.ideal_speedup_ci95 = arm(Arm::Ideal).and_then(|s| s.speedup_vs_base_ci95);
        self.plan_speedup_ci95 = arm(Arm::Plan).and_then(|s| s.speedup_vs_base_ci95);
        self.daemon_speedup_ci95 = arm(Arm::Daemon).and_then(|s| s.speedup_vs_base_ci95);
        self.plan_share_of_ideal_ci95 = arm(Arm::Plan).and_then(|s| s.share_of_ideal_ci95);
        self.daemon_share_of_ideal_ci95 = arm(Arm::Daemon).and_then(|s| s.share_of_ideal_ci95);
        self.huge_footprint_share = arm(Arm::Plan).map(|s| s.huge_footprint_share);
        self.daemon_huge_footprint_share = arm(Arm::Daemon).map(|s| s.huge_footprint_share);
        let daemon: Vec<&PromoteBenchSample> = self
            .samples
            .iter()
            .filter(|s| s.arm == Arm::Daemon)
            .collect();
        // A run that never reached the budget counts as the longest: the median is then only
        // a time when most runs reached it.
        self.reach_budget_ms = upper_median(
            daemon
                .iter()
                .map(|s| s.reach_budget_ms.unwrap_or(f64::INFINITY))
                .collect(),
        )
        .filter(|m| m.is_finite());
        self.reach_90_ms = upper_median(
            daemon
                .iter()
                .map(|s| s.reach_90_ms.unwrap_or(f64::INFINITY))
                .collect(),
        )
        .filter(|m| m.is_finite());
        self.daemon_compactions = upper_median(
            daemon
                .iter()
                .filter_map(|s| Some(f64::from(s.compactions?.0)))
                .collect(),
        );
        self.daemon_compaction_cpu_share = upper_median(
            daemon
                .iter()
                .filter_map(|s| Some(s.compactions?.1 as f64 / s.wall_ns.max(1) as f64))
                .collect(),
        );
        // Below the budget: when the daemon made its last promotion, a run that reached the
        // budget or never promoted counting as the longest.
        self.settled_ms = upper_median(
            daemon
                .iter()
                .map(|s| match (s.reach_budget_ms, s.settled_ms) {
                    (None, Some(m)) => m,
                    _ => f64::INFINITY,
                })
                .collect(),
        )
        .filter(|m| m.is_finite());
        self.daemon_cpu_share = upper_median(
            daemon
                .iter()
                .filter_map(|s| Some(s.daemon_cpu_ns? as f64 / s.wall_ns.max(1) as f64))
                .collect(),
        );
        self.daemon_steady_cpu_share = upper_median(
            daemon
                .iter()
                .filter_map(|s| {
                    let wall = s.daemon_steady_wall_ns.filter(|&w| w > 0)?;
                    Some(s.daemon_steady_cpu_ns? as f64 / wall as f64)
                })
                .collect(),
        );
    }
}
/// The share of the ideal's saving an arm reaches, (b - a) / (b - 1) with a and b the
/// medians over rounds of the arm's and the base's times over the ideal's, from the rounds
/// that ran all three: `None` when the base was not slower than the ideal.
fn saving_share(base_over_ideal: &[f64], arm_over_ideal: &[f64]) -> Option<f64> {
    saving_of(
        crate::stats::median(base_over_ideal)?,
        crate::stats::median(arm_over_ideal)?,
    )
}

/// (b - a) / (b - 1) for the base's and an arm's times over the ideal's, b and a: `None`
/// when the base was not slower than the ideal.
fn saving_of(b: f64, a: f64) -> Option<f64> {
    (b > 1.0).then(|| (b - a) / (b - 1.0))
}

/// The 95 % bootstrap interval of `arm`'s share of the ideal's saving over the rounds that
/// ran it, the base and the ideal (see [`PromoteBenchArm::share_of_ideal_saving_ci95`]).
fn saving_interval(samples: &[PromoteBenchSample], arm: Arm) -> Option<BootstrapInterval> {
    let time = |a: Arm, round: u32| {
        samples
            .iter()
            .find(|s| s.arm == a && s.round == round)
            .map(|s| s.time)
    };
    let (b, a): (Vec<f64>, Vec<f64>) = samples
        .iter()
        .filter(|s| s.arm == arm)
        .filter_map(|s| {
            let ideal = time(Arm::Ideal, s.round)?;
            Some((time(Arm::Base, s.round)? / ideal, s.time / ideal))
        })
        .unzip();
    crate::stats::bootstrap_interval(a.len(), 0.95, |idx| {
        let pick = |v: &[f64]| idx.iter().map(|&i| v[i]).collect::<Vec<_>>();
        saving_share(&pick(&b), &pick(&a))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(round: u32, arm: Arm, time: f64) -> PromoteBenchSample {
        PromoteBenchSample::timed(round, arm, time)
    }

    #[test]
    fn shaped_speedups_are_set_against_the_same_rounds_unshaped_ones() {
        // Round 0: unshaped base 10, daemon 5, ideal 4 (speedups 2 and 2.5); shaped base 8,
        // daemon 5, ideal 4 (1.6 and 2). Round 1: unshaped 10, 4, 4 (2.5, 2.5); shaped 10, 5,
        // 5 (2, 2). Round 2 ran shaped only (cut short) and counts nowhere.
        let unshaped = [
            sample(0, Arm::Base, 10.0),
            sample(0, Arm::Daemon, 5.0),
            sample(0, Arm::Ideal, 4.0),
            sample(1, Arm::Base, 10.0),
            sample(1, Arm::Daemon, 4.0),
            sample(1, Arm::Ideal, 4.0),
        ];
        let shaped = [
            sample(0, Arm::Base, 8.0),
            sample(0, Arm::Daemon, 5.0),
            sample(0, Arm::Ideal, 4.0),
            sample(1, Arm::Base, 10.0),
            sample(1, Arm::Daemon, 5.0),
            sample(1, Arm::Ideal, 5.0),
            sample(2, Arm::Base, 1.0),
        ];
        let mut sh = Shaping::default();
        sh.compare(&unshaped, &shaped);
        // Daemon: 1.6 / 2 = 0.8 and 2 / 2.5 = 0.8.
        assert_eq!(sh.daemon_speedup_vs_unshaped, Some(0.8));
        // Daemon's gain kept: 0.6 / 1 and 1 / 1.5, median (0.6 + 0.667) / 2.
        let gain = sh.daemon_gain_vs_unshaped.expect("gain");
        assert!((gain - (0.6 + 2.0 / 3.0) / 2.0).abs() < 1e-12, "{gain}");
        // Ideal: 2 / 2.5 = 0.8 and 2 / 2.5 = 0.8.
        assert_eq!(sh.ideal_speedup_vs_unshaped, Some(0.8));
        // Base, unshaped over shaped: 10 / 8 and 10 / 10, median 1.125.
        assert_eq!(sh.base_speedup_vs_unshaped, Some(1.125));
        // Daemon's own times: 5 / 5 and 4 / 5, median 0.9.
        assert!((sh.daemon_time_speedup_vs_unshaped.expect("daemon") - 0.9).abs() < 1e-12);
        // Two rounds give no interval.
        assert!(sh.daemon_speedup_vs_unshaped_ci95.is_none());
    }

    #[test]
    fn a_bench_a_signal_ended_says_so_and_older_files_read_without_it() {
        let cut = PromoteBenchReport {
            workloads: vec![PromoteBenchWorkload {
                workload: "hot:3.9%:99.9%:lines:1:chase".into(),
                ..PromoteBenchWorkload::default()
            }],
            stopped: Some(Stopped::Interrupted),
        };
        let text = serde_json::to_string(&cut).expect("json");
        assert!(text.contains(r#""stopped":"interrupted""#), "{text}");
        let back: PromoteBenchReport = serde_json::from_str(&text).expect("read");
        assert_eq!(back.stopped, Some(Stopped::Interrupted));
        // Saved before the field: every workload ran, or the file would say so.
        let old = text.replace(r#","stopped":"interrupted""#, "");
        assert_ne!(old, text);
        let back: PromoteBenchReport = serde_json::from_str(&old).expect("read");
        assert_eq!(back.stopped, None);
        assert_eq!(back.workloads.len(), 1);
    }

    #[test]
    fn a_shaping_says_what_it_asked() {
        let sh = Shaping {
            pressure_leave_bytes: Some(12 << 30),
            fragment: Some(0.5),
            ..Shaping::default()
        };
        assert_eq!(
            sh.describe(),
            "pressure leaving 12.0 GiB, 50 % of free memory fragmented"
        );
        assert_eq!(Shaping::default().describe(), "nothing shaped");
    }
}
