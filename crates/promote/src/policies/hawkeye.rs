//! HawkEye: rank chunks by access coverage (distinct base pages touched in the last window,
//! here the sampled pages of the last interval) and promote from the fullest bucket down.
//! Coverage is bucketed as in the paper (10 buckets over 0..=512), so chunks of one bucket are
//! equals and keep address order. Without samples it falls back to mapped pages.

use crate::policy::{ChunkInfo, Decision, Policy};
use crate::BASE_PER_HUGE;

/// HawkEye's coverage ranking.
#[derive(Debug, Clone, Copy, Default)]
pub struct HawkEye;

/// Coverage bucket 0..=9 of a chunk.
pub fn bucket(c: &ChunkInfo) -> u32 {
    let covered = if c.sampled {
        c.sampled_pages
    } else {
        c.mapped_pages
    };
    (u32::from(covered) * 10 / (BASE_PER_HUGE as u32 + 1)).min(9)
}

impl Policy for HawkEye {
    fn ranks_by_samples(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "hawkeye"
    }

    fn signal(&self, sampled: bool) -> String {
        if sampled {
            "hawkeye ranks its chunks by the distinct pages its samples touch".into()
        } else {
            "it publishes no access samples: hawkeye ranks its chunks by mapped pages instead \
             of pages touched"
                .into()
        }
    }

    fn decide(&mut self, chunks: &[ChunkInfo], _interval_s: f64) -> Decision {
        let mut d = Decision::default();
        let mut cands: Vec<(usize, u32)> = chunks
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.huge && c.mapped_pages > 0 && (!c.sampled || c.samples > 0))
            .map(|(i, c)| (i, bucket(c)))
            .collect();
        // Fullest bucket first; within a bucket, address order (a stable sort keeps it).
        cands.sort_by_key(|&(_, b)| std::cmp::Reverse(b));
        d.promote = cands
            .into_iter()
            .map(|(i, b)| (i, f64::from(b) + 1.0))
            .collect();
        d.keep = chunks
            .iter()
            .enumerate()
            .filter(|(_, c)| c.huge)
            .map(|(i, c)| (i, f64::from(bucket(c)) + 1.0))
            .collect();
        d
    }
}
