//! Random 8-byte reads over one large region, page policies alternated A B C A B C.
//!
//! Each round creates every variant's region afresh (populated before timing, so first-touch
//! cost stays out), checks the machine is quiet, warms up, then times independent random reads
//! from a seeded xorshift stream. Every sample is kept; each variant's speedup is the median
//! over rounds of (base time / variant time) measured in the same round.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use hugewise_mem::{Bytes, PagePolicy, Region, RegionOptions};
use hugewise_results::randread::{RandreadReport, RandreadSample, RandreadVariant, Variant};
use hugewise_sys::mmap::Advice;

use crate::quiet;
use crate::stats::{median, ratio, summarize, Until};
use crate::{Error, Progress, Result};

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Region size.
    pub bytes: Bytes,
    /// Timed reads per sample.
    pub reads: u64,
    /// Rounds (each round runs every variant once), at least.
    pub rounds: u32,
    /// More rounds until the speedups' intervals are narrow enough.
    pub until: Until,
    /// Seed of the address stream.
    pub seed: u64,
    /// Run even when the region is larger than the memory available (swap to spare).
    pub force: bool,
}

/// Sum of `n` reads at xorshift64-random indices of `data`; returned so no read is elided.
pub fn random_reads(data: &[u64], n: u64, seed: u64) -> u64 {
    let len = data.len() as u128;
    let mut x = seed | 1;
    let mut sum = 0u64;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = ((x as u128 * len) >> 64) as usize;
        sum = sum.wrapping_add(data[i]);
    }
    sum
}

fn make(variant: Variant, elems: usize) -> Result<Region<u64>> {
    let policy = match variant {
        Variant::Base | Variant::BaseCollapsed => PagePolicy::Base,
        Variant::Thp => PagePolicy::Thp,
    };
    let mut r = Region::new(variant.name(), elems, RegionOptions::new(policy))?;
    // Distinct values so reads are of real, written memory.
    for (i, x) in r.iter_mut().enumerate() {
        *x = i as u64;
    }
    if variant == Variant::BaseCollapsed {
        let len = r.mapped_bytes();
        r.advise(0..len, Advice::HugePage)?;
        r.collapse(0..len)?;
    }
    Ok(r)
}

/// Run the benchmark. `progress` counts samples done of the total; `cancel` raised keeps the
/// rounds done (see [`crate::stats::Until::rounds`]).
pub fn run(cfg: &Config, cancel: &AtomicBool, progress: Progress<'_>) -> Result<RandreadReport> {
    if cfg.rounds == 0 || cfg.reads == 0 {
        return Err(Error::Config("rounds and reads must be at least 1".into()));
    }
    let elems = (cfg.bytes.0 / 8) as usize;
    if elems == 0 {
        return Err(Error::Config(
            "size must hold at least one 8-byte value".into(),
        ));
    }
    // One variant's region at a time, every page touched.
    let implies = format!("a region of {} with every page touched", cfg.bytes);
    crate::room::check(cfg.bytes, cfg.bytes.0, &implies, cfg.force)?;
    let total = cfg.until.planned(cfg.rounds) as u64 * Variant::ALL.len() as u64;
    let mut samples = Vec::new();
    let (rounds, stopped) = cfg.until.rounds(
        cfg.rounds,
        &mut samples,
        &|| cancel.load(Ordering::Relaxed),
        |s| {
            Variant::ALL[1..]
                .iter()
                .map(|&v| ratios_vs_base(s, v))
                .collect()
        },
        |round, samples| {
            for variant in Variant::ALL {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                let t0 = Instant::now();
                let r = make(variant, elems)?;
                let setup_ns = t0.elapsed().as_nanos() as u64;
                let huge_share = r.backing()?.huge_share();
                let q = quiet::wait_quiet(
                    hugewise_results::stats::BUSY_SHARE,
                    std::time::Duration::from_millis(200),
                    5,
                );
                let seed = cfg.seed.wrapping_add(round as u64);
                std::hint::black_box(random_reads(&r, (cfg.reads / 10).max(1), seed ^ 0xabcdef));
                let t = Instant::now();
                std::hint::black_box(random_reads(&r, cfg.reads, seed));
                let ns = t.elapsed().as_nanos() as f64;
                samples.push(RandreadSample {
                    round,
                    variant,
                    ns_per_read: ns / cfg.reads as f64,
                    huge_share,
                    setup_ns,
                    quiet: q,
                });
                progress(samples.len() as u64, total);
            }
            Ok(())
        },
    )?;
    let summary = summarize_variants(&samples);
    Ok(RandreadReport {
        bytes: cfg.bytes.0,
        reads: cfg.reads,
        rounds,
        stopped: Some(stopped),
        seed: cfg.seed,
        samples,
        summary,
    })
}

/// Per round that ran both, base time over `v`'s.
fn ratios_vs_base(samples: &[RandreadSample], v: Variant) -> Vec<f64> {
    samples
        .iter()
        .filter(|s| s.variant == v)
        .filter_map(|s| {
            samples
                .iter()
                .find(|b| b.variant == Variant::Base && b.round == s.round)
                .map(|b| b.ns_per_read / s.ns_per_read)
        })
        .collect()
}

fn summarize_variants(samples: &[RandreadSample]) -> Vec<RandreadVariant> {
    Variant::ALL
        .iter()
        .filter_map(|&v| {
            let mine: Vec<&RandreadSample> = samples.iter().filter(|s| s.variant == v).collect();
            let ns: Vec<f64> = mine.iter().map(|s| s.ns_per_read).collect();
            let (speedup, ci95) = match v {
                Variant::Base => (None, None),
                _ => ratio(&ratios_vs_base(samples, v)),
            };
            let shares: Vec<f64> = mine.iter().map(|s| s.huge_share).collect();
            Some(RandreadVariant {
                variant: v,
                ns_per_read: summarize(&ns)?,
                speedup_vs_base: speedup,
                speedup_vs_base_ci95: ci95,
                huge_share: median(&shares).unwrap_or(0.0),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_deterministic_and_in_bounds() {
        let data: Vec<u64> = (0..1000).collect();
        let a = random_reads(&data, 10_000, 7);
        assert_eq!(a, random_reads(&data, 10_000, 7));
        assert_ne!(a, random_reads(&data, 10_000, 8));
        // Mean index close to the middle: the stream covers the array.
        let mean = a as f64 / 10_000.0;
        assert!((400.0..600.0).contains(&mean), "{mean}");
    }

    fn cfg(bytes: u64, reads: u64, rounds: u32) -> Config {
        Config {
            bytes: Bytes(bytes),
            reads,
            rounds,
            seed: 1,
            force: false,
            until: Until::default(),
        }
    }

    #[test]
    fn a_small_run_has_every_sample_and_ratios() {
        let cfg = cfg(16 << 20, 10_000, 2);
        let mut calls = 0;
        let r = run(&cfg, &AtomicBool::new(false), &mut |_, _| calls += 1).expect("run");
        assert_eq!(r.samples.len(), 6);
        assert_eq!(calls, 6);
        assert_eq!(r.summary.len(), 3);
        assert_eq!(r.summary[0].speedup_vs_base, None);
        assert!(r.summary[1].speedup_vs_base.is_some());
        assert_eq!(r.summary[0].huge_share, 0.0);
        assert!(
            r.summary[2].huge_share > 0.9,
            "collapsed share {}",
            r.summary[2].huge_share
        );
    }

    #[test]
    fn zero_rounds_refused() {
        assert!(run(&cfg(1 << 20, 1, 0), &AtomicBool::new(false), &mut |_, _| {}).is_err());
    }

    #[test]
    fn a_region_past_the_memory_available_is_refused_before_anything_is_touched() {
        let e = run(&cfg(1 << 50, 1, 1), &AtomicBool::new(false), &mut |_, _| {
            panic!("ran")
        })
        .expect_err("refused");
        let m = e.to_string();
        for want in ["size 1024TiB", "available", "--force"] {
            assert!(m.contains(want), "{want}: {m}");
        }
    }
}
