//! What backs a range of virtual memory, read from the kernel, never assumed.
//!
//! Precise source: `/proc/self/pagemap` gives each 4 KiB page's frame, `/proc/kpageflags` each
//! frame's THP and hugetlb bits, and the compound head/tail bits give the size of the folio a
//! page belongs to. Without root the frames are hidden, and `/proc/self/smaps` gives per-mapping
//! totals instead (PMD-mapped THP only; mTHP folios count as 4 KiB there).

use std::collections::BTreeMap;

pub use hugewise_results::backing::{Backing, BackingSource};
use hugewise_sys::proc::{PageFlags, Pid, ProcFs};
use hugewise_sys::PageSize;

const PAGE: u64 = 4096;
const PMD_PAGES: u64 = 512;

fn empty(source: BackingSource, total_bytes: u64) -> Backing {
    Backing {
        source,
        total_bytes,
        base_bytes: 0,
        thp_2m_bytes: 0,
        mthp_bytes: BTreeMap::new(),
        hugetlb_bytes: 0,
        not_present_bytes: 0,
        swapped_bytes: 0,
        huge_chunks: Vec::new(),
        approximate: false,
    }
}

/// Read the backing of `[start, start+len)` of this process: pagemap when frames are visible,
/// smaps otherwise. `hugetlb` is the page size when the range is a hugetlb mapping.
pub fn read(
    proc: &ProcFs,
    start: usize,
    len: usize,
    hugetlb: Option<PageSize>,
) -> hugewise_sys::Result<Backing> {
    match read_pagemap(proc, start, len)? {
        Some(b) => Ok(b),
        None => read_smaps(proc, start, len, hugetlb),
    }
}

/// A window of frame flags, aligned to 2 MiB of physical memory so that every folio of up to
/// 2 MiB lies wholly inside it.
struct Window {
    first_pfn: u64,
    flags: Vec<PageFlags>,
    folio_pages: Vec<u32>,
}

impl Window {
    fn new(first_pfn: u64, flags: Vec<PageFlags>) -> Window {
        let mut folio_pages = vec![1u32; flags.len()];
        let mut i = 0;
        while i < flags.len() {
            if flags[i].compound_head() {
                let mut j = i + 1;
                while j < flags.len() && flags[j].compound_tail() {
                    j += 1;
                }
                let n = (j - i) as u32;
                folio_pages[i..j].iter_mut().for_each(|x| *x = n);
                i = j;
            } else {
                i += 1;
            }
        }
        Window {
            first_pfn,
            flags,
            folio_pages,
        }
    }
}

fn read_pagemap(proc: &ProcFs, start: usize, len: usize) -> hugewise_sys::Result<Option<Backing>> {
    let pages = len.div_ceil(PAGE as usize);
    let entries = proc.pagemap(Pid::Current)?.read(start, pages)?;
    let any_hidden = entries.iter().any(|e| e.present() && e.pfn().is_none());
    if any_hidden {
        return Ok(None);
    }
    let kpf = match proc.kpageflags() {
        Ok(k) => k,
        Err(_) => return Ok(None),
    };
    // Frames to look up, grouped into 2 MiB-aligned physical windows read in one call each.
    let mut pfns: Vec<u64> = entries.iter().filter_map(|e| e.pfn()).collect();
    pfns.sort_unstable();
    pfns.dedup();
    let mut windows: Vec<Window> = Vec::new();
    let mut i = 0;
    while i < pfns.len() {
        let lo = pfns[i] / PMD_PAGES * PMD_PAGES;
        let mut hi = (pfns[i] / PMD_PAGES + 1) * PMD_PAGES;
        while i < pfns.len() && pfns[i] < hi + PMD_PAGES {
            hi = (pfns[i] / PMD_PAGES + 1) * PMD_PAGES;
            i += 1;
        }
        windows.push(Window::new(lo, kpf.read(lo, (hi - lo) as usize)?));
    }
    let lookup = |pfn: u64| -> (PageFlags, u32) {
        let w = windows.partition_point(|w| w.first_pfn <= pfn) - 1;
        let k = (pfn - windows[w].first_pfn) as usize;
        (windows[w].flags[k], windows[w].folio_pages[k])
    };

    let mut b = empty(BackingSource::Pagemap, len as u64);
    let mut chunk_huge = vec![0u32; pages.div_ceil(PMD_PAGES as usize)];
    for (i, e) in entries.iter().enumerate() {
        let Some(pfn) = e.pfn() else {
            if e.swapped() {
                b.swapped_bytes += PAGE;
            } else {
                b.not_present_bytes += PAGE;
            }
            continue;
        };
        let (flags, folio) = lookup(pfn);
        if flags.hugetlb() {
            b.hugetlb_bytes += PAGE;
            chunk_huge[i / PMD_PAGES as usize] += 1;
        } else if flags.thp() && folio as u64 == PMD_PAGES {
            b.thp_2m_bytes += PAGE;
            chunk_huge[i / PMD_PAGES as usize] += 1;
        } else if flags.thp() && folio > 1 {
            *b.mthp_bytes.entry(folio as u64 * 4).or_default() += PAGE;
        } else {
            b.base_bytes += PAGE;
        }
    }
    b.huge_chunks = chunk_huge.iter().map(|&n| n as u64 == PMD_PAGES).collect();
    Ok(Some(b))
}

fn read_smaps(
    proc: &ProcFs,
    start: usize,
    len: usize,
    hugetlb: Option<PageSize>,
) -> hugewise_sys::Result<Backing> {
    let end = start + len;
    let mut b = empty(BackingSource::Smaps, len as u64);
    let mut present = 0u64;
    for v in proc.smaps(Pid::Current)? {
        let lo = v.start.max(start);
        let hi = v.end.min(end);
        if lo >= hi {
            continue;
        }
        let size = (v.end - v.start) as u64;
        let part = (hi - lo) as u64;
        if part < size {
            b.approximate = true;
        }
        let scale = |x: u64| (x as u128 * part as u128 / size as u128) as u64;
        let t = &v.totals;
        if hugetlb.is_some() {
            b.hugetlb_bytes += scale(t.hugetlb_bytes);
            present += scale(t.hugetlb_bytes);
        } else {
            b.thp_2m_bytes += scale(t.anon_huge_bytes);
            b.base_bytes += scale(t.rss_bytes.saturating_sub(t.anon_huge_bytes));
            present += scale(t.rss_bytes);
        }
        b.swapped_bytes += scale(t.swap_bytes);
    }
    b.not_present_bytes = (len as u64).saturating_sub(present + b.swapped_bytes);
    Ok(b)
}
