//! One-off actions: nothing to undo, so they are not journaled.

use std::process::Command;

use hugewise_results::env::ActionReport;

use crate::host::Host;
use crate::state;
use crate::Result;

fn trigger(host: &Host, rel: &str, value: &str) -> Result<()> {
    host.require_root("this action", &format!("/proc/{rel}"))?;
    host.proc.trigger(rel, value)?;
    Ok(())
}

/// Drop the page cache (`sync`, then `vm.drop_caches = 3`). The cache refills as files are read.
pub fn drop_caches(host: &Host) -> Result<()> {
    let _ = Command::new("sync").status();
    trigger(host, "sys/vm/drop_caches", "3")
}

/// Compact all memory now (`vm.compact_memory`).
pub fn compact(host: &Host) -> Result<()> {
    trigger(host, "sys/vm/compact_memory", "1")
}

/// Run one-off action `name` (`f`), with the memory state measured before and after.
pub fn measured(host: &Host, name: &str, f: fn(&Host) -> Result<()>) -> Result<ActionReport> {
    crate::kept::require_root(name)?;
    let before = state::settled(host)?;
    f(host)?;
    let after = state::settled(host)?;
    Ok(ActionReport {
        action: name.to_string(),
        before,
        after,
    })
}
