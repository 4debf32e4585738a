//! What this machine offers for huge pages, gathered in one report (`hugewise sys`).

pub use hugewise_results::machine::{MachineReport, ZoneReport};

use crate::caps;
use crate::proc::{fragmentation_index, unusable_index, ProcFs};
use crate::sysfs::SysFs;
use crate::Result;

/// Gather the report from the given trees (probes run against the live kernel).
pub fn gather(proc: &ProcFs, sys: &SysFs) -> Result<MachineReport> {
    let memory = proc.meminfo()?;
    let zones: Vec<ZoneReport> = proc
        .buddyinfo()?
        .iter()
        .map(|z| {
            let orders = z.free_blocks.len();
            ZoneReport {
                node: z.node,
                zone: z.zone.clone(),
                free_bytes: z.free_pages() * 4096,
                free_blocks: z.free_blocks.clone(),
                free_2m_blocks: if orders > 9 { z.suitable_blocks(9) } else { 0 },
                unusable_index: (0..orders).map(|o| unusable_index(z, o)).collect(),
                fragmentation_index: (0..orders).map(|o| fragmentation_index(z, o)).collect(),
            }
        })
        .collect();
    let counters = proc
        .vmstat()?
        .into_iter()
        .filter(|(k, _)| k.starts_with("thp_") || k.starts_with("compact_"))
        .collect();
    let mut notes = Vec::new();
    let buddy_free: u64 = zones.iter().map(|z| z.free_bytes).sum();
    if buddy_free + (1 << 30) < memory.free_bytes {
        let cmdline = std::fs::read_to_string(proc.root().join("cmdline")).unwrap_or_default();
        let why = match cmdline
            .split_whitespace()
            .find(|w| w.starts_with("deferred_init"))
        {
            Some(w) => {
                format!("the kernel was booted with {w}: struct pages are initialised on demand")
            }
            None => "deferred page init or hot-plugged memory".to_string(),
        };
        notes.push(format!(
            "the buddy allocator lists {} MiB free but MemFree is {} MiB; the rest is not yet \
             handed to the allocator ({why}) and joins the free lists as memory is used, so free \
             2 MiB blocks above count only what the allocator holds now",
            buddy_free >> 20,
            memory.free_bytes >> 20
        ));
    }
    let thp = sys.thp().ok();
    if thp.is_none() {
        notes.push("this kernel has no transparent huge pages".into());
    }
    let capabilities = caps::probe(proc);
    if !capabilities.split_huge_pages.usable {
        notes.push(format!("split: {}", capabilities.split_huge_pages.detail));
    }
    Ok(MachineReport {
        kernel: proc.kernel_release().ok(),
        free_2m_blocks: zones.iter().map(|z| z.free_2m_blocks).sum(),
        thp,
        hugetlb: sys.hugetlb_pools()?,
        memory,
        zones,
        counters,
        capabilities,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugfs;

    #[test]
    fn live_report_is_consistent() {
        let r = gather(&ProcFs::default(), &SysFs::default()).expect("gather");
        assert!(r.memory.total_bytes > 0);
        assert!(!r.zones.is_empty());
        assert!(r.counters.contains_key("thp_fault_alloc"));
        for z in &r.zones {
            assert_eq!(z.unusable_index.len(), z.free_blocks.len());
            assert!(z.unusable_index.iter().all(|u| (0.0..=1.0).contains(u)));
        }
    }

    /// Our indices against the kernel's own debugfs files, where readable (root).
    #[test]
    fn indices_match_the_kernels() {
        let kernel = match debugfs::read("extfrag/unusable_index") {
            Ok(k) => k,
            Err(e) => {
                crate::testing::skip(format!("extfrag/unusable_index not readable: {e}"));
                return;
            }
        };
        let zones = gather(&ProcFs::default(), &SysFs::default())
            .expect("gather")
            .zones;
        for line in kernel.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            // "Node 0, zone Normal 0.000 0.120 ..."
            let zone = f[3];
            let theirs: Vec<f64> = f[4..].iter().filter_map(|x| x.parse().ok()).collect();
            let ours = &zones
                .iter()
                .find(|z| z.zone == zone)
                .expect("zone")
                .unusable_index;
            // Order 0 and the top order are stable between the two reads; allow drift in the
            // rest from allocations in between.
            assert_eq!(ours.len(), theirs.len());
            assert_eq!(ours[0], theirs[0]);
            for (o, t) in ours.iter().zip(&theirs) {
                assert!(
                    (o - t).abs() < 0.1,
                    "zone {zone}: ours {ours:?} kernel {theirs:?}"
                );
            }
        }
    }
}
