//! Whether a benchmark's region fits in the memory available, checked before it is touched.

use hugewise_graph::fits::Fit;
use hugewise_mem::Bytes;

use crate::Result;

/// Refuse, unless `force`, a benchmark that would touch `need` bytes (its region of `size`
/// and what it holds beside it) where less is available (MemAvailable and the memory cgroup's
/// headroom): the error names the size, what it implies and what is available.
pub fn check(size: Bytes, need: u64, implies: &str, force: bool) -> Result<()> {
    let fit = Fit {
        force,
        ..Fit::default()
    };
    fit.check_bytes(&format!("size {size}"), implies, need)?;
    Ok(())
}
