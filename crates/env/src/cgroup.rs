//! Memory cgroups that hugewise creates for one command and removes afterwards.
//!
//! cgroup v2 is used where its root offers the memory controller; otherwise the v1 memory
//! hierarchy. hugewise only ever creates, and removes, directories named `hugewise-*` directly
//! under the hierarchy's root; it never writes into a cgroup it did not create.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use hugewise_results::env::Usage;
use serde::Serialize;

use crate::host::Host;
use crate::{Error, Result};

/// The prefix of every cgroup hugewise creates.
pub const PREFIX: &str = "hugewise-";

/// Which cgroup interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Version {
    /// The v1 `memory` hierarchy.
    V1,
    /// The unified hierarchy.
    V2,
}

/// Where memory cgroups can be made on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hierarchy {
    /// The interface.
    pub version: Version,
    /// Its mount point.
    pub mount: PathBuf,
}

impl Hierarchy {
    /// Find the memory controller: v2 if its root delegates memory, else v1.
    pub fn find(host: &Host) -> Result<Hierarchy> {
        let mounts = host.proc.mounts()?;
        for m in mounts.iter().filter(|m| m.fstype == "cgroup2") {
            let ctl = std::fs::read_to_string(m.target.join("cgroup.subtree_control"))
                .unwrap_or_default();
            if ctl.split_whitespace().any(|c| c == "memory") {
                return Ok(Hierarchy {
                    version: Version::V2,
                    mount: m.target.clone(),
                });
            }
        }
        for m in mounts.iter().filter(|m| m.fstype == "cgroup") {
            if m.options.iter().any(|o| o == "memory") {
                return Ok(Hierarchy {
                    version: Version::V1,
                    mount: m.target.clone(),
                });
            }
        }
        Err(Error::Invalid(
            "no memory cgroup controller is mounted (neither a cgroup2 root delegating `memory` \
             nor a v1 `memory` hierarchy)"
                .into(),
        ))
    }

    fn limit_file(&self) -> &'static str {
        match self.version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        }
    }
}

/// Whether `path` is a cgroup hugewise may remove: named `hugewise-*`, directly under a memory
/// hierarchy of this machine.
pub fn is_ours(host: &Host, path: &Path) -> bool {
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(PREFIX));
    named
        && Hierarchy::find(host)
            .is_ok_and(|h| path.parent().is_some_and(|p| p == h.mount.as_path()))
}

/// A memory cgroup created by hugewise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryCgroup {
    /// Its hierarchy.
    pub hierarchy: Hierarchy,
    /// Its directory.
    pub path: PathBuf,
    /// The limit set.
    pub limit_bytes: u64,
}

/// A fresh name under `hierarchy`: `hugewise-<pid>-<n>`.
pub fn fresh_path(hierarchy: &Hierarchy) -> PathBuf {
    let pid = std::process::id();
    (0u32..)
        .map(|n| hierarchy.mount.join(format!("{PREFIX}{pid}-{n}")))
        .find(|p| !p.exists())
        .unwrap_or_else(|| hierarchy.mount.join(format!("{PREFIX}{pid}")))
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|e| Error::io(path, e))
}

impl MemoryCgroup {
    /// Make the directory `path` (it must not exist) and set its memory limit.
    pub fn create(hierarchy: &Hierarchy, path: &Path, limit_bytes: u64) -> Result<MemoryCgroup> {
        std::fs::create_dir(path).map_err(|e| Error::io(path, e))?;
        let cg = MemoryCgroup {
            hierarchy: hierarchy.clone(),
            path: path.to_path_buf(),
            limit_bytes,
        };
        write(&path.join(hierarchy.limit_file()), &limit_bytes.to_string())?;
        Ok(cg)
    }

    /// The file a process writes to join.
    pub fn procs_file(&self) -> PathBuf {
        self.path.join("cgroup.procs")
    }

    /// What the cgroup has seen so far (fields it cannot read are `None`).
    pub fn usage(&self) -> Usage {
        let c = hugewise_sys::sysfs::memcg_counters(&self.path).unwrap_or_default();
        Usage {
            limit_bytes: self.limit_bytes,
            peak_bytes: c.peak_bytes,
            limit_hits: c.limit_hits,
            oom_kills: c.oom_kills,
        }
    }
}

/// Kill whatever still runs in the cgroup at `path` and remove it. A missing directory is not
/// an error (it is already gone).
pub fn remove(path: &Path) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let procs = path.join("cgroup.procs");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids: Vec<i32> = std::fs::read_to_string(&procs)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.is_empty() {
            match std::fs::remove_dir(path) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) if Instant::now() >= deadline => return Err(Error::io(path, e)),
                Err(_) => {}
            }
        } else if Instant::now() >= deadline {
            return Err(Error::Invalid(format!(
                "{}: processes {pids:?} are still inside after SIGKILL",
                path.display()
            )));
        }
        for pid in pids {
            if let Ok(fd) = hugewise_sys::process::PidFd::open(pid) {
                let _ = fd.signal(hugewise_sys::process::Signal::Kill);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
