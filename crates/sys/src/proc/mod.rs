//! Readers of `/proc`, rooted at an injectable directory so each parser runs on recorded samples.

mod buddy;
mod maps;
mod meminfo;
mod mounts;
mod pagemap;
mod pagetype;
mod smaps;
mod swaps;

pub use buddy::{fragmentation_index, unusable_index, BuddyZone, FreeAtOrder};
pub use maps::MapEntry;
pub use meminfo::MemInfo;
pub use mounts::Mount;
pub use pagemap::{KPageFlags, PageFlags, PageMap, PageRun, PagemapEntry, ScanCategories};
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

/// What hugewise reads of `/proc/<pid>/stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// The process id.
    pub pid: i32,
    /// Its command name (field 2, at most 15 bytes).
    pub comm: String,
    /// Its state letter (`R`, `S`, `D`, `Z`, ...).
    pub state: char,
    /// Its process group (field 5).
    pub pgrp: i32,
    /// The kernel's `PF_*` flags (field 9).
    pub flags: u64,
    /// Its threads (field 20); a main thread that ended while others run on is counted until
    /// the process is reaped.
    pub threads: u32,
    /// When it started, in clock ticks since boot (field 22).
    pub start_time: u64,
}

impl ProcStat {
    fn parse(p: &Path, pid: i32, s: &str) -> Result<ProcStat> {
        // The command name (field 2) may hold spaces and parentheses: fields after it are
        // counted from the last ')'.
        let open = s.find('(');
        let close = s.rfind(')');
        let (Some(open), Some(close)) = (open, close) else {
            return Err(Error::parse(p, 1, "no command name in parentheses"));
        };
        let f: Vec<&str> = s[close + 1..].split_whitespace().collect();
        let field = |i: usize, what: &str| {
            f.get(i)
                .copied()
                .ok_or_else(|| Error::parse(p, 1, format!("no {what}")))
        };
        Ok(ProcStat {
            pid,
            comm: s[open + 1..close].to_string(),
            state: field(0, "state in field 3")?.chars().next().unwrap_or('?'),
            pgrp: field(2, "process group in field 5")?
                .parse()
                .map_err(|_| Error::parse(p, 1, "bad process group in field 5"))?,
            flags: field(6, "flags in field 9")?
                .parse()
                .map_err(|_| Error::parse(p, 1, "bad flags in field 9"))?,
            threads: field(17, "thread count in field 20")?
                .parse()
                .map_err(|_| Error::parse(p, 1, "bad thread count in field 20"))?,
            start_time: field(19, "start time in field 22")?
                .parse()
                .map_err(|_| Error::parse(p, 1, "bad start time in field 22"))?,
        })
    }
}

/// `PF_KTHREAD`: the task is a kernel thread, with no user address space.
const PF_KTHREAD: u64 = 0x0020_0000;

impl ProcStat {
    /// A kernel thread (`kthreadd`, `kworker/...`): it has no user memory to act on.
    pub fn kernel_thread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }

    /// Whether the process has ended: a zombie that only waits to be reaped. A process whose
    /// main thread has ended reads as a zombie too while its other threads run on.
    pub fn ended(&self) -> bool {
        self.state == 'X' || (self.state == 'Z' && self.threads <= 1)
    }
}

/// All CPUs' time by kind, in clock ticks since boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// User and nice.
    pub user: u64,
    /// System, irq and softirq.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle with I/O outstanding.
    pub iowait: u64,
    /// Taken by the hypervisor.
    pub steal: u64,
}

impl CpuTimes {
    /// Every kind together.
    pub fn total(&self) -> u64 {
        self.user + self.system + self.idle + self.iowait + self.steal
    }
}

/// A process's page faults since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Faults {
    /// Served without I/O.
    pub minor: u64,
    /// Served by reading (swap or file).
    pub major: u64,
}

/// What one read of a process's `stat` says of its memory's activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Activity {
    /// Page faults since it started.
    pub faults: Faults,
    /// Its threads now: how many of its faults can be waiting at the same time.
    pub threads: u32,
    /// Pages resident now (field 24, `rss`: anonymous, file and shared together), as the
    /// kernel's counters have it: a page freed or swapped out makes it drop without a fault.
    pub resident_pages: u64,
}

/// The fields of a `stat` file after the command name (field 3 is index 0).
struct StatFields {
    path: PathBuf,
    after: String,
}

impl StatFields {
    fn field(&self, i: usize) -> Result<u64> {
        self.after
            .split_whitespace()
            .nth(i)
            .and_then(|x| x.parse::<u64>().ok())
            .ok_or_else(|| Error::parse(&self.path, 1, format!("no number in field {}", i + 3)))
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
        meminfo::parse(&p, &s)
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

    /// `/proc/<pid>/maps`: every mapping, without page statistics (cheap).
    pub fn maps(&self, pid: Pid) -> Result<Vec<MapEntry>> {
        let (p, s) = self.read(&format!("{}/maps", pid.dir()))?;
        maps::parse(&p, &s)
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

    /// Clear the accessed bits of every page of process `pid` (`clear_refs` 1), so that the
    /// `Referenced` of its smaps counts only what it touches from now on.
    pub fn clear_refs(&self, pid: Pid) -> Result<()> {
        self.trigger(&format!("{}/clear_refs", pid.dir()), "1")
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
        Ok(self.stat(pid)?.map(|s| s.start_time))
    }

    /// `/proc/<pid>/stat`: state, process group and start time; `None` when no such process
    /// exists (also when it ended while being read).
    pub fn stat(&self, pid: i32) -> Result<Option<ProcStat>> {
        match self.read(&format!("{pid}/stat")) {
            Ok((p, s)) => ProcStat::parse(&p, pid, &s).map(Some),
            Err(Error::Io { source, .. })
                if matches!(source.raw_os_error(), Some(libc::ENOENT | libc::ESRCH)) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The effective user id process `pid` runs as (the `Uid:` line of its `status`): the
    /// owner of the files it creates.
    pub fn uid(&self, pid: i32) -> Result<u32> {
        let (path, text) = self.read(&format!("{pid}/status"))?;
        text.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|v| v.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| Error::parse(path, 0, "no effective uid on a Uid: line"))
    }

    /// Every process id listed under the root, in no particular order.
    pub fn pids(&self) -> Result<Vec<i32>> {
        let rd = std::fs::read_dir(&self.root).map_err(|e| Error::io(&self.root, e))?;
        Ok(rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect())
    }

    /// How many DAMON worker threads (`kdamond.N`) run: each may clear the accessed bits of the
    /// pages it monitors, the same bits `clear_refs` and smaps `Referenced` work with, so that
    /// a reader of `Referenced` sees fewer pages accessed than were. Counted from the threads'
    /// names under the root, without reading DAMON's own sysfs files.
    pub fn kdamonds(&self) -> Result<usize> {
        let mut n = 0;
        for pid in self.pids()? {
            if self
                .stat(pid)?
                .is_some_and(|s| s.comm.starts_with("kdamond"))
            {
                n += 1;
            }
        }
        Ok(n)
    }

    /// The live processes (those [`ProcStat::ended`] left out) whose process group is
    /// `pgid`.
    pub fn group_members(&self, pgid: i32) -> Result<Vec<ProcStat>> {
        let mut out = Vec::new();
        for pid in self.pids()? {
            if let Some(s) = self.stat(pid)? {
                if s.pgrp == pgid && !s.ended() {
                    out.push(s);
                }
            }
        }
        out.sort_by_key(|s| s.pid);
        Ok(out)
    }

    /// The kernel release (`sys/kernel/osrelease`, what `uname -r` prints).
    pub fn kernel_release(&self) -> Result<String> {
        self.read_knob("sys/kernel/osrelease")
    }

    /// The host name (`sys/kernel/hostname`).
    pub fn hostname(&self) -> Result<String> {
        self.read_knob("sys/kernel/hostname")
    }

    /// The first CPU's model name from `cpuinfo`; `None` where the file has none (some
    /// architectures name it otherwise).
    pub fn cpu_model(&self) -> Result<Option<String>> {
        let (_, s) = self.read("cpuinfo")?;
        Ok(s.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string()))
    }

    /// All CPUs' time from the `cpu` line of `stat`, in clock ticks: (busy, total), where busy
    /// is everything but idle and iowait.
    pub fn cpu_ticks(&self) -> Result<(u64, u64)> {
        let t = self.cpu_times()?;
        let total = t.total();
        Ok((total.saturating_sub(t.idle + t.iowait), total))
    }

    /// All CPUs' time from the `cpu` line of `stat`, field by field, in clock ticks.
    pub fn cpu_times(&self) -> Result<CpuTimes> {
        let (p, s) = self.read("stat")?;
        let cpu = s
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("cpu "))
            .ok_or_else(|| Error::parse(&p, 1, "no 'cpu' line first"))?;
        let v: Vec<u64> = cpu
            .split_whitespace()
            .map(|x| x.parse())
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::parse(&p, 1, format!("cpu line: {e}")))?;
        if v.len() < 4 {
            return Err(Error::parse(&p, 1, "cpu line has no idle field"));
        }
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal
        Ok(CpuTimes {
            user: at(0) + at(1),
            system: at(2) + at(5) + at(6),
            idle: at(3),
            iowait: at(4),
            steal: at(7),
        })
    }

    /// Minor and major faults of process `pid` (fields 10 and 12 of `stat`).
    pub fn process_faults(&self, pid: Pid) -> Result<Faults> {
        Ok(self.process_faults_and_threads(pid)?.0)
    }

    /// Minor and major faults of process `pid` with its threads now (fields 10, 12 and 20 of
    /// `stat`, read at once): how many of its faults can be waiting at the same time.
    pub fn process_faults_and_threads(&self, pid: Pid) -> Result<(Faults, u32)> {
        let a = self.process_activity(pid)?;
        Ok((a.faults, a.threads))
    }

    /// Faults, threads and resident pages of process `pid` (fields 10, 12, 20 and 24 of
    /// `stat`, read at once).
    pub fn process_activity(&self, pid: Pid) -> Result<Activity> {
        let f = self.stat_fields(pid)?;
        let threads = u32::try_from(f.field(17)?)
            .map_err(|_| Error::parse(&f.path, 1, "field 20 (threads) out of range"))?;
        Ok(Activity {
            faults: Faults {
                minor: f.field(7)?,
                major: f.field(9)?,
            },
            threads,
            resident_pages: f.field(21)?,
        })
    }

    fn stat_fields(&self, pid: Pid) -> Result<StatFields> {
        let (p, s) = self.read(&format!("{}/stat", pid.dir()))?;
        let after = s
            .rfind(')')
            .map(|i| s[i + 1..].to_string())
            .ok_or_else(|| Error::parse(&p, 1, "no ')' after the command name"))?;
        Ok(StatFields { path: p, after })
    }

    /// CPU time process `pid` used, user + system, in clock ticks (fields 14 and 15 of
    /// `stat`).
    pub fn process_cpu_ticks(&self, pid: Pid) -> Result<u64> {
        let f = self.stat_fields(pid)?;
        Ok(f.field(11)? + f.field(12)?)
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
    fn faults_and_threads_are_read_from_their_fields() {
        // minflt 1234 (field 10), majflt 56 (field 12), num_threads 7 (field 20); the command
        // name holds a space and a parenthesis.
        let stat = "77 (a b) c) R 1 77 77 0 -1 4194560 1234 0 56 0 10 20 0 0 20 0 7 0 123456 \
                    1000 10 18446744073709551615\n";
        let (_d, proc) = tree(&[("77/stat", stat)]);
        let (f, threads) = proc.process_faults_and_threads(Pid::Id(77)).expect("stat");
        assert_eq!((f.minor, f.major, threads), (1234, 56, 7));
        let a = proc.process_activity(Pid::Id(77)).expect("stat");
        assert_eq!((a.faults, a.threads, a.resident_pages), (f, 7, 10));
        let (_d, bad) = tree(&[("78/stat", "78 (x) R 1 2 3\n")]);
        let e = bad
            .process_faults_and_threads(Pid::Id(78))
            .expect_err("too short");
        assert!(e.to_string().contains("78/stat"), "{e}");
        let (own, n) = ProcFs::default()
            .process_faults_and_threads(Pid::Current)
            .expect("own stat");
        assert!(own.minor > 0 && n >= 1, "{own:?} {n}");
    }

    #[test]
    fn kdamond_threads_are_counted_by_name() {
        let stat = |pid: i32, comm: &str| {
            format!("{pid} ({comm}) S 2 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {pid}00 0\n")
        };
        let (a, b, c) = (
            stat(77, "kdamond.0"),
            stat(78, "kdamond.1"),
            stat(79, "kswapd0"),
        );
        let (_d, proc) = tree(&[("77/stat", &a), ("78/stat", &b), ("79/stat", &c)]);
        assert_eq!(proc.kdamonds().expect("scan"), 2);
        let (_d, none) = tree(&[("79/stat", &c)]);
        assert_eq!(none.kdamonds().expect("scan"), 0);
    }

    #[test]
    fn a_kernel_thread_is_told_by_its_flags() {
        let kthreadd = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 22 0 0 \
                        18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0\n";
        let (_d, proc) = tree(&[("2/stat", kthreadd)]);
        assert!(proc
            .stat(2)
            .expect("stat")
            .expect("present")
            .kernel_thread());
        let me = std::process::id() as i32;
        let own = ProcFs::default().stat(me).expect("stat").expect("present");
        assert!(!own.kernel_thread());
    }

    #[test]
    fn group_members_leave_zombies_and_other_groups_out() {
        let stat = |pid: i32, state: &str, pgrp: i32, threads: u32| {
            format!("{pid} (sl eep) {state} 1 {pgrp} {pgrp} 0 -1 0 0 0 0 0 0 0 0 0 20 0 {threads} 0 {pid}00 0\n")
        };
        // 14: its main thread ended, another runs on.
        let (a, b, c, d, e) = (
            stat(10, "S", 10, 1),
            stat(11, "R", 10, 1),
            stat(12, "Z", 10, 1),
            stat(13, "S", 99, 1),
            stat(14, "Z", 10, 2),
        );
        let (_d, proc) = tree(&[
            ("10/stat", &a),
            ("11/stat", &b),
            ("12/stat", &c),
            ("13/stat", &d),
            ("14/stat", &e),
        ]);
        let s = proc.stat(11).expect("stat").expect("present");
        assert_eq!(
            (s.comm.as_str(), s.state, s.pgrp, s.start_time),
            ("sl eep", 'R', 10, 1100)
        );
        let members: Vec<i32> = proc
            .group_members(10)
            .expect("scan")
            .iter()
            .map(|s| s.pid)
            .collect();
        assert_eq!(members, [10, 11, 14]);
        let me = std::process::id() as i32;
        let real = ProcFs::default()
            .stat(me)
            .expect("own stat")
            .expect("present");
        assert!(ProcFs::default().pids().expect("pids").contains(&me));
        assert!(ProcFs::default()
            .group_members(real.pgrp)
            .expect("scan")
            .iter()
            .any(|s| s.pid == me));
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
