//! Page sizes as a closed set, never as shift counts.

pub use hugewise_results::page_size::PageSize;

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
