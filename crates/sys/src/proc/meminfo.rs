//! `/proc/meminfo`, the fields hugewise reports, in bytes.

use std::path::Path;

pub use hugewise_results::machine::MemInfo;

use crate::{Error, Result};

/// Parse the text of `/proc/meminfo` read from `path`.
pub(super) fn parse(path: &Path, text: &str) -> Result<MemInfo> {
    let m = <procfs_core::Meminfo as procfs_core::FromRead>::from_read(text.as_bytes())
        .map_err(|e| Error::parse(path, 0, e.to_string()))?;
    Ok(MemInfo {
        total_bytes: m.mem_total,
        free_bytes: m.mem_free,
        available_bytes: m.mem_available,
        anon_huge_bytes: m.anon_hugepages,
        mlocked_bytes: m.mlocked,
        swap_total_bytes: Some(m.swap_total),
        swap_free_bytes: Some(m.swap_free),
        hugetlb_bytes: m.hugetlb,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_recorded_sample() {
        let text = include_str!("../../tests/samples/meminfo-6.18.txt");
        let m = parse(Path::new("meminfo"), text).expect("parse");
        assert_eq!(m.total_bytes, 24731708 * 1024);
        assert_eq!(m.anon_huge_bytes, Some(0));
        assert_eq!(m.hugetlb_bytes, Some(0));
    }

    #[test]
    fn old_kernel_without_optional_fields() {
        // A 3.x-era file: no MemAvailable, no Hugetlb line.
        let text = include_str!("../../tests/samples/meminfo-old.txt");
        let m = parse(Path::new("meminfo"), text).expect("parse");
        assert_eq!(m.available_bytes, None);
        assert_eq!(m.hugetlb_bytes, None);
        assert_eq!(m.free_bytes, 1000 * 1024);
    }

    #[test]
    fn garbage_names_the_file() {
        let e = parse(Path::new("/x/meminfo"), "MemTotal: lots\n").expect_err("bad");
        assert!(e.to_string().starts_with("/x/meminfo"), "{e}");
    }
}
