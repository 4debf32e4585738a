//! The TLB hierarchy: set-associative structures with true LRU, each entry tagged with its
//! page size, an L2 looked up on L1 misses, and page walks counted in page-table reads.

use hugewise_sys::PageSize;
use serde::Serialize;

use crate::config::{PwcSpec, TlbConfig, TlbSpec};

const EMPTY: u64 = u64::MAX;

/// Index of a page size in per-size tables.
#[inline]
pub fn size_code(s: PageSize) -> usize {
    match s {
        PageSize::Size4K => 0,
        PageSize::Size2M => 1,
        PageSize::Size1G => 2,
    }
}

/// log2 of a page size.
#[inline]
pub fn size_shift(s: PageSize) -> u32 {
    match s {
        PageSize::Size4K => 12,
        PageSize::Size2M => 21,
        PageSize::Size1G => 30,
    }
}

/// A set-associative structure; each set is kept most recently used first, so a hit moves
/// its entry to the front and a fill drops the last.
#[derive(Debug, Clone)]
pub struct SetAssoc {
    mask: u64,
    ways: usize,
    tags: Vec<u64>,
}

impl SetAssoc {
    /// `sets × ways` empty entries (`sets` a power of two).
    pub fn new(sets: usize, ways: usize) -> SetAssoc {
        SetAssoc {
            mask: sets as u64 - 1,
            ways,
            tags: vec![EMPTY; sets * ways],
        }
    }

    fn from_spec(s: &TlbSpec) -> SetAssoc {
        SetAssoc::new(s.sets() as usize, s.ways as usize)
    }

    #[inline]
    fn set(&mut self, key: u64) -> &mut [u64] {
        let i = (key & self.mask) as usize * self.ways;
        &mut self.tags[i..i + self.ways]
    }

    /// Look `key` up; a hit makes it most recent.
    #[inline]
    pub fn lookup(&mut self, key: u64) -> bool {
        let i = (key & self.mask) as usize * self.ways;
        // The most recent entry is checked inline (the common hit); the rest out of line.
        if self.tags.get(i) == Some(&key) {
            return true;
        }
        self.lookup_rest(i, key)
    }

    #[inline(never)]
    fn lookup_rest(&mut self, i: usize, key: u64) -> bool {
        // The common widths get a scan of known length.
        let tags = &mut self.tags[i..];
        match self.ways {
            4 => tags.first_chunk_mut::<4>().is_some_and(|s| hit(s, key)),
            8 => tags.first_chunk_mut::<8>().is_some_and(|s| hit(s, key)),
            w => tags.get_mut(..w).is_some_and(|s| hit(s, key)),
        }
    }

    /// Insert `key` as most recent, evicting the least recent entry of its set.
    #[inline]
    pub fn fill(&mut self, key: u64) {
        let set = self.set(key);
        for j in (1..set.len()).rev() {
            set[j] = set[j - 1];
        }
        set[0] = key;
    }

    /// Drop every entry for which `gone` holds, keeping the others' order.
    pub fn retain(&mut self, mut gone: impl FnMut(u64) -> bool) {
        for set in self.tags.chunks_mut(self.ways) {
            let mut w = 0;
            for r in 0..set.len() {
                let t = set[r];
                if t != EMPTY && !gone(t) {
                    set[w] = t;
                    w += 1;
                }
            }
            set[w..].fill(EMPTY);
        }
    }
}

/// A key: page number with the size code in the top bits, so that pages of different sizes
/// never match in a shared structure; the set index comes from the page number's low bits.
#[inline]
pub fn key(addr: u64, size: PageSize) -> u64 {
    (addr >> size_shift(size)) | ((size_code(size) as u64) << 62)
}

/// First address covered by a key.
#[inline]
pub fn key_range(key: u64) -> (u64, u64) {
    let code = (key >> 62) as usize;
    let shift = [12, 21, 30][code.min(2)];
    let page = key & ((1u64 << 62) - 1);
    (page << shift, 1u64 << shift)
}

/// A small fully associative LRU cache of upper-level page-table entries.
#[derive(Debug, Clone)]
struct Lru {
    tags: Vec<u64>,
}

impl Lru {
    fn new(n: u32) -> Lru {
        Lru {
            tags: vec![EMPTY; n as usize],
        }
    }

    /// Whether `key` is cached; fills it either way.
    #[inline]
    fn touch(&mut self, key: u64) -> bool {
        if self.tags.is_empty() {
            return false;
        }
        match self.tags.iter().position(|&t| t == key) {
            Some(i) => {
                self.tags.copy_within(0..i, 1);
                self.tags[0] = key;
                true
            }
            None => {
                let n = self.tags.len();
                self.tags.copy_within(0..n - 1, 1);
                self.tags[0] = key;
                false
            }
        }
    }
}

/// Page-walk caches for the PML4, PDPT and PD levels.
#[derive(Debug, Clone)]
struct Pwc {
    pml4: Lru,
    pdpt: Lru,
    pd: Lru,
}

impl Pwc {
    fn new(s: &PwcSpec) -> Pwc {
        Pwc {
            pml4: Lru::new(s.pml4),
            pdpt: Lru::new(s.pdpt),
            pd: Lru::new(s.pd),
        }
    }

    /// Page-table reads of a walk to a page of `size` at `addr`: the leaf, plus every level
    /// above it down from the lowest cached one.
    fn walk(&mut self, addr: u64, size: PageSize) -> u32 {
        // Look every level up (each is filled by the walk whatever happens).
        let pml4 = self.pml4.touch(addr >> 39);
        let pdpt = size != PageSize::Size1G && self.pdpt.touch(addr >> 30);
        let pd = size == PageSize::Size4K && self.pd.touch(addr >> 21);
        match size {
            PageSize::Size4K if pd => 1,
            PageSize::Size4K if pdpt => 2,
            PageSize::Size4K if pml4 => 3,
            PageSize::Size4K => 4,
            PageSize::Size2M if pdpt => 1,
            PageSize::Size2M if pml4 => 2,
            PageSize::Size2M => 3,
            PageSize::Size1G if pml4 => 1,
            PageSize::Size1G => 2,
        }
    }
}

/// Where a translation was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// In its L1 structure.
    L1Hit,
    /// In an L2 structure (the L1 is filled).
    L2Hit,
    /// Nowhere: a page walk reading this many page-table entries (L2 and L1 are filled).
    Walk(u32),
}

/// Counts of one hierarchy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Translations asked for.
    pub accesses: u64,
    /// L1 misses.
    pub l1_misses: u64,
    /// L2 misses (L1 misses for sizes no L2 holds), i.e. page walks.
    pub walks: u64,
    /// Page walks per page size (4 KiB, 2 MiB, 1 GiB).
    pub walks_by_size: [u64; 3],
    /// Page-table entries read by all walks.
    pub walk_reads: u64,
}

impl Counts {
    /// Add another hierarchy's counts.
    pub fn add(&mut self, o: &Counts) {
        self.accesses += o.accesses;
        self.l1_misses += o.l1_misses;
        self.walks += o.walks;
        for i in 0..3 {
            self.walks_by_size[i] += o.walks_by_size[i];
        }
        self.walk_reads += o.walk_reads;
    }

    /// Take away counts made earlier (a warm-up's), which `self` includes.
    pub fn sub(&mut self, o: &Counts) {
        self.accesses -= o.accesses;
        self.l1_misses -= o.l1_misses;
        self.walks -= o.walks;
        for i in 0..3 {
            self.walks_by_size[i] -= o.walks_by_size[i];
        }
        self.walk_reads -= o.walk_reads;
    }
}

/// Look `k` up in one LRU-ordered set; a hit makes it most recent.
#[inline(always)]
fn hit(set: &mut [u64], k: u64) -> bool {
    if set.first() == Some(&k) {
        return true;
    }
    let Some(w) = set.iter().position(|&t| t == k) else {
        return false;
    };
    for j in (1..=w).rev() {
        set[j] = set[j - 1];
    }
    set[0] = k;
    true
}

/// One L1 structure probed for one page size straight from packed accesses
/// ([`hugewise_trace::Access::pack`]: the address shifted left by one), without the page table.
trait Probe {
    /// Whether the access hits (made most recent if so).
    fn hit(&mut self, packed: u64) -> bool;
}

/// A structure of `W` ways probed for the size whose key is the packed access shifted right
/// by `SHIFT`, tagged `CODE`: the common shapes, with the arithmetic known at compile time.
struct Fixed<'a, const W: usize, const SHIFT: u32, const CODE: u64> {
    tags: &'a mut [u64],
    mask: u64,
}

impl<const W: usize, const SHIFT: u32, const CODE: u64> Probe for Fixed<'_, W, SHIFT, CODE> {
    #[inline(always)]
    fn hit(&mut self, packed: u64) -> bool {
        let k = (packed >> SHIFT) | CODE;
        let at = (k & self.mask) as usize * W;
        match self
            .tags
            .get_mut(at..)
            .and_then(|t| t.first_chunk_mut::<W>())
        {
            Some(set) => hit(set, k),
            None => false,
        }
    }
}

/// Any structure and size.
struct Any<'a> {
    tags: &'a mut [u64],
    mask: u64,
    ways: usize,
    shift: u32,
    code: u64,
}

impl Probe for Any<'_> {
    #[inline(always)]
    fn hit(&mut self, packed: u64) -> bool {
        let k = (packed >> self.shift) | self.code;
        let at = (k & self.mask) as usize * self.ways;
        match self.tags.get_mut(at..at + self.ways) {
            Some(set) => hit(set, k),
            None => false,
        }
    }
}

/// No second structure.
struct Never;

impl Probe for Never {
    #[inline(always)]
    fn hit(&mut self, _: u64) -> bool {
        false
    }
}

/// Accesses from the first that hit `a` or `b`, and how many of them hit `b`.
#[inline(always)]
fn run_hits(mut a: impl Probe, mut b: impl Probe, packed: &[u64]) -> (usize, usize) {
    let (mut n, mut in_b) = (0, 0);
    for &p in packed {
        if a.hit(p) {
            n += 1;
        } else if b.hit(p) {
            n += 1;
            in_b += 1;
        } else {
            break;
        }
    }
    (n, in_b)
}

/// The key tag of 2 MiB pages ([`key`]).
const CODE_2M: u64 = 1 << 62;
/// Shifts from the packed form (the address shifted left by one) to 4 KiB and 2 MiB page
/// numbers.
const PACKED_4K: u32 = 13;
const PACKED_2M: u32 = 22;

fn fixed<const W: usize, const SHIFT: u32, const CODE: u64>(
    s: &mut SetAssoc,
) -> Fixed<'_, W, SHIFT, CODE> {
    Fixed {
        mask: s.mask,
        tags: &mut s.tags,
    }
}

fn any(s: &mut SetAssoc, size: PageSize) -> Any<'_> {
    Any {
        mask: s.mask,
        ways: s.ways,
        shift: size_shift(size) + 1,
        code: (size_code(size) as u64) << 62,
        tags: &mut s.tags,
    }
}

/// [`run_hits`] on one structure.
fn hits_one(a: &mut SetAssoc, size: PageSize, packed: &[u64]) -> (usize, usize) {
    use PageSize::{Size2M as M, Size4K as K};
    match (size, a.ways) {
        (K, 4) => run_hits(fixed::<4, PACKED_4K, 0>(a), Never, packed),
        (K, 6) => run_hits(fixed::<6, PACKED_4K, 0>(a), Never, packed),
        (K, 8) => run_hits(fixed::<8, PACKED_4K, 0>(a), Never, packed),
        (M, 4) => run_hits(fixed::<4, PACKED_2M, CODE_2M>(a), Never, packed),
        _ => run_hits(any(a, size), Never, packed),
    }
}

/// [`run_hits`] on two structures (4 KiB and 2 MiB in either order for the presets).
fn hits_two(
    a: &mut SetAssoc,
    size_a: PageSize,
    b: &mut SetAssoc,
    size_b: PageSize,
    packed: &[u64],
) -> (usize, usize) {
    use PageSize::{Size2M as M, Size4K as K};
    match ((size_a, a.ways), (size_b, b.ways)) {
        ((K, 4), (M, 4)) => run_hits(
            fixed::<4, PACKED_4K, 0>(a),
            fixed::<4, PACKED_2M, CODE_2M>(b),
            packed,
        ),
        ((M, 4), (K, 4)) => run_hits(
            fixed::<4, PACKED_2M, CODE_2M>(a),
            fixed::<4, PACKED_4K, 0>(b),
            packed,
        ),
        ((K, 6), (M, 4)) => run_hits(
            fixed::<6, PACKED_4K, 0>(a),
            fixed::<4, PACKED_2M, CODE_2M>(b),
            packed,
        ),
        ((M, 4), (K, 6)) => run_hits(
            fixed::<4, PACKED_2M, CODE_2M>(a),
            fixed::<6, PACKED_4K, 0>(b),
            packed,
        ),
        _ => run_hits(any(a, size_a), any(b, size_b), packed),
    }
}

/// An L1 structure the engine probes without the page table, and the size it is probed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fast {
    size: PageSize,
    l1: usize,
}

/// One core's TLBs.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    l1: Vec<SetAssoc>,
    l1_for: [usize; 3],
    /// The first two sizes filled, with their L1 structures: probed before the page table
    /// is read, the one that hit more in the last run first. A second size held in the
    /// same structure as the first is not probed there (it goes by the page table).
    fast: [Option<Fast>; 2],
    /// Sizes whose L1 structure has been filled with an entry of that size: only those can
    /// hit, so the others are not probed.
    filled: [bool; 3],
    l2: Vec<SetAssoc>,
    l2_for: [Option<usize>; 3],
    pwc: Option<Pwc>,
    /// What happened so far.
    pub counts: Counts,
}

impl Hierarchy {
    /// Empty TLBs of the shape `c` (validated).
    pub fn new(c: &TlbConfig) -> Hierarchy {
        let holder = |specs: &[TlbSpec], code: usize| {
            specs
                .iter()
                .position(|s| s.sizes.iter().any(|z| size_code(z.size()) == code))
        };
        let l1_for = [0, 1, 2].map(|k| holder(&c.l1, k).unwrap_or(0));
        let l2_for = [0, 1, 2].map(|k| holder(&c.l2, k));
        Hierarchy {
            l1: c.l1.iter().map(SetAssoc::from_spec).collect(),
            fast: [None; 2],
            filled: [false; 3],
            l1_for,
            l2: c.l2.iter().map(SetAssoc::from_spec).collect(),
            l2_for,
            pwc: c.pwc.as_ref().map(Pwc::new),
            counts: Counts::default(),
        }
    }

    /// Translate `addr`, mapped by a page of `size`.
    #[inline]
    pub fn access(&mut self, addr: u64, size: PageSize) -> Outcome {
        let code = size_code(size);
        let k = key(addr, size);
        self.counts.accesses += 1;
        if self.l1[self.l1_for[code]].lookup(k) {
            return Outcome::L1Hit;
        }
        self.miss(addr, size, code, k)
    }

    /// Translate `addr` without knowing its page size yet, as hardware does, where
    /// `size_of` reads the page size from the page table. The L1 structures of the first two
    /// sizes filled (usually 4 KiB and 2 MiB) are probed first: an entry of a size exists
    /// only while its page is mapped at that size (promotions and demotions flush), so a hit
    /// needs no page table. Otherwise the page table gives the size, and that size's L1
    /// structure is probed if it was not already, before the L2: the same outcome as probing
    /// every structure at once. The caller counts the access in [`Counts::accesses`] (the
    /// engine adds a whole run's).
    #[inline]
    pub fn translate(&mut self, addr: u64, size_of: impl FnOnce() -> PageSize) -> Outcome {
        if self.l1_hits(&[addr << 1]) == 1 {
            return Outcome::L1Hit;
        }
        self.translate_past_l1(addr, size_of)
    }

    /// How many of `packed` accesses ([`hugewise_trace::Access::pack`]), from the first,
    /// hit the L1 structures probed without the page table (each hit made most recent).
    /// The engine runs these in a tight loop and hands the first miss to
    /// [`Hierarchy::translate_past_l1`]. The caller counts the accesses.
    #[inline]
    pub fn l1_hits(&mut self, packed: &[u64]) -> usize {
        let (n, in_second) = match self.probed() {
            [None, _] => return 0,
            [Some(a), None] => hits_one(&mut self.l1[a.l1], a.size, packed),
            [Some(a), Some(b)] => match self.l1.get_disjoint_mut([a.l1, b.l1]) {
                Ok([sa, sb]) => hits_two(sa, a.size, sb, b.size, packed),
                Err(_) => return 0,
            },
        };
        // Probe first whichever structure took most of the hits.
        if in_second * 2 > n {
            self.fast.swap(0, 1);
        }
        n
    }

    /// The structures [`Hierarchy::l1_hits`] probes, in order.
    #[inline]
    fn probed(&self) -> [Option<Fast>; 2] {
        match self.fast {
            [Some(a), Some(b)] if a.l1 == b.l1 => [Some(a), None],
            f => f,
        }
    }

    /// [`Hierarchy::translate`] for an access known to miss the structures probed by
    /// [`Hierarchy::l1_hits`].
    #[inline]
    pub fn translate_past_l1(&mut self, addr: u64, size_of: impl FnOnce() -> PageSize) -> Outcome {
        let size = size_of();
        let code = size_code(size);
        let k = key(addr, size);
        let probed = self.probed().iter().flatten().any(|f| f.size == size);
        if !probed && self.filled[code] && self.l1[self.l1_for[code]].lookup(k) {
            return Outcome::L1Hit;
        }
        self.miss(addr, size, code, k)
    }

    #[inline(never)]
    fn miss(&mut self, addr: u64, size: PageSize, code: usize, k: u64) -> Outcome {
        self.counts.l1_misses += 1;
        let l2 = self.l2_for[code];
        if let Some(i) = l2 {
            if self.l2[i].lookup(k) {
                self.l1[self.l1_for[code]].fill(k);
                return Outcome::L2Hit;
            }
        }
        let reads = match &mut self.pwc {
            Some(p) => p.walk(addr, size),
            None => [4, 3, 2][code],
        };
        self.counts.walks += 1;
        self.counts.walks_by_size[code] += 1;
        self.counts.walk_reads += u64::from(reads);
        if let Some(i) = l2 {
            self.l2[i].fill(k);
        }
        let l1 = self.l1_for[code];
        self.l1[l1].fill(k);
        if !self.filled[code] {
            self.filled[code] = true;
            let new = Some(Fast { size, l1 });
            match self.fast {
                [None, _] => self.fast[0] = new,
                [Some(_), None] => self.fast[1] = new,
                _ => {}
            }
        }
        Outcome::Walk(reads)
    }

    /// Drop every entry of `size` inside `[base, base + bytes)`: the shootdown that follows a
    /// promotion (old 4 KiB entries) or a demotion (the old huge entry).
    pub fn flush(&mut self, base: u64, bytes: u64, size: PageSize) {
        let code = size_code(size) as u64;
        let gone = |t: u64| {
            let (a, _) = key_range(t);
            t >> 62 == code && a.wrapping_sub(base) < bytes
        };
        for s in self.l1.iter_mut().chain(self.l2.iter_mut()) {
            s.retain(gone);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SizeName::*;

    fn tiny() -> TlbConfig {
        TlbConfig {
            name: "tiny".into(),
            l1: vec![
                TlbSpec {
                    entries: 2,
                    ways: 2,
                    sizes: vec![K4],
                },
                TlbSpec {
                    entries: 2,
                    ways: 1,
                    sizes: vec![M2, G1],
                },
            ],
            l2: vec![TlbSpec {
                entries: 4,
                ways: 2,
                sizes: vec![K4, M2],
            }],
            pwc: None,
        }
    }

    const K: u64 = 4096;

    #[test]
    fn lru_in_a_set_by_hand() {
        let mut s = SetAssoc::new(1, 2);
        assert!(!s.lookup(1));
        s.fill(1);
        s.fill(2); // [2, 1]
        assert!(s.lookup(1)); // [1, 2]
        s.fill(3); // evicts 2: [3, 1]
        assert!(!s.lookup(2));
        assert!(s.lookup(1) && s.lookup(3));
    }

    #[test]
    fn l1_l2_and_walks_counted_by_hand() {
        let c = tiny();
        c.validate(None).expect("valid");
        let mut h = Hierarchy::new(&c);
        let s4 = PageSize::Size4K;
        // Pages 0, 1, 2: three walks; L1 (2 entries) keeps 2 and 1; L2 (2 sets × 2 ways)
        // keeps 0 and 2 in set 0, 1 in set 1.
        for p in [0, 1, 2] {
            assert_eq!(h.access(p * K, s4), Outcome::Walk(4));
        }
        assert_eq!(h.access(2 * K + 8, s4), Outcome::L1Hit);
        assert_eq!(h.access(0, s4), Outcome::L2Hit); // L1 now [0, 2]
        assert_eq!(h.access(K, s4), Outcome::L2Hit); // L1 now [1, 0]
                                                     // Page 4 goes to set 0 of L2, evicting its LRU (page 2, as 0 was hit since).
        assert_eq!(h.access(4 * K, s4), Outcome::Walk(4));
        assert_eq!(h.access(2 * K, s4), Outcome::Walk(4));
        let n = h.counts;
        assert_eq!(
            (n.accesses, n.l1_misses, n.walks, n.walk_reads),
            (8, 7, 5, 20)
        );
        // A 2 MiB page is one entry for all its 4 KiB pages.
        let m = 1u64 << 30;
        assert_eq!(h.access(m, PageSize::Size2M), Outcome::Walk(3));
        assert_eq!(h.access(m + 511 * K, PageSize::Size2M), Outcome::L1Hit);
        // 1 GiB pages have no L2: an L1 miss walks.
        assert_eq!(h.access(4 * m, PageSize::Size1G), Outcome::Walk(2));
        // The 1 GiB entry took the 2 MiB entry's L1 set; L2 still holds it.
        assert_eq!(h.access(m, PageSize::Size2M), Outcome::L2Hit);
        assert_eq!(h.counts.walks_by_size, [5, 1, 1]);
    }

    #[test]
    fn flush_drops_only_the_range() {
        let mut h = Hierarchy::new(&tiny());
        let s4 = PageSize::Size4K;
        h.access(0, s4);
        h.access(600 * K, s4);
        h.flush(0, 2 << 20, s4);
        assert_eq!(h.access(0, s4), Outcome::Walk(4));
        assert_eq!(h.access(600 * K, s4), Outcome::L1Hit);
    }

    #[test]
    fn a_size_change_is_seen_after_the_flush() {
        let mut h = Hierarchy::new(&TlbConfig::preset("haswell").expect("preset"));
        let s4 = PageSize::Size4K;
        let s2 = PageSize::Size2M;
        assert_eq!(h.translate(8 * K, || s4), Outcome::Walk(4));
        // A hit in the first size's L1 needs no page table: a wrong answer is not asked for.
        assert_eq!(h.translate(8 * K, || s2), Outcome::L1Hit);
        // Promotion: the 4 KiB entries go; the 2 MiB page is walked once, then hits.
        h.flush(0, 2 << 20, s4);
        assert_eq!(h.translate(8 * K, || s2), Outcome::Walk(3));
        assert_eq!(h.translate(100 * K, || s2), Outcome::L1Hit);
        // Demotion back: the promotion's flush already dropped the old 4 KiB entries.
        h.flush(0, 2 << 20, s2);
        assert_eq!(h.translate(8 * K, || s4), Outcome::Walk(4));
        assert_eq!(h.translate(8 * K, || s2), Outcome::L1Hit);
    }

    #[test]
    fn page_walk_caches_shorten_walks() {
        let mut c = tiny();
        c.pwc = Some(PwcSpec {
            pml4: 1,
            pdpt: 1,
            pd: 1,
        });
        let mut h = Hierarchy::new(&c);
        let s4 = PageSize::Size4K;
        assert_eq!(h.access(0, s4), Outcome::Walk(4));
        assert_eq!(h.access(10 * K, s4), Outcome::Walk(1)); // same PD entry
        assert_eq!(h.access(4 << 20, s4), Outcome::Walk(2)); // same PDPT entry
        assert_eq!(h.access(2 << 30, s4), Outcome::Walk(3)); // same PML4 entry
        assert_eq!(h.access(1 << 40, s4), Outcome::Walk(4));
        assert_eq!(h.access(3 << 30, PageSize::Size2M), Outcome::Walk(3));
        assert_eq!(
            h.access((3 << 30) + (2 << 20), PageSize::Size2M),
            Outcome::Walk(1)
        );
    }
}
