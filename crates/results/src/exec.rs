//! What `hugewise exec` saw: a program hugewise did not write, run with the preload library,
//! its large allocations, the page policy each got, and what the kernel backed them with.

use serde::{Deserialize, Serialize};

/// One run of a program under `hugewise exec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecReport {
    /// The command, program first.
    pub command: Vec<String>,
    /// The page rules, normalised (`>=2MiB=thp,*=system`).
    pub rules: String,
    /// Allocations smaller than this were left to the program's allocator.
    pub min_size_bytes: u64,
    /// The preload library used.
    pub preload: String,
    /// How often each allocation's backing was read while the program ran.
    pub interval_ns: u64,
    /// The program's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// From start to exit.
    pub wall_ns: u64,
    /// Every process of the program that loaded the library (the first is the one started).
    pub processes: Vec<ExecProcess>,
    /// The promotion daemon's session on the program (`--promote`), `null` without one.
    #[serde(default)]
    pub promote: Option<crate::promote::PromoteReport>,
    /// Why the promotion daemon stopped early, when it did (the program ran on).
    #[serde(default)]
    pub promote_error: Option<String>,
    /// A profile run (`hugewise profile`): each call site's small allocations had an arena of
    /// their own, and how much of each was accessed was read at every interval.
    #[serde(default)]
    pub profile: bool,
    /// Most bytes the hot arena could hold (rules with policy `arena`).
    #[serde(default)]
    pub hot_arena_bytes: Option<u64>,
}

/// One process of the program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecProcess {
    /// Its pid.
    pub pid: i32,
    /// `glibc`, or `other` when the program brought its own allocator (its allocations are
    /// then left to it).
    pub allocator: String,
    /// Whether the library refused the rules it was given (nothing was taken over).
    pub rules_refused: bool,
    /// Whether a rule names a call site the program does not have as loaded (a placement made
    /// for another build of it): such rules match nothing.
    #[serde(default)]
    pub sites_missing: bool,
    /// Allocations taken over but not logged (the log was full).
    pub unlogged: u64,
    /// Allocations left to the program's allocator because hugewise could not place them.
    pub fallbacks: u64,
    /// Why the last of those was refused (errno name).
    pub last_fallback_error: Option<String>,
    /// Highest resident set seen (smaps_rollup `Rss`).
    pub peak_rss_bytes: Option<u64>,
    /// Highest anonymous memory in huge pages seen, over the whole process.
    pub peak_anon_huge_bytes: Option<u64>,
    /// The allocations taken over, in order.
    pub allocations: Vec<ExecAllocation>,
}

/// One allocation taken over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecAllocation {
    /// First byte of its mapping.
    pub start: u64,
    /// Length of its mapping.
    pub len_bytes: u64,
    /// Bytes the program asked for.
    pub requested_bytes: u64,
    /// The page policy it got (`thp`, `base`, `system`).
    pub policy: String,
    /// The rule that chose it (0-based), `null` when none matched.
    pub rule: Option<u32>,
    /// The name the program gave it (`hugewise_exec.h`), `null` when it gave none.
    #[serde(default)]
    pub name: Option<String>,
    /// `malloc`, `mmap`, or `arena` (an arena of small allocations: one call site's in a
    /// profile run, or the hot arena).
    pub origin: String,
    /// The kernel's refusal of the advice (errno name), `null` when it took it.
    pub advice_error: Option<String>,
    /// Made this long after the program started.
    pub born_ns: u64,
    /// Freed this long after it was made; `null` when it lived to the end.
    pub lifetime_ns: Option<u64>,
    /// Most bytes resident at once; `null` when it was never observed alive.
    pub peak_resident_bytes: Option<u64>,
    /// Most bytes in huge pages at once; `null` when it was never observed alive.
    pub peak_huge_bytes: Option<u64>,
    /// The call site that made it (`module+0xoffset`), `null` when unknown.
    #[serde(default)]
    pub site: Option<String>,
    /// In a profile run, the share of its resident bytes whose pages were accessed between two
    /// readings, averaged over the readings (`null` outside a profile run or when never
    /// resident).
    #[serde(default)]
    pub accessed_share: Option<f64>,
}

/// Totals over the allocations of one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyTotals {
    /// The policy.
    pub policy: String,
    /// Allocations.
    pub count: u64,
    /// Bytes asked for.
    pub requested_bytes: u64,
    /// Sum of each allocation's peak resident bytes (observed ones).
    pub peak_resident_bytes: u64,
    /// Sum of each allocation's peak huge bytes (observed ones).
    pub peak_huge_bytes: u64,
    /// Allocations never observed alive (freed between two readings).
    pub unobserved: u64,
}

impl ExecReport {
    /// Totals per policy over every process, in a fixed order (thp, arena, base, system).
    pub fn totals(&self) -> Vec<PolicyTotals> {
        let mut out: Vec<PolicyTotals> = ["thp", "arena", "base", "system"]
            .into_iter()
            .map(|p| PolicyTotals {
                policy: p.to_string(),
                count: 0,
                requested_bytes: 0,
                peak_resident_bytes: 0,
                peak_huge_bytes: 0,
                unobserved: 0,
            })
            .collect();
        for a in self.processes.iter().flat_map(|p| &p.allocations) {
            let Some(t) = out.iter_mut().find(|t| t.policy == a.policy) else {
                continue;
            };
            t.count += 1;
            t.requested_bytes += a.requested_bytes;
            match (a.peak_resident_bytes, a.peak_huge_bytes) {
                (Some(r), Some(h)) => {
                    t.peak_resident_bytes += r;
                    t.peak_huge_bytes += h;
                }
                _ => t.unobserved += 1,
            }
        }
        out.retain(|t| t.count > 0);
        out
    }
}

/// `hugewise bench exec`: one command under several page rules (and without hugewise),
/// alternated round by round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecBenchReport {
    /// The command, program first.
    pub command: Vec<String>,
    /// Rounds run (those asked for, or more with `--until`); each runs every variant once, in
    /// an order that puts each variant right after every other equally often within a round
    /// over every n rounds (2n for an odd number of variants).
    pub rounds: u32,
    /// Why the rounds stopped: the rounds asked for ran, the interval grew narrow enough
    /// (`--until`), or a cap was hit. Absent in files from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<crate::stats::Stopped>,
    /// Allocations smaller than this stayed with the program's allocator.
    pub min_size_bytes: u64,
    /// Every run.
    pub samples: Vec<ExecBenchSample>,
    /// Per variant, in the order given; the first is the baseline of the ratios.
    pub variants: Vec<ExecBenchVariant>,
}

/// One run of the command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecBenchSample {
    /// Round number from 0.
    pub round: u32,
    /// The variant's label.
    pub variant: String,
    /// From start to exit.
    pub wall_ns: u64,
    /// The time the program measured itself (`--metric`), seconds; `null` when not asked.
    pub metric_s: Option<f64>,
    /// Sum over the allocations taken over of their peak huge bytes; `null` without hugewise.
    pub huge_bytes: Option<u64>,
    /// Highest resident set of the first process; `null` without hugewise.
    pub peak_rss_bytes: Option<u64>,
    /// Others' CPU use just before.
    pub quiet: Option<crate::stats::Quiet>,
}

/// One variant over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecBenchVariant {
    /// `plain` (no hugewise) or the rules.
    pub label: String,
    /// The rules; `null` for `plain`.
    pub rules: Option<String>,
    /// Wall time.
    pub wall_ns: crate::stats::Summary,
    /// Median over rounds of the first variant's time over this one's, in the same round
    /// (`null` for the first).
    pub speedup_vs_first: Option<f64>,
    /// 95 % interval of that median, from the per-round ratios' order statistics (`null`
    /// with fewer than 6 rounds; absent in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_vs_first_ci95: Option<crate::stats::MedianInterval>,
    /// Median huge bytes; `null` without hugewise.
    pub huge_bytes: Option<f64>,
    /// The time the program measured itself, seconds; `null` when not asked.
    pub metric_s: Option<crate::stats::Summary>,
    /// As `speedup_vs_first`, over the program's own times.
    pub metric_speedup_vs_first: Option<f64>,
    /// 95 % interval of that median, from the per-round ratios' order statistics (`null`
    /// with fewer than 6 rounds; absent in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_speedup_vs_first_ci95: Option<crate::stats::MedianInterval>,
}

/// `hugewise profile`: a profile run of a program, the call sites it found hot, and the
/// placement written from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileReport {
    /// The profile run itself.
    pub run: ExecReport,
    /// The hot arena the placement may fill.
    pub hot_arena_bytes: u64,
    /// A site counts as hot when at least this share of its resident bytes was accessed
    /// between two readings, on average.
    pub min_accessed_share: f64,
    /// Every call site seen, hottest first.
    pub sites: Vec<ProfileSite>,
    /// The placement file's text (rules for `hugewise exec --placement`).
    pub placement: String,
    /// Where the placement was written.
    pub placement_file: Option<String>,
    /// DAMON worker threads (`kdamond.N`) that ran beside the profile: they clear accessed bits
    /// too, so the shares read low. Absent when none ran.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kdamonds: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One call site of a profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileSite {
    /// `module+0xoffset`.
    pub site: String,
    /// `small` (its allocations were below the minimum size and had an arena of their own)
    /// or `large` (each had a mapping of its own).
    pub kind: String,
    /// Large allocations made there (small sites: `null`, their count is not kept).
    pub allocations: Option<u64>,
    /// Most bytes resident at once (large sites: summed over its allocations).
    pub peak_resident_bytes: u64,
    /// Share of its resident bytes accessed between two readings, averaged; `null` when never
    /// resident at a reading.
    pub accessed_share: Option<f64>,
    /// What the placement gives it: `arena`, `thp`, `base`, or `null` (left to the program's
    /// allocator: not hot, or the hot arena was full).
    pub placement: Option<String>,
}
