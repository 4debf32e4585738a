//! `Region<T>`: one typed array in one anonymous mapping with its own page policy.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut, Range};
use std::time::Instant;

use bytemuck::Pod;
use hugewise_sys::debugfs;
use hugewise_sys::errno::{EAGAIN, EINVAL, ENOMEM, EPERM};
use hugewise_sys::mmap::{Advice, MapOptions, Mapping};
use hugewise_sys::page_size::align_up;
use hugewise_sys::proc::ProcFs;
use hugewise_sys::sysfs::SysFs;
use hugewise_sys::PageSize;
use serde::Serialize;

use crate::backing::{self, Backing};
use crate::policy::PagePolicy;
use crate::{Error, Result};

const TWO_M: usize = 2 << 20;

/// When a region's pages are faulted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Populate {
    /// At creation (`MADV_POPULATE_WRITE`), so the policy's pages are in place before use.
    OnCreate,
    /// By the program's own first touch.
    FirstTouch,
}

/// How to create a region.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegionOptions {
    /// Page policy.
    pub policy: PagePolicy,
    /// When pages are faulted in.
    pub populate: Populate,
    /// Align the start to 1 GiB rather than 2 MiB (hugetlb-1g always is).
    pub align_1g: bool,
    /// Lock the policy's part in memory once created (`mlock`): the huge prefix for
    /// `thp-prefix`, the whole region otherwise; a region faulted in by first touch is locked
    /// page by page as it is touched.
    pub lock: bool,
}

impl RegionOptions {
    /// A region with `policy`, faulted in on creation.
    pub fn new(policy: PagePolicy) -> Self {
        RegionOptions {
            policy,
            populate: Populate::OnCreate,
            align_1g: false,
            lock: false,
        }
    }

    /// The same, locked in memory (`lock` true) or not.
    pub fn locked(mut self, lock: bool) -> Self {
        self.lock = lock;
        self
    }

    /// The same, faulted in by first touch instead.
    pub fn first_touch(mut self) -> Self {
        self.populate = Populate::FirstTouch;
        self
    }
}

/// What a collapse did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollapseOutcome {
    /// Bytes asked to collapse.
    pub asked_bytes: u64,
    /// Bytes of the range in 2 MiB pages before.
    pub huge_bytes_before: u64,
    /// Bytes of the range in 2 MiB pages afterwards, read from the kernel.
    pub huge_bytes_after: u64,
    /// The kernel's errno name when it refused (EINVAL, ENOMEM, EAGAIN), else `None`.
    pub errno: Option<String>,
    /// Calls made: EAGAIN is retried up to 3 times.
    pub attempts: u32,
    /// Time spent in `madvise(MADV_COLLAPSE)`, all attempts.
    pub elapsed_ns: u64,
}

/// How a split was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplitMethod {
    /// The kernel split the folios in place (debugfs `split_huge_pages`).
    Debugfs,
    /// The range was copied out, freed and copied back into 4 KiB pages.
    Rebuild,
}

/// What a split did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SplitOutcome {
    /// How.
    pub method: SplitMethod,
    /// Bytes of the range in 2 MiB pages before.
    pub huge_bytes_before: u64,
    /// Bytes of the range in 2 MiB pages afterwards.
    pub huge_bytes_after: u64,
    /// Time spent writing the split request.
    pub elapsed_ns: u64,
}

/// Where a region reads what the kernel did with it: `/proc` (pagemap, kpageflags, smaps)
/// and `/sys` (hugetlb pools). The real trees by default; a recorded copy in tests.
#[derive(Debug, Clone, Default)]
pub struct KernelFiles {
    /// The `/proc` tree.
    pub proc: ProcFs,
    /// The `/sys` tree.
    pub sys: SysFs,
}

/// A named, typed, 2 MiB-aligned anonymous mapping of `len` values of `T`.
#[derive(Debug)]
pub struct Region<T: Pod> {
    name: String,
    map: Mapping,
    len: usize,
    policy: PagePolicy,
    populate: Populate,
    lock: bool,
    files: KernelFiles,
    _t: PhantomData<T>,
}

impl<T: Pod> Region<T> {
    /// Create a zeroed region of `len` elements. The mapping is rounded up to whole 2 MiB
    /// (1 GiB for hugetlb-1g) pages so that its tail can be huge too.
    pub fn new(name: &str, len: usize, opts: RegionOptions) -> Result<Self> {
        Region::with_files(name, len, opts, KernelFiles::default())
    }

    /// [`Region::new`], reading the hugetlb pools and, later, the region's backing from
    /// `files` instead of the real `/proc` and `/sys`.
    pub fn with_files(
        name: &str,
        len: usize,
        opts: RegionOptions,
        files: KernelFiles,
    ) -> Result<Self> {
        let invalid = |message: String| Error::Invalid {
            region: name.to_string(),
            message,
        };
        let elem = std::mem::size_of::<T>().max(1);
        let data = len
            .checked_mul(elem)
            .ok_or_else(|| invalid(format!("{len} elements of {elem} bytes overflow")))?;
        let hugetlb = opts.policy.hugetlb();
        let page = hugetlb.map(PageSize::bytes).unwrap_or(TWO_M);
        let bytes = align_up(data.max(1), page);
        if let Some(size) = hugetlb {
            check_pool(&files.sys, name, size, bytes)?;
        }
        let align = if opts.align_1g || hugetlb == Some(PageSize::Size1G) {
            PageSize::Size1G.bytes()
        } else {
            TWO_M
        };
        let map =
            Mapping::anonymous(bytes, MapOptions { align, hugetlb }).map_err(|e| sys(name, e))?;
        let mut r = Region {
            name: name.to_string(),
            map,
            len,
            policy: opts.policy,
            populate: opts.populate,
            lock: opts.lock,
            files,
            _t: PhantomData,
        };
        r.apply_policy()?;
        if opts.populate == Populate::OnCreate {
            r.populate_all()?;
        }
        if r.lock {
            r.lock_in_memory()?;
        }
        Ok(r)
    }

    /// `+lock`: the huge prefix for `thp-prefix`, the whole mapping otherwise. A region
    /// populated on creation is locked now; one its program faults in (a reader's threads, an
    /// array sized for the worst case) is locked page by page as it is touched.
    fn lock_in_memory(&self) -> Result<()> {
        let bytes = match self.policy {
            PagePolicy::ThpPrefix(_) => self.prefix_bytes(),
            _ => self.map.len(),
        };
        let done = match self.populate {
            Populate::OnCreate => hugewise_sys::lock::mlock_range(&self.map, 0..bytes),
            Populate::FirstTouch => hugewise_sys::lock::mlock_on_fault_range(&self.map, 0..bytes),
        };
        done.map_err(|source| {
            let errno = source.errno();
            Error::Lock {
                region: self.name.clone(),
                bytes: bytes as u64,
                hint: if [Some(ENOMEM), Some(EAGAIN), Some(EPERM)].contains(&errno) {
                    " (over RLIMIT_MEMLOCK or out of memory: run as root, or lock less)"
                } else {
                    ""
                },
                source,
            }
        })
    }

    /// Bytes of the region locked in memory now, read from the kernel: `Locked` of the
    /// region's mappings in smaps, and for a locked mapping the kernel merged with a neighbour
    /// past the region's bounds, the resident pages of the part inside.
    pub fn locked_bytes(&self) -> Result<u64> {
        let start = self.map.addr();
        crate::locked::read(&self.files.proc, start, start + self.map.len())
            .map_err(|e| sys(&self.name, e))
    }

    fn apply_policy(&self) -> Result<()> {
        let all = 0..self.map.len();
        match self.policy {
            PagePolicy::System | PagePolicy::Hugetlb2M | PagePolicy::Hugetlb1G => Ok(()),
            PagePolicy::Base => self.advise(all, Advice::NoHugePage),
            PagePolicy::Thp => self.advise(all, Advice::HugePage),
            PagePolicy::ThpPrefix(_) => {
                let p = self.prefix_bytes();
                self.advise(0..p, Advice::HugePage)?;
                self.advise(p..self.map.len(), Advice::NoHugePage)
            }
        }
    }

    /// For `thp-prefix`, the bytes of the huge prefix (the share of the data, rounded up to
    /// 2 MiB); for other policies the whole region or nothing.
    pub fn prefix_bytes(&self) -> usize {
        match self.policy {
            PagePolicy::ThpPrefix(a) => {
                let want = a.of(self.data_bytes() as u64) as usize;
                align_up(want, TWO_M).min(self.map.len())
            }
            PagePolicy::Base | PagePolicy::System => 0,
            _ => self.map.len(),
        }
    }

    fn populate_all(&mut self) -> Result<()> {
        match self.map.advise(0..self.map.len(), Advice::PopulateWrite) {
            Ok(()) => Ok(()),
            // Kernels before 5.14 lack MADV_POPULATE_WRITE: touch each page instead.
            Err(e) if e.errno() == Some(EINVAL) => {
                let page = self.policy.hugetlb().map(PageSize::bytes).unwrap_or(4096);
                self.map.touch_pages(page);
                Ok(())
            }
            Err(e) => Err(sys(&self.name, e)),
        }
    }

    /// Shrink to `len` elements, giving the whole 2 MiB pages past the new end back to the
    /// kernel. Used by builders that reserve an upper bound first.
    pub fn truncate(&mut self, len: usize) -> Result<()> {
        if len > self.len {
            return Err(Error::Invalid {
                region: self.name.clone(),
                message: format!("cannot grow from {} to {len} elements", self.len),
            });
        }
        let page = self.policy.hugetlb().map(PageSize::bytes).unwrap_or(TWO_M);
        let bytes = len * std::mem::size_of::<T>();
        self.map
            .truncate(bytes, page)
            .map_err(|e| sys(&self.name, e))?;
        self.len = len;
        Ok(())
    }

    /// Whether the region asked to be locked in memory (`+lock`), for copies of it.
    pub fn locks(&self) -> bool {
        self.lock
    }

    /// The policy as a region map writes it (`thp-prefix:5%+lock`).
    pub fn policy_label(&self) -> String {
        format!("{}{}", self.policy, if self.lock { "+lock" } else { "" })
    }

    /// Region name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The policy asked for.
    pub fn policy(&self) -> PagePolicy {
        self.policy
    }

    /// When pages were faulted in.
    pub fn populate(&self) -> Populate {
        self.populate
    }

    /// Start address.
    pub fn addr(&self) -> usize {
        self.map.addr()
    }

    /// Bytes of data (`len × size_of::<T>()`).
    pub fn data_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// Bytes mapped (data rounded up to whole 2 MiB or 1 GiB pages).
    pub fn mapped_bytes(&self) -> usize {
        self.map.len()
    }

    /// Give advice for a byte range of the region, e.g. lift `NoHugePage` before a collapse.
    pub fn advise(&self, range: Range<usize>, advice: Advice) -> Result<()> {
        self.map
            .advise(range, advice)
            .map_err(|e| sys(&self.name, e))
    }

    /// Collapse `range` (byte offsets, widened to whole 2 MiB pages) into THPs with
    /// `MADV_COLLAPSE`. A refusal by the kernel is part of the outcome, not an error.
    pub fn collapse(&self, range: Range<usize>) -> Result<CollapseOutcome> {
        let range = self.widen(range)?;
        let before = self.backing_of(range.clone())?.thp_2m_bytes;
        // EAGAIN is transient (pages briefly off the LRU, a racing fault): try again.
        let mut attempts = 0;
        let mut elapsed = std::time::Duration::ZERO;
        let errno = loop {
            attempts += 1;
            let (t, errno) = self
                .map
                .collapse(range.clone())
                .map_err(|e| sys(&self.name, e))?;
            elapsed += t;
            if errno != Some(EAGAIN) || attempts == 3 {
                break errno;
            }
        };
        let after = self.backing_of(range.clone())?.thp_2m_bytes;
        Ok(CollapseOutcome {
            asked_bytes: (range.end - range.start) as u64,
            huge_bytes_before: before,
            huge_bytes_after: after,
            errno: errno.map(|e| e.name()),
            attempts,
            elapsed_ns: elapsed.as_nanos() as u64,
        })
    }

    /// Split the huge pages in `range` into 4 KiB pages, keeping the contents.
    ///
    /// First choice is the kernel's own splitter, debugfs `split_huge_pages` (root). Where
    /// debugfs is read-only (kernel lockdown) or absent, the range is rebuilt from 4 KiB pages
    /// by copy-out, free, copy-back, and left `NOHUGEPAGE` so it stays split; give
    /// `Advice::HugePage` again before collapsing it.
    pub fn split(&mut self, range: Range<usize>) -> Result<SplitOutcome> {
        let range = self.widen(range)?;
        let before = self.backing_of(range.clone())?.thp_2m_bytes;
        let t0 = Instant::now();
        let method = match self.split_debugfs(range.clone()) {
            Ok(()) => SplitMethod::Debugfs,
            Err(_) => {
                self.map
                    .rebuild_base_pages(range.clone())
                    .map_err(|e| sys(&self.name, e))?;
                SplitMethod::Rebuild
            }
        };
        let elapsed_ns = t0.elapsed().as_nanos() as u64;
        let after = self.backing_of(range)?.thp_2m_bytes;
        Ok(SplitOutcome {
            method,
            huge_bytes_before: before,
            huge_bytes_after: after,
            elapsed_ns,
        })
    }

    fn split_debugfs(&self, range: Range<usize>) -> hugewise_sys::Result<()> {
        let req = format!(
            "{},{:#x},{:#x}",
            std::process::id(),
            self.addr() + range.start,
            self.addr() + range.end
        );
        debugfs::write("split_huge_pages", &req)
    }

    fn widen(&self, range: Range<usize>) -> Result<Range<usize>> {
        if range.start >= range.end || range.end > self.map.len() {
            return Err(Error::Invalid {
                region: self.name.clone(),
                message: format!(
                    "range {}..{} is empty or beyond the {} mapped bytes",
                    range.start,
                    range.end,
                    self.map.len()
                ),
            });
        }
        let start = range.start - range.start % TWO_M;
        Ok(start..align_up(range.end, TWO_M).min(self.map.len()))
    }

    /// How the whole region is backed now, read from the kernel.
    pub fn backing(&self) -> Result<Backing> {
        self.backing_of(0..self.map.len())
    }

    /// How a byte range of the region is backed now.
    pub fn backing_of(&self, range: Range<usize>) -> Result<Backing> {
        let start = self.addr() + range.start;
        backing::read(
            &self.files.proc,
            start,
            range.end - range.start,
            self.policy.hugetlb(),
        )
        .map_err(|e| sys(&self.name, e))
    }
}

impl<T: Pod> Deref for Region<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        bytemuck::cast_slice(&self.map.as_slice()[..self.data_bytes()])
    }
}

impl<T: Pod> DerefMut for Region<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let n = self.data_bytes();
        bytemuck::cast_slice_mut(&mut self.map.as_mut_slice()[..n])
    }
}

fn sys(region: &str, source: hugewise_sys::Error) -> Error {
    Error::Sys {
        region: region.to_string(),
        source,
    }
}

fn check_pool(sysfs: &SysFs, region: &str, size: PageSize, bytes: usize) -> Result<()> {
    let pools = sysfs.hugetlb_pools().map_err(|e| sys(region, e))?;
    let kib = (size.bytes() >> 10) as u64;
    let needed = (bytes / size.bytes()) as u64;
    let pool = pools.iter().find(|p| p.size_kib == kib);
    let free = pool
        .map(|p| p.free_pages - p.reserved_pages.min(p.free_pages))
        .unwrap_or(0);
    if free < needed {
        let have = pool.map(|p| p.pages).unwrap_or(0);
        return Err(Error::HugetlbPool {
            region: region.to_string(),
            size,
            needed,
            free,
            want: have + (needed - free),
            knob: sysfs
                .root()
                .join(format!(
                    "kernel/mm/hugepages/{}/nr_hugepages",
                    size.sysfs_name()
                ))
                .display()
                .to_string(),
        });
    }
    Ok(())
}
