//! What khugepaged would do, for comparison: walk the targets' chunks in address order from
//! where the last scan stopped, `pages_to_scan` base pages per `scan_sleep`, and collapse every
//! chunk with at least `512 - max_ptes_none` pages mapped. No access information, no ranking,
//! no demotion.

use crate::policy::{ChunkInfo, Decision, Policy};
use crate::BASE_PER_HUGE;

/// khugepaged's settings.
#[derive(Debug, Clone)]
pub struct Linux {
    /// Base pages scanned per `scan_sleep_s` (kernel default 4096).
    pub pages_to_scan: u32,
    /// Seconds between scans (kernel default 10).
    pub scan_sleep_s: f64,
    /// Unmapped base pages a chunk may have and still collapse (kernel default 511).
    pub max_ptes_none: u16,
    cursor: usize,
    credit: f64,
}

impl Default for Linux {
    fn default() -> Self {
        Linux {
            pages_to_scan: 4096,
            scan_sleep_s: 10.0,
            max_ptes_none: 511,
            cursor: 0,
            credit: 0.0,
        }
    }
}

impl Linux {
    /// khugepaged with these settings.
    pub fn with(pages_to_scan: u32, scan_sleep_s: f64, max_ptes_none: u16) -> Linux {
        Linux {
            pages_to_scan,
            scan_sleep_s,
            max_ptes_none,
            ..Linux::default()
        }
    }
}

impl Policy for Linux {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn signal(&self, _sampled: bool) -> String {
        "linux collapses its chunks in address order as khugepaged does, whatever is hot; \
         samples are not used"
            .into()
    }

    fn decide(&mut self, chunks: &[ChunkInfo], interval_s: f64) -> Decision {
        let mut d = Decision::default();
        if chunks.is_empty() {
            return d;
        }
        // Scan credit accrues with time, in chunks (512 base pages each).
        self.credit +=
            f64::from(self.pages_to_scan) / BASE_PER_HUGE as f64 * interval_s / self.scan_sleep_s;
        let n = (self.credit.floor() as usize).min(chunks.len());
        self.credit -= n as f64;
        let need = BASE_PER_HUGE as u16 - self.max_ptes_none.min(BASE_PER_HUGE as u16 - 1);
        for k in 0..n {
            let i = (self.cursor + k) % chunks.len();
            let c = &chunks[i];
            if !c.huge && c.mapped_pages >= need {
                // Address order is khugepaged's only order: the score falls along the scan.
                d.promote.push((i, (n - k) as f64));
            }
        }
        self.cursor = (self.cursor + n) % chunks.len();
        d.keep = chunks
            .iter()
            .enumerate()
            .filter(|(_, c)| c.huge)
            .map(|(i, _)| (i, f64::INFINITY))
            .collect();
        d
    }
}
