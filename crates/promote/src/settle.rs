//! When a daemon whose policy ranks by samples has seen enough to make its first decision.
//!
//! A first decision on the few samples of a first look picks chunks by noise, and each
//! correction costs a collapse, so the daemon counts [`crate::daemon::Config::first_samples`]
//! before it acts. Where the heat is plain that wait is long for nothing: a hot spot of 163
//! chunks that takes 99.9 % of the reads is told apart after a few thousand samples, while
//! 65,536 take 0.4 s at one sample in 64 reads, all of it on 4 KiB pages. So the daemon also
//! acts once the chunks that hold [`crate::daemon::Config::settled_samples`] samples each (64
//! by default, a count whose noise is an eighth of it) are either as many as the budget has room for, or hold
//! [`PLAIN_SHARE`] of every sample counted: the hot set is then known, and what is left out of
//! it is too cold to rank. Heat spread thin reaches neither before `first_samples`, and waits
//! as before.

use std::collections::HashMap;

use crate::policy::ChunkInfo;

/// The share of the samples the well-counted chunks must hold for the heat to be plain.
pub const PLAIN_SHARE: f64 = 0.9;

/// Samples counted per chunk while the daemon waits for its first decision.
#[derive(Debug, Clone, Default)]
pub struct Settle {
    /// Samples a chunk needs to count as well sampled (0: never settle early).
    per_chunk: u64,
    /// Samples per chunk, by (pid, address).
    counts: HashMap<(i32, usize), u64>,
    /// Every sample counted.
    total: u64,
}

impl Settle {
    /// Settle once well-sampled chunks hold `per_chunk` samples each (0: never early).
    pub fn new(per_chunk: u64) -> Settle {
        Settle {
            per_chunk,
            ..Settle::default()
        }
    }

    /// Count a look's samples, chunk by chunk.
    pub fn count(&mut self, chunks: &[ChunkInfo]) {
        if self.per_chunk == 0 {
            return;
        }
        for c in chunks.iter().filter(|c| c.samples > 0) {
            *self.counts.entry((c.pid, c.addr)).or_default() += u64::from(c.samples);
            self.total += u64::from(c.samples);
        }
    }

    /// Whether the heat is plain enough to act on with `room` more chunks the budget can make
    /// huge: as many well-sampled chunks as that, or well-sampled chunks holding
    /// [`PLAIN_SHARE`] of the samples.
    pub fn plain(&self, room: usize) -> bool {
        if self.per_chunk == 0 || self.total == 0 {
            return false;
        }
        let (n, held) = self
            .counts
            .values()
            .filter(|&&c| c >= self.per_chunk)
            .fold((0usize, 0u64), |(n, s), &c| (n + 1, s + c));
        n > 0 && (n >= room.max(1) || held as f64 >= PLAIN_SHARE * self.total as f64)
    }

    /// Forget the counts: the first decision is made.
    pub fn done(&mut self) {
        self.counts = HashMap::new();
        self.total = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(i: usize, samples: u32) -> ChunkInfo {
        ChunkInfo {
            pid: 1,
            addr: i << 21,
            mapped_pages: 512,
            huge: false,
            samples,
            sampled_pages: 1,
            walks: samples,
            sampled: true,
        }
    }

    #[test]
    fn a_hot_set_the_budget_holds_is_plain_once_each_of_its_chunks_is_well_sampled() {
        let mut s = Settle::new(64);
        // 10 hot chunks at 40 samples and 30 cold ones at 1: 430 samples, none well sampled.
        let mut look: Vec<ChunkInfo> = (0..10).map(|i| chunk(i, 40)).collect();
        look.extend((10..40).map(|i| chunk(i, 1)));
        s.count(&look);
        assert!(!s.plain(163));
        // Another look like it: hot chunks at 80, cold at 2. The ten hold 800 of 860 samples,
        // 93 %: plain though the budget has room for 163.
        s.count(&look);
        assert!(s.plain(163));
    }

    #[test]
    fn a_hot_set_past_the_budget_is_plain_once_the_budgets_worth_is_well_sampled() {
        let mut s = Settle::new(64);
        // 200 chunks at 64 each, half the samples; 200 more at 63. Room for 150: plain.
        let mut look: Vec<ChunkInfo> = (0..200).map(|i| chunk(i, 64)).collect();
        look.extend((200..400).map(|i| chunk(i, 63)));
        s.count(&look);
        assert!(s.plain(150));
        // Room for 201: 200 well-sampled chunks hold 12,800 of 25,400 samples (50 %).
        assert!(!s.plain(201));
    }

    #[test]
    fn heat_spread_thin_or_a_hot_set_with_a_warm_tail_is_not_plain() {
        let mut s = Settle::new(64);
        // 10 chunks at 64 hold 640 of 740 samples (86 %) with 100 chunks at 1: not plain, and
        // no more plain when every count doubles.
        let mut look: Vec<ChunkInfo> = (0..10).map(|i| chunk(i, 64)).collect();
        look.extend((10..110).map(|i| chunk(i, 1)));
        s.count(&look);
        assert!(!s.plain(163));
        s.count(&look);
        assert!(!s.plain(163));
        // Forgotten once done.
        s.done();
        assert!(!s.plain(1));
        // Never early when asked not to be.
        let mut off = Settle::new(0);
        off.count(&[chunk(0, 1000)]);
        assert!(!off.plain(1));
    }

    #[test]
    fn chunks_of_two_targets_at_one_address_count_apart() {
        let mut s = Settle::new(64);
        let mut other = chunk(0, 40);
        other.pid = 2;
        s.count(&[chunk(0, 40), other]);
        assert!(!s.plain(1), "40 each, not 80 in one");
    }
}
