//! Utility curves: every policy at every budget, plus the `none` and `all` ends, simulated
//! over one decode of the trace, the configurations fed in parallel chunk by chunk.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

pub use hugewise_results::plan::{PlanAction, PlanEntry, PromotionPlan, PromotionPlans};
pub use hugewise_results::sim::{Curves, Point, PwcRecord, RegionInfo, TlbLevel, TlbRecord};
use rayon::prelude::*;

use hugewise_trace::{Reader, Region, TraceMeta};

use crate::config::TlbConfig;
use crate::cost::{self, CostModel};
use crate::engine::{Machine, Totals};
use crate::physmem::PhysSpec;
use crate::policies::PolicySpec;
use crate::policy::{Action, PlanEvent, Timing};
pub use crate::progress::Progress;
use crate::{Error, Result};

/// Accesses per second assumed when the trace has no measured rate.
pub const DEFAULT_RATE: f64 = 200e6;
/// With `time_scale = auto`, the slowest policy interval fits this many times in the trace.
pub const AUTO_INTERVALS: f64 = 16.0;
/// Accesses fed to all configurations before the next chunk (fits in L2 as packed u64s).
const CHUNK: usize = 1 << 16;

/// What to simulate.
#[derive(Debug, Clone)]
pub struct CurveSpec {
    /// Policies with their settings (`none` and `all` are simulated in any case).
    pub policies: Vec<PolicySpec>,
    /// Budgets as shares of the footprint.
    pub budgets: Vec<f64>,
    /// TLB shape.
    pub tlb: TlbConfig,
    /// Accesses per second of the real run (`None`: from the trace's sidecar, else
    /// [`DEFAULT_RATE`]).
    pub accesses_per_s: Option<f64>,
    /// Divide policy intervals by this (`None`: auto).
    pub time_scale: Option<f64>,
    /// Measured runs to calibrate against (`None`: from the sidecar, if any).
    pub calibration: Option<hugewise_trace::meta::Calibration>,
    /// Also measure reuse distance (4 KiB and 2 MiB) over the same decode.
    pub reuse: bool,
    /// Leading accesses of stream 0 run as warm-up and not counted (`None`: the trace
    /// sidecar's, else 0).
    pub warmup_accesses: Option<u64>,
    /// Physical memory for every configuration (`None`: not modelled, a free 2 MiB block is
    /// always there).
    pub phys: Option<PhysSpec>,
}

/// Simulate `spec` over the trace at `path`; returns the curves and every configuration's promotion
/// plan. `cancel` is polled between chunks.
pub fn run(
    path: &Path,
    spec: &CurveSpec,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<(Curves, PromotionPlans)> {
    let started = std::time::Instant::now();
    let mut reader = Reader::open(path)?;
    let header = reader.header().clone();
    let total = reader.claimed_totals().map(|t| t.0).unwrap_or(0);
    let meta = TraceMeta::read(path)?;
    let (rate, timing_source) = match (
        spec.accesses_per_s,
        meta.as_ref().and_then(|m| m.accesses_per_s),
    ) {
        (Some(r), _) => (r, "given".to_string()),
        (None, Some(r)) => (r, "measured untraced run (trace sidecar)".to_string()),
        (None, None) => (
            DEFAULT_RATE,
            format!("assumed {DEFAULT_RATE:.0} accesses/s"),
        ),
    };
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(Error::Spec(format!(
            "accesses per second must be positive, not {rate}"
        )));
    }
    let calibration = spec
        .calibration
        .or(meta.as_ref().and_then(|m| m.calibration));
    let streams = header.streams.max(1);
    let warmup = spec
        .warmup_accesses
        .or(meta.as_ref().map(|m| m.warmup_accesses))
        .unwrap_or(0);

    // Policies built once at real time to learn their intervals, then at the chosen scale.
    let names: Vec<&PolicySpec> = spec.policies.iter().filter(|p| !p.is_end()).collect();
    let real = Timing {
        accesses_per_s: rate,
        time_scale: 1.0,
    };
    let mut longest = 0u64;
    for p in &names {
        longest = longest.max(p.build(&real, streams)?.interval().unwrap_or(0));
    }
    let time_scale = match spec.time_scale {
        Some(s) if s > 0.0 && s.is_finite() => s,
        Some(s) => return Err(Error::Spec(format!("time scale must be positive, not {s}"))),
        None if total > 0 && longest as f64 * AUTO_INTERVALS > total as f64 => {
            longest as f64 * AUTO_INTERVALS / total as f64
        }
        None => 1.0,
    };
    let timing = Timing {
        accesses_per_s: rate,
        time_scale,
    };

    let mut machines: Vec<(String, Option<f64>, Machine)> = Vec::new();
    for end in [PolicySpec::None, PolicySpec::All] {
        let m = Machine::new(&spec.tlb, &header, end.build(&timing, streams)?, None)?
            .with_warmup(warmup);
        machines.push((end.name().to_string(), None, with_phys(m, spec, &timing)?));
    }
    for p in &names {
        for &b in &spec.budgets {
            let m = Machine::new(&spec.tlb, &header, p.build(&timing, streams)?, Some(b))?
                .with_warmup(warmup);
            machines.push((p.name().to_string(), Some(b), with_phys(m, spec, &timing)?));
        }
    }

    let mut stacks = spec
        .reuse
        .then(|| (crate::reuse::Stack::new(12), crate::reuse::Stack::new(21)));
    let mut block = Vec::new();
    let mut done = 0u64;
    progress.update(0, total);
    while let Some(b) = reader.next_block(&mut block)? {
        for chunk in block.chunks(CHUNK) {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            // The reuse stacks run beside the configurations; whichever side ends first
            // steals work from the other.
            rayon::join(
                || {
                    machines
                        .par_iter_mut()
                        .for_each(|(_, _, m)| m.feed(b.stream, chunk))
                },
                || {
                    if let Some((small, huge)) = stacks.as_mut() {
                        small.access_packed(chunk);
                        huge.access_packed(chunk);
                    }
                },
            );
        }
        done += block.len() as u64;
        progress.update(done, total);
    }

    let totals: Vec<Totals> = machines.iter().map(|(_, _, m)| m.totals()).collect();
    let accesses = totals[0].counts.accesses;
    let cost = cost::fit(
        calibration.as_ref(),
        rate,
        streams,
        accesses,
        totals[0].counts.walk_reads,
        totals[1].counts.walk_reads,
    );
    let t_none = cost.seconds(accesses, totals[0].counts.walk_reads);
    let footprint = totals[0].footprint_bytes;
    let points = machines
        .iter()
        .zip(&totals)
        .map(|((name, budget, m), t)| point(name, m.label(), *budget, t, footprint, &cost, t_none))
        .collect();
    let regions: Vec<RegionInfo> = header.regions.iter().map(region_info).collect();
    let plans = machines
        .iter()
        .map(|(name, budget, m)| PromotionPlan {
            policy: name.clone(),
            policy_label: m.label(),
            budget_share: *budget,
            entries: m.plan().iter().map(|e| entry(e, rate, warmup)).collect(),
        })
        .collect();
    let plans = PromotionPlans {
        trace: path.to_path_buf(),
        regions: regions.clone(),
        footprint_bytes: footprint,
        accesses_per_s: rate,
        plans,
    };
    Ok((
        Curves {
            trace: path.to_path_buf(),
            regions,
            accesses,
            warmup_accesses: warmup,
            streams,
            footprint_bytes: footprint,
            tlb: spec.tlb.record(),
            timing,
            timing_source,
            cost_model: cost,
            configurations: machines.len(),
            sim_wall_s: started.elapsed().as_secs_f64(),
            points,
            reuse: stacks.map(|(small, huge)| [small.report(), huge.report()]),
        },
        plans,
    ))
}

fn with_phys(m: Machine, spec: &CurveSpec, timing: &Timing) -> Result<Machine> {
    match &spec.phys {
        Some(p) => m.with_phys(p, timing),
        None => Ok(m),
    }
}

/// A trace region as results name it.
pub fn region_info(r: &Region) -> RegionInfo {
    RegionInfo {
        name: r.name.clone(),
        base: r.base,
        bytes: r.size,
    }
}

/// A policy's step as the plan records it, with the time it stands for at `rate` accesses a
/// second, counted from the end of the warm-up (where a replay's first trial starts).
fn entry(e: &PlanEvent, rate: f64, warmup: u64) -> PlanEntry {
    PlanEntry {
        at_access: e.at_access,
        at_s: e.at_access.saturating_sub(warmup) as f64 / rate,
        addr: e.addr,
        bytes: e.bytes,
        page_size: e.page_size,
        action: match e.action {
            Action::Promote => PlanAction::Promote,
            Action::Demote => PlanAction::Demote,
        },
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn point(
    name: &str,
    label: String,
    budget: Option<f64>,
    t: &Totals,
    footprint: u64,
    cost: &CostModel,
    t_none: f64,
) -> Point {
    let c = &t.counts;
    Point {
        policy: name.to_string(),
        policy_label: label,
        budget_share: budget,
        accesses: c.accesses,
        l1_misses: c.l1_misses,
        walks: c.walks,
        walk_reads: c.walk_reads,
        walks_per_kacc: ratio(c.walks * 1000, c.accesses).unwrap_or(0.0),
        l1_miss_rate: ratio(c.l1_misses, c.accesses).unwrap_or(0.0),
        l2_miss_rate: ratio(c.walks, c.l1_misses),
        walks_by_size: c.walks_by_size,
        walks_by_region: t.walks_by_region.clone(),
        promotions: t.budget.promotions,
        demotions: t.budget.demotions,
        huge_bytes: t.huge_bytes,
        peak_huge_bytes: t.budget.peak_frames * crate::pagemap::FRAME,
        huge_share: ratio(t.huge_bytes, footprint).unwrap_or(0.0),
        est_speedup: t_none / cost.seconds(c.accesses, c.walk_reads),
        phys: t.phys.clone(),
    }
}
