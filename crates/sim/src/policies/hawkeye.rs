//! `hawkeye`: every window (1 s) the access coverage of each 2 MiB frame, the number of its
//! base pages whose accessed bit was set, is read and cleared; frames are bucketed by coverage
//! and promoted from the fullest bucket down, up to `regions` per window. Bucket k holds
//! coverages c with ⌊10c / 513⌋ = k (bucket 0: 1..=51 pages, bucket 9: 462..=512); within a
//! bucket frames go in address order.
//!
//! Accessed bits are set by page walks, as in hardware: a page that stays in the TLB after
//! its bit is cleared shows no coverage, which is how HawkEye can miss what the TLB misses.

use hugewise_sys::PageSize;

use crate::pagemap::{FrameId, PAGES};
use crate::policy::{promote_in_order, Ctx, Options, Policy, Timing};
use crate::Result;

/// Coverage buckets (HawkEye's 10).
const BUCKETS: usize = 10;

/// HawkEye's coverage-bucket promotion.
#[derive(Debug, Clone)]
pub struct HawkEye {
    interval: u64,
    window_s: f64,
    regions: u64,
}

/// HawkEye's settings, as the spec gave them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Coverage window, seconds.
    pub window_s: f64,
    /// Frames promoted per window at most.
    pub regions: u64,
}

impl Settings {
    /// Options: `window` (1s), `regions` per window (128).
    pub fn parse(o: &mut Options) -> Result<Settings> {
        Ok(Settings {
            window_s: o.seconds("window", 1.0)?,
            regions: o.count("regions", 128)?,
        })
    }
}

impl HawkEye {
    /// HawkEye with `s`, its window counted in accesses by `t`.
    pub fn new(s: &Settings, t: &Timing) -> HawkEye {
        HawkEye {
            interval: t.accesses(s.window_s),
            window_s: s.window_s,
            regions: s.regions,
        }
    }
}

impl Policy for HawkEye {
    fn label(&self) -> String {
        format!("hawkeye:window={}s:regions={}", self.window_s, self.regions)
    }

    fn interval(&self) -> Option<u64> {
        Some(self.interval)
    }

    fn on_tick(&mut self, cx: &mut Ctx<'_>) {
        let mut buckets: Vec<Vec<FrameId>> = vec![Vec::new(); BUCKETS];
        for id in 0..cx.map.len() as FrameId {
            if cx.map.size(id) != PageSize::Size4K {
                continue;
            }
            let f = cx.map.frame_mut(id);
            let coverage = f.n_accessed() as usize;
            f.accessed = [0; 8];
            if coverage > 0 {
                buckets[(coverage * BUCKETS / (PAGES + 1)).min(BUCKETS - 1)].push(id);
            }
        }
        promote_in_order(cx, buckets.into_iter().rev().flatten(), self.regions);
    }
}
