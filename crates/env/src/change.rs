//! One change to the machine, as the journal records it, and how to undo it.
//!
//! Every undo is idempotent, because a run can die after journaling a change and before making
//! it, or while undoing: writing back an old value that is already there, removing a cgroup
//! that is already gone, turning off a swap file that is not on or ending a process group that
//! has already ended are all no-ops.

use std::fmt;
use std::path::PathBuf;

pub use hugewise_results::env::Undone;
use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::knob::Knob;
use crate::{cgroup, group, swapfile, Error, Result};

/// A change hugewise made, or is about to make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A kernel setting written.
    Knob {
        /// Which.
        knob: Knob,
        /// Its value before, written back on undo.
        old: String,
        /// The value written.
        new: String,
    },
    /// A memory cgroup created (undo: kill what runs in it, remove it).
    Cgroup {
        /// Its directory.
        path: PathBuf,
    },
    /// A swap file created and enabled (undo: swapoff, delete the file).
    SwapFile {
        /// The file.
        path: PathBuf,
    },
    /// A command started as the leader of its own process group (undo: end what still runs in
    /// that group).
    Command {
        /// Its pid, which is also its process group id.
        pid: i32,
        /// Its start time in clock ticks since boot (with the pid, its identity).
        start_time: Option<u64>,
        /// Program and arguments.
        argv: Vec<String>,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Knob { knob, old, new } => write!(f, "{knob}: {old} -> {new}"),
            Change::Cgroup { path } => write!(f, "cgroup {}", path.display()),
            Change::SwapFile { path } => write!(f, "swap file {}", path.display()),
            Change::Command { pid, argv, .. } => {
                write!(f, "command `{}` (process group {pid})", argv.join(" "))
            }
        }
    }
}

impl Change {
    /// Put the machine back as it was before this change. `same_boot` is false when the machine
    /// rebooted since the change: the kernel then already forgot settings, cgroups and swap.
    pub fn undo(&self, host: &Host, same_boot: bool) -> Result<String> {
        match self {
            Change::Knob { knob, old, new } => {
                if !same_boot {
                    return Ok("skipped: the machine rebooted since, which reset it".into());
                }
                let now = knob.read(host)?;
                knob.write(host, old)?;
                let back = knob.read(host)?;
                let mut outcome = format!("back to {old}");
                if now != *new {
                    outcome.push_str(&format!(" (it had been changed to {now} since)"));
                }
                if back != *old {
                    outcome.push_str(&format!("; the kernel now reports {back}"));
                }
                Ok(outcome)
            }
            Change::Cgroup { path } => {
                if !same_boot {
                    return Ok("skipped: the machine rebooted since".into());
                }
                if !path.exists() {
                    return Ok("already gone".into());
                }
                if !cgroup::is_ours(host, path) {
                    return Err(Error::Invalid(format!(
                        "{}: not a cgroup hugewise creates (hugewise-* under the memory \
                         hierarchy); left alone",
                        path.display()
                    )));
                }
                cgroup::remove(path)?;
                Ok("removed".into())
            }
            Change::SwapFile { path } => {
                let mut done = Vec::new();
                if same_boot && swapfile::is_active(host, path)? {
                    hugewise_sys::swap::swapoff(path)?;
                    done.push("swapped off");
                }
                if path.exists() {
                    if swapfile::is_ours(path) {
                        std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
                        done.push("file removed");
                    } else {
                        done.push("file left: it has no hugewise swap label");
                    }
                }
                Ok(if done.is_empty() {
                    "already gone".into()
                } else {
                    done.join(", ")
                })
            }
            Change::Command {
                pid, start_time, ..
            } => {
                if !same_boot {
                    return Ok("skipped: the machine rebooted since".into());
                }
                group::end(host, *pid, *start_time).map(|e| e.outcome)
            }
        }
    }
}
