//! Page sizes as a closed set, never as shift counts.

use serde::{Deserialize, Serialize};
use std::fmt;

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

/// Round `n` up to a multiple of `align` (a power of two).
pub const fn align_up(n: usize, align: usize) -> usize {
    (n + align - 1) & !(align - 1)
}

/// Round `n` down to a multiple of `align` (a power of two).
pub const fn align_down(n: usize, align: usize) -> usize {
    n & !(align - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_names() {
        assert_eq!(PageSize::Size2M.bytes(), 2 * 1024 * 1024);
        assert_eq!(PageSize::from_bytes(1 << 30), Some(PageSize::Size1G));
        assert_eq!(PageSize::from_bytes(8192), None);
        assert_eq!(PageSize::Size2M.sysfs_name(), "hugepages-2048kB");
        assert_eq!(align_up(1, 4096), 4096);
        assert_eq!(align_down(8191, 4096), 4096);
    }
}
