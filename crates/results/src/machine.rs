//! What `hugewise sys` reports: THP and mTHP modes, khugepaged, hugetlb pools, memory,
//! free blocks per zone, counters and the kernel features that work here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A sysfs multiple-choice knob such as `always [madvise] never`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selector {
    /// The bracketed choice.
    pub current: String,
    /// All choices, in the kernel's order.
    pub choices: Vec<String>,
}

impl Selector {
    /// Parse `a [b] c`; `None` when no choice is bracketed.
    pub fn parse(s: &str) -> Option<Selector> {
        let mut current = None;
        let mut choices = Vec::new();
        for w in s.split_whitespace() {
            match w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                Some(inner) => {
                    current = Some(inner.to_string());
                    choices.push(inner.to_string());
                }
                None => choices.push(w.to_string()),
            }
        }
        Some(Selector {
            current: current?,
            choices,
        })
    }
}

/// khugepaged's settings and counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Khugepaged {
    /// Pages scanned per wake-up.
    pub pages_to_scan: Option<u64>,
    /// Sleep between scans.
    pub scan_sleep_millisecs: Option<u64>,
    /// Sleep after an allocation failure.
    pub alloc_sleep_millisecs: Option<u64>,
    /// Empty PTEs allowed in a range it collapses (511 = collapse anything).
    pub max_ptes_none: Option<u64>,
    /// Swapped PTEs allowed.
    pub max_ptes_swap: Option<u64>,
    /// Shared PTEs allowed.
    pub max_ptes_shared: Option<u64>,
    /// Whether khugepaged compacts to find 2 MiB blocks (0/1).
    pub defrag: Option<u64>,
    /// Full scans completed since boot.
    pub full_scans: Option<u64>,
    /// Pages collapsed since boot.
    pub pages_collapsed: Option<u64>,
}

/// One mTHP size and its mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MthpSize {
    /// Size in KiB.
    pub size_kib: u64,
    /// `always`, `inherit`, `madvise` or `never`.
    pub enabled: Option<Selector>,
}

/// Everything under `transparent_hugepage/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThpSettings {
    /// Global mode (`always`, `madvise`, `never`).
    pub enabled: Selector,
    /// Fault-time defrag policy.
    pub defrag: Option<Selector>,
    /// shmem/tmpfs THP mode.
    pub shmem_enabled: Option<Selector>,
    /// Whether reads of untouched THP memory map the huge zero page.
    pub use_zero_page: Option<u64>,
    /// PMD page size in bytes.
    pub pmd_bytes: Option<u64>,
    /// khugepaged.
    pub khugepaged: Khugepaged,
    /// Per-size modes (kernels with mTHP, 6.8+), smallest first.
    pub sizes: Vec<MthpSize>,
}

/// One hugetlb pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HugetlbPool {
    /// Page size in KiB.
    pub size_kib: u64,
    /// Pages in the pool (`nr_hugepages`).
    pub pages: u64,
    /// Pages free.
    pub free_pages: u64,
    /// Pages reserved by mappings but not yet faulted.
    pub reserved_pages: u64,
    /// Surplus pages above `nr_hugepages`.
    pub surplus_pages: u64,
    /// Surplus allowed (`nr_overcommit_hugepages`).
    pub overcommit_pages: u64,
}

impl HugetlbPool {
    /// The sysfs file to write to grow or shrink this pool.
    pub fn knob(&self) -> String {
        format!(
            "/sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages",
            self.size_kib
        )
    }
}

/// What `/proc/meminfo` says about memory and huge pages; fields a kernel lacks are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemInfo {
    /// MemTotal.
    pub total_bytes: u64,
    /// MemFree.
    pub free_bytes: u64,
    /// MemAvailable.
    pub available_bytes: Option<u64>,
    /// AnonHugePages: anonymous memory mapped by PMD-sized THPs.
    pub anon_huge_bytes: Option<u64>,
    /// Mlocked.
    pub mlocked_bytes: Option<u64>,
    /// SwapTotal.
    pub swap_total_bytes: Option<u64>,
    /// SwapFree.
    pub swap_free_bytes: Option<u64>,
    /// Hugetlb: memory held by all hugetlb pools.
    pub hugetlb_bytes: Option<u64>,
}

/// One active swap area.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapArea {
    /// The file or device.
    pub path: PathBuf,
    /// `file` or `partition`.
    pub kind: String,
    /// Size.
    pub size_bytes: u64,
    /// Used.
    pub used_bytes: u64,
    /// Priority (higher is used first).
    pub priority: i32,
}

/// The outcome of one probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// The feature worked here.
    pub usable: bool,
    /// Why not, or a short note on how it was tried.
    pub detail: String,
}

impl Probe {
    /// A feature that works, and how it was tried.
    pub fn yes(detail: impl Into<String>) -> Probe {
        Probe {
            usable: true,
            detail: detail.into(),
        }
    }

    /// A feature that does not work here, and why.
    pub fn no(detail: impl Into<String>) -> Probe {
        Probe {
            usable: false,
            detail: detail.into(),
        }
    }
}

/// All probes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Running as root (pagemap frames, kpageflags, knobs, split need it).
    pub root: bool,
    /// `MADV_COLLAPSE` turned a 4 KiB-faulted 2 MiB range into a huge page.
    pub madv_collapse: Probe,
    /// `process_madvise` through a pidfd accepted advice.
    pub process_madvise: Probe,
    /// `/proc/self/pagemap` shows physical frames.
    pub pagemap_frames: Probe,
    /// `/proc/kpageflags` is readable.
    pub kpageflags: Probe,
    /// debugfs `split_huge_pages` is reachable.
    pub split_huge_pages: Probe,
}

/// Free memory of one zone and how usable it is for huge pages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZoneReport {
    /// NUMA node.
    pub node: u32,
    /// Zone name.
    pub zone: String,
    /// Free memory in the buddy allocator.
    pub free_bytes: u64,
    /// Free blocks per order (0 = 4 KiB .. 10 = 4 MiB).
    pub free_blocks: Vec<u64>,
    /// 2 MiB blocks the free lists can hand out without compaction.
    pub free_2m_blocks: u64,
    /// Unusable free space index per order (0 = all free memory usable at that order).
    pub unusable_index: Vec<f64>,
    /// Fragmentation index per order; `null` where an allocation would succeed now.
    pub fragmentation_index: Vec<Option<f64>>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineReport {
    /// Kernel release.
    pub kernel: Option<String>,
    /// THP settings (`null` when the kernel has no THP).
    pub thp: Option<ThpSettings>,
    /// hugetlb pools.
    pub hugetlb: Vec<HugetlbPool>,
    /// /proc/meminfo.
    pub memory: MemInfo,
    /// Per-zone free memory and indices, computed from /proc/buddyinfo with the kernel's
    /// formulas.
    pub zones: Vec<ZoneReport>,
    /// Free 2 MiB blocks over all zones.
    pub free_2m_blocks: u64,
    /// `thp_*` and `compact_*` counters from /proc/vmstat.
    pub counters: BTreeMap<String, i64>,
    /// What works here.
    pub capabilities: Capabilities,
    /// Things a user should know, e.g. free memory the buddy allocator does not show yet.
    pub notes: Vec<String>,
}
