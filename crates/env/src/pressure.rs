//! Memory pressure: this process takes memory and keeps it mlocked until released, so that a
//! workload finds only what was left. The memory dies with the process, whatever kills it.

use std::time::Instant;

pub use hugewise_results::env::{PressurePages, PressureReport, PressureTarget};
use hugewise_sys::lock;
use hugewise_sys::mmap::{Advice, MapOptions, Mapping};
use hugewise_sys::proc::Pid;

use crate::host::Host;
use crate::state::{self, BLOCK_BYTES};
use crate::{Error, Result};

/// Memory held by this process.
#[derive(Debug, Default)]
pub struct Holder {
    chunks: Vec<Mapping>,
}

impl Holder {
    /// Bytes held.
    pub fn held_bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.len() as u64).sum()
    }

    /// Give back up to `bytes`, newest chunks first; returns what was given back.
    pub fn give_back(&mut self, bytes: u64) -> u64 {
        let mut done = 0;
        while done < bytes {
            match self.chunks.pop() {
                Some(c) => done += c.len() as u64,
                None => break,
            }
        }
        done
    }
}

/// The lowest safety floor accepted: below it the OOM killer, not hugewise, decides what dies.
pub const MIN_FLOOR: u64 = 256 << 20;

/// Refuse a floor under [`MIN_FLOOR`].
pub fn check_floor(floor_bytes: u64) -> Result<()> {
    if floor_bytes < MIN_FLOOR {
        return Err(Error::Invalid(format!(
            "a safety floor of {} MiB is below the minimum of {} MiB",
            floor_bytes >> 20,
            MIN_FLOOR >> 20
        )));
    }
    Ok(())
}

/// Free memory outside the buddy allocator's lists beyond which [`hand_over`] pulls it in.
pub const OUTSIDE_LISTS: u64 = 512 << 20;

/// What [`hand_over`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Listing {
    /// Bytes it added to the buddy allocator's lists.
    pub listed_bytes: u64,
    /// Seconds it took.
    pub seconds: f64,
    /// Free memory still outside the lists afterwards ([`outside_lists`]).
    pub still_outside_bytes: u64,
}

/// Memory the kernel counts free but has not yet put in its buddy allocator's lists: a guest
/// whose memory the host hands over lazily grows its zones' managed pages only when their
/// free lists run low. Fragmentation breaks blocks only in the lists, so memory outside them
/// would reach a workload later as whole 2 MiB blocks, and the level shaped would hold for a
/// part of free memory only. Taking base pages down to `floor_bytes` and giving them back
/// pulls it in. The lists do not keep all of it (on this VM 4.6 GiB was outside them again
/// two hours later), so a caller checks each time it shapes. Returns `None`
/// when under [`OUTSIDE_LISTS`] was outside them, or nothing above the floor is available.
pub fn hand_over(
    host: &Host,
    floor_bytes: u64,
    cancel: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Option<Listing>> {
    let before = state::settled(host)?;
    if outside_lists(&before) < OUTSIDE_LISTS || before.available() <= floor_bytes {
        return Ok(None);
    }
    let t0 = Instant::now();
    let (held, _) = hold(
        host,
        PressureTarget::Leave(floor_bytes),
        PressurePages::Base,
        floor_bytes,
        cancel,
        progress,
    )?;
    drop(held);
    let after = state::settled(host)?;
    Ok(Some(Listing {
        listed_bytes: after
            .buddy_free_bytes
            .saturating_sub(before.buddy_free_bytes),
        seconds: t0.elapsed().as_secs_f64(),
        still_outside_bytes: outside_lists(&after),
    }))
}

/// Free memory neither in the buddy allocator's lists nor in its per-CPU lists.
pub fn outside_lists(s: &state::MemoryState) -> u64 {
    s.mem_free_bytes
        .saturating_sub(s.buddy_free_bytes + s.pcp_free_bytes.unwrap_or(0))
}

const BASE_CHUNK: u64 = 256 << 20;
const HUGE_CHUNK: u64 = 32 << 20;

/// Take memory as `target` asks, never leaving less than `floor_bytes` available. `cancel` is
/// polled between chunks; `progress` gets (bytes held, bytes to hold).
pub fn hold(
    host: &Host,
    target: PressureTarget,
    pages: PressurePages,
    floor_bytes: u64,
    cancel: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Holder, PressureReport)> {
    host.require_real("memory pressure")?;
    host.require_root("memory pressure", "mlocked memory (CAP_IPC_LOCK)")?;
    check_floor(floor_bytes)?;
    let t0 = Instant::now();
    let before = state::measure(host)?;
    let avail = before.available();
    let (want, left) = match target {
        PressureTarget::Leave(leave) => (avail.saturating_sub(leave), leave.min(avail)),
        PressureTarget::Take(take) => (take, avail.saturating_sub(take)),
    };
    if left < floor_bytes {
        return Err(Error::Floor {
            what: match target {
                PressureTarget::Leave(b) => format!("leaving {} MiB", b >> 20),
                PressureTarget::Take(b) => format!("taking {} MiB", b >> 20),
            },
            available_mib: avail >> 20,
            left_mib: left >> 20,
            floor_mib: floor_bytes >> 20,
        });
    }
    let mut holder = Holder::default();
    let mut ran_out = false;
    let step = match pages {
        PressurePages::Base => BASE_CHUNK,
        PressurePages::WholeBlocks => HUGE_CHUNK,
    };
    loop {
        if cancel() {
            return Err(Error::Interrupted);
        }
        let held = holder.held_bytes();
        let mut need = want.saturating_sub(held);
        if let PressureTarget::Leave(leave) = target {
            // The kernel's estimate of what is available moves as page cache is reclaimed:
            // steer by it, within the floor.
            let now = state::measure(host)?.available();
            need = need.min(now.saturating_sub(leave.max(floor_bytes)));
        }
        let chunk = need.min(step) / BLOCK_BYTES * BLOCK_BYTES;
        if chunk == 0 {
            break;
        }
        let m = take_chunk(chunk as usize, pages)?;
        if pages == PressurePages::WholeBlocks && huge_bytes_of(host, &m)? < chunk {
            // Part of the chunk came from fragmented blocks: give it back and stop.
            drop(m);
            ran_out = true;
            break;
        }
        holder.chunks.push(m);
        progress(holder.held_bytes(), want);
    }
    let after = state::measure(host)?;
    let report = PressureReport {
        target,
        pages,
        floor_bytes,
        held_bytes: holder.held_bytes(),
        ran_out_of_2m_blocks: ran_out,
        before,
        after,
        seconds: t0.elapsed().as_secs_f64(),
    };
    Ok((holder, report))
}

fn take_chunk(bytes: usize, pages: PressurePages) -> Result<Mapping> {
    let m = Mapping::anonymous(bytes, MapOptions::default())?;
    m.advise(
        0..bytes,
        match pages {
            PressurePages::Base => Advice::NoHugePage,
            PressurePages::WholeBlocks => Advice::HugePage,
        },
    )?;
    m.advise(0..bytes, Advice::PopulateWrite)?;
    lock::mlock(&m)?;
    Ok(m)
}

/// Bytes of `m` backed by transparent huge pages: the frame of each 2 MiB piece's first page,
/// looked up in kpageflags (root).
pub(crate) fn huge_bytes_of(host: &Host, m: &Mapping) -> Result<u64> {
    let pagemap = host.proc.pagemap(Pid::Current)?;
    let flags = host.proc.kpageflags()?;
    let mut huge = 0;
    for off in (0..m.len()).step_by(BLOCK_BYTES as usize) {
        let e = pagemap.read(m.addr() + off, 1)?;
        if let Some(pfn) = e.first().and_then(|e| e.pfn()) {
            if flags.read(pfn, 1)?.first().is_some_and(|f| f.thp()) {
                huge += BLOCK_BYTES.min((m.len() - off) as u64);
            }
        }
    }
    Ok(huge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_memory_outside_the_lists_is_what_meminfo_counts_beyond_them() {
        // As this VM showed before anything had run: 23.3 GiB free by meminfo, 13.5 GiB in
        // the buddy lists, 0.1 GiB in per-CPU lists.
        let s = state::MemoryState {
            mem_free_bytes: 23_300 << 20,
            buddy_free_bytes: 13_500 << 20,
            pcp_free_bytes: Some(100 << 20),
            mem_available_bytes: None,
            free_2m_blocks: 0,
            unusable_bytes: 0,
            unusable_share: 0.0,
            mlocked_bytes: None,
            anon_huge_bytes: None,
            hugetlb_bytes: None,
            swap_total_bytes: None,
        };
        assert_eq!(outside_lists(&s), 9_700 << 20);
        // Lists fuller than meminfo's count (its reserves) are nothing outside.
        let full = state::MemoryState {
            mem_free_bytes: 1 << 30,
            buddy_free_bytes: 2 << 30,
            pcp_free_bytes: None,
            ..s
        };
        assert_eq!(outside_lists(&full), 0);
    }

    #[test]
    fn a_floor_too_low_is_refused() {
        assert!(check_floor(MIN_FLOOR).is_ok());
        let e = check_floor(1 << 20).expect_err("1 MiB");
        assert!(
            e.to_string().contains("below the minimum of 256 MiB"),
            "{e}"
        );
    }
}
