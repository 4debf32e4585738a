//! The compaction controller: when collapses are refused for want of free 2 MiB blocks, it
//! weighs what compacting would win (the collapses waiting, the budget left, the time their
//! chunks would save) against what it would cost (CPU time per MiB the kernel moved, measured
//! on this machine, held to a share of one core over the session) and the room the kernel's
//! unusable free space index says compaction can make at most; when the benefit wins it asks
//! the kernel to compact, node by node, and records what that cost and freed.
//!
//! The lever is the kernel's own: `/sys/devices/system/node/nodeN/compact` (or
//! `vm.compact_memory` where the kernel has no per-node file), a synchronous compaction in the
//! daemon's thread, so its time and CPU are measured, not guessed, and nothing is left running
//! after it returns. No setting is changed: `vm.compaction_proactiveness` would hand the work
//! to `kcompactd`, whose CPU is nobody's account and whose pace the daemon could not bound, and
//! a changed knob would have to be journaled and put back after a crash. DAMON is never used.
//!
//! [`decide`] is a pure function of what one interval saw, so that each rule has a scenario
//! test with exact numbers; [`Controller`] keeps the measured costs and the account, and
//! [`Lever`] reaches the kernel.

use std::fmt;
use std::time::{Duration, Instant};

pub use hugewise_results::promote::{Compaction, FreeBlocks};
use hugewise_sys::proc::{FreeAtOrder, ProcFs};
use hugewise_sys::sysfs::SysFs;

use crate::{Result, HUGE};

/// Order of a 2 MiB block in the buddy allocator.
const ORDER_2M: usize = 9;
const MIB: f64 = (1u64 << 20) as f64;

/// When the daemon compacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Never.
    Off,
    /// When refused collapses are worth more than compacting costs, within the CPU share.
    #[default]
    Auto,
    /// After every interval in which a collapse was refused for want of memory, without
    /// weighing (bounded in amount only).
    Always,
}

impl Mode {
    /// The name `--compact` takes.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Auto => "auto",
            Mode::Always => "always",
        }
    }

    /// The mode named `name` (as [`Mode::name`] gives it).
    pub fn from_name(name: &str) -> Option<Mode> {
        [Mode::Off, Mode::Auto, Mode::Always]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

impl std::str::FromStr for Mode {
    type Err = crate::Error;

    fn from_str(s: &str) -> crate::Result<Mode> {
        [Mode::Off, Mode::Auto, Mode::Always]
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| crate::Error::Usage(format!("'{s}': compaction is auto, off or always")))
    }
}

/// Huge bytes that make 90 % of a budget of `budget_bytes`, counted in the whole 2 MiB pages
/// the budget holds (at least one): what "the budget nearly reached" means when a budget of a
/// few huge pages is reached one page at a time.
pub fn ninety_percent_of(budget_bytes: u64) -> u64 {
    let huge = crate::HUGE as u64;
    let pages = (budget_bytes / huge).max(1);
    (pages * huge * 9).div_ceil(10)
}

/// The head of the reason a compaction is held after one that made no block (see
/// [`Decision`]): a daemon that reads it may make room another way first.
pub const BARREN: &str = "the last compaction made no block";

/// The controller's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// When to compact.
    pub mode: Mode,
    /// The most room one interval's compaction aims for (the lever compacts whole nodes; this
    /// bounds what the cost is reckoned on, and with several nodes, how many are compacted).
    pub max_bytes: u64,
    /// The most of one core compaction may take, averaged over the session (`auto` only).
    pub max_core_share: f64,
    /// The account is kept over at least this long: a compaction in the first seconds may
    /// borrow from the seconds to come, or the first one would wait until the session had
    /// run long enough to pay for it, while the hot chunks stay on 4 KiB pages.
    pub account_floor: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mode::Auto,
            max_bytes: 128 << 20,
            max_core_share: 0.02,
            account_floor: Duration::from_secs(10),
        }
    }
}

/// What waited for a huge page this interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Waiting {
    /// Collapses the kernel refused for want of memory (`ENOMEM`, `EAGAIN`), and those the
    /// look held back after such refusals (see [`crate::refusals`]): they wait for room alike.
    pub refused: u32,
    /// Collapses that succeeded only after direct compaction (their latency says so).
    pub slow: u32,
    /// The time the refused chunks would save their programs over the payback time, in
    /// nanoseconds, when their targets say their sampling period (`None`: unknown).
    pub saving_ns: Option<f64>,
    /// Bytes of the budget not yet huge.
    pub unspent_bytes: u64,
    /// Huge chunks of lower-priority targets split this interval so that compaction can move
    /// their pages (see [`crate::room`]): the memory compaction could not move before is not
    /// all there is now, so a compaction that made no block does not hold the next one.
    pub split_for_room: u32,
}

/// What compacting costs here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// CPU nanoseconds per MiB the kernel moved.
    pub ns_per_mib: f64,
    /// MiB a compaction is expected to move whatever it aims for (a node compaction moves what
    /// it finds): the median of those made, 0 before the first.
    pub moved_mib: f64,
}

impl Cost {
    /// The CPU time a compaction aiming at `aim_bytes` is expected to take.
    pub fn expected_ns(&self, aim_bytes: u64) -> f64 {
        self.ns_per_mib * (aim_bytes as f64 / MIB).max(self.moved_mib)
    }
}

/// The CPU compaction has taken so far, against the session's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Account {
    /// CPU time of every compaction so far.
    pub spent_ns: u64,
    /// Time since the daemon started.
    pub elapsed_ns: u64,
    /// Until when (since the daemon started) compaction is held because the last ones made
    /// no 2 MiB block: free memory broken up by pages compaction cannot move (pinned,
    /// mlocked) stays so however often it runs.
    pub held_until_ns: u64,
}

/// What the controller decided. A reason to decline starts with a fixed head before its
/// first `:` (`the budget is spent`, `free blocks suffice`, `compaction cannot make blocks`,
/// `the last compaction made no block`, `over its share of a core`, `not worth its cost`), its
/// numbers after it.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Nothing waited for a block: nothing to weigh.
    Idle,
    /// Compaction would not pay, or cannot help; why.
    Decline(String),
    /// Compact now, aiming to make this much room.
    Compact {
        /// Bytes of 2 MiB blocks wanted.
        aim_bytes: u64,
        /// Why, with the numbers weighed.
        why: String,
    },
}

/// Decide whether to compact now, from what this interval saw: `waiting`, `free` (the free
/// memory of the nodes, at order 9), what a compaction costs here and the account so far.
pub fn decide(
    s: &Settings,
    waiting: &Waiting,
    free: &FreeAtOrder,
    cost: &Cost,
    account: &Account,
) -> Decision {
    let max_chunks = (s.max_bytes / HUGE as u64).max(1);
    match s.mode {
        Mode::Off => return Decision::Idle,
        Mode::Always if waiting.refused == 0 => return Decision::Idle,
        Mode::Always => {
            let aim = u64::from(waiting.refused).min(max_chunks) * HUGE as u64;
            return Decision::Compact {
                aim_bytes: aim,
                why: format!(
                    "{} collapse{} refused or held back ({} free 2 MiB blocks, unusable index \
                     {:.2}); --compact always",
                    waiting.refused,
                    plural(waiting.refused.into()),
                    free.blocks,
                    free.unusable_index()
                ),
            };
        }
        Mode::Auto => {}
    }
    let waited = u64::from(waiting.refused) + u64::from(waiting.slow);
    if waited == 0 {
        return Decision::Idle;
    }
    let unspent = waiting.unspent_bytes / HUGE as u64;
    if unspent == 0 {
        return Decision::Decline("the budget is spent: no collapse waits for room".into());
    }
    let wanted = waited.min(unspent);
    let short = wanted.saturating_sub(free.blocks);
    if short == 0 {
        return Decision::Decline(format!(
            "free blocks suffice: {} free 2 MiB blocks for {wanted} waiting collapse{}, which \
             did not fail for want of blocks",
            free.blocks,
            plural(wanted)
        ));
    }
    let missing = free.unusable_pages() >> ORDER_2M;
    if missing == 0 {
        return Decision::Decline(format!(
            "compaction cannot make blocks: free memory is short, not broken up ({} MiB free, \
             unusable index {:.2})",
            (free.free_pages * 4096) >> 20,
            free.unusable_index()
        ));
    }
    if account.elapsed_ns < account.held_until_ns && waiting.split_for_room == 0 {
        return Decision::Decline(format!(
            "{BARREN}: free memory is broken up by pages compaction \
             cannot move; trying again in {:.1} s",
            (account.held_until_ns - account.elapsed_ns) as f64 / 1e9
        ));
    }
    let aim_chunks = short.min(missing).min(max_chunks);
    let aim = aim_chunks * HUGE as u64;
    let expected = cost.expected_ns(aim);
    let horizon = account.elapsed_ns.max(s.account_floor.as_nanos() as u64) as f64;
    let allowed = s.max_core_share * horizon;
    if account.spent_ns as f64 + expected > allowed {
        return Decision::Decline(format!(
            "over its share of a core: compacting for {} MiB is expected to take {:.1} ms of CPU, which would bring \
             compaction to {:.1} ms of the {:.1} ms allowed ({}% of a core over {:.1} s)",
            aim >> 20,
            expected / 1e6,
            (account.spent_ns as f64 + expected) / 1e6,
            allowed / 1e6,
            s.max_core_share * 100.0,
            horizon / 1e9
        ));
    }
    if let Some(saving) = waiting.saving_ns {
        if saving < expected {
            return Decision::Decline(format!(
                "not worth its cost: the refused chunks would save {:.1} ms, less than the {:.1} ms of CPU \
                 compacting for them is expected to take",
                saving / 1e6,
                expected / 1e6
            ));
        }
    }
    let split = match waiting.split_for_room {
        0 => String::new(),
        n => format!(
            ", {n} cold huge page{} of lower-priority targets split for room",
            plural(n.into())
        ),
    };
    Decision::Compact {
        aim_bytes: aim,
        why: format!(
            "{} collapse{} refused or held back and {} slowed by direct compaction, {} MiB of budget \
             left; {} free 2 MiB blocks, unusable index {:.2} ({} blocks' worth of free \
             memory broken up){split}: compacting for {} MiB, expected {:.1} ms of CPU",
            waiting.refused,
            plural(waiting.refused.into()),
            waiting.slow,
            waiting.unspent_bytes >> 20,
            free.blocks,
            free.unusable_index(),
            missing,
            aim >> 20,
            expected / 1e6
        ),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// CPU time a compaction is taken to cost per MiB moved before one was measured: a node
/// compaction here moved 6 MiB for 11 ms of system time on a lightly fragmented 24 GiB VM.
const NS_PER_MIB_GUESS: f64 = 2e6;

/// Compactions whose amount moved the expectation keeps.
const KEPT: usize = 16;

/// How long compaction is first held after one that made no block; each further one that
/// makes none doubles it, up to [`HOLD_MAX`].
const HOLD_FIRST: Duration = Duration::from_secs(2);
const HOLD_MAX: Duration = Duration::from_secs(64);

/// The kernel's compaction, reached through `/sys` and `/proc` (the real ones or a recorded
/// tree).
#[derive(Debug, Clone, Default)]
pub struct Lever {
    /// The `/proc` tree (buddyinfo, vmstat, `vm.compact_memory`).
    pub proc: ProcFs,
    /// The `/sys` tree (the nodes and their `compact` files).
    pub sys: SysFs,
}

impl Lever {
    /// Free memory of every node at order 9.
    pub fn free(&self) -> Result<FreeAtOrder> {
        Ok(FreeAtOrder::of(&self.proc.buddyinfo()?, None, ORDER_2M))
    }

    /// The nodes to compact for `aim_bytes`: those with memory, most broken-up free memory
    /// first, until their broken-up free memory covers the aim. `None` when the kernel has no
    /// per-node file (then `vm.compact_memory` compacts them all).
    fn nodes_for(&self, aim_bytes: u64) -> Result<Option<Vec<u32>>> {
        let nodes = match self.sys.memory_nodes() {
            Ok(n) if !n.is_empty() && n.iter().all(|&n| self.sys.can_compact_node(n)) => n,
            _ => return Ok(None),
        };
        let zones = self.proc.buddyinfo()?;
        let mut by: Vec<(u32, u64)> = nodes
            .iter()
            .map(|&n| {
                (
                    n,
                    FreeAtOrder::of(&zones, Some(n), ORDER_2M).unusable_pages(),
                )
            })
            .collect();
        by.sort_by_key(|&(n, u)| (std::cmp::Reverse(u), n));
        let mut chosen = Vec::new();
        let mut covered = 0u64;
        for (n, u) in by {
            if covered >= aim_bytes && !chosen.is_empty() {
                break;
            }
            chosen.push(n);
            covered += u * 4096;
        }
        Ok(Some(chosen))
    }

    fn migrated_pages(&self) -> Option<u64> {
        let v = self.proc.vmstat().ok()?;
        v.get("pgmigrate_success").map(|&n| n.max(0) as u64)
    }
}

fn blocks(f: &FreeAtOrder) -> FreeBlocks {
    FreeBlocks {
        free_bytes: f.free_pages * 4096,
        free_2m_blocks: f.blocks,
        unusable_index: f.unusable_index(),
    }
}

/// The controller: settings, what compactions have cost here, and the account.
#[derive(Debug, Clone)]
pub struct Controller {
    settings: Settings,
    lever: Lever,
    spent_ns: u64,
    cpu_total_ns: u64,
    moved_total_bytes: u64,
    moved: std::collections::VecDeque<u64>,
    made: u64,
    /// Compactions in a row that made no block, and until when compaction is held for them.
    barren: u32,
    held_until: Duration,
}

impl Controller {
    /// A controller with `settings`, acting through `lever`.
    pub fn new(settings: Settings, lever: Lever) -> Controller {
        Controller {
            settings,
            lever,
            spent_ns: 0,
            cpu_total_ns: 0,
            moved_total_bytes: 0,
            moved: Default::default(),
            made: 0,
            barren: 0,
            held_until: Duration::ZERO,
        }
    }

    /// Its settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// What a compaction costs here, from those made (a guess before the first).
    pub fn cost(&self) -> Cost {
        if self.made == 0 {
            return Cost {
                ns_per_mib: NS_PER_MIB_GUESS,
                moved_mib: 0.0,
            };
        }
        let mut m: Vec<u64> = self.moved.iter().copied().collect();
        m.sort_unstable();
        Cost {
            // At least 1 MiB: a compaction that moved nothing still scanned the node.
            ns_per_mib: self.cpu_total_ns as f64 / (self.moved_total_bytes as f64 / MIB).max(1.0),
            moved_mib: m.get(m.len() / 2).copied().unwrap_or(0) as f64 / MIB,
        }
    }

    /// The account at `elapsed` since the daemon started.
    pub fn account(&self, elapsed: Duration) -> Account {
        Account {
            spent_ns: self.spent_ns,
            elapsed_ns: elapsed.as_nanos() as u64,
            held_until_ns: self.held_until.as_nanos() as u64,
        }
    }

    /// Weigh `waiting` now, reading free memory only when something waited. `Err` only when
    /// `/proc/buddyinfo` cannot be read.
    pub fn decide(&self, waiting: &Waiting, elapsed: Duration) -> Result<Decision> {
        let nothing = match self.settings.mode {
            Mode::Off => true,
            Mode::Always => waiting.refused == 0,
            Mode::Auto => waiting.refused == 0 && waiting.slow == 0,
        };
        if nothing {
            return Ok(Decision::Idle);
        }
        let free = self.lever.free()?;
        Ok(decide(
            &self.settings,
            waiting,
            &free,
            &self.cost(),
            &self.account(elapsed),
        ))
    }

    /// Compact for `aim_bytes` now and record it, `t_ms` after the daemon's start. A kernel
    /// that refuses the write is recorded (its error kept), not an error of the daemon's.
    pub fn compact(&mut self, aim_bytes: u64, why: String, t_ms: f64) -> Result<Compaction> {
        let before = self.lever.free()?;
        let nodes = self.lever.nodes_for(aim_bytes)?;
        let migrated0 = self.lever.migrated_pages();
        let cpu0 = hugewise_sys::rusage::thread_cpu_ns();
        let start = Instant::now();
        let (lever, nodes, done) = match nodes {
            Some(nodes) => {
                let mut done = Ok(());
                for &n in &nodes {
                    done = self.lever.sys.compact_node(n);
                    if done.is_err() {
                        break;
                    }
                }
                ("node", nodes, done)
            }
            None => (
                "compact_memory",
                self.lever.sys.memory_nodes().unwrap_or_default(),
                self.lever.proc.trigger("sys/vm/compact_memory", "1"),
            ),
        };
        let wall_ns = start.elapsed().as_nanos() as u64;
        let cpu_ns = hugewise_sys::rusage::thread_cpu_ns().saturating_sub(cpu0);
        let migrated_bytes = migrated0
            .zip(self.lever.migrated_pages())
            .map(|(a, b)| b.saturating_sub(a) * 4096);
        let after = self.lever.free()?;
        self.spent_ns += cpu_ns;
        self.cpu_total_ns += cpu_ns;
        self.made += 1;
        let moved = migrated_bytes.unwrap_or(0);
        self.moved_total_bytes += moved;
        if self.moved.len() == KEPT {
            self.moved.pop_front();
        }
        self.moved.push_back(moved);
        if after.blocks > before.blocks {
            self.barren = 0;
        } else {
            let hold = HOLD_FIRST
                .saturating_mul(1 << self.barren.min(6))
                .min(HOLD_MAX);
            self.barren += 1;
            self.held_until = Duration::from_secs_f64(t_ms / 1e3) + start.elapsed() + hold;
        }
        Ok(Compaction {
            t_ms,
            why,
            aim_bytes,
            lever: lever.into(),
            nodes,
            wall_ns,
            cpu_ns,
            migrated_bytes,
            before: blocks(&before),
            after: blocks(&after),
            error: done.err().map(|e| e.to_string()),
        })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ninety_percent_of_a_budget_counts_its_whole_huge_pages() {
        let huge = crate::HUGE as u64;
        // Under one page: the one page. Ten pages and a half: nine of them.
        assert_eq!(ninety_percent_of(huge / 2), (huge * 9).div_ceil(10));
        assert_eq!(ninety_percent_of(10 * huge + huge / 2), 9 * huge);
    }

    const M: u64 = 1 << 20;

    /// Free memory of `blocks` free 2 MiB blocks and `broken` MiB of free memory outside them.
    fn free(blocks: u64, broken_mib: u64) -> FreeAtOrder {
        FreeAtOrder {
            order: 9,
            free_pages: blocks * 512 + broken_mib * 256,
            blocks,
        }
    }

    fn waiting(refused: u32, slow: u32, unspent_mib: u64) -> Waiting {
        Waiting {
            refused,
            slow,
            saving_ns: None,
            unspent_bytes: unspent_mib * M,
            split_for_room: 0,
        }
    }

    /// The guess: 2 ms a MiB, nothing moved yet.
    const GUESS: Cost = Cost {
        ns_per_mib: 2e6,
        moved_mib: 0.0,
    };

    fn at(spent_ms: u64, elapsed_s: u64) -> Account {
        Account {
            spent_ns: spent_ms * 1_000_000,
            elapsed_ns: elapsed_s * 1_000_000_000,
            held_until_ns: 0,
        }
    }

    fn aim(d: &Decision) -> Option<u64> {
        match d {
            Decision::Compact { aim_bytes, .. } => Some(aim_bytes / M),
            _ => None,
        }
    }

    fn declined(d: &Decision) -> &str {
        match d {
            Decision::Decline(why) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn off_never_compacts_and_always_compacts_on_any_refusal() {
        let off = Settings {
            mode: Mode::Off,
            ..Settings::default()
        };
        let d = decide(
            &off,
            &waiting(50, 0, 1000),
            &free(0, 4000),
            &GUESS,
            &at(0, 1),
        );
        assert_eq!(d, Decision::Idle);
        let always = Settings {
            mode: Mode::Always,
            ..Settings::default()
        };
        // Three refused: 3 chunks, whatever the free blocks, the budget or the cost say.
        let d = decide(
            &always,
            &waiting(3, 0, 0),
            &free(100, 0),
            &GUESS,
            &at(9000, 1),
        );
        assert_eq!(aim(&d), Some(6));
        // Bounded by the most per interval: 128 MiB, 64 chunks.
        let d = decide(&always, &waiting(500, 0, 0), &free(0, 0), &GUESS, &at(0, 1));
        assert_eq!(aim(&d), Some(128));
        // Slow collapses alone are not refusals.
        let d = decide(
            &always,
            &waiting(0, 7, 100),
            &free(0, 100),
            &GUESS,
            &at(0, 1),
        );
        assert_eq!(d, Decision::Idle);
    }

    #[test]
    fn auto_compacts_for_the_blocks_missing_and_no_more() {
        let s = Settings::default();
        // 10 refused, 2 slowed: 12 collapses wait, the budget has room for 40 chunks (80
        // MiB), 5 blocks are free, so 7 are short; 300 MiB of free memory broken up = 150
        // blocks' worth: aim 7 chunks, 14 MiB. Expected 14 MiB x 2 ms = 28 ms, within 2 % of
        // the 10 s floor (200 ms).
        let d = decide(&s, &waiting(10, 2, 80), &free(5, 300), &GUESS, &at(0, 1));
        assert_eq!(aim(&d), Some(14));
        let Decision::Compact { why, .. } = &d else {
            panic!()
        };
        assert!(
            why.contains("10 collapses refused or held back and 2 slowed"),
            "{why}"
        );
        assert!(why.contains("28.0 ms of CPU"), "{why}");
        // The budget bounds what waits: 3 chunks left, 1 block free, 2 short.
        let d = decide(&s, &waiting(10, 0, 6), &free(1, 300), &GUESS, &at(0, 1));
        assert_eq!(aim(&d), Some(4));
        // The broken-up memory bounds it too: 3 MiB broken up is 1 block's worth.
        let d = decide(&s, &waiting(10, 0, 80), &free(0, 3), &GUESS, &at(0, 1));
        assert_eq!(aim(&d), Some(2));
        // And the most per interval: 1000 short, 64 chunks.
        // (128 MiB at 2 ms is 256 ms: the account must have run 12.8 s to allow it.)
        let d = decide(
            &s,
            &waiting(1000, 0, 4000),
            &free(0, 4000),
            &GUESS,
            &at(0, 13),
        );
        assert_eq!(aim(&d), Some(128));
    }

    #[test]
    fn auto_declines_where_compaction_cannot_help() {
        let s = Settings::default();
        assert_eq!(
            decide(&s, &waiting(0, 0, 80), &free(0, 300), &GUESS, &at(0, 1)),
            Decision::Idle
        );
        let d = decide(&s, &waiting(4, 0, 0), &free(0, 300), &GUESS, &at(0, 1));
        assert!(declined(&d).contains("budget is spent"));
        // 4 wait, 4 blocks are free: the refusals were not for want of blocks (busy pages).
        let d = decide(&s, &waiting(4, 0, 80), &free(4, 300), &GUESS, &at(0, 1));
        assert!(declined(&d).contains("4 free 2 MiB blocks for 4 waiting"));
        // 1 MiB free, all of it broken up, is less than a block: nothing to compact into one.
        let d = decide(&s, &waiting(4, 0, 80), &free(0, 1), &GUESS, &at(0, 1));
        assert!(declined(&d).contains("short, not broken up"), "{d:?}");
    }

    #[test]
    fn auto_holds_compaction_to_its_share_of_a_core() {
        let s = Settings::default();
        // Measured: 10 ms a MiB, and a compaction moves 30 MiB whatever it aims for. 4 chunks
        // short (8 MiB): expected 10 ms x max(8, 30) = 300 ms. Allowed at 2 s: 2 % of the
        // 10 s floor = 200 ms: declined.
        let cost = Cost {
            ns_per_mib: 1e7,
            moved_mib: 30.0,
        };
        let w = waiting(4, 0, 80);
        let d = decide(&s, &w, &free(0, 300), &cost, &at(0, 2));
        assert!(
            declined(&d).contains(
                "300.0 ms of CPU, which would bring compaction to 300.0 ms of the 200.0 ms"
            ),
            "{d:?}"
        );
        // At 20 s, 400 ms are allowed: 300 fits.
        assert_eq!(
            aim(&decide(&s, &w, &free(0, 300), &cost, &at(0, 20))),
            Some(8)
        );
        // Having spent 150 ms already, 450 > 400: declined until 22.5 s.
        assert!(aim(&decide(&s, &w, &free(0, 300), &cost, &at(150, 20))).is_none());
        assert_eq!(
            aim(&decide(&s, &w, &free(0, 300), &cost, &at(150, 23))),
            Some(8)
        );
    }

    #[test]
    fn auto_waits_after_a_compaction_that_made_no_block() {
        let s = Settings::default();
        let w = waiting(4, 0, 80);
        let mut a = at(0, 3);
        a.held_until_ns = 4_500_000_000;
        let d = decide(&s, &w, &free(0, 300), &GUESS, &a);
        assert!(declined(&d).contains("trying again in 1.5 s"), "{d:?}");
        // Huge pages split for room since: compaction has pages to move it had not.
        let split = Waiting {
            split_for_room: 2,
            ..w
        };
        match decide(&s, &split, &free(0, 300), &GUESS, &a) {
            Decision::Compact { aim_bytes, why } => {
                assert_eq!(aim_bytes, 8 << 20);
                assert!(
                    why.contains("2 cold huge pages of lower-priority targets split"),
                    "{why}"
                );
            }
            d => panic!("{d:?}"),
        }
        a.elapsed_ns = 4_500_000_000;
        assert_eq!(aim(&decide(&s, &w, &free(0, 300), &GUESS, &a)), Some(8));
        // `always` does not wait.
        let always = Settings {
            mode: Mode::Always,
            ..s
        };
        a.elapsed_ns = 0;
        assert_eq!(
            aim(&decide(&always, &w, &free(0, 300), &GUESS, &a)),
            Some(8)
        );
    }

    #[test]
    fn auto_declines_when_the_waiting_chunks_would_save_less_than_it_costs() {
        let s = Settings::default();
        // 4 chunks short: 8 MiB at the guessed 2 ms = 16 ms expected.
        let mut w = waiting(4, 0, 80);
        w.saving_ns = Some(15e6);
        let d = decide(&s, &w, &free(0, 300), &GUESS, &at(0, 1));
        assert!(
            declined(&d).contains("save 15.0 ms, less than the 16.0 ms"),
            "{d:?}"
        );
        w.saving_ns = Some(16e6);
        assert_eq!(
            aim(&decide(&s, &w, &free(0, 300), &GUESS, &at(0, 1))),
            Some(8)
        );
    }

    #[test]
    fn a_compaction_writes_the_nodes_file_and_is_recorded_with_what_it_freed() {
        let dir = tempfile::tempdir().expect("tmp");
        let proc = dir.path().join("proc");
        let node = dir.path().join("sys/devices/system/node/node0");
        std::fs::create_dir_all(&proc).expect("mkdir");
        std::fs::create_dir_all(&node).expect("mkdir");
        std::fs::write(node.join("compact"), "").expect("w");
        std::fs::write(dir.path().join("sys/devices/system/node/has_memory"), "0\n").expect("w");
        // 1024 single pages (4 MiB broken up) and 3 free 2 MiB blocks.
        std::fs::write(
            proc.join("buddyinfo"),
            "Node 0, zone   Normal   1024 0 0 0 0 0 0 0 0 3 0\n",
        )
        .expect("w");
        std::fs::write(proc.join("vmstat"), "pgmigrate_success 100\n").expect("w");
        let lever = Lever {
            proc: ProcFs::new(&proc),
            sys: SysFs::new(dir.path().join("sys")),
        };
        let mut c = Controller::new(Settings::default(), lever);
        let w = waiting(5, 0, 80);
        // 5 wait, 3 free: 2 short, 2 blocks' worth broken up: aim 4 MiB.
        let Decision::Compact { aim_bytes, why } =
            c.decide(&w, Duration::from_secs(1)).expect("decide")
        else {
            panic!("expected a compaction")
        };
        assert_eq!(aim_bytes, 4 * M);
        let r = c.compact(aim_bytes, why, 1000.0).expect("compact");
        assert_eq!(
            std::fs::read_to_string(node.join("compact")).expect("r"),
            "1"
        );
        assert_eq!((r.lever.as_str(), r.nodes.as_slice()), ("node", &[0][..]));
        assert_eq!(r.before.free_2m_blocks, 3);
        assert_eq!(r.before.free_bytes, (1024 + 3 * 512) * 4096);
        assert!((r.before.unusable_index - 0.4).abs() < 1e-12);
        // A recorded tree does not change: nothing migrated, nothing freed.
        assert_eq!(r.migrated_bytes, Some(0));
        assert_eq!(r.after, r.before);
        assert_eq!(r.error, None);
        // Its cost is now measured: at least 1 MiB is charged, so the rate is the CPU time.
        assert_eq!(c.cost().ns_per_mib, r.cpu_ns as f64);
        let a = c.account(Duration::from_secs(2));
        assert_eq!(a.spent_ns, r.cpu_ns);
        // It made no block: compaction is held 2 s from its start (1 s), then 4 s after the
        // next that makes none.
        assert!(
            (3_000_000_000..3_100_000_000).contains(&a.held_until_ns),
            "{a:?}"
        );
        let Decision::Decline(why) = c.decide(&w, Duration::from_secs(2)).expect("decide") else {
            panic!("expected to wait")
        };
        assert!(
            why.starts_with("the last compaction made no block"),
            "{why}"
        );
        c.compact(aim_bytes, "again".into(), 4000.0)
            .expect("compact");
        let a = c.account(Duration::from_secs(5));
        assert!(
            (8_000_000_000..8_100_000_000).contains(&a.held_until_ns),
            "{a:?}"
        );
    }

    #[test]
    fn without_a_per_node_file_the_whole_machine_is_compacted() {
        let dir = tempfile::tempdir().expect("tmp");
        let proc = dir.path().join("proc");
        std::fs::create_dir_all(proc.join("sys/vm")).expect("mkdir");
        std::fs::write(proc.join("sys/vm/compact_memory"), "").expect("w");
        std::fs::write(
            proc.join("buddyinfo"),
            "Node 0, zone   Normal   1024 0 0 0 0 0 0 0 0 0 0\n",
        )
        .expect("w");
        let lever = Lever {
            proc: ProcFs::new(&proc),
            sys: SysFs::new(dir.path().join("sys")),
        };
        let mut c = Controller::new(Settings::default(), lever);
        let r = c.compact(2 * M, "test".into(), 0.0).expect("compact");
        assert_eq!(r.lever, "compact_memory");
        assert_eq!(
            std::fs::read_to_string(proc.join("sys/vm/compact_memory")).expect("r"),
            "1"
        );
        // No vmstat in the tree: what moved is unknown, not 0.
        assert_eq!(r.migrated_bytes, None);
        assert_eq!(r.before.unusable_index, 1.0);
    }
}
