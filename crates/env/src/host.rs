//! The machine being shaped: its `/proc` and `/sys` trees and the directory of hugewise's journal.
//!
//! Everything in this crate reaches the kernel through a [`Host`], so the journal and restore
//! logic run unchanged against a recorded tree in a temporary directory.

use std::path::{Path, PathBuf};

use hugewise_sys::proc::ProcFs;
use hugewise_sys::sysfs::SysFs;

use crate::{Error, Result};

/// Where the journal lives unless `HUGEWISE_STATE_DIR` says otherwise. It is on disk, not in
/// `/run`, so that a swap file left by a run killed before a reboot is still found and removed.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/hugewise";

/// A machine: the real one, or a fake `/proc` + `/sys` tree for tests.
#[derive(Debug, Clone)]
pub struct Host {
    /// The `/proc` tree.
    pub proc: ProcFs,
    /// The `/sys` tree.
    pub sys: SysFs,
    /// Directory of the journal and its lock.
    pub state_dir: PathBuf,
    real: bool,
}

impl Host {
    /// This machine, with the journal in `HUGEWISE_STATE_DIR` or [`DEFAULT_STATE_DIR`].
    pub fn real() -> Host {
        let state_dir = std::env::var_os("HUGEWISE_STATE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR));
        Host::real_with_state(state_dir)
    }

    /// This machine, with the journal in `state_dir`.
    pub fn real_with_state(state_dir: impl Into<PathBuf>) -> Host {
        Host {
            proc: ProcFs::default(),
            sys: SysFs::default(),
            state_dir: state_dir.into(),
            real: true,
        }
    }

    /// A fake machine: `/proc` at `proc_root`, `/sys` at `sys_root`. Root is not required.
    pub fn fake(proc_root: &Path, sys_root: &Path, state_dir: &Path) -> Host {
        Host {
            proc: ProcFs::new(proc_root),
            sys: SysFs::new(sys_root),
            state_dir: state_dir.to_path_buf(),
            real: false,
        }
    }

    /// Whether this is the running kernel (memory shaping, cgroups and swap need it).
    pub fn is_real(&self) -> bool {
        self.real
    }

    /// Refuse `what` without root on the real machine, naming the file it would write.
    pub fn require_root(&self, what: &str, path: &str) -> Result<()> {
        if self.real && !hugewise_sys::caps::is_root() {
            return Err(Error::NotRoot {
                what: what.to_string(),
                path: path.to_string(),
            });
        }
        Ok(())
    }

    /// Refuse memory shaping on a fake tree: it allocates real memory of this machine.
    pub fn require_real(&self, what: &str) -> Result<()> {
        if !self.real {
            return Err(Error::Invalid(format!(
                "{what} works on the running kernel only, not on a recorded /proc and /sys tree"
            )));
        }
        Ok(())
    }
}
