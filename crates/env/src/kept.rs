//! Settings made on their own (`env thp`, `env hugetlb`, `env khugepaged`, `env page-cluster`,
//! `env swap`): journaled as kept, so that they stay until `env restore` undoes them.

use std::path::Path;

use hugewise_results::env::{Plan, SetReport, SwapReport};

use crate::journal::Lifetime;
use crate::scoped::settings;
use crate::{Error, Host, Result, Session};

/// Refuse `hugewise env <command>` before it reads or writes anything, unless this process is
/// root (the commands that only show need no root).
pub fn require_root(command: &str) -> Result<()> {
    if hugewise_sys::caps::is_root() {
        Ok(())
    } else {
        Err(Error::CommandNotRoot(command.to_string()))
    }
}

/// Write the settings `plan` asks for (only its settings: no swap, pressure or
/// fragmentation), kept until `env restore`.
pub fn set(host: &Host, command: &str, plan: &Plan) -> Result<SetReport> {
    require_root(command)?;
    let sets = settings(plan);
    if sets.is_empty() {
        return Err(Error::Invalid(format!(
            "hugewise env {command}: nothing to set (see --help)"
        )));
    }
    let mut s = Session::open(host, Lifetime::Kept)?;
    let mut done = Vec::new();
    for (k, v) in sets {
        done.push(s.set(k, &v)?);
    }
    Ok(SetReport { settings: done })
}

/// Create and enable a swap file of `bytes` at `file`, kept until `env restore`.
pub fn swap(host: &Host, file: &Path, bytes: u64) -> Result<SwapReport> {
    require_root("swap")?;
    let mut s = Session::open(host, Lifetime::Kept)?;
    s.add_swap(file, bytes)?;
    Ok(SwapReport {
        file: file.to_path_buf(),
        size_bytes: bytes,
        swaps: host.proc.swaps()?,
    })
}
