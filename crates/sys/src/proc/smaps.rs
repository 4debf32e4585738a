//! `/proc/<pid>/smaps` and `smaps_rollup`: per-mapping page statistics.

use std::path::Path;

use serde::Serialize;

use crate::{Error, Result};

/// One mapping (VMA) with the counters hugewise needs, in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Vma {
    /// First address.
    pub start: usize,
    /// One past the last address.
    pub end: usize,
    /// Page size the kernel maps this VMA with (4 KiB, or the hugetlb size).
    pub kernel_page_bytes: u64,
    /// Counters of this mapping.
    pub totals: VmaTotals,
    /// `hg` in VmFlags: MADV_HUGEPAGE was given.
    pub advised_huge: bool,
    /// `nh` in VmFlags: MADV_NOHUGEPAGE was given.
    pub advised_no_huge: bool,
    /// `lo` in VmFlags: the mapping is locked (`mlock`, or `mlock2` on fault), so each of its
    /// resident pages is locked.
    pub locked: bool,
    /// `THPeligible: 1`, when the kernel reports it.
    pub thp_eligible: Option<bool>,
}

/// Page counters of a mapping or of a whole process, in bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VmaTotals {
    /// Resident memory.
    pub rss_bytes: u64,
    /// Anonymous memory mapped by PMD-sized THPs.
    pub anon_huge_bytes: u64,
    /// Memory swapped out.
    pub swap_bytes: u64,
    /// Private plus shared hugetlb memory.
    pub hugetlb_bytes: u64,
    /// Locked memory.
    pub locked_bytes: u64,
    /// Memory whose pages were accessed since the last `clear_refs` (or since they were
    /// mapped): the accessed bits of the page tables, summed.
    pub referenced_bytes: u64,
}

fn totals(map: &std::collections::HashMap<String, u64>) -> VmaTotals {
    let get = |k: &str| map.get(k).copied().unwrap_or(0);
    VmaTotals {
        rss_bytes: get("Rss"),
        anon_huge_bytes: get("AnonHugePages"),
        swap_bytes: get("Swap"),
        hugetlb_bytes: get("Private_Hugetlb") + get("Shared_Hugetlb"),
        locked_bytes: get("Locked"),
        referenced_bytes: get("Referenced"),
    }
}

pub(super) fn parse(path: &Path, text: &str) -> Result<Vec<Vma>> {
    let maps =
        <procfs_core::process::MemoryMaps as procfs_core::FromRead>::from_read(text.as_bytes())
            .map_err(|e| Error::parse(path, 0, e.to_string()))?;
    Ok(maps
        .0
        .into_iter()
        .map(|m| {
            let ext = &m.extension;
            let flags = ext.vm_flags;
            Vma {
                start: m.address.0 as usize,
                end: m.address.1 as usize,
                kernel_page_bytes: ext.map.get("KernelPageSize").copied().unwrap_or(4096),
                totals: totals(&ext.map),
                advised_huge: flags.contains(procfs_core::process::VmFlags::HG),
                advised_no_huge: flags.contains(procfs_core::process::VmFlags::NH),
                locked: flags.contains(procfs_core::process::VmFlags::LO),
                thp_eligible: ext.map.get("THPeligible").map(|v| *v != 0),
            }
        })
        .collect())
}

pub(super) fn parse_rollup(path: &Path, text: &str) -> Result<VmaTotals> {
    let r =
        <procfs_core::process::SmapsRollup as procfs_core::FromRead>::from_read(text.as_bytes())
            .map_err(|e| Error::parse(path, 0, e.to_string()))?;
    let m = r
        .memory_map_rollup
        .0
        .first()
        .ok_or_else(|| Error::parse(path, 0, "no rollup entry"))?;
    Ok(totals(&m.extension.map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_recorded_smaps_with_thp_and_hugetlb() {
        let text = include_str!("../../tests/samples/smaps-thp.txt");
        let v = parse(Path::new("smaps"), text).expect("parse");
        assert_eq!(v.len(), 3);
        // Recorded order: a 4 MiB hugetlb mapping, an 8 MiB NOHUGEPAGE one, a 64 MiB THP one.
        assert_eq!(v[0].kernel_page_bytes, 2 << 20);
        assert_eq!(v[0].totals.hugetlb_bytes, 4 << 20);
        assert_eq!(
            (v[0].totals.referenced_bytes, v[1].totals.referenced_bytes),
            (0, 8 << 20)
        );
        assert!(v[1].advised_no_huge && !v[1].advised_huge);
        assert_eq!(v[1].totals.anon_huge_bytes, 0);
        assert_eq!(v[1].thp_eligible, Some(false));
        assert!(v[2].advised_huge);
        assert_eq!(v[2].totals.anon_huge_bytes, 60 << 20);
        assert_eq!(v[2].thp_eligible, Some(true));
    }

    #[test]
    fn a_locked_mapping_says_so() {
        let text = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n\
                    Size:               4096 kB\n\
                    Rss:                2048 kB\n\
                    Locked:             2048 kB\n\
                    VmFlags: rd wr mr mw me lo ac \n\
                    7f0000400000-7f0000800000 rw-p 00000000 00:00 0 \n\
                    Size:               4096 kB\n\
                    Rss:                4096 kB\n\
                    Locked:                0 kB\n\
                    VmFlags: rd wr mr mw me ac \n";
        let v = parse(Path::new("smaps"), text).expect("parse");
        assert_eq!(
            v.iter()
                .map(|m| (m.locked, m.totals.locked_bytes))
                .collect::<Vec<_>>(),
            [(true, 2 << 20), (false, 0)]
        );
    }

    #[test]
    fn rollup() {
        let text = include_str!("../../tests/samples/smaps_rollup.txt");
        let t = parse_rollup(Path::new("smaps_rollup"), text).expect("parse");
        assert_eq!(t.rss_bytes, 1756 * 1024);
        assert_eq!(t.anon_huge_bytes, 0);
    }
}
