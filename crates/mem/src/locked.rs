//! Bytes of a range of this process locked in memory, read from the kernel.
//!
//! smaps gives `Locked` per mapping (VMA), and a region is not always a mapping of its own:
//! the kernel merges two adjacent anonymous mappings with the same flags into one VMA, so two
//! regions both locked with the same page policy can share a VMA that crosses both bounds.
//! A VMA wholly inside the range counts its `Locked`; a locked VMA crossing a bound counts
//! the overlap's resident pages, read from pagemap (every resident page of a locked mapping
//! is locked, and none of them is in swap). A page only read, mapped to the shared zero page,
//! counts there and not in `Locked`: the overlap can read high, never low.

use hugewise_sys::proc::{Pid, ProcFs, Vma};
use hugewise_sys::PageSize;

const PAGE: usize = PageSize::Size4K.bytes();

/// Locked bytes of `[start, end)` of this process.
pub(crate) fn read(proc: &ProcFs, start: usize, end: usize) -> hugewise_sys::Result<u64> {
    let vmas = proc.smaps(Pid::Current)?;
    // Opened only for a mapping that crosses a bound, which is rare.
    let mut pagemap = None;
    sum(&vmas, start, end, |lo, hi| {
        let map = match &mut pagemap {
            Some(m) => m,
            None => pagemap.insert(proc.pagemap(Pid::Current)?),
        };
        let entries = map.read(lo, (hi - lo).div_ceil(PAGE))?;
        Ok((entries.iter().filter(|e| e.present()).count() * PAGE) as u64)
    })
}

/// The sum over `vmas` for `[start, end)`; `resident(lo, hi)` gives the resident bytes of a
/// page-aligned part of a mapping.
fn sum(
    vmas: &[Vma],
    start: usize,
    end: usize,
    mut resident: impl FnMut(usize, usize) -> hugewise_sys::Result<u64>,
) -> hugewise_sys::Result<u64> {
    let mut total = 0;
    for v in vmas {
        let (lo, hi) = (v.start.max(start), v.end.min(end));
        if lo >= hi {
            continue;
        }
        total += if v.start >= start && v.end <= end {
            v.totals.locked_bytes
        } else if v.locked {
            resident(lo, hi)?
        } else {
            0
        };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_sys::proc::VmaTotals;

    const MIB: usize = 1 << 20;

    fn vma(start: usize, end: usize, locked: bool, locked_bytes: u64) -> Vma {
        Vma {
            start,
            end,
            kernel_page_bytes: 4096,
            totals: VmaTotals {
                locked_bytes,
                ..VmaTotals::default()
            },
            advised_huge: false,
            advised_no_huge: true,
            locked,
            thp_eligible: Some(false),
        }
    }

    #[test]
    fn a_merged_locked_mapping_counts_its_resident_overlap() {
        // Two 4 MiB regions locked alike, merged by the kernel into one 8 MiB VMA, fully
        // resident, and an unlocked mapping after them; the second range asked for, [4, 12)
        // MiB, holds half of the merged VMA and all of the unlocked one (its `Locked`, 0).
        let vmas = [
            vma(0, 8 * MIB, true, 8 << 20),
            vma(8 * MIB, 12 * MIB, false, 0),
        ];
        let mut asked = Vec::new();
        let mut resident = |lo: usize, hi: usize| {
            asked.push((lo, hi));
            Ok((hi - lo) as u64)
        };
        assert_eq!(sum(&vmas, 0, 4 * MIB, &mut resident).expect("sum"), 4 << 20);
        assert_eq!(
            sum(&vmas, 4 * MIB, 12 * MIB, &mut resident).expect("sum"),
            4 << 20
        );
        assert_eq!(asked, [(0, 4 * MIB), (4 * MIB, 8 * MIB)]);
        // A VMA wholly inside counts its own `Locked`, without a pagemap read.
        let inside = [vma(MIB, 3 * MIB, true, 1 << 20)];
        let never = |_: usize, _: usize| -> hugewise_sys::Result<u64> {
            unreachable!("no pagemap read for a VMA inside the range")
        };
        assert_eq!(sum(&inside, 0, 4 * MIB, never).expect("sum"), 1 << 20);
    }

    #[test]
    fn a_failed_pagemap_read_is_an_error_not_zero() {
        let vmas = [vma(0, 8 * MIB, true, 8 << 20)];
        let failing = |_: usize, _: usize| Err(hugewise_sys::Error::Invalid("pagemap gone".into()));
        assert!(sum(&vmas, 0, 4 * MIB, failing).is_err());
    }
}
