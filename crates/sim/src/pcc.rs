//! The promotion candidate cache: a small fully associative structure beside the page walker
//! that counts page walks per huge-page-sized region (2 MiB, or 1 GiB for the second
//! variant), keeps the most walked ones and lets the OS read them.
//!
//! As specified: 8-bit saturating counters, all halved when one would overflow; LRU
//! replacement; a region enters only if its page-table accessed bit was already set, so one
//! cold walk does not evict a hot region.

use serde::Serialize;

use crate::hash::IntMap;

/// One entry as the OS reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// Region number (address >> 21 or >> 30).
    pub tag: u64,
    /// Its counter.
    pub count: u8,
}

/// One PCC (one per core).
#[derive(Debug, Clone)]
pub struct Pcc {
    capacity: usize,
    tags: Vec<u64>,
    counts: Vec<u8>,
    stamps: Vec<u64>,
    slot: IntMap<u64, usize>,
    clock: u64,
    /// Times every counter was halved.
    pub halvings: u64,
    /// Entries evicted to make room.
    pub evictions: u64,
}

impl Pcc {
    /// An empty PCC of `capacity` entries.
    pub fn new(capacity: usize) -> Pcc {
        Pcc {
            capacity: capacity.max(1),
            tags: Vec::with_capacity(capacity),
            counts: Vec::with_capacity(capacity),
            stamps: Vec::with_capacity(capacity),
            slot: IntMap::with_capacity_and_hasher(capacity * 2, Default::default()),
            clock: 0,
            halvings: 0,
            evictions: 0,
        }
    }

    /// A page walk to region `tag`; `accessed_before` says whether the region's accessed bit
    /// was already set (only then may it enter).
    #[inline]
    pub fn walk(&mut self, tag: u64, accessed_before: bool) {
        self.clock += 1;
        if let Some(&i) = self.slot.get(&tag) {
            if self.counts[i] == u8::MAX {
                self.counts.iter_mut().for_each(|c| *c >>= 1);
                self.halvings += 1;
            }
            self.counts[i] += 1;
            self.stamps[i] = self.clock;
            return;
        }
        if !accessed_before {
            return;
        }
        if self.tags.len() < self.capacity {
            self.slot.insert(tag, self.tags.len());
            self.tags.push(tag);
            self.counts.push(1);
            self.stamps.push(self.clock);
            return;
        }
        let lru = (0..self.tags.len())
            .min_by_key(|&i| self.stamps[i])
            .unwrap_or(0);
        self.slot.remove(&self.tags[lru]);
        self.evictions += 1;
        self.tags[lru] = tag;
        self.counts[lru] = 1;
        self.stamps[lru] = self.clock;
        self.slot.insert(tag, lru);
    }

    /// Entries, highest count first (ties: most recent first).
    pub fn ranked(&self) -> Vec<Candidate> {
        let mut idx: Vec<usize> = (0..self.tags.len()).collect();
        idx.sort_by(|&a, &b| {
            self.counts[b]
                .cmp(&self.counts[a])
                .then(self.stamps[b].cmp(&self.stamps[a]))
        });
        idx.into_iter()
            .map(|i| Candidate {
                tag: self.tags[i],
                count: self.counts[i],
            })
            .collect()
    }

    /// Forget `tag` (promoted: its walks are now huge-page walks).
    pub fn remove(&mut self, tag: u64) {
        if let Some(i) = self.slot.remove(&tag) {
            let last = self.tags.len() - 1;
            self.tags.swap_remove(i);
            self.counts.swap_remove(i);
            self.stamps.swap_remove(i);
            if i != last {
                self.slot.insert(self.tags[i], i);
            }
        }
    }

    /// The counter of `tag`, if it is cached.
    pub fn count(&self, tag: u64) -> Option<u8> {
        self.slot.get(&tag).map(|&i| self.counts[i])
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.tags.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_regions_do_not_enter() {
        let mut p = Pcc::new(4);
        p.walk(7, false);
        assert!(p.is_empty());
        p.walk(7, true);
        p.walk(7, false); // already in: counts whatever its bit
        assert_eq!(p.count(7), Some(2));
    }

    #[test]
    fn halving_when_a_counter_would_overflow() {
        let mut p = Pcc::new(4);
        for _ in 0..255 {
            p.walk(1, true);
        }
        for _ in 0..10 {
            p.walk(2, true);
        }
        assert_eq!(
            (p.count(1), p.count(2), p.halvings),
            (Some(255), Some(10), 0)
        );
        p.walk(1, true); // 255 would overflow: all halve, then count
        assert_eq!(
            (p.count(1), p.count(2), p.halvings),
            (Some(128), Some(5), 1)
        );
    }

    #[test]
    fn lru_replacement_and_ranking() {
        let mut p = Pcc::new(3);
        for t in [1, 2, 3] {
            p.walk(t, true);
        }
        p.walk(1, true); // 1 is now most recent; 2 is the LRU
        p.walk(4, true); // evicts 2
        assert_eq!(p.count(2), None);
        assert_eq!(p.evictions, 1);
        p.walk(3, true);
        p.walk(3, true);
        let r: Vec<(u64, u8)> = p.ranked().iter().map(|c| (c.tag, c.count)).collect();
        assert_eq!(r, vec![(3, 3), (1, 2), (4, 1)]);
        p.remove(3);
        assert_eq!(p.len(), 2);
        assert_eq!(p.count(4), Some(1));
        p.walk(5, true);
        p.walk(6, true); // evicts the LRU of {1, 4, 5}: 1
        assert_eq!(p.count(1), None);
    }
}
