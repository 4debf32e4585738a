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

impl Ingens {
    /// Options: `scan` (4s), `util` (90%), `regions` per scan (128).
    pub fn new(o: &mut Options, t: &Timing) -> Result<Ingens> {
        let scan_s = o.seconds("scan", 4.0)?;
        Ok(Ingens {
            interval: t.accesses(scan_s),
            scan_s,
            threshold: o.share("util", 0.9)?,
            regions: o.count("regions", 128)?,
        })
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
