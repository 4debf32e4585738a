//! `linux-khugepaged`: no huge pages at fault time; khugepaged wakes every
//! `scan_sleep_millisecs`, scans `pages_to_scan` base pages in address order and collapses
//! every frame with at most `max_ptes_none` untouched pages, while the budget lasts.

use crate::pagemap::{FrameId, PAGES};
use crate::policy::{mapped_at_least, promote_in_order, Ctx, Options, Policy, Timing};
use crate::Result;

/// The khugepaged scanner.
#[derive(Debug, Clone)]
pub struct Khugepaged {
    interval: u64,
    sleep_s: f64,
    frames_per_scan: u64,
    max_ptes_none: u64,
    cursor: usize,
}

impl Khugepaged {
    /// Options: `sleep` (10s), `pages` (4096), `max_ptes_none` (511).
    pub fn new(o: &mut Options, t: &Timing) -> Result<Khugepaged> {
        let sleep_s = o.seconds("sleep", 10.0)?;
        let pages = o.count("pages", 4096)?;
        let max_ptes_none = o.count("max_ptes_none", 511)?.min(PAGES as u64 - 1);
        Ok(Khugepaged {
            interval: t.accesses(sleep_s),
            sleep_s,
            frames_per_scan: (pages / PAGES as u64).max(1),
            max_ptes_none,
            cursor: 0,
        })
    }
}

impl Policy for Khugepaged {
    fn label(&self) -> String {
        format!(
            "linux-khugepaged:sleep={}s:pages={}:max_ptes_none={}",
            self.sleep_s,
            self.frames_per_scan * PAGES as u64,
            self.max_ptes_none
        )
    }

    fn interval(&self) -> Option<u64> {
        Some(self.interval)
    }

    fn on_tick(&mut self, cx: &mut Ctx<'_>) {
        let n = cx.map.len();
        if n == 0 {
            return;
        }
        let need = (PAGES as u64 - self.max_ptes_none) as f64 / PAGES as f64;
        let mut picked = Vec::new();
        for _ in 0..self.frames_per_scan.min(n as u64) {
            let id = self.cursor as FrameId;
            self.cursor = (self.cursor + 1) % n;
            if mapped_at_least(cx.map, id, need) {
                picked.push(id);
            }
        }
        promote_in_order(cx, picked, u64::MAX);
    }
}
