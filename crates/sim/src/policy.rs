//! What every promotion policy sees and may do: the walk events of the simulated cores, a
//! periodic tick, and a context through which it promotes or demotes frames within a budget.
//! Policies live one per file in `policies/`; [`crate::policies::PolicySpec`] builds one from its
//! spec string.

pub use hugewise_results::sim::Timing;
use hugewise_sys::PageSize;
use serde::Serialize;

use crate::pagemap::{FrameId, PageMap, FRAME, PAGES};
use crate::tlb::Hierarchy;
use crate::{Error, Result};

/// One page walk, as the policy hears of it.
#[derive(Debug, Clone, Copy)]
pub struct Walk {
    /// Core (trace stream) that walked.
    pub stream: u16,
    /// Frame walked into.
    pub frame: FrameId,
    /// Address translated.
    pub addr: u64,
    /// Page size that maps it.
    pub size: PageSize,
    /// Whether the frame had been touched before this walk (its accessed bit was set).
    pub frame_seen: bool,
    /// Whether this walk touched its 4 KiB page for the first time.
    pub first_touch: bool,
}

/// Promote or demote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Map the range with one huge page.
    Promote,
    /// Map it with 4 KiB pages again.
    Demote,
}

/// One step of a promotion plan.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlanEvent {
    /// Simulated time, in accesses since the trace's start.
    pub at_access: u64,
    /// First address.
    pub addr: u64,
    /// Bytes.
    pub bytes: u64,
    /// Page size promoted to (or demoted from).
    pub page_size: PageSize,
    /// What to do.
    pub action: Action,
}

/// Huge-page use against the budget, in 2 MiB frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// Frames allowed to be huge (`None`: no limit).
    pub limit_frames: Option<u64>,
    /// Frames huge now.
    pub used_frames: u64,
    /// Most frames huge at once.
    pub peak_frames: u64,
    /// Promotions done (a 1 GiB promotion counts once).
    pub promotions: u64,
    /// Demotions done.
    pub demotions: u64,
    /// Promotions asked for and refused because the budget was spent. Policies that promote
    /// in batches at a tick stop asking once it is spent, so for them this stays 0 (but for
    /// a 1 GiB page larger than what is left); `linux` asks at every first touch, `all` at
    /// every frame and every walk into a base-page frame.
    pub refused: u64,
}

impl Budget {
    /// Frames still allowed.
    pub fn left(&self) -> u64 {
        match self.limit_frames {
            Some(l) => l.saturating_sub(self.used_frames),
            None => u64::MAX,
        }
    }
}

/// What a policy may look at and change.
pub struct Ctx<'a> {
    /// Simulated time (accesses so far).
    pub now: u64,
    /// The page table.
    pub map: &'a mut PageMap,
    pub(crate) tlbs: &'a mut [Hierarchy],
    pub(crate) budget: &'a mut Budget,
    pub(crate) plan: &'a mut Vec<PlanEvent>,
    /// Physical memory, when modelled: a promotion then needs a free block.
    pub(crate) phys: Option<&'a mut crate::physmem::PhysMem>,
    /// Whether the policy is starting or ticking, the only times it may demote (the engine
    /// sets precise accessed bits ahead of the accesses up to the next tick).
    pub(crate) ticking: bool,
}

impl Ctx<'_> {
    /// Budget state.
    pub fn budget(&self) -> &Budget {
        self.budget
    }

    /// Map frame `id` with a 2 MiB page, or its whole 1 GiB page with `Size1G`. False when it
    /// already is, cannot be, or the budget is spent.
    pub fn promote(&mut self, id: FrameId, size: PageSize) -> bool {
        let frames: Vec<FrameId> = match size {
            PageSize::Size4K => return false,
            PageSize::Size2M => {
                if self.map.size(id) != PageSize::Size4K {
                    return false;
                }
                vec![id]
            }
            PageSize::Size1G => match self.map.gigabyte_of(id) {
                Some(r) if self.map.size(r.start) != PageSize::Size1G => r.collect(),
                _ => return false,
            },
        };
        let newly = frames
            .iter()
            .filter(|&&f| self.map.size(f) == PageSize::Size4K)
            .count() as u64;
        if newly > self.budget.left() {
            self.budget.refused += 1;
            return false;
        }
        if let Some(phys) = self.phys.as_deref_mut() {
            let placed = match size {
                PageSize::Size1G => phys.promote_gigabyte(frames[0], self.now),
                _ => phys.promote(frames[0], self.now),
            };
            if placed.is_none() {
                return false;
            }
        }
        for &f in &frames {
            let old = self.map.size(f);
            let base = self.map.frame(f).base;
            for t in self.tlbs.iter_mut() {
                t.flush(base, FRAME, old);
            }
            self.map.set_size(f, size);
        }
        self.budget.used_frames += newly;
        self.budget.peak_frames = self.budget.peak_frames.max(self.budget.used_frames);
        self.budget.promotions += 1;
        let base = self.map.frame(frames[0]).base;
        self.plan.push(PlanEvent {
            at_access: self.now,
            addr: base,
            bytes: frames.len() as u64 * FRAME,
            page_size: size,
            action: Action::Promote,
        });
        true
    }

    /// Map frame `id` (a 2 MiB page) with 4 KiB pages again, giving its frame back to the
    /// budget. Its pages stay mapped; their accessed bits are clear.
    pub fn demote(&mut self, id: FrameId) -> bool {
        debug_assert!(
            self.ticking,
            "a policy demotes only when it starts or ticks"
        );
        if self.map.size(id) != PageSize::Size2M {
            return false;
        }
        let base = self.map.frame(id).base;
        for t in self.tlbs.iter_mut() {
            t.flush(base, FRAME, PageSize::Size2M);
        }
        self.map.set_size(id, PageSize::Size4K);
        self.map.frame_mut(id).accessed = [0; 8];
        if let Some(phys) = self.phys.as_deref_mut() {
            phys.demote(id, self.now);
        }
        self.budget.used_frames -= 1;
        self.budget.demotions += 1;
        self.plan.push(PlanEvent {
            at_access: self.now,
            addr: base,
            bytes: FRAME,
            page_size: PageSize::Size2M,
            action: Action::Demote,
        });
        true
    }
}

/// A promotion policy.
pub trait Policy: Send {
    /// Name with its settings, for results (`pcc:order=freq`).
    fn label(&self) -> String;
    /// Accesses between ticks, if it ticks.
    fn interval(&self) -> Option<u64> {
        None
    }
    /// Whether accessed bits must be set on every access, not only on walks (an idealised
    /// utilisation measure). The engine sets the bits of the accesses up to the next tick
    /// before running them, so a policy must read accessed bits, and demote, only in
    /// [`Policy::on_tick`].
    fn precise_access_bits(&self) -> bool {
        false
    }
    /// Whether the policy ever promotes (physical memory compacts only for one that does).
    fn promotes(&self) -> bool {
        true
    }
    /// Refuse a trace the policy cannot work on (a region it names is missing).
    fn check(&self, _regions: &[hugewise_trace::Region]) -> Result<()> {
        Ok(())
    }
    /// Before the first access.
    fn start(&mut self, _cx: &mut Ctx<'_>) {}
    /// After every page walk.
    fn on_walk(&mut self, _cx: &mut Ctx<'_>, _w: &Walk) {}
    /// Every [`Policy::interval`] accesses.
    fn on_tick(&mut self, _cx: &mut Ctx<'_>) {}
}

/// Options of one policy spec (`name:key=value:key=value`).
#[derive(Debug, Clone)]
pub struct Options {
    policy: String,
    pairs: Vec<(String, String, bool)>,
}

impl Options {
    /// Split a spec into its name and options.
    pub fn parse(spec: &str) -> Result<(String, Options)> {
        let mut parts = spec.split(':');
        let name = parts.next().unwrap_or_default().trim().to_string();
        let mut pairs = Vec::new();
        for p in parts {
            let (k, v) = p.split_once('=').ok_or_else(|| {
                Error::Spec(format!(
                    "policy '{spec}': option '{p}' is not key=value (e.g. pcc:interval=30s)"
                ))
            })?;
            pairs.push((k.trim().to_string(), v.trim().to_string(), false));
        }
        Ok((
            name.clone(),
            Options {
                policy: name,
                pairs,
            },
        ))
    }

    fn take(&mut self, key: &str) -> Option<String> {
        self.pairs
            .iter_mut()
            .find(|(k, _, used)| k == key && !used)
            .map(|(_, v, used)| {
                *used = true;
                v.clone()
            })
    }

    fn bad(&self, key: &str, v: &str, want: &str) -> Error {
        Error::Spec(format!(
            "policy {}: option {key}={v}: expected {want}",
            self.policy
        ))
    }

    /// A duration (`30s`, `500ms`, `2`) in seconds.
    pub fn seconds(&mut self, key: &str, default: f64) -> Result<f64> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        let (num, mult) = if let Some(n) = v.strip_suffix("ms") {
            (n, 1e-3)
        } else if let Some(n) = v.strip_suffix('s') {
            (n, 1.0)
        } else {
            (v.as_str(), 1.0)
        };
        match num.parse::<f64>() {
            Ok(x) if x > 0.0 && x.is_finite() => Ok(x * mult),
            _ => Err(self.bad(key, &v, "a positive duration such as 30s or 500ms")),
        }
    }

    /// A whole number.
    pub fn count(&mut self, key: &str, default: u64) -> Result<u64> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.parse::<u64>()
            .map_err(|_| self.bad(key, &v, "a whole number"))
    }

    /// A share (`50%` or `0.5`) in [0, 1].
    pub fn share(&mut self, key: &str, default: f64) -> Result<f64> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        parse_share(&v).ok_or_else(|| self.bad(key, &v, "a share such as 50% or 0.5"))
    }

    /// One of `choices`.
    pub fn choice(&mut self, key: &str, choices: &[&str], default: &str) -> Result<String> {
        let Some(v) = self.take(key) else {
            return Ok(default.to_string());
        };
        if choices.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(self.bad(key, &v, &format!("one of {}", choices.join(", "))))
        }
    }

    /// A raw string.
    pub fn string(&mut self, key: &str) -> Option<String> {
        self.take(key)
    }

    /// The next option, in the spec's order, whose key is one of `keys`, with its key: for
    /// repeated options whose order across keys matters.
    pub fn next_of(&mut self, keys: &[&str]) -> Option<(String, String)> {
        self.pairs
            .iter_mut()
            .find(|(k, _, used)| !used && keys.contains(&k.as_str()))
            .map(|(k, v, used)| {
                *used = true;
                (k.clone(), v.clone())
            })
    }

    /// Refuse options nobody asked for.
    pub fn finish(self) -> Result<()> {
        match self.pairs.iter().find(|(_, _, used)| !used) {
            Some((k, _, _)) => Err(Error::Spec(format!(
                "policy {}: unknown option '{k}' (see `hugewise sim --help`)",
                self.policy
            ))),
            None => Ok(()),
        }
    }
}

/// `share × whole`, snapped to the whole number it is within rounding error of, so that
/// rounding it down or up counts what was meant: 0.29 × 100 is 28.999999999999996 and
/// 0.07 × 100 is 7.000000000000001 in binary floating point, but 29 % of 100 frames is 29
/// frames and 7 % is 7.
pub fn share_of(share: f64, whole: u64) -> f64 {
    let x = share * whole as f64;
    let r = x.round();
    if (x - r).abs() <= 1e-9 * r.abs().max(1.0) {
        r
    } else {
        x
    }
}

/// `12.5%` or `0.125` as a share in [0, 1].
pub fn parse_share(v: &str) -> Option<f64> {
    let x = match v.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok()? / 100.0,
        None => v.trim().parse::<f64>().ok()?,
    };
    (0.0..=1.0).contains(&x).then_some(x)
}

/// Frames in `ids` promoted in order while the budget and `limit` allow; returns how many.
pub fn promote_in_order(
    cx: &mut Ctx<'_>,
    ids: impl IntoIterator<Item = FrameId>,
    limit: u64,
) -> u64 {
    let mut done = 0;
    for id in ids {
        if done >= limit || cx.budget().left() == 0 {
            break;
        }
        if cx.promote(id, PageSize::Size2M) {
            done += 1;
        }
    }
    done
}

/// Whether frame `id` is mapped by base pages and fully touched to at least `share`.
pub fn mapped_at_least(map: &PageMap, id: FrameId, share: f64) -> bool {
    map.size(id) == PageSize::Size4K && f64::from(map.frame(id).n_mapped) >= share * PAGES as f64
}
