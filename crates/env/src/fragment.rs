//! Fragmentation: make a chosen share of free memory useless for 2 MiB pages by keeping one
//! 4 KiB page in each of enough free 2 MiB physical blocks.
//!
//! From user space, without a kernel module: take 4 KiB pages, read their physical frames from
//! `/proc/self/pagemap`, and once enough whole 2 MiB blocks are owned, keep one page of each and
//! free the other 511. What the kept page is decides what compaction can do about it
//! ([`FragmentPages`]):
//! - **unmovable** (the seeds' fragmentation): the page is mlocked, and with
//!   `vm.compact_unevictable_allowed = 0` (the caller sets it, journaled) compaction cannot move
//!   it, so each such block stays broken until hugewise lets go;
//! - **movable** (other programs' memory, as a busy server's free memory is broken): an ordinary
//!   anonymous page, which compaction (the kernel's, or a collapse's own) can move elsewhere to
//!   make its block whole again. The level then holds only until something compacts.
//!
//! With `vm.percpu_pagelist_high_fraction` at [`crate::knob::PCP_MINIMAL`] (also the caller's,
//! journaled) freed pages reach the buddy allocator at once instead of waiting in per-CPU
//! lists, so the blocks merge and the measurement is exact. The level is measured from
//! `/proc/buddyinfo` after every round and corrected: too low, more blocks are broken; too
//! high, some are given back whole (or, when none are held, memory is compacted once).

use std::collections::HashMap;
use std::time::Instant;

pub use hugewise_results::env::{FragmentPages, FragmentReport, FragmentTarget};
use hugewise_sys::lock;
use hugewise_sys::mmap::{Advice, MapOptions, Mapping};
use hugewise_sys::proc::Pid;

use crate::host::Host;
use crate::state::{self, BLOCK_BYTES};
use crate::{Error, Result};

const PAGE: usize = 4096;
const PAGES_PER_BLOCK: u32 = 512;
const CHUNK: u64 = 256 << 20;

#[derive(Debug)]
struct Pin {
    chunk: usize,
    offset: usize,
}

/// The kept pages, one per broken block; dropping this gives every block back.
#[derive(Debug, Default)]
pub struct Fragmenter {
    pages: FragmentPages,
    chunks: Vec<Option<Mapping>>,
    pins: Vec<Pin>,
}

impl Fragmenter {
    /// Blocks broken now.
    pub fn pinned_blocks(&self) -> u64 {
        self.pins.len() as u64
    }

    /// Give back `n` broken blocks (newest first): each becomes a whole free block again.
    pub fn unpin(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            let Some(p) = self.pins.pop() else { break };
            if let Some(m) = &mut self.chunks[p.chunk] {
                if self.pages == FragmentPages::Unmovable {
                    lock::munlock_range(m, p.offset..p.offset + PAGE)?;
                }
                free_range(m, p.offset..p.offset + PAGE)?;
            }
        }
        Ok(())
    }
}

fn free_range(m: &mut Mapping, range: std::ops::Range<usize>) -> Result<()> {
    if range.is_empty() {
        return Ok(());
    }
    m.discard(range)?;
    Ok(())
}

/// Reach `target` (within `tolerance`, a share of free memory) with blocks kept broken by
/// `pages`, never letting MemAvailable fall below `floor_bytes` while looking for whole blocks.
/// For unmovable pages the caller must have set `vm.compact_unevictable_allowed` to 0, or
/// compaction will undo the work, and should set `vm.percpu_pagelist_high_fraction` (see the
/// module docs); [`prepare`] does both.
pub fn fragment(
    host: &Host,
    target: FragmentTarget,
    pages: FragmentPages,
    tolerance: f64,
    floor_bytes: u64,
    cancel: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Fragmenter, FragmentReport)> {
    host.require_real("fragmentation")?;
    host.require_root(
        "fragmentation",
        "/proc/self/pagemap frames and mlocked pages",
    )?;
    if let FragmentTarget::Level(l) = target {
        if !(0.0..=0.99).contains(&l) {
            return Err(Error::Invalid(format!(
                "fragmentation level {:.0}% is outside 0..99%",
                l * 100.0
            )));
        }
    }
    let t0 = Instant::now();
    let before = state::settled(host)?;
    let mut f = Fragmenter {
        pages,
        ..Fragmenter::default()
    };
    let mut peak = 0u64;
    let mut note = None;
    let mut rounds = 0;
    let mut reached = false;
    let mut compacted = false;
    while rounds < 6 {
        rounds += 1;
        if cancel() {
            return Err(Error::Interrupted);
        }
        let s = state::settled(host)?;
        let free = s.buddy_free_bytes as f64;
        let want = match target {
            FragmentTarget::Level(l) => l * free,
            FragmentTarget::UnusableBytes(b) => b as f64,
        };
        let have = s.unusable_bytes as f64;
        if (have - want).abs() <= tolerance * free.max(1.0) {
            reached = true;
            break;
        }
        if have > want {
            let n = ((have - want) / BLOCK_BYTES as f64).ceil() as usize;
            if f.pins.is_empty() && !compacted {
                // Already more fragmented than asked: compaction is the only way down.
                crate::actions::compact(host)?;
                compacted = true;
                continue;
            }
            if f.pins.is_empty() {
                note = Some(format!(
                    "free memory is still {:.0}% unusable for 2 MiB pages after compaction",
                    s.unusable_share * 100.0
                ));
                break;
            }
            f.unpin(n.min(f.pins.len()))?;
        } else {
            let k = ((want - have) / ((PAGES_PER_BLOCK - 1) as f64 * PAGE as f64)).ceil() as u64;
            if pages == FragmentPages::Unmovable {
                check_map_count(host, f.pins.len() as u64 + k)?;
            }
            let got = f.grab(host, k, floor_bytes, cancel, progress, &mut peak)?;
            if got < k {
                note = Some(format!(
                    "found {got} of the {k} whole 2 MiB blocks needed before reaching the \
                     floor of {} MiB available",
                    floor_bytes >> 20
                ));
                break;
            }
        }
    }
    let after = state::settled(host)?;
    if !reached && note.is_none() {
        let want = match target {
            FragmentTarget::Level(l) => l,
            FragmentTarget::UnusableBytes(b) => b as f64 / after.buddy_free_bytes.max(1) as f64,
        };
        reached = (after.unusable_share - want).abs() <= tolerance;
        if !reached {
            note = Some(format!(
                "free memory kept moving (reclaim, other processes): reached {:.1}% after {rounds} rounds",
                after.unusable_share * 100.0
            ));
        }
    }
    let report = FragmentReport {
        target,
        pages,
        tolerance,
        reached,
        pinned_blocks: f.pinned_blocks(),
        rounds,
        peak_taken_bytes: peak,
        before,
        after,
        seconds: t0.elapsed().as_secs_f64(),
        note,
    };
    Ok((f, report))
}

/// Set the two knobs fragmentation needs, in `session` (journaled, restored with it). The
/// first also keeps the pressure holder's mlocked pages where they are, whatever the kind of
/// fragmentation: only the kept pages of movable fragmentation are for compaction to move.
pub fn prepare(session: &mut crate::Session) -> Result<Vec<crate::session::KnobSet>> {
    Ok(vec![
        session.set(crate::Knob::CompactUnevictable, "0")?,
        session.set(crate::Knob::PcpHighFraction, crate::knob::PCP_MINIMAL)?,
    ])
}

/// Each mlocked kept page splits its mapping (a movable one does not): make sure the kernel's
/// limit on mappings allows them.
fn check_map_count(host: &Host, pins: u64) -> Result<()> {
    let limit: u64 = host
        .proc
        .read_knob("sys/vm/max_map_count")?
        .parse()
        .unwrap_or(65530);
    let maps = std::fs::read_to_string(host.proc.file("self/maps"))
        .map(|s| s.lines().count() as u64)
        .unwrap_or(0);
    let need = 2 * pins + maps + 64;
    if need > limit {
        return Err(Error::Invalid(format!(
            "breaking {pins} blocks needs about {need} mappings, above vm.max_map_count = \
             {limit}; raise it or ask for a lower level"
        )));
    }
    Ok(())
}

impl Fragmenter {
    /// Take 4 KiB pages until `k` whole 2 MiB blocks are owned (or the floor is reached), keep
    /// one page of `k` of them and free everything else. Returns the blocks broken.
    fn grab(
        &mut self,
        host: &Host,
        k: u64,
        floor_bytes: u64,
        cancel: &dyn Fn() -> bool,
        progress: &mut dyn FnMut(u64, u64),
        peak: &mut u64,
    ) -> Result<u64> {
        let first_new = self.chunks.len();
        // block -> (pages owned, chunk, offset of one of them)
        let mut blocks: HashMap<u64, (u32, usize, usize)> = HashMap::new();
        let mut whole: Vec<u64> = Vec::new();
        let pagemap = host.proc.pagemap(Pid::Current)?;
        let mut taken = 0u64;
        while (whole.len() as u64) < k {
            if cancel() {
                self.release_unpinned(first_new)?;
                return Err(Error::Interrupted);
            }
            let room = state::measure(host)?
                .available()
                .saturating_sub(floor_bytes);
            let bytes = CHUNK.min(room) / BLOCK_BYTES * BLOCK_BYTES;
            if bytes == 0 {
                break;
            }
            let m = Mapping::anonymous(bytes as usize, MapOptions::default())?;
            m.advise(0..m.len(), Advice::NoHugePage)?;
            m.advise(0..m.len(), Advice::PopulateWrite)?;
            taken += bytes;
            *peak = (*peak).max(taken);
            let idx = self.chunks.len();
            let entries = pagemap.read(m.addr(), m.len() / PAGE)?;
            for (i, e) in entries.iter().enumerate() {
                let Some(pfn) = e.pfn() else { continue };
                let b = blocks.entry(pfn >> 9).or_insert((0, idx, i * PAGE));
                b.0 += 1;
                if b.0 == PAGES_PER_BLOCK {
                    whole.push(pfn >> 9);
                }
            }
            self.chunks.push(Some(m));
            progress(whole.len().min(k as usize) as u64, k);
        }
        let mut pinned = 0;
        for b in whole.iter().take(k as usize) {
            let (_, chunk, offset) = blocks[b];
            let Some(m) = &self.chunks[chunk] else {
                continue;
            };
            let locked = self.pages == FragmentPages::Unmovable;
            if locked {
                lock::mlock_range(m, offset..offset + PAGE)?;
            }
            // mlock does not move a page, but compaction may have between the pagemap read and
            // now: keep the pin only if the page is still in its block.
            let now = pagemap.read(m.addr() + offset, 1)?;
            if now.first().and_then(|e| e.pfn()).map(|p| p >> 9) == Some(*b) {
                self.pins.push(Pin { chunk, offset });
                pinned += 1;
            } else if locked {
                lock::munlock_range(m, offset..offset + PAGE)?;
            }
        }
        self.release_unpinned(first_new)?;
        Ok(pinned)
    }

    /// Free every page of chunks from `first` on except the kept ones; drop chunks that keep
    /// nothing.
    fn release_unpinned(&mut self, first: usize) -> Result<()> {
        for idx in first..self.chunks.len() {
            let mut kept: Vec<usize> = self
                .pins
                .iter()
                .filter(|p| p.chunk == idx)
                .map(|p| p.offset)
                .collect();
            if kept.is_empty() {
                self.chunks[idx] = None;
                continue;
            }
            kept.sort_unstable();
            let Some(m) = &mut self.chunks[idx] else {
                continue;
            };
            let mut at = 0;
            for off in kept {
                free_range(m, at..off)?;
                at = off + PAGE;
            }
            free_range(m, at..m.len())?;
        }
        Ok(())
    }
}
