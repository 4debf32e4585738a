//! The THP probe: map a fresh region that asks for huge pages, fault it in, and measure what
//! share the kernel backed with 2 MiB pages. It shows what a workload starting now would get.

use std::time::Instant;

pub use hugewise_results::env::ProbeReport;
use hugewise_sys::mmap::{Advice, MapOptions, Mapping};

use crate::host::Host;
use crate::pressure::huge_bytes_of;
use crate::Result;

/// Probe with a region of `bytes` (rounded up to 2 MiB). The region is freed before returning.
pub fn thp_probe(host: &Host, bytes: u64) -> Result<ProbeReport> {
    host.require_real("the THP probe")?;
    let thp = host.sys.thp()?;
    let mut m = Mapping::anonymous(bytes.max(1) as usize, MapOptions::default())?;
    m.advise(0..m.len(), Advice::HugePage)?;
    let t0 = Instant::now();
    m.advise(0..m.len(), Advice::PopulateWrite)?;
    let fault_seconds = t0.elapsed().as_secs_f64();
    let huge = huge_bytes_of(host, &m)?;
    let region = m.len() as u64;
    m.discard(0..m.len())?;
    Ok(ProbeReport {
        region_bytes: region,
        huge_bytes: huge,
        huge_share: huge as f64 / region as f64,
        thp_enabled: thp.enabled.current,
        thp_defrag: thp.defrag.map(|d| d.current),
        fault_seconds,
    })
}
