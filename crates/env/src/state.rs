//! The memory state of the machine as the kernel reports it: free memory, free 2 MiB blocks,
//! and the share of free memory that cannot serve a 2 MiB page (the fragmentation level).

pub use hugewise_results::env::MemoryState;

use crate::host::Host;
use crate::Result;

/// Order of a 2 MiB block in the buddy allocator (2^9 pages of 4 KiB).
pub const ORDER_2M: usize = 9;
const PAGE: u64 = 4096;
/// Bytes in a 2 MiB block.
pub const BLOCK_BYTES: u64 = PAGE << ORDER_2M;

/// Read meminfo and buddyinfo now.
pub fn measure(host: &Host) -> Result<MemoryState> {
    let mi = host.proc.meminfo()?;
    let zones = host.proc.buddyinfo()?;
    let free = hugewise_sys::proc::FreeAtOrder::of(&zones, None, ORDER_2M);
    let blocks = free.blocks;
    let buddy_free = free.free_pages * PAGE;
    let unusable = free.unusable_pages() * PAGE;
    Ok(MemoryState {
        mem_free_bytes: mi.free_bytes,
        mem_available_bytes: mi.available_bytes,
        buddy_free_bytes: buddy_free,
        free_2m_blocks: blocks,
        unusable_bytes: unusable,
        unusable_share: free.unusable_index(),
        pcp_free_bytes: host.proc.pcp_pages().ok().map(|p| p * PAGE),
        mlocked_bytes: mi.mlocked_bytes,
        anon_huge_bytes: mi.anon_huge_bytes,
        hugetlb_bytes: mi.hugetlb_bytes,
        swap_total_bytes: mi.swap_total_bytes,
    })
}

/// Push the free pages parked in per-CPU lists back into the buddy allocator, where they merge
/// into larger blocks and show in buddyinfo. Freeing a lot at once parks up to about 1 GiB
/// there (the lists' limits grow with the frees), which would hide the effect being measured.
///
/// Each write to `/proc/sys/vm/stat_refresh` decays every list's limit one step and frees the
/// excess; the write changes no setting. Stops once the lists no longer shrink. The lists keep
/// their minimum (a few hundred pages per CPU, the most recently freed): a short churn (take 8
/// MiB of 4 KiB pages, which come from the lists first, and free them in order) pushes those out
/// too. Best effort.
pub fn settle(host: &Host) {
    if host.is_real() {
        churn();
    }
    let mut last = host.proc.pcp_pages().unwrap_or(0);
    for _ in 0..64 {
        for _ in 0..8 {
            if host.proc.trigger("sys/vm/stat_refresh", "1").is_err() && !host.is_real() {
                return;
            }
        }
        let now = host.proc.pcp_pages().unwrap_or(0);
        // Under 1 MiB gained in 8 steps: the lists are at their floor.
        if last.saturating_sub(now) < 256 {
            return;
        }
        last = now;
    }
}

fn churn() {
    use hugewise_sys::mmap::{Advice, MapOptions, Mapping};
    let Ok(m) = Mapping::anonymous(8 << 20, MapOptions::default()) else {
        return;
    };
    let _ = m.advise(0..m.len(), Advice::NoHugePage);
    let _ = m.advise(0..m.len(), Advice::PopulateWrite);
}

/// [`settle`], then [`measure`].
pub fn settled(host: &Host) -> Result<MemoryState> {
    settle(host);
    measure(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_from_recorded_buddyinfo() {
        let dir = tempfile::tempdir().expect("tmp");
        let proc = dir.path().join("proc");
        std::fs::create_dir_all(&proc).expect("mkdir");
        // 512 free single pages (2 MiB unusable) and one free 4 MiB block (2 blocks usable).
        std::fs::write(
            proc.join("buddyinfo"),
            "Node 0, zone   Normal    512 0 0 0 0 0 0 0 0 0 1\n",
        )
        .expect("write");
        std::fs::write(
            proc.join("meminfo"),
            include_str!("../../sys/tests/samples/meminfo-6.18.txt"),
        )
        .expect("write");
        let host = Host::fake(&proc, &dir.path().join("sys"), dir.path());
        let s = measure(&host).expect("measure");
        assert_eq!(s.buddy_free_bytes, 6 << 20);
        assert_eq!(s.free_2m_blocks, 2);
        assert_eq!(s.unusable_bytes, 2 << 20);
        assert!((s.unusable_share - 1.0 / 3.0).abs() < 1e-9);
    }
}
