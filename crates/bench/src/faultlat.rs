//! Page-fault latency: touch a fresh region page by page and time each touch that faulted.
//!
//! A touch counts as a fault when the thread's minor-fault counter moved (`getrusage`), so
//! the histogram holds real faults only: under THP one touch in 512 faults a 2 MiB page and the
//! other 511 are plain writes. `then_collapse` measures the asynchronous path apart: fault as
//! 4 KiB first, then `MADV_COLLAPSE` each 2 MiB piece and time that.

use std::collections::BTreeMap;
use std::sync::atomic::{compiler_fence, Ordering};
use std::time::Instant;

use hdrhistogram::Histogram;
use hugewise_mem::{Bytes, PagePolicy, Region, RegionOptions};
use hugewise_results::faultlat::{CollapsePhase, FaultlatReport, Latency};
use hugewise_sys::mmap::Advice;
use hugewise_sys::rusage::thread_faults;

use crate::{Error, Progress, Result};

const PAGE: usize = 4096;
const TWO_M: usize = 2 << 20;

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Region size.
    pub bytes: Bytes,
    /// Page policy while faulting.
    pub policy: PagePolicy,
    /// After faulting, lift NOHUGEPAGE and collapse every 2 MiB piece.
    pub then_collapse: bool,
    /// Touch the region even when it is larger than the memory available.
    pub force: bool,
}

/// Latency summary of a histogram; `total_ns` is the sum of all samples.
fn latency(h: &Histogram<u64>, total_ns: u64) -> Latency {
    Latency {
        count: h.len(),
        mean_ns: if h.is_empty() { 0.0 } else { h.mean() },
        p50_ns: h.value_at_quantile(0.5),
        p90_ns: h.value_at_quantile(0.9),
        p99_ns: h.value_at_quantile(0.99),
        p999_ns: h.value_at_quantile(0.999),
        max_ns: h.max(),
        total_ns,
    }
}

fn histogram() -> Result<Histogram<u64>> {
    // 1 ns .. 100 s at 3 significant digits; larger values are clamped by saturating_record.
    Histogram::new_with_bounds(1, 100_000_000_000, 3)
        .map_err(|e| Error::Config(format!("latency histogram: {e}")))
}

fn timer_overhead() -> u64 {
    let mut v: Vec<u64> = (0..10_001)
        .map(|_| {
            let t = Instant::now();
            t.elapsed().as_nanos() as u64
        })
        .collect();
    v.sort_unstable();
    v[v.len() / 2]
}

/// Run the measurement. `progress` gets bytes touched (then bytes collapsed) of the total.
pub fn run(cfg: &Config, progress: Progress<'_>) -> Result<FaultlatReport> {
    Ok(run_beside(cfg, progress, |_| Ok(()))?.0)
}

/// Run the measurement with something beside the faults: `beside` is given the region's
/// address range once it is mapped, before its first touch, and what it returns is handed
/// back as soon as the last touch is timed (for the caller to stop and read).
pub fn run_beside<B>(
    cfg: &Config,
    progress: Progress<'_>,
    beside: impl FnOnce(std::ops::Range<usize>) -> Result<B>,
) -> Result<(FaultlatReport, B)> {
    let bytes = cfg.bytes.0 as usize;
    if bytes < PAGE {
        return Err(Error::Config(format!(
            "size {} is below one page",
            cfg.bytes
        )));
    }
    // Every page is touched, so the whole size must fit; hugetlb pages come from their pool,
    // whose reservation fails cleanly at mmap instead.
    if !matches!(cfg.policy, PagePolicy::Hugetlb2M | PagePolicy::Hugetlb1G) {
        let implies = format!("a region of {} with every page touched", cfg.bytes);
        crate::room::check(cfg.bytes, cfg.bytes.0, &implies, cfg.force)?;
    }
    let overhead = timer_overhead();
    let mut r: Region<u8> = Region::new(
        "faultlat",
        bytes,
        RegionOptions::new(cfg.policy).first_touch(),
    )?;
    let mut hist = histogram()?;
    let (mut faults, mut total) = (0u64, 0u64);
    let by = beside(r.addr()..r.addr() + r.mapped_bytes())?;
    let start = thread_faults();
    let mut last = start.minor;
    let wall = Instant::now();
    let total_steps = (bytes / PAGE) as u64;
    for (i, off) in (0..bytes).step_by(PAGE).enumerate() {
        let t0 = Instant::now();
        compiler_fence(Ordering::SeqCst);
        r[off] = 1;
        compiler_fence(Ordering::SeqCst);
        let ns = t0.elapsed().as_nanos() as u64;
        let now = thread_faults().minor;
        if now != last {
            faults += 1;
            total += ns;
            hist.saturating_record(ns.max(1));
            last = now;
        }
        if i % 512 == 511 {
            progress((i as u64 + 1) * PAGE as u64, total_steps * PAGE as u64);
        }
    }
    let touch_wall_ns = wall.elapsed().as_nanos() as u64;
    let major_faults = thread_faults().major - start.major;
    let backing = r.backing()?;
    let collapse = if cfg.then_collapse {
        Some(collapse_all(&r, progress)?)
    } else {
        None
    };
    Ok((
        FaultlatReport {
            bytes: bytes as u64,
            policy: cfg.policy.to_string(),
            touches: total_steps,
            faults,
            major_faults,
            fault_latency: latency(&hist, total),
            touch_wall_ns,
            timer_overhead_ns: overhead,
            backing,
            collapse,
        },
        by,
    ))
}

fn collapse_all(r: &Region<u8>, progress: Progress<'_>) -> Result<CollapsePhase> {
    let len = r.mapped_bytes();
    r.advise(0..len, Advice::HugePage)?;
    let mut hist = histogram()?;
    let (mut collapsed, mut total) = (0u64, 0u64);
    let mut refused = BTreeMap::new();
    let pieces = (len / TWO_M) as u64;
    for (i, off) in (0..len).step_by(TWO_M).enumerate() {
        let o = r.collapse(off..off + TWO_M)?;
        hist.saturating_record(o.elapsed_ns.max(1));
        total += o.elapsed_ns;
        match o.errno {
            None => collapsed += 1,
            Some(e) => *refused.entry(e).or_insert(0) += 1,
        }
        progress((i as u64 + 1) * TWO_M as u64, pieces * TWO_M as u64);
    }
    Ok(CollapsePhase {
        pieces,
        collapsed,
        refused,
        latency: latency(&hist, total),
        backing: r.backing()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_faults_once_per_page() {
        let cfg = Config {
            bytes: Bytes(8 << 20),
            policy: PagePolicy::Base,
            then_collapse: false,
            force: false,
        };
        let r = run(&cfg, &mut |_, _| {}).expect("run");
        assert_eq!(r.touches, 2048);
        // Every 4 KiB touch of fresh NOHUGEPAGE memory faults (fault-around does not apply to
        // anonymous memory).
        assert!(r.faults >= 2040, "{} faults", r.faults);
        assert_eq!(r.fault_latency.count, r.faults);
        assert!(r.fault_latency.p50_ns <= r.fault_latency.p99_ns);
        assert_eq!(r.backing.huge_bytes(), 0);
        assert_eq!(r.major_faults, 0);
    }

    #[test]
    fn thp_faults_once_per_huge_page_and_collapse_is_apart() {
        let cfg = Config {
            bytes: Bytes(8 << 20),
            policy: PagePolicy::Thp,
            then_collapse: false,
            force: false,
        };
        let r = run(&cfg, &mut |_, _| {}).expect("run");
        assert!(r.faults <= 16, "{} faults for 4 huge pages", r.faults);
        let cfg = Config {
            bytes: Bytes(8 << 20),
            policy: PagePolicy::Base,
            then_collapse: true,
            force: false,
        };
        let r = run(&cfg, &mut |_, _| {}).expect("run");
        let c = r.collapse.expect("collapse phase");
        assert_eq!(c.pieces, 4);
        assert_eq!(c.collapsed + c.refused.values().sum::<u64>(), 4);
        assert_eq!(c.backing.thp_2m_bytes, c.collapsed * TWO_M as u64);
    }

    #[test]
    fn tiny_size_is_refused() {
        let cfg = Config {
            bytes: Bytes(100),
            policy: PagePolicy::Base,
            then_collapse: false,
            force: false,
        };
        assert!(run(&cfg, &mut |_, _| {}).is_err());
    }

    #[test]
    fn a_size_past_the_memory_available_is_refused_before_touching() {
        let cfg = Config {
            bytes: Bytes(1 << 50),
            policy: PagePolicy::Base,
            then_collapse: false,
            force: false,
        };
        let e = run(&cfg, &mut |_, _| panic!("touched a page"))
            .expect_err("1 PiB")
            .to_string();
        for want in ["size 1024TiB", "available", "--force"] {
            assert!(e.contains(want), "{want:?} not in {e}");
        }
    }
}
