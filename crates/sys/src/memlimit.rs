//! How much memory this process may still take: the kernel's `MemAvailable` and the headroom
//! under the memory cgroup the process belongs to (v1 or v2), tightest ancestor included.
//!
//! Both are read, never assumed: a process in a cgroup limited to 2 GiB on a machine with
//! 20 GiB available can take 2 GiB, and one outside any limit can take what `MemAvailable`
//! says. Headroom under a cgroup counts its inactive file cache as reclaimable, as the kernel
//! reclaims that before it charges a new anonymous page as over the limit.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::proc::ProcFs;
use crate::sysfs::SysFs;
use crate::{Error, Result};

/// v1 writes "no limit" as the largest page-aligned i64; anything this high is no limit.
const UNLIMITED: u64 = 1 << 62;

/// The tightest memory cgroup limit over this process's cgroup and its ancestors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CgroupLimit {
    /// 1 or 2.
    pub version: u8,
    /// The cgroup directory whose limit binds.
    pub dir: PathBuf,
    /// Its limit (`memory.limit_in_bytes` or `memory.max`).
    pub limit_bytes: u64,
    /// Its charged usage (`memory.usage_in_bytes` or `memory.current`).
    pub usage_bytes: u64,
    /// Its inactive file cache, which the kernel reclaims before refusing a charge.
    pub reclaimable_bytes: u64,
}

impl CgroupLimit {
    /// What the cgroup still lets its processes take.
    pub fn headroom_bytes(&self) -> u64 {
        self.limit_bytes
            .saturating_sub(self.usage_bytes.saturating_sub(self.reclaimable_bytes))
    }
}

/// Memory this process may still take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Room {
    /// `MemAvailable` (or `MemFree` on kernels without it).
    pub mem_available_bytes: u64,
    /// Free swap (`SwapFree`), which a user may choose to lean on.
    pub swap_free_bytes: u64,
    /// The binding cgroup limit, when there is one.
    pub cgroup: Option<CgroupLimit>,
}

impl Room {
    /// The smaller of `MemAvailable` and the cgroup's headroom.
    pub fn available_bytes(&self) -> u64 {
        match &self.cgroup {
            Some(c) => self.mem_available_bytes.min(c.headroom_bytes()),
            None => self.mem_available_bytes,
        }
    }
}

/// Read [`Room`] for the calling process.
pub fn room(proc: &ProcFs, sys: &SysFs) -> Result<Room> {
    let m = proc.meminfo()?;
    Ok(Room {
        mem_available_bytes: m.available_bytes.unwrap_or(m.free_bytes),
        swap_free_bytes: m.swap_free_bytes.unwrap_or(0),
        cgroup: cgroup_limit(proc, sys)?,
    })
}

/// The binding memory cgroup limit of the calling process, or `None` when no ancestor sets
/// one (or no memory controller is mounted).
pub fn cgroup_limit(proc: &ProcFs, sys: &SysFs) -> Result<Option<CgroupLimit>> {
    let cgroup_file = proc.root().join("self/cgroup");
    let text = match std::fs::read_to_string(&cgroup_file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&cgroup_file, e)),
    };
    let mounts = proc.mounts()?;
    let mut best: Option<CgroupLimit> = None;
    for (i, line) in text.lines().enumerate() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(ctl), Some(rel)) = (f.next(), f.next(), f.next()) else {
            return Err(Error::parse(&cgroup_file, i + 1, format!("{line:?}")));
        };
        let version = if ctl.is_empty() {
            2
        } else if ctl.split(',').any(|c| c == "memory") {
            1
        } else {
            continue;
        };
        let mount = mounts.iter().find(|m| match version {
            1 => m.fstype == "cgroup" && m.options.iter().any(|o| o == "memory"),
            _ => m.fstype == "cgroup2",
        });
        let Some(mount) = mount else { continue };
        let top = under(sys, &mount.target);
        let mut dir = top.join(rel.trim_start_matches('/'));
        loop {
            if let Some(c) = level(&dir, version)? {
                if best
                    .as_ref()
                    .is_none_or(|b| c.headroom_bytes() < b.headroom_bytes())
                {
                    best = Some(c);
                }
            }
            if dir == top || !dir.pop() || !dir.starts_with(&top) {
                break;
            }
        }
    }
    Ok(best)
}

/// A mount point under /sys read through the (possibly injected) /sys root.
fn under(sys: &SysFs, target: &Path) -> PathBuf {
    match target.strip_prefix("/sys") {
        Ok(rest) => sys.root().join(rest),
        Err(_) => target.to_path_buf(),
    }
}

fn read_opt(p: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(p) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(p, e)),
    }
}

fn number(p: &Path, s: &str) -> Result<u64> {
    s.trim()
        .parse()
        .map_err(|_| Error::parse(p, 1, format!("not a number: {:?}", s.trim())))
}

/// The limit set at `dir` itself, if any.
fn level(dir: &Path, version: u8) -> Result<Option<CgroupLimit>> {
    let (limit_file, usage_file, stat_key) = match version {
        1 => (
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
            "total_inactive_file",
        ),
        _ => ("memory.max", "memory.current", "inactive_file"),
    };
    let lp = dir.join(limit_file);
    let Some(limit) = read_opt(&lp)? else {
        return Ok(None);
    };
    if limit.trim() == "max" {
        return Ok(None);
    }
    let limit_bytes = number(&lp, &limit)?;
    if limit_bytes >= UNLIMITED {
        return Ok(None);
    }
    let up = dir.join(usage_file);
    let usage_bytes = match read_opt(&up)? {
        Some(s) => number(&up, &s)?,
        None => 0,
    };
    let sp = dir.join("memory.stat");
    let reclaimable_bytes = read_opt(&sp)?
        .and_then(|s| {
            s.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == stat_key).then(|| v.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0);
    Ok(Some(CgroupLimit {
        version,
        dir: dir.to_path_buf(),
        limit_bytes,
        usage_bytes,
        reclaimable_bytes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    const MEMINFO: &str = include_str!("../tests/samples/meminfo-6.18.txt");

    #[test]
    fn v1_takes_the_tightest_ancestor_and_counts_inactive_cache() {
        let d = tempfile::tempdir().expect("tmp");
        let (proc, sys) = (d.path().join("proc"), d.path().join("sys"));
        put(&proc, "meminfo", MEMINFO);
        put(
            &proc,
            "self/cgroup",
            "5:cpu:/\n4:memory:/outer/inner\n0::/\n",
        );
        put(
            &proc,
            "self/mounts",
            "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n\
             cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n",
        );
        let m = "fs/cgroup/memory";
        put(
            &sys,
            &format!("{m}/memory.limit_in_bytes"),
            "9223372036854771712\n",
        );
        put(
            &sys,
            &format!("{m}/outer/memory.limit_in_bytes"),
            "1073741824\n",
        );
        put(
            &sys,
            &format!("{m}/outer/memory.usage_in_bytes"),
            "536870912\n",
        );
        put(
            &sys,
            &format!("{m}/outer/memory.stat"),
            "cache 1\ntotal_inactive_file 268435456\n",
        );
        put(
            &sys,
            &format!("{m}/outer/inner/memory.limit_in_bytes"),
            "4294967296\n",
        );
        put(
            &sys,
            &format!("{m}/outer/inner/memory.usage_in_bytes"),
            "0\n",
        );
        let r = room(&ProcFs::new(&proc), &SysFs::new(&sys)).expect("room");
        let c = r.cgroup.as_ref().expect("limited");
        assert_eq!(c.version, 1);
        assert!(c.dir.ends_with("memory/outer"), "{:?}", c.dir);
        assert_eq!(c.headroom_bytes(), (1 << 30) - (1 << 29) + (1 << 28));
        assert_eq!(r.available_bytes(), c.headroom_bytes());
        assert_eq!(r.mem_available_bytes, 24_417_516 * 1024);
    }

    #[test]
    fn v2_max_is_no_limit_and_meminfo_decides() {
        let d = tempfile::tempdir().expect("tmp");
        let (proc, sys) = (d.path().join("proc"), d.path().join("sys"));
        put(&proc, "meminfo", MEMINFO);
        put(&proc, "self/cgroup", "0::/user.slice\n");
        put(
            &proc,
            "self/mounts",
            "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
        );
        put(&sys, "fs/cgroup/user.slice/memory.max", "max\n");
        let r = room(&ProcFs::new(&proc), &SysFs::new(&sys)).expect("room");
        assert_eq!(r.cgroup, None);
        assert_eq!(r.available_bytes(), 24_417_516 * 1024);
        put(&sys, "fs/cgroup/user.slice/memory.max", "2097152000\n");
        put(&sys, "fs/cgroup/user.slice/memory.current", "97152000\n");
        put(
            &sys,
            "fs/cgroup/user.slice/memory.stat",
            "anon 5\ninactive_file 0\n",
        );
        let r = room(&ProcFs::new(&proc), &SysFs::new(&sys)).expect("room");
        assert_eq!(r.available_bytes(), 2_000_000_000);
        put(&sys, "fs/cgroup/user.slice/memory.max", "lots\n");
        let e = room(&ProcFs::new(&proc), &SysFs::new(&sys)).expect_err("garbage");
        assert!(e.to_string().contains("memory.max"), "{e}");
    }

    #[test]
    fn this_machine_has_some_room() {
        let r = room(&ProcFs::default(), &SysFs::default()).expect("room");
        assert!(r.available_bytes() > 0);
    }
}
