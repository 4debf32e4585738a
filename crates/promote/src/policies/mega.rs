//! MEGA: promote a chunk once nearly all of it is mapped and most of it is used, demote it when
//! it stops being either; utilization averaged over the last scans, and tracked only while at
//! least half of the chunk is mapped.
//!
//! Utilization is the share of a chunk's base pages accessed in an interval. MEGA reads it from
//! accessed bits; here it comes from access samples, corrected for sampling: `n` samples spread
//! over all 512 pages would show `512 (1 - (1 - 1/512)^n)` distinct pages, so the distinct pages
//! seen divided by that is the estimate (1 when every page is in use, lower when the samples
//! keep landing on the same few). A target without samples gives no utilization: the policy
//! then judges by mapped pages alone.

use std::collections::HashMap;

use crate::policy::{ChunkInfo, Decision, Policy};
use crate::BASE_PER_HUGE;

/// MEGA's thresholds (shares of a chunk's 512 base pages) and history length.
#[derive(Debug, Clone)]
pub struct Mega {
    /// Start tracking at this mapped share.
    pub track_mapped: f64,
    /// Stop tracking below this mapped share.
    pub untrack_mapped: f64,
    /// Promote at or above this mapped share...
    pub promote_mapped: f64,
    /// ...and this mean utilization.
    pub promote_util: f64,
    /// Demote below this mapped share...
    pub demote_mapped: f64,
    /// ...or below this mean utilization.
    pub demote_util: f64,
    /// Scans averaged.
    pub history: usize,
    tracked: HashMap<(i32, usize), Vec<f64>>,
}

impl Default for Mega {
    fn default() -> Self {
        Mega {
            track_mapped: 0.5,
            untrack_mapped: 0.25,
            promote_mapped: 0.9,
            promote_util: 0.5,
            demote_mapped: 0.5,
            demote_util: 0.25,
            history: 10,
            tracked: HashMap::new(),
        }
    }
}

/// Utilization estimated from `distinct` base pages among `samples` samples of a chunk.
pub fn utilization(distinct: u16, samples: u32) -> f64 {
    if samples == 0 {
        return 0.0;
    }
    let full =
        BASE_PER_HUGE as f64 * (1.0 - (1.0 - 1.0 / BASE_PER_HUGE as f64).powf(f64::from(samples)));
    (f64::from(distinct) / full).min(1.0)
}

impl Policy for Mega {
    fn name(&self) -> &'static str {
        "mega"
    }

    fn signal(&self, sampled: bool) -> String {
        if sampled {
            "mega promotes chunks nearly all mapped (90 %) and mostly used (50 %), their use \
             read from its access samples"
                .into()
        } else {
            "it publishes no access samples: mega judges its chunks by mapped pages alone and \
             promotes those nearly all mapped (90 %), within the budget"
                .into()
        }
    }

    fn decide(&mut self, chunks: &[ChunkInfo], _interval_s: f64) -> Decision {
        let mut d = Decision::default();
        let mut seen = std::collections::HashSet::with_capacity(self.tracked.len());
        for (i, c) in chunks.iter().enumerate() {
            let key = (c.pid, c.addr);
            let mapped = c.mapped_share();
            let tracked = self.tracked.contains_key(&key);
            if !tracked && mapped < self.track_mapped && !c.huge {
                continue;
            }
            if tracked && mapped < self.untrack_mapped && !c.huge {
                self.tracked.remove(&key);
                continue;
            }
            seen.insert(key);
            let h = self.tracked.entry(key).or_default();
            if c.sampled {
                h.push(utilization(c.sampled_pages, c.samples));
                if h.len() > self.history {
                    h.remove(0);
                }
            }
            // Without samples there is no utilization: judge by mapped pages alone.
            let util = if c.sampled {
                h.iter().sum::<f64>() / h.len().max(1) as f64
            } else {
                1.0
            };
            if c.huge {
                if mapped < self.demote_mapped || util < self.demote_util {
                    d.demote.push(i);
                } else {
                    d.keep.push((i, util));
                }
            } else if mapped >= self.promote_mapped && util >= self.promote_util {
                d.promote.push((i, util));
            }
        }
        self.tracked.retain(|k, _| seen.contains(k));
        d.promote
            .sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
        d
    }
}

impl ChunkInfo {
    /// Share of its base pages mapped, 0..=1.
    pub fn mapped_share(&self) -> f64 {
        f64::from(self.mapped_pages) / BASE_PER_HUGE as f64
    }
}
