//! Readers of `/proc`, rooted at an injectable directory so each parser runs on recorded samples.

mod buddy;
mod meminfo;
mod mounts;
mod pagemap;
mod pagetype;
mod smaps;
mod swaps;

pub use buddy::{fragmentation_index, unusable_index, BuddyZone};
pub use meminfo::MemInfo;
pub use mounts::Mount;
pub use pagemap::{KPageFlags, PageFlags, PageMap, PagemapEntry};
pub use pagetype::{PageTypeFree, PageTypeInfo};
pub use smaps::{Vma, VmaTotals};
pub use swaps::SwapArea;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Which process a per-process file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pid {
    /// The calling process (`/proc/self`).
    Current,
    /// Any process by id.
    Id(i32),
}

impl Pid {
    fn dir(self) -> String {
        match self {
            Pid::Current => "self".into(),
            Pid::Id(n) => n.to_string(),
        }
    }
}

/// A `/proc` tree: the real one or a recorded copy.
#[derive(Debug, Clone)]
pub struct ProcFs {
    root: PathBuf,
}

impl Default for ProcFs {
    fn default() -> Self {
        ProcFs::new("/proc")
    }
}

impl ProcFs {
    /// A `/proc` tree rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ProcFs { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn read(&self, rel: &str) -> Result<(PathBuf, String)> {
        let p = self.path(rel);
        let s = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
        Ok((p, s))
    }

    /// `/proc/meminfo`.
    pub fn meminfo(&self) -> Result<MemInfo> {
        let (p, s) = self.read("meminfo")?;
        MemInfo::parse(&p, &s)
    }

    /// `/proc/vmstat`, every counter by name.
    pub fn vmstat(&self) -> Result<BTreeMap<String, i64>> {
        let (p, s) = self.read("vmstat")?;
        let parsed = <procfs_core::VmStat as procfs_core::FromRead>::from_read(s.as_bytes())
            .map_err(|e| Error::parse(&p, 0, e.to_string()))?;
        Ok(parsed.0.into_iter().collect())
    }

    /// `/proc/buddyinfo`: free blocks per order, per zone.
    pub fn buddyinfo(&self) -> Result<Vec<BuddyZone>> {
        let (p, s) = self.read("buddyinfo")?;
        buddy::parse(&p, &s)
    }

    /// `/proc/pagetypeinfo` (root only on most kernels).
    pub fn pagetypeinfo(&self) -> Result<PageTypeInfo> {
        let (p, s) = self.read("pagetypeinfo")?;
        pagetype::parse(&p, &s)
    }

    /// `/proc/<pid>/smaps`: every mapping with its page statistics.
    pub fn smaps(&self, pid: Pid) -> Result<Vec<Vma>> {
        let (p, s) = self.read(&format!("{}/smaps", pid.dir()))?;
        smaps::parse(&p, &s)
    }

    /// `/proc/<pid>/smaps_rollup`: the totals over all mappings.
    pub fn smaps_rollup(&self, pid: Pid) -> Result<VmaTotals> {
        let (p, s) = self.read(&format!("{}/smaps_rollup", pid.dir()))?;
        smaps::parse_rollup(&p, &s)
    }

    /// Open `/proc/<pid>/pagemap` for reading entries.
    pub fn pagemap(&self, pid: Pid) -> Result<PageMap> {
        PageMap::open(self.path(&format!("{}/pagemap", pid.dir())))
    }

    /// Free pages parked in the per-CPU lists of all zones (`count:` of every pageset in
    /// `/proc/zoneinfo`). They are free but neither in buddyinfo nor able to merge into larger
    /// blocks until drained.
    pub fn pcp_pages(&self) -> Result<u64> {
        let (p, s) = self.read("zoneinfo")?;
        let mut total = 0u64;
        for (i, line) in s.lines().enumerate() {
            if let Some(v) = line.trim_start().strip_prefix("count:") {
                total += v
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| Error::parse(&p, i + 1, format!("bad count: {line:?}")))?;
            }
        }
        Ok(total)
    }

    /// `/proc/swaps`: the active swap areas.
    pub fn swaps(&self) -> Result<Vec<SwapArea>> {
        let (p, s) = self.read("swaps")?;
        swaps::parse(&p, &s)
    }

    /// `/proc/self/mounts`.
    pub fn mounts(&self) -> Result<Vec<Mount>> {
        let (p, s) = self.read("self/mounts")?;
        mounts::parse(&p, &s)
    }

    /// This boot's id (`sys/kernel/random/boot_id`): what a journal compares to tell whether
    /// the machine rebooted since a change was made.
    pub fn boot_id(&self) -> Result<String> {
        self.read_knob("sys/kernel/random/boot_id")
    }

    /// When process `pid` started, in clock ticks since boot (field 22 of `stat`); `None` when
    /// no such process exists. With the pid it identifies a process across pid reuse.
    pub fn start_time(&self, pid: i32) -> Result<Option<u64>> {
        let (p, s) = match self.read(&format!("{pid}/stat")) {
            Ok(v) => v,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        // The command name (field 2) may hold spaces and parentheses: fields after it are
        // counted from the last ')'.
        let after = s
            .rfind(')')
            .map(|i| &s[i + 1..])
            .ok_or_else(|| Error::parse(&p, 1, "no ')' after the command name"))?;
        after
            .split_whitespace()
            .nth(19)
            .and_then(|f| f.parse().ok())
            .map(Some)
            .ok_or_else(|| Error::parse(&p, 1, "no start time in field 22"))
    }

    /// Read a knob under this root (such as `sys/vm/page-cluster`), trimmed.
    pub fn read_knob(&self, rel: &str) -> Result<String> {
        self.read(rel).map(|(_, s)| s.trim().to_string())
    }

    /// Write `value` to a knob under this root and return what it held before.
    pub fn write_knob(&self, rel: &str, value: &str) -> Result<String> {
        let old = self.read_knob(rel)?;
        let p = self.path(rel);
        std::fs::write(&p, value).map_err(|e| Error::io(&p, e))?;
        Ok(old)
    }

    /// Write `value` to a write-only trigger under this root (`sys/vm/drop_caches`,
    /// `sys/vm/compact_memory`): there is no old value to read back.
    pub fn trigger(&self, rel: &str, value: &str) -> Result<()> {
        let p = self.path(rel);
        std::fs::write(&p, value).map_err(|e| Error::io(&p, e))
    }

    /// Absolute path of a file given relative to the root.
    pub fn file(&self, rel: &str) -> PathBuf {
        self.path(rel)
    }

    /// Open `/proc/kpageflags` (root only).
    pub fn kpageflags(&self) -> Result<KPageFlags> {
        KPageFlags::open(self.path("kpageflags"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, ProcFs) {
        let dir = tempfile::tempdir().expect("tmp");
        for (name, text) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        let proc = ProcFs::new(dir.path());
        (dir, proc)
    }

    #[test]
    fn vmstat_from_recorded_sample() {
        let (_d, proc) = tree(&[(
            "vmstat",
            include_str!("../../tests/samples/vmstat-6.18.txt"),
        )]);
        let v = proc.vmstat().expect("vmstat");
        assert!(v.contains_key("thp_fault_alloc"));
        assert!(v.contains_key("compact_stall"));
        assert!(v.len() > 100);
    }

    #[test]
    fn missing_file_names_the_path() {
        let (d, proc) = tree(&[]);
        let e = proc.buddyinfo().expect_err("missing");
        assert!(e
            .to_string()
            .contains(&d.path().join("buddyinfo").display().to_string()));
    }

    #[test]
    fn per_process_paths() {
        let (_d, proc) = tree(&[(
            "42/smaps_rollup",
            include_str!("../../tests/samples/smaps_rollup.txt"),
        )]);
        assert!(proc.smaps_rollup(Pid::Id(42)).is_ok());
        assert!(proc.smaps_rollup(Pid::Current).is_err());
    }

    #[test]
    fn start_time_skips_odd_command_names() {
        let stat = "77 (a) b (c)) S 1 77 77 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 123456 \
                    1000 10 18446744073709551615\n";
        let (_d, proc) = tree(&[("77/stat", stat)]);
        assert_eq!(proc.start_time(77).expect("stat"), Some(123456));
        assert_eq!(proc.start_time(78).expect("absent"), None);
        let real = ProcFs::default()
            .start_time(std::process::id() as i32)
            .expect("own stat");
        assert!(real.is_some());
    }

    #[test]
    fn pcp_pages_sum_every_pageset() {
        let zi = "Node 0, zone   Normal\n  pages free     1975747\n  pagesets\n    cpu: 0\n              count:    221387\n              high:     221521\n    cpu: 1\n              count:    13\n";
        let (_d, proc) = tree(&[("zoneinfo", zi)]);
        assert_eq!(proc.pcp_pages().expect("zoneinfo"), 221400);
        assert!(ProcFs::default().pcp_pages().is_ok());
    }

    #[test]
    fn knobs_write_back_the_old_value() {
        let (_d, proc) = tree(&[("sys/vm/page-cluster", "3\n")]);
        assert_eq!(
            proc.write_knob("sys/vm/page-cluster", "0").expect("write"),
            "3"
        );
        assert_eq!(proc.read_knob("sys/vm/page-cluster").expect("read"), "0");
    }
}
