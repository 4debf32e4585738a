//! Anonymous mappings and the advice hugewise gives the kernel about them.
//!
//! A [`Mapping`] owns a private anonymous mapping and unmaps it on drop. Advice that leaves the
//! contents as they are ([`Advice`]) is safe to give at any time; advice that can change the
//! contents under live references ([`UncheckedAdvice`]) needs `unsafe`.

use std::ops::Range;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use crate::errno::Errno;
use crate::page_size::{align_up, PageSize};
use crate::{Error, Result};

/// `MADV_COLLAPSE` (Linux 6.1): synchronous collapse into THPs.
pub const MADV_COLLAPSE: libc::c_int = 25;

/// Advice that never changes what the memory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// `MADV_HUGEPAGE`: THP welcome here.
    HugePage,
    /// `MADV_NOHUGEPAGE`: 4 KiB pages only (also blocks khugepaged and MADV_COLLAPSE).
    NoHugePage,
    /// `MADV_COLLAPSE`: collapse into 2 MiB pages now, in the caller's context.
    Collapse,
    /// `MADV_PAGEOUT`: reclaim now (to swap for anonymous memory); contents are kept.
    PageOut,
    /// `MADV_COLD`: deactivate; contents are kept.
    Cold,
    /// `MADV_POPULATE_WRITE` (Linux 5.14): fault in writable pages now, as a write would.
    PopulateWrite,
}

impl Advice {
    /// The kernel's constant for this advice.
    pub fn raw(self) -> libc::c_int {
        match self {
            Advice::HugePage => libc::MADV_HUGEPAGE,
            Advice::NoHugePage => libc::MADV_NOHUGEPAGE,
            Advice::Collapse => MADV_COLLAPSE,
            Advice::PageOut => libc::MADV_PAGEOUT,
            Advice::Cold => libc::MADV_COLD,
            Advice::PopulateWrite => libc::MADV_POPULATE_WRITE,
        }
    }

    /// The call name used in errors, e.g. `madvise(MADV_COLLAPSE)`.
    pub fn call_name(self) -> &'static str {
        match self {
            Advice::HugePage => "madvise(MADV_HUGEPAGE)",
            Advice::NoHugePage => "madvise(MADV_NOHUGEPAGE)",
            Advice::Collapse => "madvise(MADV_COLLAPSE)",
            Advice::PageOut => "madvise(MADV_PAGEOUT)",
            Advice::Cold => "madvise(MADV_COLD)",
            Advice::PopulateWrite => "madvise(MADV_POPULATE_WRITE)",
        }
    }
}

/// Give `advice` for `range` of this process's own address space, memory that no [`Mapping`]
/// here holds (made by another part of the program). Safe for any range: advice of this type
/// never changes what memory holds, and the kernel refuses a range that is not mapped
/// (`ENOMEM`).
pub fn advise_own(range: Range<usize>, advice: Advice) -> Result<()> {
    if range.is_empty() {
        return Ok(());
    }
    // SAFETY: madvise only reads the address range; the advice never changes contents, so no
    // reference into the range, wherever it is, observes a change.
    let rc = unsafe {
        libc::madvise(
            range.start as *mut libc::c_void,
            range.end - range.start,
            advice.raw(),
        )
    };
    if rc != 0 {
        return Err(Error::last_os(advice.call_name()));
    }
    Ok(())
}

/// Advice that discards memory contents: private anonymous pages read back as zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UncheckedAdvice {
    /// `MADV_DONTNEED`: free the pages now; the next touch faults in zeroed memory.
    DontNeed,
}

/// How to create a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapOptions {
    /// Alignment of the start address in bytes (a power of two, at least 4 KiB).
    pub align: usize,
    /// Back the mapping with hugetlb pages of this size from the kernel's pool.
    pub hugetlb: Option<PageSize>,
}

impl Default for MapOptions {
    fn default() -> Self {
        MapOptions {
            align: PageSize::Size2M.bytes(),
            hugetlb: None,
        }
    }
}

/// A private anonymous mapping, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a Mapping is plain memory owned by this value; no thread-affine state is attached.
unsafe impl Send for Mapping {}
// SAFETY: shared access hands out only raw pointers and kernel advice, which the kernel
// serialises; reads and writes through the pointer are the caller's to synchronise.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map `len` bytes (rounded up to the page size in use) of zeroed anonymous memory.
    pub fn anonymous(len: usize, opts: MapOptions) -> Result<Mapping> {
        if len == 0 {
            return Err(Error::Invalid("cannot map 0 bytes".into()));
        }
        if !opts.align.is_power_of_two() || opts.align < PageSize::Size4K.bytes() {
            return Err(Error::Invalid(format!(
                "alignment {} is not a power of two of at least 4096",
                opts.align
            )));
        }
        match opts.hugetlb {
            Some(size) => Self::map_hugetlb(len, size),
            None => Self::map_aligned(len, opts.align),
        }
    }

    fn map_hugetlb(len: usize, size: PageSize) -> Result<Mapping> {
        let len = align_up(len, size.bytes());
        let shift = size.bytes().trailing_zeros() as libc::c_int;
        let flags = libc::MAP_PRIVATE
            | libc::MAP_ANONYMOUS
            | libc::MAP_HUGETLB
            | (shift << libc::MAP_HUGE_SHIFT);
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choice touches no
        // existing memory; the result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::last_os("mmap(MAP_HUGETLB)"));
        }
        Ok(Mapping {
            ptr: NonNull::new(ptr.cast()).ok_or_else(|| Error::Invalid("mmap gave null".into()))?,
            len,
        })
    }

    fn map_aligned(len: usize, align: usize) -> Result<Mapping> {
        let len = align_up(len, PageSize::Size4K.bytes());
        let slack = align - PageSize::Size4K.bytes();
        let total = len
            .checked_add(slack)
            .ok_or_else(|| Error::Invalid(format!("{len} bytes plus alignment overflows")))?;
        // SAFETY: as in map_hugetlb: a fresh anonymous mapping, result checked.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(Error::last_os("mmap"));
        }
        let start = raw as usize;
        let aligned = align_up(start, align);
        let head = aligned - start;
        let tail = total - head - len;
        // SAFETY: [start, start+head) and [aligned+len, start+total) lie inside the mapping made
        // just above, which nothing else references yet; trimming them leaves [aligned, +len).
        unsafe {
            if head > 0 && libc::munmap(raw, head) != 0 {
                return Err(Error::last_os("munmap"));
            }
            if tail > 0 && libc::munmap((aligned + len) as *mut libc::c_void, tail) != 0 {
                return Err(Error::last_os("munmap"));
            }
        }
        Ok(Mapping {
            ptr: NonNull::new(aligned as *mut u8)
                .ok_or_else(|| Error::Invalid("mmap gave null".into()))?,
            len,
        })
    }

    /// Start of the mapping.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Start address as an integer.
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a mapping has at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Refuse a range outside the mapping or not 4 KiB aligned at its start.
    pub(crate) fn check_range(&self, range: &Range<usize>) -> Result<()> {
        if range.start > range.end || range.end > self.len {
            return Err(Error::Invalid(format!(
                "range {}..{} is outside the mapping of {} bytes",
                range.start, range.end, self.len
            )));
        }
        if !range.start.is_multiple_of(PageSize::Size4K.bytes()) {
            return Err(Error::Invalid(format!(
                "range start {} is not 4 KiB aligned",
                range.start
            )));
        }
        Ok(())
    }

    /// Shorten the mapping to `new_len` bytes (rounded up to `page`), unmapping the tail.
    pub fn truncate(&mut self, new_len: usize, page: usize) -> Result<()> {
        let keep = align_up(new_len.max(1), page.max(4096));
        if keep >= self.len {
            return Ok(());
        }
        // SAFETY: [keep, len) lies inside the owned mapping and &mut self excludes references
        // into it; afterwards self.len no longer covers it.
        let rc = unsafe { libc::munmap(self.as_ptr().add(keep).cast(), self.len - keep) };
        if rc != 0 {
            return Err(Error::last_os("munmap"));
        }
        self.len = keep;
        Ok(())
    }

    /// The whole mapping as bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is readable, `len` bytes long, zero-initialised by the kernel and
        // owned by self; any byte pattern is a valid u8. Mutation needs &mut self.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len) }
    }

    /// The whole mapping as mutable bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in as_slice; &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.as_ptr(), self.len) }
    }

    /// Fault in every page by writing a zero to its first byte, `page` bytes apart (for kernels
    /// without `MADV_POPULATE_WRITE`). Contents stay as they are only while they are zero, so
    /// this is meant for fresh mappings.
    pub fn touch_pages(&mut self, page: usize) {
        for off in (0..self.len).step_by(page.max(1)) {
            // SAFETY: off < len, inside the owned mapping; &mut self excludes every other
            // reference; the byte is written back unchanged.
            unsafe {
                let p = self.as_ptr().add(off);
                p.write_volatile(p.read_volatile());
            }
        }
    }

    /// Give `advice` for the byte range `range` (offsets into the mapping).
    pub fn advise(&self, range: Range<usize>, advice: Advice) -> Result<()> {
        self.check_range(&range)?;
        if range.is_empty() {
            return Ok(());
        }
        // SAFETY: the range lies within this mapping (checked above) and the advice never
        // changes memory contents.
        let rc = unsafe {
            libc::madvise(
                self.as_ptr().add(range.start).cast(),
                range.end - range.start,
                advice.raw(),
            )
        };
        if rc != 0 {
            return Err(Error::last_os(advice.call_name()));
        }
        Ok(())
    }

    /// Give advice that may discard contents.
    ///
    /// # Safety
    /// No live reference may point into `range`: after `DontNeed` the memory reads as zeros.
    pub unsafe fn advise_unchecked(
        &self,
        range: Range<usize>,
        advice: UncheckedAdvice,
    ) -> Result<()> {
        self.check_range(&range)?;
        let UncheckedAdvice::DontNeed = advice;
        // SAFETY: the range lies within this mapping; the caller guarantees no reference
        // observes the contents being dropped.
        let rc = unsafe {
            libc::madvise(
                self.as_ptr().add(range.start).cast(),
                range.end - range.start,
                libc::MADV_DONTNEED,
            )
        };
        if rc != 0 {
            return Err(Error::last_os("madvise(MADV_DONTNEED)"));
        }
        Ok(())
    }

    /// Free the pages of `range` now (`MADV_DONTNEED`); they read as zeros afterwards. Safe
    /// because `&mut self` rules out every reference into the mapping.
    pub fn discard(&mut self, range: Range<usize>) -> Result<()> {
        // SAFETY: &mut self excludes every reference into the mapping, so no one observes the
        // contents being dropped.
        unsafe { self.advise_unchecked(range, UncheckedAdvice::DontNeed) }
    }

    /// Re-back `range` with 4 KiB pages and keep its contents: copy each 2 MiB piece out, free
    /// it (`MADV_DONTNEED`), mark it `MADV_NOHUGEPAGE` so neither the next fault nor khugepaged
    /// makes it huge again, and copy it back. This is how hugewise splits huge pages where
    /// debugfs `split_huge_pages` is not writable (kernel lockdown).
    pub fn rebuild_base_pages(&mut self, range: Range<usize>) -> Result<()> {
        self.check_range(&range)?;
        self.advise(range.clone(), Advice::NoHugePage)?;
        let piece = PageSize::Size2M.bytes();
        let mut buf = vec![0u8; piece];
        let mut at = range.start;
        while at < range.end {
            let end = (at + piece).min(range.end);
            let n = end - at;
            buf[..n].copy_from_slice(&self.as_slice()[at..end]);
            // SAFETY: &mut self excludes every reference into the mapping, and the contents
            // dropped here are written back just below.
            unsafe { self.advise_unchecked(at..end, UncheckedAdvice::DontNeed)? };
            self.as_mut_slice()[at..end].copy_from_slice(&buf[..n]);
            at = end;
        }
        Ok(())
    }

    /// `MADV_COLLAPSE` on `range`, timed. The kernel's refusal is returned as the errno, not as
    /// an error: a failed collapse is a result worth recording.
    pub fn collapse(&self, range: Range<usize>) -> Result<(Duration, Option<Errno>)> {
        let t0 = Instant::now();
        match self.advise(range, Advice::Collapse) {
            Ok(()) => Ok((t0.elapsed(), None)),
            Err(Error::Syscall { errno, .. }) => Ok((t0.elapsed(), Some(errno))),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe exactly the mapping this value owns; after drop nothing can
        // reach it.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_mapping_is_aligned_and_zeroed() {
        let m = Mapping::anonymous(3 << 20, MapOptions::default()).expect("mmap");
        assert_eq!(m.addr() % (2 << 20), 0);
        assert_eq!(m.len(), 3 << 20);
        // SAFETY: the mapping is 3 MiB long and owned by this test.
        let first = unsafe { *m.as_ptr().add((3 << 20) - 1) };
        assert_eq!(first, 0);
    }

    #[test]
    fn refuses_zero_and_bad_alignment() {
        assert!(Mapping::anonymous(0, MapOptions::default()).is_err());
        let bad = MapOptions {
            align: 3000,
            hugetlb: None,
        };
        assert!(Mapping::anonymous(4096, bad).is_err());
    }

    #[test]
    fn advice_outside_is_refused() {
        let m = Mapping::anonymous(4096, MapOptions::default()).expect("mmap");
        assert!(m.advise(0..8192, Advice::HugePage).is_err());
        assert!(m.advise(0..4096, Advice::NoHugePage).is_ok());
    }

    #[test]
    fn dontneed_zeroes() {
        let m = Mapping::anonymous(4096, MapOptions::default()).expect("mmap");
        // SAFETY: one page owned by this test; no reference outlives the writes and reads.
        unsafe {
            *m.as_ptr() = 7;
            m.advise_unchecked(0..4096, UncheckedAdvice::DontNeed)
                .expect("dontneed");
            assert_eq!(*m.as_ptr(), 0);
        }
    }
}
