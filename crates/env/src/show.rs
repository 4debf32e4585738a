//! `hugewise env show`: the settings hugewise can change, the memory state, swap, the cgroups
//! hugewise made, and what the journal still has to undo.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hugewise_sys::proc::SwapArea;
use hugewise_sys::sysfs::{HugetlbPool, ThpSettings};
use serde::Serialize;

use crate::cgroup::{Hierarchy, PREFIX};
use crate::host::Host;
use crate::journal::Lifetime;
use crate::knob::Knob;
use crate::state::{self, MemoryState};
use crate::{session, Result};

/// A pending journal entry, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingChange {
    /// Sequence number.
    pub seq: u64,
    /// `run` or `kept`.
    pub lifetime: Lifetime,
    /// Who made it.
    pub pid: i32,
    /// What it is.
    pub change: String,
}

/// Everything `env show` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvShow {
    /// THP, mTHP and khugepaged settings.
    pub thp: ThpSettings,
    /// hugetlb pools.
    pub hugetlb: Vec<HugetlbPool>,
    /// `vm.*` settings hugewise may change, by name (`null` when absent).
    pub vm: BTreeMap<String, Option<String>>,
    /// Memory state.
    pub memory: MemoryState,
    /// Active swap areas.
    pub swaps: Vec<SwapArea>,
    /// Memory cgroups named `hugewise-*` that exist now.
    pub hugewise_cgroups: Vec<PathBuf>,
    /// The journal.
    pub journal: PathBuf,
    /// Changes it has not undone yet.
    pub pending: Vec<PendingChange>,
}

/// Gather the report.
pub fn show(host: &Host) -> Result<EnvShow> {
    let vm = [
        Knob::CompactUnevictable,
        Knob::PageCluster,
        Knob::PcpHighFraction,
    ]
    .iter()
    .map(|k| (k.to_string(), k.read(host).ok()))
    .collect();
    let hugewise_cgroups = match Hierarchy::find(host) {
        Ok(h) => std::fs::read_dir(&h.mount)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let pending = session::pending(host)?
        .into_iter()
        .map(|p| PendingChange {
            seq: p.seq,
            lifetime: p.lifetime,
            pid: p.owner.pid,
            change: p.change.to_string(),
        })
        .collect();
    Ok(EnvShow {
        thp: host.sys.thp()?,
        hugetlb: host.sys.hugetlb_pools()?,
        vm,
        memory: state::measure(host)?,
        swaps: host.proc.swaps().unwrap_or_default(),
        hugewise_cgroups,
        journal: crate::journal::Journal::path_in(&host.state_dir),
        pending,
    })
}
