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

/// What `PAGEMAP_SCAN` can say of a page (Linux 6.7, `PAGE_IS_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanCategories(pub u64);

impl ScanCategories {
    /// The page is in memory.
    pub const PRESENT: ScanCategories = ScanCategories(1 << 3);
    /// The page is in swap.
    pub const SWAPPED: ScanCategories = ScanCategories(1 << 4);
    /// The page is mapped by a huge page-table entry (a PMD-mapped THP, or hugetlb).
    pub const HUGE: ScanCategories = ScanCategories(1 << 6);

    /// Whether every category of `other` is set here.
    pub fn has(self, other: ScanCategories) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for ScanCategories {
    type Output = ScanCategories;
    fn bitor(self, o: ScanCategories) -> ScanCategories {
        ScanCategories(self.0 | o.0)
    }
}

/// A run of pages with the same categories, as `PAGEMAP_SCAN` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRun {
    /// First address.
    pub start: usize,
    /// One past the last address.
    pub end: usize,
    /// The categories asked for that the run has.
    pub categories: ScanCategories,
}

// The kernel's `struct pm_scan_arg` and `struct page_region` (include/uapi/linux/fs.h).
#[repr(C)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct PageRegion {
    start: u64,
    end: u64,
    categories: u64,
}

/// `_IOWR('f', 16, struct pm_scan_arg)`.
const PAGEMAP_SCAN: libc::c_ulong = (3 << 30)
    | ((std::mem::size_of::<PmScanArg>() as libc::c_ulong) << 16)
    | ((b'f' as libc::c_ulong) << 8)
    | 16;

impl PageMap {
    /// The runs of pages in `[start, end)` that have any of `any_of`, each with those of
    /// `report` it has, from one `PAGEMAP_SCAN` ioctl per batch of runs (Linux 6.7): the kernel
    /// walks the page tables and returns a few runs instead of one entry per page, and needs no
    /// root to tell a huge mapping. Fails with `ENOTTY` or `EINVAL` on older kernels.
    pub fn scan(
        &self,
        start: usize,
        end: usize,
        any_of: ScanCategories,
        report: ScanCategories,
        out: &mut Vec<PageRun>,
    ) -> Result<()> {
        let mut buf = vec![PageRegion::default(); 512];
        let mut at = start as u64;
        while at < end as u64 {
            let mut arg = PmScanArg {
                size: std::mem::size_of::<PmScanArg>() as u64,
                flags: 0,
                start: at,
                end: end as u64,
                walk_end: 0,
                vec: buf.as_mut_ptr() as u64,
                vec_len: buf.len() as u64,
                max_pages: 0,
                category_inverted: 0,
                category_mask: 0,
                category_anyof_mask: any_of.0,
                return_mask: report.0,
            };
            // SAFETY: arg is a valid pm_scan_arg whose vec points at buf, writable for vec_len
            // page_region structs that outlive the call; the kernel writes at most that many and
            // updates walk_end; the fd is an open pagemap file.
            let n = unsafe {
                libc::ioctl(
                    std::os::fd::AsRawFd::as_raw_fd(&self.file),
                    PAGEMAP_SCAN as _,
                    &mut arg as *mut PmScanArg,
                )
            };
            if n < 0 {
                return Err(Error::Syscall {
                    call: "ioctl(PAGEMAP_SCAN)",
                    errno: crate::errno::Errno::last(),
                });
            }
            out.extend(buf[..n as usize].iter().map(|r| PageRun {
                start: r.start as usize,
                end: r.end as usize,
                categories: ScanCategories(r.categories),
            }));
            if arg.walk_end <= at {
                break;
            }
            at = arg.walk_end;
        }
        Ok(())
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
    fn scan_reports_present_and_huge_runs_of_this_process() {
        use crate::mmap::{MapOptions, Mapping};
        let two_m = 2 << 20;
        let mut m = Mapping::anonymous(4 * two_m, MapOptions::default()).expect("map");
        // Touch chunk 0 fully and one page of chunk 2; collapse chunk 0 when THP allows it.
        m.as_mut_slice()[..two_m].fill(1);
        m.as_mut_slice()[2 * two_m] = 1;
        let collapsed = m.collapse(0..two_m).is_ok_and(|(_, e)| e.is_none());
        let pm = crate::proc::ProcFs::default()
            .pagemap(crate::proc::Pid::Current)
            .expect("pagemap");
        let mut runs = Vec::new();
        match pm.scan(
            m.addr(),
            m.addr() + m.len(),
            ScanCategories::PRESENT,
            ScanCategories::PRESENT | ScanCategories::HUGE,
            &mut runs,
        ) {
            Ok(()) => {}
            Err(e) if matches!(e.errno(), Some(n) if n.0 == libc::ENOTTY || n.0 == libc::EINVAL) => {
                crate::testing::skip("no PAGEMAP_SCAN here");
                return;
            }
            Err(e) => panic!("{e}"),
        }
        let present: usize = runs.iter().map(|r| r.end - r.start).sum();
        assert_eq!(present, two_m + 4096, "{runs:?}");
        assert_eq!(
            runs.last().map(|r| (r.start, r.end)),
            Some((m.addr() + 2 * two_m, m.addr() + 2 * two_m + 4096))
        );
        if collapsed {
            assert!(runs[0].categories.has(ScanCategories::HUGE), "{runs:?}");
        }
        assert!(!runs
            .last()
            .is_some_and(|r| r.categories.has(ScanCategories::HUGE)));
    }

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
