//! Physical memory for the simulator: 2 MiB blocks of 512 slots for 4 KiB pages, shared by
//! the traced program, other programs (memory pressure) and unmovable pages (fragmentation).
//! A promotion needs a free block; when none is free, compaction makes one by moving a
//! block's movable pages into the holes of others, at a cost in pages moved.
//!
//! Four ways to compact, as the seeds describe them:
//! - `off`: never; a promotion without a free block is refused.
//! - `linux`: on demand, in the promoting thread (direct compaction): the lowest block that
//!   can be emptied is emptied, and the promotion waits for it.
//! - `ingens`: every interval (5 s), up to a bound (100 MB), blocks in address order, while
//!   fewer blocks are free than the policy's budget could still use.
//! - `mega`: the same clock and need, a bound of 200 MB, blocks by MEGA's benefit over cost,
//!   age × (1 − mapped) × (1 − accessed) / (2 × mapped), where `mapped` is the block's share
//!   of slots in use and `accessed` the share of those the program accessed since its last
//!   scan (other programs' pages count as not accessed).
//!
//! Where pages go: a base page the program touches first takes a slot in a block that has
//! holes (the allocator splits its smallest free pieces first), the lowest such block, and
//! breaks a free block only when no block has a hole. Compaction fills holes of blocks with
//! an unmovable page first (they can never be freed), then of the fullest blocks. A collapse
//! frees the base pages it replaces; a demotion splits the huge page in place.
//!
//! Other programs' pages fill blocks in a seeded order, each to a seeded level between half
//! and all of its slots.
//!
//! Simplifications, said once: other programs' pages never change after the start; the
//! latency of a promotion is `collapse` plus `move` per page moved to find its block (model
//! constants, defaults from the collapse latency measured here); a 1 GiB page needs 512 free
//! blocks in a row, aligned.

use std::collections::BTreeSet;

use hugewise_mem::Bytes;
use hugewise_results::sim::{PhysRecord, PhysSample};

use crate::pagemap::{FrameId, PageMap, FRAME, PAGES};
use crate::policy::{Options, Timing};
use crate::{Error, Result};

/// A slot with nothing in it.
const EMPTY: u32 = u32::MAX;
/// A slot holding another program's (movable) page.
const OTHER: u32 = u32::MAX - 1;
/// A slot holding an unmovable page.
const PINNED: u32 = u32::MAX - 2;
/// A block holding no huge page.
const NO_FRAME: FrameId = FrameId::MAX;
/// Blocks one configuration may model (64 GiB of memory, 64 MiB of slot tables): a curve of
/// 62 configurations then stays within 4 GiB of this machine's memory.
pub const MAX_BLOCKS: u64 = 32 << 10;

/// How blocks are freed for promotions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compaction {
    /// Never.
    Off,
    /// On demand, in the promoting thread, lowest block first.
    Linux,
    /// Periodically, blocks in address order.
    Ingens,
    /// Periodically, blocks by benefit over cost.
    Mega,
}

impl Compaction {
    /// The name specs write.
    pub fn name(self) -> &'static str {
        match self {
            Compaction::Off => "off",
            Compaction::Linux => "linux",
            Compaction::Ingens => "ingens",
            Compaction::Mega => "mega",
        }
    }
}

/// How large physical memory is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Memory {
    /// Bytes.
    Bytes(u64),
    /// A multiple of the trace's footprint.
    Times(f64),
}

/// The physical memory to model, parsed from `--phys NAME:key=value:…`.
#[derive(Debug, Clone, PartialEq)]
pub struct PhysSpec {
    /// How blocks are freed.
    pub compaction: Compaction,
    /// Size (`memory=8GiB` or `memory=2x`; default 2x the footprint).
    pub memory: Memory,
    /// Share of all slots other programs hold at the start (`others=50%`; default 0).
    pub others: f64,
    /// Share of the blocks left free that get one unmovable page (`fragment=50%`; default 0).
    pub fragment: f64,
    /// Seconds between periodic compactions and samples (`every=5s`).
    pub every_s: f64,
    /// Bytes a periodic compaction may move at most (`bytes=100MiB`; default 100 MiB for
    /// `ingens`, 200 MiB for `mega`).
    pub bytes: u64,
    /// Microseconds of a collapse that found its block free (`collapse-us=500`).
    pub collapse_us: f64,
    /// Microseconds per page moved (`move-us=2`).
    pub move_us: f64,
    /// Seed of the other programs' layout (`seed=1`).
    pub seed: u64,
}

impl std::str::FromStr for PhysSpec {
    type Err = Error;

    fn from_str(spec: &str) -> Result<PhysSpec> {
        let (name, mut o) = Options::parse(spec)?;
        let compaction = match name.as_str() {
            "off" => Compaction::Off,
            "linux" => Compaction::Linux,
            "ingens" => Compaction::Ingens,
            "mega" => Compaction::Mega,
            other => {
                return Err(Error::Spec(format!(
                    "--phys '{other}': compaction is one of off, linux, ingens, mega \
                     (e.g. mega:memory=2x:others=50%:fragment=50%)"
                )))
            }
        };
        let memory = match o.string("memory") {
            None => Memory::Times(2.0),
            Some(v) => parse_memory(&v).ok_or_else(|| {
                Error::Spec(format!(
                    "--phys memory={v}: expected bytes (8GiB) or a multiple of the footprint (2x)"
                ))
            })?,
        };
        let default_bytes = if compaction == Compaction::Mega {
            200 << 20
        } else {
            100 << 20
        };
        let bytes = match o.string("bytes") {
            None => default_bytes,
            Some(v) => parse_bytes(&v).ok_or_else(|| {
                Error::Spec(format!("--phys bytes={v}: expected bytes such as 100MiB"))
            })?,
        };
        let micros = |o: &mut Options, key: &str, default: f64| -> Result<f64> {
            match o.string(key) {
                None => Ok(default),
                Some(v) => match v.parse::<f64>() {
                    Ok(x) if x >= 0.0 && x.is_finite() => Ok(x),
                    _ => Err(Error::Spec(format!(
                        "--phys {key}={v}: expected microseconds, 0 or more"
                    ))),
                },
            }
        };
        let parsed = PhysSpec {
            compaction,
            memory,
            others: o.share("others", 0.0)?,
            fragment: o.share("fragment", 0.0)?,
            every_s: o.seconds("every", 5.0)?,
            bytes,
            collapse_us: micros(&mut o, "collapse-us", 500.0)?,
            move_us: micros(&mut o, "move-us", 2.0)?,
            seed: o.count("seed", 1)?,
        };
        o.finish()?;
        Ok(parsed)
    }
}

impl PhysSpec {
    /// The spec with every setting, for results.
    pub fn label(&self) -> String {
        let memory = match self.memory {
            Memory::Bytes(b) => format!("{}MiB", b >> 20),
            Memory::Times(x) => format!("{x}x"),
        };
        format!(
            "{}:memory={memory}:others={}%:fragment={}%:every={}s:bytes={}MiB:collapse-us={}:move-us={}:seed={}",
            self.compaction.name(),
            self.others * 100.0,
            self.fragment * 100.0,
            self.every_s,
            self.bytes >> 20,
            self.collapse_us,
            self.move_us,
            self.seed
        )
    }
}

fn parse_memory(v: &str) -> Option<Memory> {
    if let Some(x) = v.strip_suffix('x') {
        let x: f64 = x.trim().parse().ok()?;
        return (x > 0.0 && x.is_finite()).then_some(Memory::Times(x));
    }
    parse_bytes(v).filter(|&b| b >= FRAME).map(Memory::Bytes)
}

fn parse_bytes(v: &str) -> Option<u64> {
    v.parse::<Bytes>().ok().map(|b| b.0)
}

#[derive(Debug, Clone)]
struct Block {
    /// Who holds each slot: a program page (`frame * 512 + page`), [`OTHER`], [`PINNED`]
    /// or [`EMPTY`].
    slots: Box<[u32]>,
    used: u16,
    pinned: u16,
    /// The frame whose huge page this block is, or [`NO_FRAME`].
    huge: FrameId,
    /// When a page last came or went, in accesses.
    changed_at: u64,
}

impl Block {
    fn new() -> Block {
        Block {
            slots: vec![EMPTY; PAGES].into_boxed_slice(),
            used: 0,
            pinned: 0,
            huge: NO_FRAME,
            changed_at: 0,
        }
    }

    fn is_free(&self) -> bool {
        self.used == 0 && self.huge == NO_FRAME
    }

    fn has_hole(&self) -> bool {
        self.huge == NO_FRAME && self.used > 0 && (self.used as usize) < PAGES
    }

    /// Can be emptied by moving its pages: some in use, none pinned, not huge.
    fn movable(&self) -> bool {
        self.huge == NO_FRAME && self.used > 0 && self.pinned == 0
    }
}

/// The physical memory of one simulated configuration.
#[derive(Debug, Clone)]
pub struct PhysMem {
    spec: PhysSpec,
    blocks: Vec<Block>,
    /// Program page (`frame * 512 + page`) to `block * 512 + slot`, or [`EMPTY`].
    loc: Vec<u32>,
    /// Frame to the block holding it huge, or [`EMPTY`].
    huge_at: Vec<u32>,
    free: BTreeSet<u32>,
    holes: BTreeSet<u32>,
    interval: u64,
    next: u64,
    rec: PhysRecord,
    latencies: Vec<f64>,
}

impl PhysMem {
    /// Memory for a program of `footprint` bytes, laid out as `spec` says, its periodic clock
    /// counted in accesses by `timing`.
    pub fn new(spec: &PhysSpec, footprint: u64, timing: &Timing) -> Result<PhysMem> {
        let bytes = match spec.memory {
            Memory::Bytes(b) => b,
            Memory::Times(x) => (footprint as f64 * x) as u64,
        };
        let n = (bytes / FRAME).max(1);
        if n > MAX_BLOCKS {
            return Err(Error::Spec(format!(
                "--phys memory: {} of physical memory is {n} blocks of 2 MiB, more than the {MAX_BLOCKS} \
                 ({} GiB) a configuration may model: each block keeps a 2 KiB slot table, and every \
                 policy and budget simulated keeps its own memory",
                hugewise_mem::Bytes(bytes),
                (MAX_BLOCKS * FRAME) >> 30
            )));
        }
        let mut blocks: Vec<Block> = (0..n).map(|_| Block::new()).collect();
        // Other programs: blocks in a seeded order, each filled to a seeded level between
        // half and all of its slots, until their share of all slots is reached.
        let mut want = (spec.others * (n as usize * PAGES) as f64).round() as usize;
        let mut order: Vec<usize> = (0..n as usize).collect();
        let mut rng = spec.seed ^ 0x9e37_79b9_7f4a_7c15;
        for i in (1..order.len()).rev() {
            let j = (splitmix(&mut rng) % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        for &b in &order {
            if want == 0 {
                break;
            }
            // Half full to full: memory in use long enough to have been packed, with the
            // holes that frees leave behind.
            let level = PAGES / 2 + (splitmix(&mut rng) % (PAGES as u64 / 2 + 1)) as usize;
            let k = level.min(want);
            for s in 0..k {
                blocks[b].slots[s] = OTHER;
            }
            blocks[b].used = k as u16;
            want -= k;
        }
        // Fragmentation: a share of the blocks left free, spread evenly, get one unmovable
        // page.
        let mut seen = 0u64;
        let mut pinned_blocks = 0;
        for b in blocks.iter_mut().filter(|b| b.used == 0) {
            let before = (seen as f64 * spec.fragment).floor();
            seen += 1;
            if (seen as f64 * spec.fragment).floor() > before {
                b.slots[PAGES - 1] = PINNED;
                b.used = 1;
                b.pinned = 1;
                pinned_blocks += 1;
            }
        }
        let interval = timing.accesses(spec.every_s);
        let mut m = PhysMem {
            spec: spec.clone(),
            blocks,
            loc: Vec::new(),
            huge_at: Vec::new(),
            free: BTreeSet::new(),
            holes: BTreeSet::new(),
            interval,
            next: interval,
            rec: PhysRecord {
                label: spec.label(),
                blocks: n,
                free_blocks_start: 0,
                free_blocks_end: 0,
                pinned_blocks,
                placed: 0,
                refused_no_block: 0,
                blocks_compacted: 0,
                pages_moved: 0,
                pages_per_block: None,
                oom_pages: 0,
                latency_us: None,
                series: Vec::new(),
            },
            latencies: Vec::new(),
        };
        for b in 0..n as u32 {
            m.refile(b);
        }
        m.rec.free_blocks_start = m.free.len() as u64;
        Ok(m)
    }

    /// The time of the next periodic compaction or sample, in accesses.
    pub fn next_at(&self) -> u64 {
        self.next
    }

    /// Blocks free now.
    pub fn free_blocks(&self) -> u64 {
        self.free.len() as u64
    }

    fn refile(&mut self, b: u32) {
        let blk = &self.blocks[b as usize];
        let (free, hole) = (blk.is_free(), blk.has_hole());
        if free {
            self.free.insert(b);
        } else {
            self.free.remove(&b);
        }
        if hole {
            self.holes.insert(b);
        } else {
            self.holes.remove(&b);
        }
    }

    fn key(frame: FrameId, page: usize) -> usize {
        frame as usize * PAGES + page
    }

    /// Put `who` in a free slot of block `b` (which has one).
    fn place(&mut self, b: u32, who: u32, now: u64) {
        let blk = &mut self.blocks[b as usize];
        let s = blk
            .slots
            .iter()
            .position(|&x| x == EMPTY)
            .expect("a block with a hole has an empty slot");
        blk.slots[s] = who;
        blk.used += 1;
        blk.changed_at = now;
        if who < PINNED {
            let k = who as usize;
            if self.loc.len() <= k {
                self.loc.resize(k + 1, EMPTY);
            }
            self.loc[k] = b * PAGES as u32 + s as u32;
        }
        self.refile(b);
    }

    /// The program touched base page `page` of `frame` for the first time: it takes a slot.
    pub fn touch(&mut self, frame: FrameId, page: usize, now: u64) {
        let key = Self::key(frame, page);
        if self.loc.get(key).is_some_and(|&l| l != EMPTY) {
            return;
        }
        let Some(b) = self
            .holes
            .first()
            .copied()
            .or_else(|| self.free.first().copied())
        else {
            self.rec.oom_pages += 1;
            return;
        };
        self.place(b, key as u32, now);
    }

    /// Free the program's base pages of `frame` (a collapse replaced them).
    fn release_frame(&mut self, frame: FrameId, now: u64) {
        for p in 0..PAGES {
            let key = Self::key(frame, p);
            let Some(&l) = self.loc.get(key) else {
                return;
            };
            if l == EMPTY {
                continue;
            }
            self.loc[key] = EMPTY;
            let (b, s) = (l / PAGES as u32, (l % PAGES as u32) as usize);
            let blk = &mut self.blocks[b as usize];
            blk.slots[s] = EMPTY;
            blk.used -= 1;
            blk.changed_at = now;
            self.refile(b);
        }
    }

    /// Give `frame` a huge page: a free block, or one compaction frees now when compaction
    /// is on demand. The model's latency of the promotion, µs, or `None` (refused).
    pub fn promote(&mut self, frame: FrameId, now: u64) -> Option<f64> {
        let mut moved = 0;
        let found = match self.free.first().copied() {
            Some(b) => Some(b),
            None if self.spec.compaction == Compaction::Linux => {
                self.lowest_movable(u64::MAX).and_then(|src| {
                    moved = self.empty_block(src, now)?;
                    Some(src)
                })
            }
            None => None,
        };
        let Some(b) = found else {
            self.rec.refused_no_block += 1;
            return None;
        };
        self.release_frame(frame, now);
        self.hold(b, frame, now);
        Some(self.placed(moved))
    }

    /// Give the 512 frames from `first` a 1 GiB page: 512 free blocks in a row, aligned.
    pub fn promote_gigabyte(&mut self, first: FrameId, now: u64) -> Option<f64> {
        let run = PAGES as u32;
        let start = (0..self.blocks.len() as u32 / run)
            .map(|g| g * run)
            .find(|&g| (g..g + run).all(|b| self.free.contains(&b)));
        let Some(start) = start else {
            self.rec.refused_no_block += 1;
            return None;
        };
        for i in 0..run {
            self.release_frame(first + i, now);
            self.hold(start + i, first + i, now);
        }
        Some(self.placed(0))
    }

    fn hold(&mut self, b: u32, frame: FrameId, now: u64) {
        // A 2 MiB page folded into a 1 GiB one gives its block back.
        if let Some(&old) = self.huge_at.get(frame as usize).filter(|&&o| o != EMPTY) {
            let blk = &mut self.blocks[old as usize];
            blk.huge = NO_FRAME;
            blk.changed_at = now;
            self.refile(old);
        }
        let blk = &mut self.blocks[b as usize];
        blk.huge = frame;
        blk.changed_at = now;
        if self.huge_at.len() <= frame as usize {
            self.huge_at.resize(frame as usize + 1, EMPTY);
        }
        self.huge_at[frame as usize] = b;
        self.refile(b);
    }

    fn placed(&mut self, moved: u64) -> f64 {
        self.rec.placed += 1;
        let us = self.spec.collapse_us + moved as f64 * self.spec.move_us;
        self.latencies.push(us);
        us
    }

    /// Split `frame`'s huge page in place: its block holds the frame's 512 base pages.
    pub fn demote(&mut self, frame: FrameId, now: u64) {
        let Some(&b) = self.huge_at.get(frame as usize) else {
            return;
        };
        if b == EMPTY {
            return;
        }
        self.huge_at[frame as usize] = EMPTY;
        let blk = &mut self.blocks[b as usize];
        blk.huge = NO_FRAME;
        blk.used = PAGES as u16;
        blk.changed_at = now;
        let end = Self::key(frame, PAGES);
        if self.loc.len() < end {
            self.loc.resize(end, EMPTY);
        }
        for p in 0..PAGES {
            let key = Self::key(frame, p);
            self.blocks[b as usize].slots[p] = key as u32;
            self.loc[key] = b * PAGES as u32 + p as u32;
        }
        self.refile(b);
    }

    /// The lowest block that can be emptied with at most `limit` pages moved and room for
    /// them elsewhere.
    fn lowest_movable(&self, limit: u64) -> Option<u32> {
        (0..self.blocks.len() as u32).find(|&b| self.can_empty(b, limit))
    }

    fn can_empty(&self, b: u32, limit: u64) -> bool {
        let blk = &self.blocks[b as usize];
        blk.movable() && u64::from(blk.used) <= limit && self.room_outside(b) >= blk.used as u64
    }

    fn room_outside(&self, b: u32) -> u64 {
        let blk = &self.blocks[b as usize];
        let own = (PAGES - blk.used as usize) as u64;
        self.holes
            .iter()
            .map(|&h| (PAGES - self.blocks[h as usize].used as usize) as u64)
            .sum::<u64>()
            - if self.holes.contains(&b) { own } else { 0 }
    }

    /// Move every page of `src` into holes elsewhere (blocks with an unmovable page first,
    /// then the fullest); the pages moved, or `None` when there is not room.
    fn empty_block(&mut self, src: u32, now: u64) -> Option<u64> {
        let n = self.blocks[src as usize].used as u64;
        if !self.can_empty(src, u64::MAX) {
            return None;
        }
        let mut dests: Vec<u32> = self.holes.iter().copied().filter(|&b| b != src).collect();
        dests.sort_by_key(|&b| {
            let blk = &self.blocks[b as usize];
            (blk.pinned == 0, PAGES - blk.used as usize, b)
        });
        let mut d = dests.into_iter();
        let mut dest = d.next()?;
        for s in 0..PAGES {
            let who = self.blocks[src as usize].slots[s];
            if who == EMPTY {
                continue;
            }
            while self.blocks[dest as usize].used as usize == PAGES {
                dest = d.next()?;
            }
            self.blocks[src as usize].slots[s] = EMPTY;
            self.place(dest, who, now);
        }
        let blk = &mut self.blocks[src as usize];
        blk.used = 0;
        blk.changed_at = now;
        self.refile(src);
        self.rec.blocks_compacted += 1;
        self.rec.pages_moved += n;
        Some(n)
    }

    /// MEGA's benefit over cost of emptying block `b` at `now`.
    fn benefit_cost(&self, b: u32, map: &PageMap, now: u64) -> f64 {
        let blk = &self.blocks[b as usize];
        let mapped = f64::from(blk.used) / PAGES as f64;
        let accessed = blk
            .slots
            .iter()
            .filter(|&&w| w < PINNED && accessed(map, w))
            .count() as f64
            / f64::from(blk.used.max(1));
        // Age in intervals, one at least, so that a block changed this interval still ranks
        // by what it costs.
        let age = (now.saturating_sub(blk.changed_at) as f64 / self.interval as f64).max(1.0);
        age * (1.0 - mapped) * (1.0 - accessed) / (2.0 * mapped)
    }

    /// The periodic clock reached [`PhysMem::next_at`]: compact (`ingens`, `mega`) while
    /// fewer than `wanted` blocks are free, within the bytes a compaction may move, then
    /// record a sample.
    pub fn tick(&mut self, map: &PageMap, wanted: u64, now: u64) {
        self.next += self.interval;
        let mut left = self.spec.bytes / 4096;
        while self.free_blocks() < wanted && left > 0 {
            let src = match self.spec.compaction {
                Compaction::Ingens => self.lowest_movable(left),
                Compaction::Mega => (0..self.blocks.len() as u32)
                    .filter(|&b| self.can_empty(b, left))
                    .map(|b| (self.benefit_cost(b, map, now), b))
                    .max_by(|x, y| x.0.total_cmp(&y.0).then(y.1.cmp(&x.1)))
                    .map(|(_, b)| b),
                Compaction::Off | Compaction::Linux => None,
            };
            let Some(src) = src else {
                break;
            };
            match self.empty_block(src, now) {
                Some(n) => left -= n,
                None => break,
            }
        }
        self.sample(now);
    }

    fn sample(&mut self, now: u64) {
        self.rec.series.push(PhysSample {
            at_access: now,
            free_blocks: self.free_blocks(),
            pages_moved: self.rec.pages_moved,
            refused_no_block: self.rec.refused_no_block,
        });
    }

    /// What happened, at time `now`.
    pub fn record(&self, now: u64) -> PhysRecord {
        let mut r = self.rec.clone();
        r.free_blocks_end = self.free_blocks();
        r.pages_per_block =
            (r.blocks_compacted > 0).then(|| r.pages_moved as f64 / r.blocks_compacted as f64);
        if !self.latencies.is_empty() {
            let mut l = self.latencies.clone();
            l.sort_by(f64::total_cmp);
            let at = |q: f64| l[((q * l.len() as f64).ceil() as usize).clamp(1, l.len()) - 1];
            r.latency_us = Some([at(0.5), at(0.99), at(0.999), l[l.len() - 1]]);
        }
        if r.series.last().is_none_or(|s| s.at_access != now) {
            r.series.push(PhysSample {
                at_access: now,
                free_blocks: r.free_blocks_end,
                pages_moved: r.pages_moved,
                refused_no_block: r.refused_no_block,
            });
        }
        r
    }
}

/// Whether the program page `key` has its accessed bit set.
fn accessed(map: &PageMap, key: u32) -> bool {
    let (frame, page) = (key as usize / PAGES, key as usize % PAGES);
    frame < map.len() && map.frame(frame as FrameId).accessed[page >> 6] & (1 << (page & 63)) != 0
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_trace::Region;

    fn timing() -> Timing {
        Timing {
            accesses_per_s: 1000.0,
            time_scale: 1.0,
        }
    }

    fn spec(s: &str) -> PhysSpec {
        s.parse().expect("spec")
    }

    fn mem(s: &str, blocks: u64) -> PhysMem {
        PhysMem::new(&spec(s), blocks * FRAME, &timing()).expect("memory")
    }

    fn map(frames: u64) -> PageMap {
        PageMap::new(&[Region {
            name: "a".into(),
            base: 0,
            size: frames * FRAME,
        }])
    }

    #[test]
    fn pages_fill_holes_before_breaking_a_free_block() {
        let mut m = mem("off:memory=4x", 1);
        assert_eq!((m.rec.blocks, m.free_blocks()), (4, 4));
        for p in 0..PAGES {
            m.touch(0, p, 1);
        }
        m.touch(1, 0, 2);
        // 512 pages fill block 0; the 513th breaks block 1.
        assert_eq!(m.free_blocks(), 2);
        assert_eq!(m.blocks[1].used, 1);
        // Touching a page twice takes one slot.
        m.touch(1, 0, 3);
        assert_eq!(m.blocks[1].used, 1);
    }

    #[test]
    fn fragmentation_pins_every_other_free_block_and_pages_go_there_first() {
        let mut m = mem("off:memory=4x:fragment=50%", 1);
        assert_eq!(m.rec.pinned_blocks, 2);
        assert_eq!(m.free_blocks(), 2);
        assert!(m.blocks[1].pinned == 1 && m.blocks[3].pinned == 1);
        for p in 0..511 {
            m.touch(0, p, 1);
        }
        // The 511 pages fill the pinned block 1's holes; no free block is broken.
        assert_eq!(m.free_blocks(), 2);
        assert_eq!(m.blocks[1].used, 512);
    }

    #[test]
    fn others_take_their_share_of_slots() {
        let m = mem("off:memory=8x:others=25%:seed=3", 1);
        let others: usize = m
            .blocks
            .iter()
            .map(|b| b.slots.iter().filter(|&&w| w == OTHER).count())
            .sum();
        assert_eq!(others, 8 * 512 / 4);
    }

    #[test]
    fn a_promotion_takes_the_lowest_free_block_and_frees_the_base_pages() {
        let mut m = mem("off:memory=3x", 1);
        for p in 0..100 {
            m.touch(0, p, 1);
        }
        assert_eq!(m.promote(0, 2), Some(500.0));
        // The frame's 100 base pages left block 0; block 1 is the huge page.
        assert_eq!(m.blocks[0].used, 0);
        assert_eq!(m.blocks[1].huge, 0);
        assert_eq!(m.free.iter().copied().collect::<Vec<_>>(), vec![0, 2]);
        m.demote(0, 3);
        assert_eq!(m.blocks[1].used, 512);
        assert_eq!(m.loc[PhysMem::key(0, 7)], 512 + 7);
    }

    /// Three blocks: 300 pages of the program in block 0, 200 in block 1, block 2 pinned.
    /// No block is free.
    fn crowded(compaction: &str) -> PhysMem {
        let mut m = mem(&format!("{compaction}:memory=3x"), 1);
        for p in 0..300 {
            m.place(0, PhysMem::key(5, p) as u32, 0);
        }
        for p in 0..200 {
            m.place(1, PhysMem::key(6, p) as u32, 0);
        }
        let b2 = &mut m.blocks[2];
        b2.slots[0] = PINNED;
        b2.used = 1;
        b2.pinned = 1;
        m.refile(2);
        assert_eq!(m.free_blocks(), 0);
        m
    }

    #[test]
    fn without_compaction_a_promotion_is_refused() {
        let mut m = crowded("off");
        assert_eq!(m.promote(0, 1), None);
        assert_eq!(m.rec.refused_no_block, 1);
    }

    #[test]
    fn linux_empties_the_lowest_block_in_the_promoting_thread() {
        let mut m = crowded("linux");
        // Block 0's 300 pages go to the pinned block 2 first (511 holes): 300 moved.
        assert_eq!(m.promote(0, 1), Some(500.0 + 300.0 * 2.0));
        assert_eq!(m.rec.pages_moved, 300);
        assert_eq!(m.blocks[2].used, 301);
        assert_eq!(m.blocks[0].huge, 0);
        // The moved pages' locations followed them.
        let l = m.loc[PhysMem::key(5, 0)];
        assert_eq!(l / 512, 2);
    }

    #[test]
    fn mega_moves_fewer_pages_than_ingens_for_the_same_free_block() {
        // The seed's ordering on a hand-built case: address order empties block 0 (300
        // pages); benefit over cost prefers block 1 (200 pages, less mapped).
        let mut ingens = crowded("ingens");
        let mut mega = crowded("mega");
        let m = map(8);
        ingens.tick(&m, 1, 5000);
        mega.tick(&m, 1, 5000);
        assert_eq!(
            (ingens.rec.blocks_compacted, ingens.rec.pages_moved),
            (1, 300)
        );
        assert_eq!((mega.rec.blocks_compacted, mega.rec.pages_moved), (1, 200));
        assert_eq!(mega.free.first(), Some(&1));
        // Once enough blocks are free, a tick moves nothing.
        mega.tick(&m, 1, 10_000);
        assert_eq!(mega.rec.pages_moved, 200);
        assert_eq!(mega.record(10_000).series.len(), 2);
    }

    #[test]
    fn accessed_pages_lower_a_blocks_benefit() {
        let mut mega = crowded("mega");
        let mut m = map(8);
        // Every page of frame 6 (block 1) accessed: block 1's benefit falls to 0.
        m.frame_mut(6).accessed = [u64::MAX; 8];
        mega.tick(&m, 1, 5000);
        assert_eq!(mega.rec.pages_moved, 300);
    }

    #[test]
    fn the_bound_of_a_tick_is_kept() {
        let mut ingens = crowded("ingens:bytes=1MiB");
        ingens.tick(&map(8), 1, 5000);
        // 256 pages at most: block 0 (300) is too large, block 1 (200) fits.
        assert_eq!(ingens.rec.pages_moved, 200);
    }

    #[test]
    fn a_gigabyte_needs_512_free_blocks_in_a_row() {
        let mut m = mem("off:memory=1024x", 1);
        assert!(m.promote_gigabyte(0, 1).is_some());
        assert_eq!(m.free_blocks(), 512);
        m.touch(600, 0, 2);
        // Block 512 is broken: no aligned run is left.
        assert_eq!(m.promote_gigabyte(1024, 3), None);
    }

    #[test]
    fn latencies_are_summarised() {
        let mut m = crowded("linux");
        m.promote(0, 1);
        let r = m.record(2);
        assert_eq!(r.latency_us, Some([1100.0; 4]));
        assert_eq!(r.pages_per_block, Some(300.0));
    }

    #[test]
    fn memory_past_the_bound_is_refused_by_name() {
        let e =
            PhysMem::new(&spec("off:memory=100GiB"), FRAME, &timing()).expect_err("past the bound");
        assert!(e.to_string().contains("100GiB of physical memory"), "{e}");
        assert!(e.to_string().contains("32768"), "{e}");
        assert!(PhysMem::new(&spec("off:memory=64GiB"), FRAME, &timing()).is_ok());
    }

    #[test]
    fn specs_are_checked() {
        assert!("nope".parse::<PhysSpec>().is_err());
        assert!("mega:memory=lots".parse::<PhysSpec>().is_err());
        assert!("mega:colour=red".parse::<PhysSpec>().is_err());
        let s = spec("mega:memory=8GiB:others=50%:fragment=25%");
        assert_eq!(s.memory, Memory::Bytes(8 << 30));
        assert_eq!(s.bytes, 200 << 20);
        assert_eq!(spec("ingens").bytes, 100 << 20);
        assert!(s
            .label()
            .starts_with("mega:memory=8192MiB:others=50%:fragment=25%"));
    }
}
