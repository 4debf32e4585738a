//! `/proc/<pid>/pagemap` (per virtual page: present, swapped, frame) and `/proc/kpageflags`
//! (per physical frame: THP, compound head/tail, hugetlb).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use procfs_core::process::MemoryPageFlags as Pm;
use procfs_core::PhysicalPageFlags as Kpf;

use crate::{Error, Result};

/// One 64-bit pagemap entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PagemapEntry(pub u64);

impl PagemapEntry {
    /// The page is in RAM.
    pub fn present(self) -> bool {
        self.0 & Pm::PRESENT.bits() != 0
    }

    /// The page is in swap.
    pub fn swapped(self) -> bool {
        self.0 & Pm::SWAP.bits() != 0
    }

    /// The physical frame number; `None` when not present or hidden (only root sees frames).
    pub fn pfn(self) -> Option<u64> {
        let pfn = self.0 & Pm::PFN.bits();
        (self.present() && pfn != 0).then_some(pfn)
    }

    /// Soft-dirty bit (written since the last clear_refs 4).
    pub fn soft_dirty(self) -> bool {
        self.0 & Pm::SOFT_DIRTY.bits() != 0
    }
}

/// Flags of one physical frame from `/proc/kpageflags`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageFlags(pub u64);

impl PageFlags {
    fn has(self, f: Kpf) -> bool {
        self.0 & f.bits() != 0
    }

    /// Part of a transparent huge page (of any size, PMD or mTHP).
    pub fn thp(self) -> bool {
        self.has(Kpf::THP)
    }

    /// Part of a hugetlb page.
    pub fn hugetlb(self) -> bool {
        self.has(Kpf::HUGE)
    }

    /// First frame of a compound page.
    pub fn compound_head(self) -> bool {
        self.has(Kpf::COMPOUND_HEAD)
    }

    /// Any frame of a compound page but the first.
    pub fn compound_tail(self) -> bool {
        self.has(Kpf::COMPOUND_TAIL)
    }

    /// The shared zero page.
    pub fn zero_page(self) -> bool {
        self.has(Kpf::ZERO_PAGE)
    }

    /// Free in the buddy allocator.
    pub fn buddy(self) -> bool {
        self.has(Kpf::BUDDY)
    }

    /// Locked in memory by mlock (unevictable).
    pub fn unevictable(self) -> bool {
        self.has(Kpf::UNEVICTABLE)
    }
}

fn read_u64s(file: &File, path: &Path, offset: u64, count: usize) -> Result<Vec<u64>> {
    let mut buf = vec![0u8; count * 8];
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => {
                return Err(Error::parse(
                    path,
                    0,
                    format!(
                        "ended at byte {} of {}",
                        offset + done as u64,
                        offset + buf.len() as u64
                    ),
                ))
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(buf
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

/// An open pagemap file.
#[derive(Debug)]
pub struct PageMap {
    file: File,
    path: PathBuf,
}

impl PageMap {
    pub(super) fn open(path: PathBuf) -> Result<PageMap> {
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        Ok(PageMap { file, path })
    }

    /// Entries for `pages` 4 KiB pages from virtual address `start` (4 KiB aligned).
    pub fn read(&self, start: usize, pages: usize) -> Result<Vec<PagemapEntry>> {
        if !start.is_multiple_of(4096) {
            return Err(Error::Invalid(format!(
                "address {start:#x} is not 4 KiB aligned"
            )));
        }
        let raw = read_u64s(&self.file, &self.path, (start / 4096) as u64 * 8, pages)?;
        Ok(raw.into_iter().map(PagemapEntry).collect())
    }
}

/// An open kpageflags file.
#[derive(Debug)]
pub struct KPageFlags {
    file: File,
    path: PathBuf,
}

impl KPageFlags {
    pub(super) fn open(path: PathBuf) -> Result<KPageFlags> {
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        Ok(KPageFlags { file, path })
    }

    /// Flags of `count` consecutive frames from `pfn`.
    pub fn read(&self, pfn: u64, count: usize) -> Result<Vec<PageFlags>> {
        let raw = read_u64s(&self.file, &self.path, pfn * 8, count)?;
        Ok(raw.into_iter().map(PageFlags).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_bits() {
        let e = PagemapEntry((1 << 63) | (1 << 55) | 0x1234);
        assert!(e.present() && !e.swapped() && e.soft_dirty());
        assert_eq!(e.pfn(), Some(0x1234));
        // Present but frame hidden (not root): no pfn.
        assert_eq!(PagemapEntry(1 << 63).pfn(), None);
        assert!(PagemapEntry(1 << 62).swapped());
        let f = PageFlags((1 << 22) | (1 << 15));
        assert!(f.thp() && f.compound_head() && !f.compound_tail() && !f.hugetlb());
    }

    #[test]
    fn reads_recorded_files_and_names_truncation() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("pagemap");
        let mut bytes = Vec::new();
        for v in [0u64, (1 << 63) | 7, 1 << 62] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        std::fs::write(&p, &bytes).expect("write");
        let pm = PageMap::open(p).expect("open");
        let e = pm.read(0, 3).expect("read");
        assert!(!e[0].present() && e[1].pfn() == Some(7) && e[2].swapped());
        let err = pm.read(4096, 3).expect_err("short");
        assert!(err.to_string().contains("ended at byte 24"), "{err}");
        assert!(pm.read(100, 1).is_err());
    }
}
