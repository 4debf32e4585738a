//! Graph kernels, each beside an independent serial verifier.
//!
//! A [`Spec`] names a kernel and its settings; [`SpecExt::create`] makes a [`Kernel`], which owns
//! the kernel's working arrays as regions (so their page policy comes from the layout) and is
//! reused by every trial. Arrays that depend on the edge count are created by the first run,
//! which callers do untimed as a warm-up.
//!
//! Every kernel has one body, generic over a [`Tracer`](crate::probe::Tracer): the timed run
//! and `hugewise trace` run the same code, the first with a tracer that compiles away.
//!
//! Region groups, for `--pages`: `property` is every vertex-indexed array that the kernel reads
//! or writes at neighbours' ids (the scattered accesses that thrash the TLB); `frontier` is
//! queues, bitmaps and other working lists.

pub mod arcs;
pub mod bc;
pub mod bfs;
pub mod cc;
pub mod pr;
mod scratch;
pub mod sssp;
pub mod tc;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

pub use hugewise_results::kernel::{Outcome, Spec};

use rayon::prelude::*;

use crate::csr::RegionReport;
use crate::probe::{Probe, Span, Streams};
use crate::rng::SplitMix64;
use crate::sampler::Sampled;
use crate::{Csr, Error, Layout, Result};

/// A kernel with its working arrays.
///
/// Each kernel has one body, generic over a [`Tracer`](crate::probe::Tracer): [`Kernel::run`] calls it with
/// [`Off`](crate::probe::Off), whose hooks compile away, and [`Kernel::trace`] with a
/// recording tracer, so a trace records the kernel that is timed.
pub trait Kernel: Send + Sync {
    /// Run once from `sources` (as many as [`Spec::sources_per_trial`] says). Only this is
    /// timed.
    fn run(&mut self, g: &Csr, sources: &[u32]) -> Result<()>;
    /// Make what the kernel keeps made from a graph (SSSP's pairs of arcs and weights) for
    /// `g`, untimed, where its next run would make it: for a caller that hands the kernel a
    /// graph it has not run on without a warm-up run first. Most kernels keep nothing.
    fn prepare(&mut self, _g: &Csr) {}
    /// Run once as [`Kernel::run`] does, telling `t` every access of every worker thread.
    fn trace(&mut self, g: &Csr, sources: &[u32], t: &Streams) -> Result<()>;
    /// Run once as [`Kernel::run`] does, publishing one access in so many of those `s` sees
    /// (see [`crate::probe::watch!`]) to a promotion daemon.
    fn sample(&mut self, g: &Csr, sources: &[u32], s: &Sampled<'_>) -> Result<()>;
    /// Where the kernel's arrays are, for a trace's header (arrays the first run creates are
    /// there after it).
    fn spans(&self) -> Vec<Span>;
    /// What the last run found, summarised after the clock stopped.
    fn outcome(&self, g: &Csr) -> Outcome;
    /// Check the last run's result against an independent serial implementation; the error
    /// says what is wrong.
    fn verify(&self, g: &Csr, sources: &[u32]) -> std::result::Result<(), String>;
    /// Size and backing of every working array.
    fn regions(&self) -> Result<Vec<RegionReport>>;
}

/// What a [`Spec`] does with a graph: check that the graph suits it, and make the kernel.
pub trait SpecExt {
    /// Check the settings and that `g` suits the kernel.
    fn check(&self, g: &Csr) -> Result<()>;
    /// Create the kernel's vertex arrays for `n` vertices, in the layout's policies.
    fn create(&self, layout: &Layout, n: usize) -> Result<Box<dyn Kernel>>;
}

impl SpecExt for Spec {
    /// Check the settings and that `g` suits the kernel.
    fn check(&self, g: &Csr) -> Result<()> {
        match *self {
            Spec::Sssp { delta: Some(0) } => {
                Err(Error::Invalid("sssp: delta must be at least 1".into()))
            }
            Spec::Pr {
                tolerance,
                max_iters,
                ..
            } if !(tolerance >= 0.0 && tolerance.is_finite()) || max_iters == 0 => {
                Err(Error::Invalid(format!(
                    "pr: tolerance must be a finite number ≥ 0 (got {tolerance}) and the \
                     iteration cap at least 1 (got {max_iters})"
                )))
            }
            Spec::Bc { sources: 0 } => Err(Error::Invalid("bc: take at least one source".into())),
            _ if self.needs_weights() && !g.weighted() => Err(Error::Invalid(format!(
                "{} needs edge weights: use a .wel, .wsg or weighted .mtx file, or a \
                 generator (which then draws weights in [1, 255])",
                self.name()
            ))),
            _ if self.needs_undirected() && g.directed() => Err(Error::Invalid(format!(
                "{} needs an undirected graph: pass --symmetrize with a text edge list, \
                 or use a symmetric file",
                self.name()
            ))),
            _ => Ok(()),
        }
    }

    /// Create the kernel's vertex arrays for `n` vertices, in the layout's policies.
    fn create(&self, layout: &Layout, n: usize) -> Result<Box<dyn Kernel>> {
        Ok(match *self {
            Spec::Bfs { mode } => Box::new(bfs::Bfs::new(layout, n, mode)?),
            Spec::Sssp { delta } => Box::new(sssp::Sssp::new(layout, n, delta)?),
            Spec::Pr {
                mode,
                tolerance,
                max_iters,
            } => Box::new(pr::Pr::new(layout, n, mode, tolerance, max_iters)?),
            Spec::Cc { algo } => Box::new(cc::Cc::new(layout, n, algo)?),
            Spec::Bc { .. } => Box::new(bc::Bc::new(layout, n)?),
            Spec::Tc => Box::new(tc::Tc::new(layout)),
        })
    }
}
/// `count` source vertices drawn reproducibly from `seed`, none of them isolated (out-degree 0),
/// as the GAP suite's source picker does.
pub fn pick_sources(g: &Csr, seed: u64, count: usize) -> Result<Vec<u32>> {
    pick_sources_by(g.n(), |v| g.out_degree(v), seed, count)
}

/// [`pick_sources`] among `n` vertices whose out-degrees `out_degree` gives: the same vertices
/// for the same degrees, whatever ids the graph holding them uses (a reordered graph gives its
/// degrees through the permutation).
pub fn pick_sources_by(
    n: usize,
    out_degree: impl Fn(u32) -> usize,
    seed: u64,
    count: usize,
) -> Result<Vec<u32>> {
    let mut rng = SplitMix64::new(seed, 0x5eed);
    let n = n as u64;
    let mut out = Vec::with_capacity(count);
    let mut tries = 0u64;
    while out.len() < count {
        let v = rng.below(n) as u32;
        tries += 1;
        if out_degree(v) > 0 {
            out.push(v);
        } else if tries > 64 * n.max(1024) {
            return Err(Error::Invalid(
                "no vertex with outgoing edges to start from".into(),
            ));
        }
    }
    Ok(out)
}

/// Atomic `a += x` on an f64 stored as bits: a load, then a store when the swap succeeds (a
/// failed swap is recorded as a load).
pub(crate) fn add_f64<P: Probe>(a: &AtomicU64, x: f64, p: &mut P) {
    let mut old = p.load(a);
    loop {
        let new = (f64::from_bits(old) + x).to_bits();
        match p.cas_weak(a, old, new) {
            Ok(_) => return,
            Err(cur) => old = cur,
        }
    }
}

/// `picks` places spread evenly over `0..len`, the same on every call: where a kernel samples
/// the graph to choose how to run (SSSP's bucket width, CC's prefetching).
pub(crate) fn spread(len: usize, picks: usize) -> impl Iterator<Item = usize> {
    (0..picks).map(move |i| (i as u64 * len as u64 / picks as u64) as usize)
}

/// The length from which [`in_pieces`] broadcasts. A broadcast made Brandes' levels on kron:22
/// (up to millions of vertices, lists of every length) about a quarter faster than pieces as a
/// parallel iterator, and on cnr-2000 (levels of up to 70 000) a quarter slower.
pub(crate) const BROADCAST_FROM: usize = 1 << 17;

/// Work through `0..len` in pieces of `grain`: `init` makes a state for one or more pieces,
/// `piece` does one piece with it, `finish` takes it at the end. A list of one piece is done on
/// the calling thread; a long one ([`BROADCAST_FROM`] or more) in one broadcast, each thread of
/// the pool claiming the next piece from a shared cursor as it finishes one; the lists between
/// as a parallel iterator, which another thread joins only if it is free.
pub(crate) fn in_pieces<S>(
    len: usize,
    grain: usize,
    init: impl Fn() -> S + Sync,
    piece: impl Fn(&mut S, Range<usize>) + Sync,
    finish: impl Fn(S) + Sync,
) {
    assert!(grain > 0, "pieces of no length");
    if len <= grain {
        let mut state = init();
        if len > 0 {
            piece(&mut state, 0..len);
        }
        finish(state);
        return;
    }
    if len < BROADCAST_FROM {
        // A state a piece, as a thread's state cannot move to another (a probe is the
        // thread's own).
        (0..len.div_ceil(grain)).into_par_iter().for_each(|k| {
            let mut state = init();
            piece(&mut state, k * grain..((k + 1) * grain).min(len));
            finish(state);
        });
        return;
    }
    let cursor = AtomicUsize::new(0);
    rayon::broadcast(|_| {
        let mut state = init();
        loop {
            let start = cursor.fetch_add(grain, Relaxed);
            if start >= len {
                break;
            }
            piece(&mut state, start..(start + grain).min(len));
        }
        finish(state);
    });
}

#[cfg(test)]
mod pieces_tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn every_index_once_and_every_state_finished_on_each_path() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool");
        let grain = 64;
        for len in [
            0,
            1,
            grain,
            grain + 1,
            BROADCAST_FROM - 1,
            BROADCAST_FROM,
            BROADCAST_FROM + grain + 1,
        ] {
            let seen: Vec<AtomicUsize> = (0..len).map(|_| AtomicUsize::new(0)).collect();
            let made = AtomicUsize::new(0);
            let finished = Mutex::new(Vec::new());
            pool.install(|| {
                in_pieces(
                    len,
                    grain,
                    || {
                        made.fetch_add(1, Relaxed);
                        0usize
                    },
                    |count, piece| {
                        assert!(piece.len() <= grain, "{len}: a piece of {}", piece.len());
                        *count += piece.len();
                        for i in piece {
                            seen[i].fetch_add(1, Relaxed);
                        }
                    },
                    |count| finished.lock().expect("lock").push(count),
                )
            });
            assert!(
                seen.iter().all(|s| s.load(Relaxed) == 1),
                "{len}: an index missed or twice"
            );
            let finished = finished.into_inner().expect("lock");
            assert_eq!(
                finished.len(),
                made.load(Relaxed),
                "{len}: a state not finished"
            );
            assert_eq!(finished.iter().sum::<usize>(), len, "{len}");
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Graphs shared by the kernels' tests.

    use crate::build::{build_default, Edge, EdgeSource, VecSource};
    use crate::gen::{Generator, Spec};
    use crate::Csr;

    /// Every edge of a source, in order.
    pub fn edges_of(src: &mut dyn EdgeSource) -> Vec<Edge> {
        let mut all = Vec::new();
        src.each_chunk(&mut |c| {
            all.extend_from_slice(c);
            Ok(())
        })
        .expect("edges");
        all
    }

    /// A generated graph.
    pub fn generated(spec: &str, symmetrize: bool, weighted: bool) -> Csr {
        let mut g = Generator::new(spec.parse::<Spec>().expect("spec"), 3, weighted);
        build_default(&mut g, symmetrize).expect("build")
    }

    /// A shaped graph (`grid:`, `road:`, `chain:`, `star:`), weighted, undirected.
    pub fn shaped(spec: &str) -> Csr {
        let mut s = crate::shapes::Shaped::new(spec.parse().expect("spec"), 3, true);
        build_default(&mut s, true).expect("shape")
    }

    /// A graph from `(u, v, w)` triples over `n` vertices.
    pub fn from_edges(n: usize, edges: &[(u32, u32, u32)], symmetrize: bool) -> Csr {
        let mut src = VecSource {
            edges: edges.iter().map(|&(u, v, w)| Edge { u, v, w }).collect(),
            weighted: true,
            vertices: Some(n),
        };
        build_default(&mut src, symmetrize).expect("build")
    }
}
