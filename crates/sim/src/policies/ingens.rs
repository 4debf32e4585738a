//! `ingens`: utilisation-based promotion; every scan interval (4 s), frames with at least
//! 90 % of their base pages in use are promoted, in address order, up to `regions` per scan.

use crate::pagemap::FrameId;
use crate::policy::{mapped_at_least, promote_in_order, Ctx, Options, Policy, Timing};
use crate::Result;

/// Ingens' promotion thread.
#[derive(Debug, Clone)]
pub struct Ingens {
    interval: u64,
    scan_s: f64,
    threshold: f64,
    regions: u64,
}

/// Ingens' settings, as the spec gave them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Scan interval, seconds.
    pub scan_s: f64,
    /// Share of a frame's base pages in use that makes it a candidate.
    pub util: f64,
    /// Frames promoted per scan at most.
    pub regions: u64,
}

impl Settings {
    /// Options: `scan` (4s), `util` (90%), `regions` per scan (128).
    pub fn parse(o: &mut Options) -> Result<Settings> {
        Ok(Settings {
            scan_s: o.seconds("scan", 4.0)?,
            util: o.share("util", 0.9)?,
            regions: o.count("regions", 128)?,
        })
    }
}

impl Ingens {
    /// Ingens with `s`, its scan interval counted in accesses by `t`.
    pub fn new(s: &Settings, t: &Timing) -> Ingens {
        Ingens {
            interval: t.accesses(s.scan_s),
            scan_s: s.scan_s,
            threshold: s.util,
            regions: s.regions,
        }
    }
}

impl Policy for Ingens {
    fn label(&self) -> String {
        format!(
            "ingens:scan={}s:util={}%:regions={}",
            self.scan_s,
            self.threshold * 100.0,
            self.regions
        )
    }

    fn interval(&self) -> Option<u64> {
        Some(self.interval)
    }

    fn on_tick(&mut self, cx: &mut Ctx<'_>) {
        let ids: Vec<FrameId> = (0..cx.map.len() as FrameId)
            .filter(|&id| mapped_at_least(cx.map, id, self.threshold))
            .collect();
        promote_in_order(cx, ids, self.regions);
    }
}
