//! `/sys/kernel/mm/transparent_hugepage`: modes, per-size mTHP modes, khugepaged.

pub use hugewise_results::machine::{Khugepaged, MthpSize, Selector, ThpSettings};

use super::SysFs;
use crate::{Error, Result};

const THP: &str = "kernel/mm/transparent_hugepage";

fn selector(sys: &SysFs, rel: &str) -> Result<Option<Selector>> {
    match sys.read_opt(rel)? {
        None => Ok(None),
        Some(s) => Selector::parse(&s)
            .map(Some)
            .ok_or_else(|| Error::parse(sys.path(rel), 1, format!("no [choice] in {s:?}"))),
    }
}

pub(super) fn read(sys: &SysFs) -> Result<ThpSettings> {
    let enabled = selector(sys, &format!("{THP}/enabled"))?.ok_or_else(|| {
        Error::Invalid(format!(
            "{} is missing: this kernel has no transparent huge pages",
            sys.path(&format!("{THP}/enabled")).display()
        ))
    })?;
    let k = |name: &str| sys.read_u64(&format!("{THP}/khugepaged/{name}"));
    let khugepaged = Khugepaged {
        pages_to_scan: k("pages_to_scan")?,
        scan_sleep_millisecs: k("scan_sleep_millisecs")?,
        alloc_sleep_millisecs: k("alloc_sleep_millisecs")?,
        max_ptes_none: k("max_ptes_none")?,
        max_ptes_swap: k("max_ptes_swap")?,
        max_ptes_shared: k("max_ptes_shared")?,
        defrag: k("defrag")?,
        full_scans: k("full_scans")?,
        pages_collapsed: k("pages_collapsed")?,
    };
    let mut sizes = Vec::new();
    let dir = sys.path(THP);
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(kib) = name
                .strip_prefix("hugepages-")
                .and_then(|s| s.strip_suffix("kB"))
                .and_then(|s| s.parse().ok())
            else {
                continue;
            };
            sizes.push(MthpSize {
                size_kib: kib,
                enabled: selector(sys, &format!("{THP}/{name}/enabled"))?,
            });
        }
    }
    sizes.sort_by_key(|s| s.size_kib);
    Ok(ThpSettings {
        enabled,
        defrag: selector(sys, &format!("{THP}/defrag"))?,
        shmem_enabled: selector(sys, &format!("{THP}/shmem_enabled"))?,
        use_zero_page: sys.read_u64(&format!("{THP}/use_zero_page"))?,
        pmd_bytes: sys.read_u64(&format!("{THP}/hpage_pmd_size"))?,
        khugepaged,
        sizes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysfs::tests::sample_tree;

    #[test]
    fn selector_parse() {
        let s = Selector::parse("always [madvise] never").expect("selector");
        assert_eq!(s.current, "madvise");
        assert_eq!(s.choices, ["always", "madvise", "never"]);
        assert!(Selector::parse("always madvise").is_none());
    }

    #[test]
    fn reads_recorded_tree() {
        let (_dir, sys) = sample_tree();
        let t = sys.thp().expect("thp");
        assert_eq!(t.enabled.current, "madvise");
        assert_eq!(
            t.defrag.as_ref().map(|d| d.current.as_str()),
            Some("madvise")
        );
        assert_eq!(t.pmd_bytes, Some(2 << 20));
        assert_eq!(t.khugepaged.max_ptes_none, Some(511));
        assert_eq!(t.sizes.len(), 2);
        assert_eq!(t.sizes[0].size_kib, 64);
        assert_eq!(
            t.sizes[1].enabled.as_ref().map(|s| s.current.as_str()),
            Some("inherit")
        );
    }

    #[test]
    fn older_kernel_without_mthp_or_knobs() {
        let dir = tempfile::tempdir().expect("tmp");
        let thp = dir.path().join(THP);
        std::fs::create_dir_all(&thp).expect("mkdir");
        std::fs::write(thp.join("enabled"), "[always] madvise never\n").expect("write");
        let t = SysFs::new(dir.path()).thp().expect("thp");
        assert_eq!(t.enabled.current, "always");
        assert!(t.sizes.is_empty() && t.defrag.is_none() && t.khugepaged.pages_to_scan.is_none());
    }

    #[test]
    fn no_thp_at_all_says_so() {
        let dir = tempfile::tempdir().expect("tmp");
        let e = SysFs::new(dir.path()).thp().expect_err("no thp");
        assert!(e.to_string().contains("no transparent huge pages"), "{e}");
    }

    #[test]
    fn bad_number_names_the_file() {
        let (dir, sys) = sample_tree();
        std::fs::write(
            dir.path().join(THP).join("khugepaged/pages_to_scan"),
            "many\n",
        )
        .expect("write");
        let e = sys.thp().expect_err("bad number");
        assert!(e.to_string().contains("pages_to_scan"), "{e}");
    }
}
