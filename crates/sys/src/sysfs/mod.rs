//! Readers and writers of `/sys`, rooted at an injectable directory: THP and mTHP settings,
//! khugepaged, hugetlb pools, block devices' counters, memory cgroups' counters, NUMA nodes and
//! their compaction trigger, and the free memory a guest has handed back to its host.

mod block;
mod hugetlb;
mod memcg;
mod node;
mod reporting;
mod thp;

pub use block::{BlockStat, DevNum};
pub use hugetlb::HugetlbPool;
pub use memcg::{flush_stats, memcg_counters, MemcgCounters};
pub use thp::{Khugepaged, MthpSize, Selector, ThpSettings};

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// A `/sys` tree: the real one or a recorded copy.
#[derive(Debug, Clone)]
pub struct SysFs {
    root: PathBuf,
}

impl Default for SysFs {
    fn default() -> Self {
        SysFs::new("/sys")
    }
}

impl SysFs {
    /// A `/sys` tree rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        SysFs { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Absolute path of a file given relative to the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Read a knob, trimmed.
    pub fn read(&self, rel: &str) -> Result<String> {
        let p = self.path(rel);
        std::fs::read_to_string(&p)
            .map(|s| s.trim().to_string())
            .map_err(|e| Error::io(&p, e))
    }

    /// Read a knob; `None` when the file does not exist on this kernel.
    pub fn read_opt(&self, rel: &str) -> Result<Option<String>> {
        match self.read(rel) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(None)
            }
            other => other.map(Some),
        }
    }

    /// Read a numeric knob; `None` when absent.
    pub fn read_u64(&self, rel: &str) -> Result<Option<u64>> {
        match self.read_opt(rel)? {
            None => Ok(None),
            Some(s) => s
                .parse()
                .map(Some)
                .map_err(|_| Error::parse(self.path(rel), 1, format!("not a number: {s:?}"))),
        }
    }

    /// Write `value` to a knob and return what it held before, in the form it must be written
    /// back (for selectors, the selected word).
    pub fn write(&self, rel: &str, value: &str) -> Result<String> {
        let old = self.read(rel)?;
        let old = Selector::parse(&old).map(|s| s.current).unwrap_or(old);
        let p = self.path(rel);
        std::fs::write(&p, value).map_err(|e| Error::io(&p, e))?;
        Ok(old)
    }

    /// THP, mTHP and khugepaged settings.
    pub fn thp(&self) -> Result<ThpSettings> {
        thp::read(self)
    }

    /// The hugetlb pools, one per supported size.
    pub fn hugetlb_pools(&self) -> Result<Vec<HugetlbPool>> {
        hugetlb::read(self)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::SysFs;

    /// A small recorded `/sys` tree (from a 6.18 kernel, trimmed to two mTHP sizes and a
    /// non-empty 2 MiB pool) in a temporary directory.
    pub(crate) fn sample_tree() -> (tempfile::TempDir, SysFs) {
        let dir = tempfile::tempdir().expect("tmp");
        let files: &[(&str, &str)] = &[
            (
                "kernel/mm/transparent_hugepage/enabled",
                "always [madvise] never\n",
            ),
            (
                "kernel/mm/transparent_hugepage/defrag",
                "always defer defer+madvise [madvise] never\n",
            ),
            (
                "kernel/mm/transparent_hugepage/shmem_enabled",
                "always within_size advise [never] deny force\n",
            ),
            ("kernel/mm/transparent_hugepage/use_zero_page", "1\n"),
            ("kernel/mm/transparent_hugepage/hpage_pmd_size", "2097152\n"),
            (
                "kernel/mm/transparent_hugepage/khugepaged/pages_to_scan",
                "4096\n",
            ),
            (
                "kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs",
                "10000\n",
            ),
            (
                "kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs",
                "60000\n",
            ),
            (
                "kernel/mm/transparent_hugepage/khugepaged/max_ptes_none",
                "511\n",
            ),
            (
                "kernel/mm/transparent_hugepage/khugepaged/max_ptes_swap",
                "64\n",
            ),
            (
                "kernel/mm/transparent_hugepage/khugepaged/max_ptes_shared",
                "256\n",
            ),
            ("kernel/mm/transparent_hugepage/khugepaged/defrag", "1\n"),
            (
                "kernel/mm/transparent_hugepage/khugepaged/full_scans",
                "0\n",
            ),
            (
                "kernel/mm/transparent_hugepage/khugepaged/pages_collapsed",
                "0\n",
            ),
            (
                "kernel/mm/transparent_hugepage/hugepages-64kB/enabled",
                "always inherit madvise [never]\n",
            ),
            (
                "kernel/mm/transparent_hugepage/hugepages-2048kB/enabled",
                "always [inherit] madvise never\n",
            ),
            ("kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "4\n"),
            ("kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "3\n"),
            ("kernel/mm/hugepages/hugepages-2048kB/resv_hugepages", "0\n"),
            (
                "kernel/mm/hugepages/hugepages-2048kB/surplus_hugepages",
                "0\n",
            ),
            (
                "kernel/mm/hugepages/hugepages-2048kB/nr_overcommit_hugepages",
                "0\n",
            ),
            (
                "kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
                "0\n",
            ),
            (
                "kernel/mm/hugepages/hugepages-1048576kB/free_hugepages",
                "0\n",
            ),
        ];
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        let sys = SysFs::new(dir.path());
        (dir, sys)
    }
}
