//! Exact page reuse distance: for each access, the number of distinct pages touched since the
//! same page was last touched (LRU stack distance), at 4 KiB and 2 MiB granularity in one
//! pass, and the classification of pages into TLB-friendly, HUBs and low-reuse.
//!
//! The most recent pages sit in a short move-to-front list whose positions are their
//! distances; a page that leaves it gets a mark in a bitmap over "time of leaving", with a
//! Fenwick tree over the bitmap's words, so a deeper page's distance is the list's length
//! plus the marks after its own. Time advances only when a page leaves the list, and the
//! marks are renumbered when the bitmap fills, so memory follows the number of distinct
//! pages, never the trace's length.

pub use hugewise_results::sim::{Bucket, Class, Classes, Granularity};

use crate::pagemap::FrameTable;

/// The classification's reuse-distance threshold (a Haswell L2 TLB's 1 024 entries): a reuse
/// at a shorter distance would hit in such a TLB.
pub const THRESHOLD: u64 = 1024;

/// Bucket `k` of a histogram counts distances in `[2^(k-1), 2^k)`, bucket 0 distance 0.
const BUCKETS: usize = 48;

/// Length of the move-to-front list: the distances every sequential sweep and every
/// interleaving of a few arrays produce, answered without the tree.
const FRONT: usize = 32;

/// `last` of a page in the front list.
const IN_FRONT: u32 = u32::MAX;

/// Marks at time positions: a bit per position and a Fenwick tree of each 64-bit word's
/// count, small enough to stay in the core's caches.
struct Marks {
    bits: Vec<u64>,
    tree: Vec<u32>,
    total: u64,
}

impl Marks {
    /// Room for `n` positions (rounded up to whole words).
    fn new(n: usize) -> Marks {
        let words = n.div_ceil(64).max(1);
        Marks {
            bits: vec![0; words],
            tree: vec![0; words + 1],
            total: 0,
        }
    }

    fn capacity(&self) -> usize {
        self.bits.len() * 64
    }

    #[inline]
    fn tree_add(&mut self, w: usize, v: i32) {
        let mut i = w + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(v);
            i += i & i.wrapping_neg();
        }
    }

    #[inline]
    fn set(&mut self, i: usize) {
        self.bits[i / 64] |= 1 << (i % 64);
        self.tree_add(i / 64, 1);
        self.total += 1;
    }

    #[inline]
    fn clear(&mut self, i: usize) {
        self.bits[i / 64] &= !(1 << (i % 64));
        self.tree_add(i / 64, -1);
        self.total -= 1;
    }

    /// Marks at positions `> i`.
    #[inline]
    fn after(&self, i: usize) -> u64 {
        let w = i / 64;
        let mut upto = u64::from((self.bits[w] & (u64::MAX >> (63 - i % 64))).count_ones());
        let mut j = w;
        while j > 0 {
            upto += u64::from(self.tree[j]);
            j &= j - 1;
        }
        self.total - upto
    }

    /// Empty, room for `n` positions, with marks at `0..k`.
    fn reset(&mut self, n: usize, k: usize) {
        let words = n.div_ceil(64).max(1);
        self.bits.clear();
        self.bits.resize(words, 0);
        self.tree.clear();
        self.tree.resize(words + 1, 0);
        for w in 0..k / 64 {
            self.bits[w] = u64::MAX;
            self.tree[w + 1] = 64;
        }
        if !k.is_multiple_of(64) {
            self.bits[k / 64] = (1u64 << (k % 64)) - 1;
            self.tree[k / 64 + 1] = (k % 64) as u32;
        }
        for i in 1..=words {
            let j = i + (i & i.wrapping_neg());
            if j <= words {
                self.tree[j] += self.tree[i];
            }
        }
        self.total = k as u64;
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct PageStat {
    /// Time the page left the front list, or [`IN_FRONT`].
    last: u32,
    seen: bool,
    accesses: u32,
    short: u32,
    long: u32,
}

/// Reuse distances at one page size.
pub struct Stack {
    shift: u32,
    /// 2 MiB frame number to the index of its first page in `stats`.
    frames: FrameTable,
    per_frame: usize,
    live: u64,
    stats: Vec<PageStat>,
    /// Indices into `stats`, a ring: position `j` (most recent first) is at
    /// `(head + j) % FRONT`; `front_len` of them are in use.
    front: [u32; FRONT],
    head: usize,
    front_len: usize,
    marks: Marks,
    /// The page marked at each time position.
    owner: Vec<u32>,
    now: usize,
    prev: u64,
    prev_index: usize,
    hist: [u64; BUCKETS],
    cold: u64,
    accesses: u64,
}

impl Stack {
    /// A stack of pages of `1 << shift` bytes.
    /// `shift` is 12 to 21 (4 KiB to 2 MiB pages).
    pub fn new(shift: u32) -> Stack {
        let shift = shift.clamp(12, 21);
        Stack {
            shift,
            frames: FrameTable::default(),
            per_frame: 1 << (21 - shift),
            live: 0,
            stats: Vec::new(),
            front: [u32::MAX; FRONT],
            head: 0,
            front_len: 0,
            marks: Marks::new(1 << 16),
            owner: vec![0; 1 << 16],
            now: 0,
            prev: u64::MAX,
            prev_index: 0,
            hist: [0; BUCKETS],
            cold: 0,
            accesses: 0,
        }
    }

    /// One access to `addr`.
    #[inline]
    pub fn access(&mut self, addr: u64) {
        self.accesses += 1;
        let page = addr >> self.shift;
        if page == self.prev {
            self.hist[0] += 1;
            // Counted as an access, not as a reuse: a run of accesses to one page is one TLB
            // lookup's worth of locality, and would otherwise make every page in a
            // sequential sweep look TLB-friendly.
            let s = &mut self.stats[self.prev_index];
            s.accesses = s.accesses.saturating_add(1);
            return;
        }
        self.prev = page;
        self.changed(addr);
    }

    /// Every access of `packed` ([`hugewise_trace::Access::pack`]), in order. The page
    /// records of accesses a few steps on are fetched into the cache early: they are read
    /// at random, and waiting for each in turn would take most of the time.
    pub fn access_packed(&mut self, packed: &[u64]) {
        const AHEAD: usize = 8;
        for (j, &p) in packed.iter().enumerate() {
            if let Some(&q) = packed.get(j + AHEAD) {
                let a = q >> 1;
                if let Some(f) = self.frames.get(a >> 21) {
                    let sub = ((a >> self.shift) as usize) & (self.per_frame - 1);
                    if let Some(s) = self.stats.get(f as usize + sub) {
                        hugewise_sys::hint::prefetch(s);
                    }
                }
            }
            self.access(p >> 1);
        }
    }

    #[inline]
    fn index(&mut self, addr: u64) -> usize {
        let sub = ((addr >> self.shift) as usize) & (self.per_frame - 1);
        let first = match self.frames.get(addr >> 21) {
            Some(f) => f as usize,
            None => {
                let f = self.stats.len();
                self.stats.resize(f + self.per_frame, PageStat::default());
                self.frames.insert(addr >> 21, f as u32);
                f
            }
        };
        first + sub
    }

    /// Position of page `i` in the front list, if it is there. A plain scan: the pages of
    /// interleaved sweeps sit in the first few positions.
    #[inline]
    fn in_front(&self, i: u32) -> Option<usize> {
        (0..self.front_len).find(|&j| self.front[(self.head + j) % FRONT] == i)
    }

    fn changed(&mut self, addr: u64) {
        let i = self.index(addr);
        self.prev_index = i;
        let s = self.stats[i];
        let d = if !s.seen {
            self.cold += 1;
            self.live += 1;
            None
        } else if s.last == IN_FRONT {
            let p = self.in_front(i as u32).unwrap_or(0);
            // The page is in the list: distinct pages since its last touch are those before it.
            self.move_to_front(p, i as u32);
            Some(p as u64)
        } else {
            let d = self.front_len as u64 + self.marks.after(s.last as usize);
            self.marks.clear(s.last as usize);
            self.push_front(i);
            Some(d)
        };
        let st = &mut self.stats[i];
        st.accesses = st.accesses.saturating_add(1);
        if let Some(d) = d {
            let b = (64 - d.leading_zeros()) as usize;
            self.hist[b.min(BUCKETS - 1)] += 1;
            if d < THRESHOLD {
                st.short = st.short.saturating_add(1);
            } else {
                st.long = st.long.saturating_add(1);
            }
        } else {
            st.seen = true;
            self.push_front(i);
        }
    }

    /// Put page `i` (not in the list) at its front; the list's last page, if it is full,
    /// leaves it and is marked at the current time.
    #[inline]
    fn push_front(&mut self, i: usize) {
        if self.front_len == FRONT {
            let out = self.front[(self.head + FRONT - 1) % FRONT] as usize;
            if self.now >= self.marks.capacity() {
                self.compact();
            }
            let t = self.now;
            self.now += 1;
            self.marks.set(t);
            self.owner[t] = out as u32;
            self.stats[out].last = t as u32;
        } else {
            self.front_len += 1;
        }
        // The ring turns by one: the slot before the head held the last position, which
        // has just left or was unused.
        self.head = (self.head + FRONT - 1) % FRONT;
        self.front[self.head] = i as u32;
        self.stats[i].last = IN_FRONT;
    }

    /// Shift the list's first `p` entries back by one and put `v` first.
    #[inline]
    fn move_to_front(&mut self, p: usize, v: u32) {
        for j in (1..=p).rev() {
            self.front[(self.head + j) % FRONT] = self.front[(self.head + j - 1) % FRONT];
        }
        self.front[self.head] = v;
    }

    /// Renumber the live marks 0..k in time order and make room for 4k more steps. The
    /// marks are already in time order: their owners are read off in bit order.
    #[cold]
    fn compact(&mut self) {
        let mut owner = Vec::with_capacity(self.marks.total as usize);
        for (w, &bits) in self.marks.bits.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                let page = self.owner[w * 64 + b.trailing_zeros() as usize];
                self.stats[page as usize].last = owner.len() as u32;
                owner.push(page);
                b &= b - 1;
            }
        }
        let live = owner.len();
        let cap = (live * 4).max(1 << 16);
        self.marks.reset(cap, live);
        owner.resize(self.marks.capacity(), 0);
        self.owner = owner;
        self.now = live;
    }

    /// Histogram and classification so far.
    pub fn report(&self) -> Granularity {
        let mut hist = Vec::new();
        let last = self.hist.iter().rposition(|&c| c > 0).unwrap_or(0);
        for (k, &c) in self.hist.iter().enumerate().take(last + 1) {
            let (lo, hi) = if k == 0 {
                (0, 1)
            } else {
                (1u64 << (k - 1), 1u64 << k)
            };
            hist.push(Bucket {
                from: lo,
                below: hi,
                reuses: c,
            });
        }
        Granularity {
            page_bytes: 1 << self.shift,
            accesses: self.accesses,
            pages: self.live,
            cold: self.cold,
            histogram: hist,
            classes: self.classify(),
        }
    }

    fn classify(&self) -> Classes {
        let seen = || self.stats.iter().filter(|s| s.seen);
        let sensitive: Vec<&PageStat> = seen().filter(|s| s.long > s.short).collect();
        let long_total: u64 = sensitive.iter().map(|s| u64::from(s.long)).sum();
        let mean = long_total as f64 / sensitive.len().max(1) as f64;
        let mut c = Classes {
            hub_min_long_reuses: mean,
            ..Classes::default()
        };
        let all_long: u64 = seen().map(|s| u64::from(s.long)).sum();
        for s in seen() {
            let class = if s.long + s.short == 0 {
                &mut c.low_reuse
            } else if s.long <= s.short {
                &mut c.tlb_friendly
            } else if f64::from(s.long) >= mean {
                &mut c.hubs
            } else {
                &mut c.low_reuse
            };
            class.pages += 1;
            class.accesses += u64::from(s.accesses);
            class.long_reuses += u64::from(s.long);
        }
        for class in [&mut c.tlb_friendly, &mut c.hubs, &mut c.low_reuse] {
            class.share_of_pages = class.pages as f64 / self.live.max(1) as f64;
            class.share_of_long_reuses = class.long_reuses as f64 / all_long.max(1) as f64;
        }
        c
    }
}

/// Reuse distance over the trace at `path`, streaming; `progress` hears accesses done of the
/// total the end record claims. The 4 KiB stack runs on a second thread; this one decodes
/// and runs the 2 MiB stack.
pub fn run(
    path: &std::path::Path,
    progress: &dyn crate::progress::Progress,
) -> crate::Result<[Granularity; 2]> {
    let mut r = hugewise_trace::Reader::open(path)?;
    let total = r.claimed_totals().map(|t| t.0).unwrap_or(0);
    let mut huge = Stack::new(21);
    // Blocks go to the worker and come back to be refilled, so a few buffers serve the run.
    let (to_worker, work) = std::sync::mpsc::sync_channel::<Vec<u64>>(4);
    let (give_back, returned) = std::sync::mpsc::channel::<Vec<u64>>();
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            let mut small = Stack::new(12);
            for block in work {
                small.access_packed(&block);
                // The reader may have stopped early; a lost buffer is only a lost reuse.
                let _ = give_back.send(block);
            }
            small
        });
        let mut done = 0u64;
        let mut result = Ok(());
        loop {
            let mut block = returned.try_recv().unwrap_or_default();
            match r.next_block(&mut block) {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    result = Err(e.into());
                    break;
                }
            }
            huge.access_packed(&block);
            done += block.len() as u64;
            progress.update(done, total);
            if to_worker.send(block).is_err() {
                break;
            }
        }
        drop(to_worker);
        let small = worker
            .join()
            .expect("the 4 KiB reuse thread does not panic");
        result.map(|()| [small.report(), huge.report()])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distances the slow way: distinct pages between two touches of the same page.
    fn naive(pages: &[u64]) -> Vec<Option<u64>> {
        (0..pages.len())
            .map(|i| {
                let j = (0..i).rev().find(|&j| pages[j] == pages[i])?;
                let mut between: Vec<u64> = pages[j + 1..i].to_vec();
                between.sort_unstable();
                between.dedup();
                Some(between.len() as u64)
            })
            .collect()
    }

    #[test]
    fn hand_computed_distances() {
        // a b c a a b: a's reuse at distance 2 (b, c), a again 0, b at 2 (c, a).
        let mut s = Stack::new(12);
        for p in [1u64, 2, 3, 1, 1, 2] {
            s.access(p << 12);
        }
        let r = s.report();
        assert_eq!(r.cold, 3);
        assert_eq!(r.histogram[0].reuses, 1); // distance 0
        let at2: u64 = r
            .histogram
            .iter()
            .filter(|b| b.from == 2)
            .map(|b| b.reuses)
            .sum();
        assert_eq!(at2, 2);
    }

    #[test]
    fn matches_the_naive_definition_through_compactions() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut pages = Vec::new();
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // A hot set, a cold tail, and runs of one page.
            let p = match x % 10 {
                0..=5 => x % 64,
                6..=8 => x % 5000,
                _ => i % 3,
            };
            pages.push(p);
        }
        let want = naive(&pages[..20_000]);
        let mut s = Stack::new(12);
        let mut hist = [0u64; BUCKETS];
        for d in want.iter().flatten() {
            hist[((64 - d.leading_zeros()) as usize).min(BUCKETS - 1)] += 1;
        }
        for &p in &pages[..20_000] {
            s.access(p << 12);
        }
        let r = s.report();
        let got: Vec<u64> = r.histogram.iter().map(|b| b.reuses).collect();
        assert_eq!(got, hist[..got.len()].to_vec());
        assert_eq!(r.cold, want.iter().filter(|d| d.is_none()).count() as u64);
        // The rest runs through many compactions without losing count.
        for &p in &pages[20_000..] {
            s.access(p << 12);
        }
        let r = s.report();
        let reuses: u64 = r.histogram.iter().map(|b| b.reuses).sum();
        assert_eq!(reuses + r.cold, 200_000);
    }

    #[test]
    fn hubs_are_hot_pages_beyond_the_threshold() {
        let mut s = Stack::new(12);
        // 4 hot pages revisited after 2000 distinct cold pages each time; cold pages once
        // each round; a friendly page touched every other access.
        let mut cold = 10_000u64;
        for _round in 0..20 {
            for hot in 0..4u64 {
                s.access(hot << 12);
            }
            for _ in 0..2000 {
                s.access(cold << 12);
                s.access(5000 << 12);
                cold += 1;
            }
        }
        let c = s.report().classes;
        assert_eq!(c.hubs.pages, 4);
        assert_eq!(c.tlb_friendly.pages, 1);
        assert_eq!(c.low_reuse.pages, 40_000); // touched once: no reuse at all
        assert!(c.hubs.share_of_long_reuses > 0.99);
    }
}
