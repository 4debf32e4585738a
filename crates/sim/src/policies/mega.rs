//! `mega`: utilisation tracking with promotion and demotion. A frame is tracked once half its
//! base pages are mapped (and no longer below a quarter); every scan (5 s) its utilisation,
//! the share of its base pages accessed since the last scan, is recorded. A frame is promoted
//! when 90 % of it is mapped and its utilisation over the last 10 scans averages 50 %; a huge
//! frame is demoted when less than half is mapped or that average falls below 25 %, and its
//! history starts afresh. Demotions come before promotions in a scan, so a frame demoted
//! frees its budget for that scan's promotions.
//!
//! A trace never unmaps a page, so here a frame's mapped share only grows: tracking never
//! stops and demotion is by utilisation alone.
//!
//! Utilisation comes from accessed bits set on every access (an idealised measure; the
//! hardware's bits are set only by walks, which a hot huge page rarely needs). MEGA's
//! proactive compaction belongs to physical memory, not to the policy: `sim --phys mega:…`
//! models it beside any policy (see [`crate::physmem`]).

use std::collections::VecDeque;

use hugewise_sys::PageSize;

use crate::pagemap::{FrameId, PAGES};
use crate::policy::{Ctx, Options, Policy, Timing};
use crate::Result;

#[derive(Debug, Clone, Default)]
struct Track {
    on: bool,
    history: VecDeque<f32>,
}

/// MEGA's tracker.
#[derive(Debug, Clone)]
pub struct Mega {
    interval: u64,
    scan_s: f64,
    history: usize,
    regions: u64,
    track: Vec<Track>,
}

/// MEGA's settings, as the spec gave them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Scan interval, seconds.
    pub scan_s: f64,
    /// Scans averaged (at least 1).
    pub history: usize,
    /// Frames promoted per scan at most.
    pub regions: u64,
}

impl Settings {
    /// Options: `scan` (5s), `history` scans (10), `regions` promoted per scan (128).
    pub fn parse(o: &mut Options) -> Result<Settings> {
        Ok(Settings {
            scan_s: o.seconds("scan", 5.0)?,
            history: o.count("history", 10)?.max(1) as usize,
            regions: o.count("regions", 128)?,
        })
    }
}

impl Mega {
    /// MEGA with `s`, its scan interval counted in accesses by `t`.
    pub fn new(s: &Settings, t: &Timing) -> Mega {
        Mega {
            interval: t.accesses(s.scan_s),
            scan_s: s.scan_s,
            history: s.history,
            regions: s.regions,
            track: Vec::new(),
        }
    }
}

impl Policy for Mega {
    fn label(&self) -> String {
        format!(
            "mega:scan={}s:history={}:regions={}",
            self.scan_s, self.history, self.regions
        )
    }

    fn interval(&self) -> Option<u64> {
        Some(self.interval)
    }

    fn precise_access_bits(&self) -> bool {
        true
    }

    fn on_tick(&mut self, cx: &mut Ctx<'_>) {
        let n = cx.map.len();
        self.track.resize_with(n, Track::default);
        let mut promote: Vec<(f32, FrameId)> = Vec::new();
        let mut demote = Vec::new();
        for id in 0..n as FrameId {
            let size = cx.map.size(id);
            let f = cx.map.frame_mut(id);
            let mapped = f32::from(f.n_mapped) / PAGES as f32;
            let util = f.n_accessed() as f32 / PAGES as f32;
            f.accessed = [0; 8];
            let t = &mut self.track[id as usize];
            if !t.on && mapped >= 0.5 {
                t.on = true;
            } else if t.on && mapped < 0.25 {
                *t = Track::default();
            }
            if !t.on {
                continue;
            }
            if t.history.len() == self.history {
                t.history.pop_front();
            }
            t.history.push_back(util);
            let avg = t.history.iter().sum::<f32>() / t.history.len() as f32;
            match size {
                PageSize::Size4K if mapped >= 0.9 && avg >= 0.5 => promote.push((avg, id)),
                PageSize::Size2M if mapped < 0.5 || avg < 0.25 => demote.push(id),
                _ => {}
            }
        }
        for id in demote {
            cx.demote(id);
            // Start afresh: the huge page's history says nothing of the base pages'.
            self.track[id as usize].history.clear();
        }
        promote.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut done = 0;
        for (_, id) in promote {
            if done >= self.regions || cx.budget().left() == 0 {
                break;
            }
            if cx.promote(id, PageSize::Size2M) {
                done += 1;
            }
        }
    }
}
