//! Settings made on their own (`env thp`, `env hugetlb`, `env khugepaged`, `env page-cluster`,
//! `env swap`): journaled as kept, so that they stay until `env restore` undoes them.

use std::path::Path;

use hugewise_results::env::{Plan, SetReport, SwapReport};

use crate::journal::Lifetime;
use crate::scoped::{hugetlb_pools, khugepaged_settings, settings};
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

/// `env thp`: THP's global mode, its defrag policy and per-size modes (size in KiB, mode).
pub fn thp(
    host: &Host,
    enabled: Option<String>,
    defrag: Option<String>,
    mthp: Vec<(u64, String)>,
) -> Result<SetReport> {
    let plan = Plan {
        thp_enabled: enabled,
        thp_defrag: defrag,
        mthp,
        ..Plan::new()
    };
    set(host, "thp", &plan)
}

/// `env hugetlb`: the 2 MiB and 1 GiB pools' sizes in pages.
pub fn hugetlb(host: &Host, pages_2m: Option<u64>, pages_1g: Option<u64>) -> Result<SetReport> {
    let plan = Plan {
        hugetlb: hugetlb_pools(pages_2m, pages_1g),
        ..Plan::new()
    };
    set(host, "hugetlb", &plan)
}

/// `env khugepaged`: its scan rate and collapse threshold.
pub fn khugepaged(
    host: &Host,
    pages_to_scan: Option<u64>,
    scan_sleep_ms: Option<u64>,
    max_ptes_none: Option<u64>,
) -> Result<SetReport> {
    let plan = Plan {
        khugepaged: khugepaged_settings(pages_to_scan, scan_sleep_ms, max_ptes_none),
        ..Plan::new()
    };
    set(host, "khugepaged", &plan)
}

/// `env page-cluster`: swap readahead, 2^`n` pages.
pub fn page_cluster(host: &Host, n: u32) -> Result<SetReport> {
    let plan = Plan {
        page_cluster: Some(n),
        ..Plan::new()
    };
    set(host, "page-cluster", &plan)
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
