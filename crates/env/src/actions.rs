//! One-off actions: nothing to undo, so they are not journaled.

use std::process::Command;

use crate::host::Host;
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
