//! What each 2 MiB chunk of a process's range holds, read from the kernel: how many of its base
//! pages are mapped (pagemap's present bits: MEGA's "mapped") and whether it is one huge page
//! (the frames' kpageflags).

use hugewise_sys::proc::{KPageFlags, Pid, ProcFs};
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
/// `kpf` is `/proc/kpageflags`, open once by the caller (root only); without it `huge` is
/// `None`.
pub fn scan(
    proc: &ProcFs,
    pid: Pid,
    start: usize,
    len: usize,
    kpf: Option<&KPageFlags>,
) -> Result<Vec<Chunk>> {
    let pagemap = proc.pagemap(pid)?;
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

/// Bytes in huge chunks (unknown chunks count as not huge).
pub fn huge_bytes(chunks: &[Chunk]) -> u64 {
    chunks.iter().filter(|c| c.huge == Some(true)).count() as u64 * HUGE as u64
}
