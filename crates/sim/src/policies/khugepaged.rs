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

/// The scanner's settings, as the spec gave them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Sleep between scans, seconds (`scan_sleep_millisecs`).
    pub sleep_s: f64,
    /// Base pages scanned per wake-up (`pages_to_scan`).
    pub pages: u64,
    /// Untouched base pages a collapsed frame may have (`max_ptes_none`).
    pub max_ptes_none: u64,
}

impl Settings {
    /// Options: `sleep` (10s), `pages` (4096), `max_ptes_none` (511).
    pub fn parse(o: &mut Options) -> Result<Settings> {
        Ok(Settings {
            sleep_s: o.seconds("sleep", 10.0)?,
            pages: o.count("pages", 4096)?,
            max_ptes_none: o.count("max_ptes_none", 511)?.min(PAGES as u64 - 1),
        })
    }
}

impl Khugepaged {
    /// The scanner with `s`, its sleep counted in accesses by `t`.
    pub fn new(s: &Settings, t: &Timing) -> Khugepaged {
        Khugepaged {
            interval: t.accesses(s.sleep_s),
            sleep_s: s.sleep_s,
            frames_per_scan: (s.pages / PAGES as u64).max(1),
            max_ptes_none: s.max_ptes_none,
            cursor: 0,
        }
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
