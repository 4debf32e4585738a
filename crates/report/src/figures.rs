//! The numbers the report's charts and tables share, drawn from saved results: per-variant
//! speedups with their per-round spread, sensitivity series across a study's machine shapes,
//! latency CDF points, and huge bytes over a promotion session. Rendering lives elsewhere, so
//! the HTML, Markdown and CSV views cannot disagree.

use std::collections::BTreeMap;

use hugewise_results::collection::Entry;
use hugewise_results::faultlat::Latency;
use hugewise_results::pagebench::PagesReport;
use hugewise_results::promote::{ActionKind, PromoteBenchWorkload, PromoteReport};
use hugewise_results::randread::RandreadReport;
use hugewise_results::sim::Curves;
use hugewise_results::stats::{MedianInterval, Quiet, Summary};
use hugewise_results::study::Shape;
use hugewise_results::AnyResult;

use crate::views::run::variant_label;

/// One layout of a timed comparison, summarized for a bar and a table row.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Its name.
    pub label: String,
    /// Time (or ns per read) over rounds.
    pub time: Summary,
    /// Median over rounds of baseline / this, measured in the same round; 1 for the baseline;
    /// `None` when the result has none.
    pub speedup: Option<f64>,
    /// Lowest and highest per-round ratio (`None` without paired rounds).
    pub ratio_range: Option<(f64, f64)>,
    /// The 95 % interval of `speedup` as the result saved it (`None` for the baseline, below
    /// 6 rounds, and in results from before intervals were kept).
    pub ci95: Option<MedianInterval>,
    /// Share of the footprint in huge pages, read from the kernel.
    pub huge_share: f64,
    /// Samples timed while other processes kept the CPUs busy.
    pub busy: usize,
    /// Samples.
    pub samples: usize,
}

/// Per-round ratios baseline / variant, for each variant, from `(round, variant, time)`.
fn round_ratios(samples: &[(u32, usize, f64)], variants: usize) -> Vec<Vec<f64>> {
    let base: BTreeMap<u32, f64> = samples
        .iter()
        .filter(|s| s.1 == 0)
        .map(|s| (s.0, s.2))
        .collect();
    let mut out = vec![Vec::new(); variants];
    for &(round, v, t) in samples {
        if let (Some(b), Some(slot)) = (base.get(&round), out.get_mut(v)) {
            if t > 0.0 {
                slot.push(b / t);
            }
        }
    }
    out
}

fn range(xs: &[f64]) -> Option<(f64, f64)> {
    let lo = xs.iter().copied().reduce(f64::min)?;
    let hi = xs.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}

/// One timed sample of a comparison: round, index of its layout, time, quiet check.
type Timed<'a> = (u32, usize, f64, &'a Option<Quiet>);

/// One layout's summary as its result saved it: label, times, median speedup, huge share.
type Saved = (String, Summary, Option<f64>, Option<MedianInterval>, f64);

/// Bars from a comparison's samples and summaries (the first summary is the baseline).
fn bars(samples: &[Timed<'_>], summaries: Vec<Saved>) -> Vec<Bar> {
    let timed: Vec<(u32, usize, f64)> = samples.iter().map(|s| (s.0, s.1, s.2)).collect();
    let ratios = round_ratios(&timed, summaries.len());
    summaries
        .into_iter()
        .enumerate()
        .map(|(i, (label, time, speedup, ci95, huge_share))| {
            let (busy, n) = crate::views::busy_of(samples.iter().filter(|s| s.1 == i).map(|s| s.3));
            Bar {
                label,
                time,
                speedup: if i == 0 { Some(1.0) } else { speedup },
                ratio_range: if i == 0 { None } else { range(&ratios[i]) },
                ci95: if i == 0 { None } else { ci95 },
                huge_share,
                busy,
                samples: n,
            }
        })
        .collect()
}

/// The bars of a `bench pages` result, baseline first.
pub fn pages_bars(r: &PagesReport) -> Vec<Bar> {
    let samples: Vec<Timed<'_>> = r
        .samples
        .iter()
        .map(|s| (s.round, s.variant, s.kernel_ns as f64, &s.quiet))
        .collect();
    let summaries = r
        .summary
        .iter()
        .map(|v| {
            let label = variant_label(v);
            (
                label,
                v.kernel_ns,
                v.speedup_vs_first,
                v.speedup_vs_first_ci95,
                v.huge_footprint_share,
            )
        })
        .collect();
    bars(&samples, summaries)
}

/// The bars of a `bench randread` result, base first.
pub fn randread_bars(r: &RandreadReport) -> Vec<Bar> {
    let index = |v| r.summary.iter().position(|s| s.variant == v).unwrap_or(0);
    let samples: Vec<Timed<'_>> = r
        .samples
        .iter()
        .map(|s| (s.round, index(s.variant), s.ns_per_read, &s.quiet))
        .collect();
    let summaries = r
        .summary
        .iter()
        .map(|v| {
            let label = v.variant.name().to_string();
            (
                label,
                v.ns_per_read,
                v.speedup_vs_base,
                v.speedup_vs_base_ci95,
                v.huge_share,
            )
        })
        .collect();
    bars(&samples, summaries)
}

/// The bars of one workload of a `bench promote` result, base first.
pub fn promote_bench_bars(r: &PromoteBenchWorkload) -> Vec<Bar> {
    let index = |a| r.summary.iter().position(|s| s.arm == a).unwrap_or(0);
    // Bars are drawn in nanoseconds; a graph workload's times are seconds.
    let scale = if r.unit == PromoteBenchWorkload::SECONDS {
        1e9
    } else {
        1.0
    };
    let samples: Vec<Timed<'_>> = r
        .samples
        .iter()
        .map(|s| (s.round, index(s.arm), s.time * scale, &s.quiet))
        .collect();
    let summaries = r
        .summary
        .iter()
        .map(|a| {
            let label = a.arm.name().to_string();
            let t = a.time;
            (
                label,
                Summary {
                    median: t.median * scale,
                    min: t.min * scale,
                    max: t.max * scale,
                    mean: t.mean * scale,
                    ..t
                },
                a.speedup_vs_base,
                a.speedup_vs_base_ci95,
                a.huge_footprint_share,
            )
        })
        .collect();
    bars(&samples, summaries)
}

/// Which side of the machine shape a sensitivity series varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// Fragmentation asked for, as a percentage of free memory.
    Fragment,
    /// Free memory beyond the run's footprint, in GiB.
    FreeBeyond,
}

impl Axis {
    /// The axis title, with its unit.
    pub fn title(self) -> &'static str {
        match self {
            Axis::Fragment => "unmovable fragmentation of free memory (%)",
            Axis::FreeBeyond => "free memory beyond the footprint (GiB)",
        }
    }

    fn of(self, s: &Shape) -> Option<f64> {
        match self {
            // Presets leave an unfragmented run's level unset: 0 %, the reference.
            Axis::Fragment => Some(s.fragment.unwrap_or(0.0) * 100.0),
            Axis::FreeBeyond => s
                .free_beyond_footprint_bytes
                .map(|b| b as f64 / (1u64 << 30) as f64),
        }
    }

    fn other(self, s: &Shape) -> Shape {
        match self {
            Axis::Fragment => Shape {
                fragment: None,
                ..s.clone()
            },
            Axis::FreeBeyond => Shape {
                free_beyond_footprint_bytes: None,
                ..s.clone()
            },
        }
    }
}

/// One line of a sensitivity chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its legend.
    pub name: String,
    /// `(x, y)` points, by x.
    pub points: Vec<(f64, f64)>,
    /// Index into the charts' palette, the same for one layout or policy in every chart.
    pub colour: usize,
}

/// Pages metrics against the machine shape, across the runs of one study with the same
/// kernel and graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Sensitivity {
    /// `bfs on kron:20`.
    pub what: String,
    /// What varies.
    pub axis: Axis,
    /// Median speedup per layout (baseline left out).
    pub speedup: Vec<Series>,
    /// Huge share of the footprint per layout, in percent (baseline included).
    pub huge_share: Vec<Series>,
}

/// The sensitivity charts of a study's runs: one per kernel and graph whose runs differ in
/// machine shape along one axis (with several values of the other axis, one line each).
pub fn sensitivity(runs: &[&Entry]) -> Vec<Sensitivity> {
    let mut groups: BTreeMap<String, Vec<(&Shape, &PagesReport)>> = BTreeMap::new();
    for e in runs {
        if let (AnyResult::Pages(s), Some(tag)) = (&e.result, &e.meta().study) {
            let what = format!("{} on {}", s.result.kernel.name(), s.result.graph_spec);
            groups
                .entry(what)
                .or_default()
                .push((&tag.shape, &s.result));
        }
    }
    let mut out = Vec::new();
    for (what, rs) in groups {
        let distinct = |axis: Axis| {
            let mut xs: Vec<f64> = rs.iter().filter_map(|(s, _)| axis.of(s)).collect();
            xs.sort_by(f64::total_cmp);
            xs.dedup();
            xs.len()
        };
        let (f, m) = (distinct(Axis::Fragment), distinct(Axis::FreeBeyond));
        let axis = match (f, m) {
            (f, m) if f >= 2 && f >= m => Axis::Fragment,
            (_, m) if m >= 2 => Axis::FreeBeyond,
            _ => continue,
        };
        let others_vary = {
            let mut o: Vec<String> = rs.iter().map(|(s, _)| axis.other(s).describe()).collect();
            o.sort();
            o.dedup();
            o.len() > 1
        };
        let mut speed: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        let mut huge: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        let mut order: Vec<(String, usize)> = Vec::new();
        for (shape, r) in &rs {
            let Some(x) = axis.of(shape) else { continue };
            let suffix = if others_vary {
                format!(" ({})", axis.other(shape).describe())
            } else {
                String::new()
            };
            for (i, b) in pages_bars(r).into_iter().enumerate() {
                let name = format!("{}{suffix}", b.label);
                if !order.iter().any(|o| o.0 == name) {
                    let colour = match i {
                        0 => crate::charts::BASELINE_COLOUR,
                        _ => order
                            .iter()
                            .filter(|o| o.1 != crate::charts::BASELINE_COLOUR)
                            .count(),
                    };
                    order.push((name.clone(), colour));
                }
                if let (true, Some(s)) = (i > 0, b.speedup) {
                    speed.entry(name.clone()).or_default().push((x, s));
                }
                huge.entry(name)
                    .or_default()
                    .push((x, b.huge_share * 100.0));
            }
        }
        let series = |m: &mut BTreeMap<String, Vec<(f64, f64)>>| -> Vec<Series> {
            order
                .iter()
                .filter_map(|(n, colour)| {
                    let mut points = m.remove(n)?;
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    Some(Series {
                        name: n.clone(),
                        points,
                        colour: *colour,
                    })
                })
                .collect()
        };
        out.push(Sensitivity {
            what,
            axis,
            speedup: series(&mut speed),
            huge_share: series(&mut huge),
        });
    }
    out
}

/// A simulated utility curve per policy: `(share promoted %, value)`, with the `all` point as
/// the ideal.
#[derive(Debug, Clone, PartialEq)]
pub struct Utility {
    /// Estimated speedup over `none`, per policy.
    pub speedup: Vec<Series>,
    /// Walks per 1 000 accesses, per policy.
    pub walks: Vec<Series>,
    /// Of the page-table reads every page huge removes, the share each budget removes (%), per
    /// policy: what `study`'s utility headlines read (empty without `none` and `all`, or where
    /// `all` removes no read).
    pub removed: Vec<Series>,
    /// `all`'s estimated speedup and walks, when simulated.
    pub ideal: Option<(f64, f64)>,
    /// `none`'s walks, when simulated.
    pub none_walks: Option<f64>,
}

/// The utility curves of a `sim` result.
pub fn utility(c: &Curves) -> Utility {
    let mut speedup: Vec<Series> = Vec::new();
    let mut walks: Vec<Series> = Vec::new();
    for p in &c.points {
        let Some(b) = p.budget_share else { continue };
        let x = b * 100.0;
        match speedup.iter().position(|s| s.name == p.policy) {
            Some(i) => {
                speedup[i].points.push((x, p.est_speedup));
                walks[i].points.push((x, p.walks_per_kacc));
            }
            None => {
                let colour = speedup.len();
                speedup.push(Series {
                    name: p.policy.clone(),
                    points: vec![(x, p.est_speedup)],
                    colour,
                });
                walks.push(Series {
                    name: p.policy.clone(),
                    points: vec![(x, p.walks_per_kacc)],
                    colour,
                });
            }
        }
    }
    let mut removed: Vec<Series> = Vec::new();
    for p in &c.points {
        let (Some(b), Some(share)) = (p.budget_share, c.share_of_reads_removed(p)) else {
            continue;
        };
        let point = (b * 100.0, share * 100.0);
        match removed.iter_mut().find(|s| s.name == p.policy) {
            Some(s) => s.points.push(point),
            None => removed.push(Series {
                name: p.policy.clone(),
                points: vec![point],
                // The colour the policy has in the other two charts.
                colour: speedup
                    .iter()
                    .find(|s| s.name == p.policy)
                    .map_or(removed.len(), |s| s.colour),
            }),
        }
    }
    for s in speedup
        .iter_mut()
        .chain(walks.iter_mut())
        .chain(removed.iter_mut())
    {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let find = |name: &str| c.points.iter().find(|p| p.policy == name);
    Utility {
        speedup,
        walks,
        removed,
        ideal: find("all").map(|p| (p.est_speedup, p.walks_per_kacc)),
        none_walks: find("none").map(|p| p.walks_per_kacc),
    }
}

/// A latency distribution as CDF points `(latency ns, percent at or below)`, from its
/// percentiles (the saved results keep percentiles, not every event).
pub fn cdf(l: &Latency) -> Vec<(f64, f64)> {
    let mut pts = vec![
        (l.p50_ns as f64, 50.0),
        (l.p90_ns as f64, 90.0),
        (l.p99_ns as f64, 99.0),
        (l.p999_ns as f64, 99.9),
        (l.max_ns as f64, 100.0),
    ];
    pts.retain(|p| p.0 > 0.0);
    pts
}

/// Huge bytes in the targets over a promotion session: `(seconds, MiB)`, from the daemon's
/// intervals, or for a plan replay from its actions' read-backs added up.
pub fn contiguity(r: &PromoteReport) -> Vec<(f64, f64)> {
    const MIB: f64 = (1u64 << 20) as f64;
    if !r.intervals.is_empty() {
        return r
            .intervals
            .iter()
            .map(|i| (i.t_ms / 1e3, i.huge_bytes_after as f64 / MIB))
            .collect();
    }
    let mut huge = 0i128;
    let mut pts = vec![(0.0, 0.0)];
    for a in &r.actions {
        if !a.succeeded() {
            continue;
        }
        let delta = a.huge_bytes_after.unwrap_or(match a.kind {
            ActionKind::Promote => a.len_bytes,
            ActionKind::Demote | ActionKind::Release => 0,
        }) as i128;
        huge += match a.kind {
            ActionKind::Promote => delta,
            // A release splits a page the program had already partly freed: its mapping was
            // split by then, and it leaves the count here.
            ActionKind::Demote | ActionKind::Release => -(a.len_bytes as i128 - delta),
        };
        pts.push((a.t_ms / 1e3, huge.max(0) as f64 / MIB));
    }
    pts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reads_removed_run_from_none_to_all_in_the_policys_colour() {
        let text = include_str!("../../results/tests/fixtures/sim.json");
        let mut c = hugewise_results::Saved::<Curves>::from_json(text)
            .expect("the saved curves")
            .result;
        // 32 reads on 4 KiB pages, 12 all huge: linux's 22 at half the footprint removes half
        // of the 20, pcc's 35 less than none (-15 %), pcc at 0 nothing.
        let u = utility(&c);
        let linux = u.removed.iter().find(|s| s.name == "linux").expect("linux");
        assert_eq!(linux.points, [(0.0, 0.0), (50.0, 50.0)]);
        let pcc = u.removed.iter().find(|s| s.name == "pcc").expect("pcc");
        assert_eq!(pcc.points, [(0.0, 0.0), (50.0, -15.0)]);
        for s in &u.removed {
            let speed = u.speedup.iter().find(|x| x.name == s.name).expect("same");
            assert_eq!(s.colour, speed.colour, "{}", s.name);
        }
        // Where every page huge removes no read, there is no share to give.
        for p in &mut c.points {
            p.walk_reads = 32;
        }
        assert!(utility(&c).removed.is_empty());
    }

    #[test]
    fn per_round_ratios_pair_each_variant_with_the_baseline_of_its_round() {
        let s = [
            (0, 0, 100.0),
            (0, 1, 50.0),
            (1, 0, 120.0),
            (1, 1, 40.0),
            (2, 1, 10.0), // no baseline in round 2: not a ratio
        ];
        let r = round_ratios(&s, 2);
        assert_eq!(r[0], [1.0, 1.0]);
        assert_eq!(r[1], [2.0, 3.0]);
        assert_eq!(range(&r[1]), Some((2.0, 3.0)));
    }

    #[test]
    fn a_cdf_rises_through_the_percentiles() {
        let l = Latency {
            count: 10,
            mean_ns: 5.0,
            p50_ns: 2,
            p90_ns: 5,
            p99_ns: 9,
            p999_ns: 9,
            max_ns: 12,
            total_ns: 50,
        };
        let c = cdf(&l);
        assert_eq!(c.first(), Some(&(2.0, 50.0)));
        assert_eq!(c.last(), Some(&(12.0, 100.0)));
    }
}

/// A `swap` run as lines against the memory share (in %), one per overcommit factor: the
/// slowdown over all of the footprint in memory at factor 1, the share of CPU time idle or
/// waiting for I/O, and the swap device's mean queue depth.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SwapLines {
    /// Time over the baseline's (×).
    pub slowdown: Vec<Series>,
    /// Idle + iowait share of the CPUs (%).
    pub idle: Vec<Series>,
    /// Mean requests in flight on the swap device.
    pub queue: Vec<Series>,
}

/// [`SwapLines`] of one `swap` run.
pub fn swap_lines(r: &hugewise_results::swapstudy::SwapStudy) -> SwapLines {
    let mut factors: Vec<&str> = Vec::new();
    for p in &r.points {
        if !factors.contains(&p.factor.as_str()) {
            factors.push(&p.factor);
        }
    }
    let base = r.baseline_s();
    let mut out = SwapLines::default();
    for (i, f) in factors.iter().enumerate() {
        let mut pts: Vec<&hugewise_results::swapstudy::SwapPoint> =
            r.points.iter().filter(|p| p.factor == *f).collect();
        pts.sort_by(|a, b| a.share.total_cmp(&b.share));
        let name = if *f == "auto" {
            "auto".to_string()
        } else {
            format!("x{f}")
        };
        let series =
            |get: &dyn Fn(&hugewise_results::swapstudy::SwapPoint) -> Option<f64>| Series {
                name: name.clone(),
                points: pts
                    .iter()
                    .filter_map(|p| Some((p.share * 100.0, get(p)?)))
                    .collect(),
                colour: i,
            };
        let summary = |p: &hugewise_results::swapstudy::SwapPoint| {
            p.run
                .as_ref()
                .and_then(|r| r.telemetry.as_ref())
                .map(|t| t.summary.clone())
        };
        out.slowdown.push(series(&|p| Some(p.median_s()? / base?)));
        out.idle.push(series(&|p| {
            let c = summary(p)?.cpu?;
            Some((c.idle_share + c.iowait_share) * 100.0)
        }));
        out.queue.push(series(&|p| summary(p)?.mean_queue_depth));
    }
    out
}
