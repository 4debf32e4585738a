//! `hugewise env show`: the settings hugewise can change, the memory state, swap, the cgroups
//! hugewise made, and what the journal still has to undo.

pub use hugewise_results::env::{EnvShow, PendingChange};

use crate::cgroup::{Hierarchy, PREFIX};
use crate::host::Host;

use crate::knob::Knob;
use crate::state;
use crate::{session, Error, Result};
use std::io::ErrorKind;

/// Gather the report. It needs no root: what this user may not read (the journal is root's)
/// is listed in `unread` and left `null`.
pub fn show(host: &Host) -> Result<EnvShow> {
    let vm = [
        Knob::CompactUnevictable,
        Knob::PageCluster,
        Knob::PcpHighFraction,
        Knob::CompactionProactiveness,
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
    let journal = crate::journal::Journal::path_in(&host.state_dir);
    let mut unread = Vec::new();
    let pending = match session::pending(host) {
        Ok(p) => Some(
            p.into_iter()
                .map(|p| PendingChange {
                    seq: p.seq,
                    lifetime: p.lifetime,
                    pid: p.owner.pid,
                    change: p.change.to_string(),
                })
                .collect(),
        ),
        // The journal is root's (0600): shown to others as unread, not as empty.
        Err(Error::Io { source, .. }) if source.kind() == ErrorKind::PermissionDenied => {
            unread.push(format!(
                "the restore journal at {} is root's: run as root to see the changes it still \
                 has to undo",
                journal.display()
            ));
            None
        }
        Err(e) => return Err(e),
    };
    Ok(EnvShow {
        thp: host.sys.thp()?,
        hugetlb: host.sys.hugetlb_pools()?,
        vm,
        memory: state::measure(host)?,
        swaps: host.proc.swaps().unwrap_or_default(),
        hugewise_cgroups,
        journal,
        pending,
        unread,
    })
}
