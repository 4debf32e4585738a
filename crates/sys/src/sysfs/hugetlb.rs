//! `/sys/kernel/mm/hugepages`: the hugetlb pools.

pub use hugewise_results::machine::HugetlbPool;

use super::SysFs;
use crate::Result;

const POOLS: &str = "kernel/mm/hugepages";

pub(super) fn read(sys: &SysFs) -> Result<Vec<HugetlbPool>> {
    let mut pools = Vec::new();
    let Ok(entries) = std::fs::read_dir(sys.path(POOLS)) else {
        return Ok(pools);
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(kib) = name
            .strip_prefix("hugepages-")
            .and_then(|s| s.strip_suffix("kB"))
            .and_then(|s| s.parse().ok())
        else {
            continue;
        };
        let n = |f: &str| -> Result<u64> {
            Ok(sys.read_u64(&format!("{POOLS}/{name}/{f}"))?.unwrap_or(0))
        };
        pools.push(HugetlbPool {
            size_kib: kib,
            pages: n("nr_hugepages")?,
            free_pages: n("free_hugepages")?,
            reserved_pages: n("resv_hugepages")?,
            surplus_pages: n("surplus_hugepages")?,
            overcommit_pages: n("nr_overcommit_hugepages")?,
        });
    }
    pools.sort_by_key(|p| p.size_kib);
    Ok(pools)
}

#[cfg(test)]
mod tests {
    use crate::sysfs::tests::sample_tree;

    #[test]
    fn reads_pools() {
        let (_dir, sys) = sample_tree();
        let p = sys.hugetlb_pools().expect("pools");
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].size_kib, 2048);
        assert_eq!(p[0].pages, 4);
        assert_eq!(p[0].free_pages, 3);
        assert_eq!(p[1].size_kib, 1 << 20);
        assert_eq!(
            p[0].knob(),
            "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
        );
    }

    #[test]
    fn write_returns_the_old_selected_word() {
        let (_dir, sys) = sample_tree();
        let old = sys
            .write("kernel/mm/transparent_hugepage/enabled", "always")
            .expect("write");
        assert_eq!(old, "madvise");
        let old = sys
            .write("kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "8")
            .expect("write");
        assert_eq!(old, "4");
    }
}
