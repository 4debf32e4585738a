//! Utility curves: every policy at every budget, plus the `none` and `all` ends, simulated
//! over one decode of the trace, the configurations fed in parallel chunk by chunk.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use serde::Serialize;

use hugewise_trace::{Reader, Region, TraceMeta};

use crate::config::TlbConfig;
use crate::cost::CostModel;
use crate::engine::{Machine, Totals};
use crate::policies;
use crate::policy::{self, PlanEvent, Timing};
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
    /// Policy specs (`pcc`, `hawkeye:window=2s`, ...).
    pub policies: Vec<String>,
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
}

/// One point of a curve.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Policy name (`pcc`).
    pub policy: String,
    /// Policy with all its settings.
    pub policy_label: String,
    /// Budget as a share of the footprint (`null` for `none` and `all`).
    pub budget_share: Option<f64>,
    /// Accesses simulated.
    pub accesses: u64,
    /// L1 TLB misses.
    pub l1_misses: u64,
    /// Page walks.
    pub walks: u64,
    /// Page-table reads of those walks.
    pub walk_reads: u64,
    /// Walks per 1 000 accesses.
    pub walks_per_kacc: f64,
    /// L1 misses / accesses.
    pub l1_miss_rate: f64,
    /// Walks / L1 misses.
    pub l2_miss_rate: Option<f64>,
    /// Walks per page size (4 KiB, 2 MiB, 1 GiB).
    pub walks_by_size: [u64; 3],
    /// Promotions done.
    pub promotions: u64,
    /// Demotions done.
    pub demotions: u64,
    /// Bytes in huge pages at the end.
    pub huge_bytes: u64,
    /// Most bytes in huge pages at once.
    pub peak_huge_bytes: u64,
    /// `huge_bytes` / footprint.
    pub huge_share: f64,
    /// Estimated speedup over `none` (an estimate from the cost model, not a measurement).
    pub est_speedup: f64,
}

/// A finished set of curves.
#[derive(Debug, Clone, Serialize)]
pub struct Curves {
    /// The trace.
    pub trace: PathBuf,
    /// Its regions.
    pub regions: Vec<RegionInfo>,
    /// Accesses in it.
    pub accesses: u64,
    /// Streams (cores).
    pub streams: u16,
    /// Bytes the budgets are shares of.
    pub footprint_bytes: u64,
    /// TLB shape.
    pub tlb: TlbConfig,
    /// Clock.
    pub timing: Timing,
    /// Where the clock came from.
    pub timing_source: String,
    /// The cost model behind `est_speedup`.
    pub cost_model: CostModel,
    /// Configurations simulated.
    pub configurations: usize,
    /// Wall seconds of the simulation (decode included).
    pub sim_wall_s: f64,
    /// Every point, `none` and `all` first.
    pub points: Vec<Point>,
    /// Reuse distance at 4 KiB and 2 MiB, with the pages' classes (`null`: not asked for).
    pub reuse: Option<[crate::reuse::Granularity; 2]>,
}

/// A region of the trace, for results.
#[derive(Debug, Clone, Serialize)]
pub struct RegionInfo {
    /// Name.
    pub name: String,
    /// First address.
    pub base: u64,
    /// Bytes.
    pub bytes: u64,
}

impl From<&Region> for RegionInfo {
    fn from(r: &Region) -> Self {
        RegionInfo {
            name: r.name.clone(),
            base: r.base,
            bytes: r.size,
        }
    }
}

/// A configuration's promotion plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Policy name.
    pub policy: String,
    /// Policy with settings.
    pub policy_label: String,
    /// Budget share (`null`: unlimited).
    pub budget_share: Option<f64>,
    /// Steps, in order.
    pub events: Vec<PlanStep>,
}

/// One step of a plan, with its time in seconds of the real run too.
#[derive(Debug, Clone, Serialize)]
pub struct PlanStep {
    /// The step.
    #[serde(flatten)]
    pub event: PlanEvent,
    /// Seconds into the real run (accesses / accesses per second).
    pub at_s: f64,
}

/// Simulate `spec` over the trace at `path`; returns the curves and every configuration's
/// plan. `cancel` is polled between chunks.
pub fn run(
    path: &Path,
    spec: &CurveSpec,
    progress: &dyn Progress,
    cancel: &AtomicBool,
) -> Result<(Curves, Vec<Plan>)> {
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

    // Policies built once at real time to learn their intervals, then at the chosen scale.
    let mut names: Vec<String> = Vec::new();
    for p in &spec.policies {
        let (name, _) = policy::Options::parse(p)?;
        if name != "none" && name != "all" {
            names.push(p.clone());
        }
    }
    let real = Timing {
        accesses_per_s: rate,
        time_scale: 1.0,
    };
    let mut longest = 0u64;
    for p in &names {
        longest = longest.max(policies::parse(p, &real, streams)?.interval().unwrap_or(0));
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
    for end in ["none", "all"] {
        let m = Machine::new(
            &spec.tlb,
            &header,
            policies::parse(end, &timing, streams)?,
            None,
        )?;
        machines.push((end.to_string(), None, m));
    }
    for p in &names {
        let (name, _) = policy::Options::parse(p)?;
        for &b in &spec.budgets {
            let m = Machine::new(
                &spec.tlb,
                &header,
                policies::parse(p, &timing, streams)?,
                Some(b),
            )?;
            machines.push((name.clone(), Some(b), m));
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
    let cost = CostModel::fit(
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
    let plans = machines
        .iter()
        .map(|(name, budget, m)| Plan {
            policy: name.clone(),
            policy_label: m.label(),
            budget_share: *budget,
            events: m
                .plan()
                .iter()
                .map(|e| PlanStep {
                    event: *e,
                    at_s: e.at_access as f64 / rate,
                })
                .collect(),
        })
        .collect();
    Ok((
        Curves {
            trace: path.to_path_buf(),
            regions: header.regions.iter().map(RegionInfo::from).collect(),
            accesses,
            streams,
            footprint_bytes: footprint,
            tlb: spec.tlb.clone(),
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
        promotions: t.budget.promotions,
        demotions: t.budget.demotions,
        huge_bytes: t.huge_bytes,
        peak_huge_bytes: t.budget.peak_frames * crate::pagemap::FRAME,
        huge_share: ratio(t.huge_bytes, footprint).unwrap_or(0.0),
        est_speedup: t_none / cost.seconds(c.accesses, c.walk_reads),
    }
}
