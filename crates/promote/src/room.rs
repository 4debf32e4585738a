//! Room for a waiting hot chunk, made from a lower-priority target's cold huge pages.
//!
//! When collapses are refused for want of free 2 MiB blocks and compaction made no block, the
//! free memory is broken up by pages compaction cannot move (one pinned page a block is
//! enough), and compacting again changes nothing. What compaction can still move is memory in
//! use: a huge page is moved only whole, into a free block that is not there, but once split
//! its 512 base pages can each go into a hole of the broken-up free memory, and the block they
//! leave is whole and free. So the daemon splits the coldest huge chunks of targets whose
//! priority (`--bias`) is below the waiting chunk's, as many as collapses were refused, and
//! compacts at once. A target is never robbed for one of equal priority: among equals the
//! policy's own swaps decide (a candidate takes a huge chunk's place when clearly hotter).
//!
//! [`victims`] is a pure function, so that the choice has a scenario test with exact picks.

/// A huge chunk the daemon could split, as the policy values it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Huge {
    /// Its index among the interval's chunks.
    pub index: usize,
    /// Its target.
    pub pid: i32,
    /// What the policy values it at (`-inf` when it did not score it: made by the kernel, or
    /// no longer hot).
    pub score: f64,
}

/// The huge chunks to split for `refused` collapses (their targets' pids), at most `max`:
/// for each refused collapse, highest priority first, the least valued huge chunk left of any
/// target whose priority is below the refused one's. `priority` gives a target's priority.
pub fn victims(
    refused: &[i32],
    huge: &[Huge],
    priority: impl Fn(i32) -> f64,
    max: usize,
) -> Vec<usize> {
    let mut waiting: Vec<f64> = refused.iter().map(|&p| priority(p)).collect();
    waiting.sort_by(|a, b| b.total_cmp(a));
    let mut left: Vec<Huge> = huge.to_vec();
    // Least valued first; among equals, the lower priority target's first, then by index.
    left.sort_by(|a, b| {
        a.score
            .total_cmp(&b.score)
            .then(priority(a.pid).total_cmp(&priority(b.pid)))
            .then(a.index.cmp(&b.index))
    });
    let mut out = Vec::new();
    for w in waiting {
        if out.len() == max {
            break;
        }
        if let Some(k) = left.iter().position(|h| priority(h.pid) < w) {
            out.push(left.remove(k).index);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(index: usize, pid: i32, score: f64) -> Huge {
        Huge { index, pid, score }
    }

    /// Pid 1 has priority 4, pid 2 priority 2, pid 3 the default 1.
    fn prio(pid: i32) -> f64 {
        match pid {
            1 => 4.0,
            2 => 2.0,
            _ => 1.0,
        }
    }

    #[test]
    fn the_coldest_huge_chunks_of_lower_priority_targets_go_first() {
        let huge = [
            h(10, 1, 0.5),
            h(11, 2, 9.0),
            h(12, 3, 5.0),
            h(13, 3, f64::NEG_INFINITY),
            h(14, 2, 1.0),
        ];
        // Two collapses of pid 1 refused: the two least valued of pids 2 and 3 (13 unscored,
        // then 14); pid 1's own chunk 10, though colder, is not taken for pid 1.
        assert_eq!(victims(&[1, 1], &huge, prio, 8), vec![13, 14]);
        // One of pid 2's: only pid 3 is below it.
        assert_eq!(victims(&[2], &huge, prio, 8), vec![13]);
        assert_eq!(victims(&[2, 2, 2], &huge, prio, 8), vec![13, 12]);
    }

    #[test]
    fn the_highest_priority_waiting_chunk_is_served_first_within_the_bound() {
        let huge = [h(20, 3, 1.0), h(21, 2, 2.0)];
        // Pid 2's refusal would take 20, pid 1's either; with room for one split, pid 1's
        // comes first and takes the colder, 20.
        assert_eq!(victims(&[2, 1], &huge, prio, 1), vec![20]);
        assert_eq!(victims(&[2, 1], &huge, prio, 8), vec![20]);
        assert_eq!(victims(&[1, 1, 1], &huge, prio, 8), vec![20, 21]);
    }

    #[test]
    fn targets_of_equal_priority_are_never_robbed() {
        let huge = [h(30, 3, 0.0), h(31, 4, f64::NEG_INFINITY)];
        assert!(victims(&[3, 4], &huge, prio, 8).is_empty());
        assert!(victims(&[], &huge, prio, 8).is_empty());
    }
}
