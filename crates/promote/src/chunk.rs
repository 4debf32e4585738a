//! What each 2 MiB chunk of a process's range holds, read from the kernel: how many of its base
//! pages are mapped (MEGA's "mapped") and whether it is one huge page.
//!
//! Two ways, the fast one first: `PAGEMAP_SCAN` (Linux 6.7) returns runs of present, swapped
//! and huge-mapped pages, a few per range instead of one entry per page, and tells a PMD
//! mapping apart without root; older kernels get pagemap entries read page by page, with the
//! frames' kpageflags (root only) for huge pages.

use hugewise_sys::errno::{EINVAL, ENOTTY};
use hugewise_sys::proc::{KPageFlags, PageRun, Pid, ProcFs, ScanCategories};
use serde::{Deserialize, Serialize};

use crate::{Result, BASE_PER_HUGE, HUGE};

/// One 2 MiB chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Its first address (2 MiB aligned).
    pub addr: usize,
    /// Base pages present in memory (0..=512).
    pub mapped_pages: u16,
    /// Base pages in swap.
    pub swapped_pages: u16,
    /// Backed by one 2 MiB transparent huge page; `None` when the frames are hidden (not root).
    pub huge: Option<bool>,
}

impl Chunk {
    /// Share of its base pages present, 0..=1.
    pub fn mapped_share(&self) -> f64 {
        f64::from(self.mapped_pages) / BASE_PER_HUGE as f64
    }
}

/// Read the chunks of `[start, start + len)` of process `pid`; both must be 2 MiB aligned.
/// `kpf` is `/proc/kpageflags`, open once by the caller (root only), for kernels without
/// `PAGEMAP_SCAN`; there, without it, `huge` is `None`.
pub fn scan(
    proc: &ProcFs,
    pid: Pid,
    start: usize,
    len: usize,
    kpf: Option<&KPageFlags>,
) -> Result<Vec<Chunk>> {
    let pagemap = proc.pagemap(pid)?;
    let mut runs = Vec::new();
    match pagemap.scan(
        start,
        start + len,
        ScanCategories::PRESENT | ScanCategories::SWAPPED,
        ScanCategories::PRESENT | ScanCategories::SWAPPED | ScanCategories::HUGE,
        &mut runs,
    ) {
        Ok(()) => return Ok(from_runs(start, len, &runs)),
        // No PAGEMAP_SCAN on this kernel: read entries page by page.
        Err(e) if e.errno().is_some_and(|n| n == EINVAL || n == ENOTTY) => {}
        Err(e) => return Err(e.into()),
    }
    let mut out = Vec::with_capacity(len / HUGE);
    // Read up to 64 chunks (256 KiB of entries) at a time: few syscalls, bounded memory.
    const BATCH: usize = 64;
    let mut addr = start;
    let end = start + len;
    while addr < end {
        let n = ((end - addr) / HUGE).min(BATCH);
        let entries = pagemap.read(addr, n * BASE_PER_HUGE)?;
        for c in entries.chunks_exact(BASE_PER_HUGE) {
            let mapped = c.iter().filter(|e| e.present()).count() as u16;
            let swapped = c.iter().filter(|e| e.swapped()).count() as u16;
            let huge = match (kpf, c[0].pfn(), c[BASE_PER_HUGE - 1].pfn()) {
                _ if usize::from(mapped) != BASE_PER_HUGE => Some(false),
                (Some(k), Some(first), Some(last)) => {
                    // A 2 MiB THP is 512 frames from a 512-aligned head with the THP bit set;
                    // one flags read per chunk is enough.
                    let flags = k.read(first, 1)?;
                    Some(
                        first % BASE_PER_HUGE as u64 == 0
                            && last == first + BASE_PER_HUGE as u64 - 1
                            && flags.first().is_some_and(|f| f.thp() && f.compound_head()),
                    )
                }
                _ => None,
            };
            out.push(Chunk {
                addr,
                mapped_pages: mapped,
                swapped_pages: swapped,
                huge,
            });
            addr += HUGE;
        }
    }
    Ok(out)
}

/// Chunks of `[start, start + len)` from `PAGEMAP_SCAN`'s runs (sorted, not overlapping).
fn from_runs(start: usize, len: usize, runs: &[PageRun]) -> Vec<Chunk> {
    let n = len / HUGE;
    let mut out: Vec<Chunk> = (0..n)
        .map(|i| Chunk {
            addr: start + i * HUGE,
            mapped_pages: 0,
            swapped_pages: 0,
            huge: Some(false),
        })
        .collect();
    let mut huge_pages = vec![0u16; n];
    for r in runs {
        let mut a = r.start.max(start);
        let end = r.end.min(start + len);
        while a < end {
            let i = (a - start) / HUGE;
            let stop = end.min(start + (i + 1) * HUGE);
            let pages = ((stop - a) / 4096) as u16;
            if r.categories.has(ScanCategories::PRESENT) {
                out[i].mapped_pages += pages;
                if r.categories.has(ScanCategories::HUGE) {
                    huge_pages[i] += pages;
                }
            } else if r.categories.has(ScanCategories::SWAPPED) {
                out[i].swapped_pages += pages;
            }
            a = stop;
        }
    }
    for (c, h) in out.iter_mut().zip(huge_pages) {
        c.huge = Some(usize::from(h) == BASE_PER_HUGE);
    }
    out
}

/// Bytes in huge chunks (unknown chunks count as not huge).
pub fn huge_bytes(chunks: &[Chunk]) -> u64 {
    chunks.iter().filter(|c| c.huge == Some(true)).count() as u64 * HUGE as u64
}
