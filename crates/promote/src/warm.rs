//! A warm page for each collapse: the daemon faults a 2 MiB page in itself and frees it just
//! before it collapses a chunk, so that the collapse copies into memory the machine already
//! backs.
//!
//! `MADV_COLLAPSE` copies the chunk's 512 base pages into a new huge page while it holds the
//! target's memory map, and every fault of the target waits meanwhile (see [`crate::pacing`]).
//! In a virtual machine whose host backs guest memory lazily (and takes freed memory back), a
//! huge page never written since is backed page by page during that copy: here 5–10 ms a
//! collapse instead of 0.4–0.9 ms on backed memory. Faulting a huge page in first, outside
//! the target's lock, and unmapping it, puts it on this CPU's list of free pages, where the
//! collapse's own allocation, made next on the same CPU, takes it. The backing then costs the
//! daemon's time, not the target's.
//!
//! Nothing depends on it: when no huge page can be had, or the kernel gives the collapse
//! another one, the collapse goes as it would have. Once a look's collapse was refused for
//! want of memory, the daemon makes no more warm pages in that look.

use std::time::{Duration, Instant};

use hugewise_sys::mmap::{Advice, MapOptions, Mapping};

/// The bytes of one warm page: one 2 MiB chunk.
const HUGE: usize = 2 << 20;

/// Fault a 2 MiB page in and free it; how long that took. An error (no memory, THP off) is
/// not one: the collapse that follows just finds no warm page.
pub fn warm_page() -> Duration {
    let t = Instant::now();
    if let Ok(m) = Mapping::anonymous(HUGE, MapOptions::default()) {
        // Huge where the machine allows it (THP `madvise` or `always`), then written: the
        // populate faults the page in and makes the host back it.
        if m.advise(0..HUGE, Advice::HugePage).is_ok() {
            let _ = m.advise(0..HUGE, Advice::PopulateWrite);
        }
        drop(m);
    }
    t.elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident pages of this process, from `/proc/self/statm`.
    fn resident_bytes() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
        let pages: u64 = statm
            .split_whitespace()
            .nth(1)
            .and_then(|f| f.parse().ok())
            .expect("resident field");
        pages * 4096
    }

    /// The warm page is gone once it returns: the daemon's memory does not grow by it.
    #[test]
    fn a_warm_page_is_freed_when_it_returns() {
        let before = resident_bytes();
        for _ in 0..32 {
            warm_page();
        }
        let after = resident_bytes();
        assert!(
            after < before + (8 << 20),
            "32 warm pages left {} bytes resident",
            after.saturating_sub(before)
        );
    }
}
