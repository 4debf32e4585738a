//! Page sizes as a closed set, never as shift counts.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The page sizes x86-64 maps with one TLB entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PageSize {
    /// 4 KiB base page.
    #[serde(rename = "4KiB")]
    Size4K,
    /// 2 MiB PMD page (THP or hugetlb).
    #[serde(rename = "2MiB")]
    Size2M,
    /// 1 GiB PUD page (hugetlb only).
    #[serde(rename = "1GiB")]
    Size1G,
}

impl PageSize {
    /// Size in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            PageSize::Size4K => 4 << 10,
            PageSize::Size2M => 2 << 20,
            PageSize::Size1G => 1 << 30,
        }
    }

    /// The size whose byte count is `bytes`, if any.
    pub fn from_bytes(bytes: usize) -> Option<Self> {
        [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G]
            .into_iter()
            .find(|p| p.bytes() == bytes)
    }

    /// The name the kernel uses in sysfs directories (`hugepages-2048kB`).
    pub fn sysfs_name(self) -> String {
        format!("hugepages-{}kB", self.bytes() >> 10)
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageSize::Size4K => "4KiB",
            PageSize::Size2M => "2MiB",
            PageSize::Size1G => "1GiB",
        })
    }
}
