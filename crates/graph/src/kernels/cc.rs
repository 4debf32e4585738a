//! Connected components (weakly connected, for directed graphs), labelled in the "property"
//! region: two vertices share a label exactly when they are connected.
//!
//! `Afforest` (Sutton, Ben-Nun and Barak, 2018), as the GAP suite runs it: link every vertex to
//! its first two neighbours and compress; sample 1024 labels to guess the giant component;
//! then link the remaining arcs of every vertex outside it (and, for a directed graph, its
//! in-arcs), and compress again. `ShiloachVishkin`: hook the larger root under the smaller over
//! all arcs and compress, until nothing changes.
//!
//! Afforest's loops walk the vertices in order but, on most graphs, read labels at random: each
//! loop then prefetches the labels it will read a few vertices (or arcs) ahead, and the linking
//! rounds also the adjacency lists further ahead, whose stream the hardware prefetcher loses at
//! every 4 KiB page (kron:22 132 vs 149 ms for the GAP suite, urand:22 140 vs 202 ms;
//! BENCHMARKS.md). Where a sample shows the labels read are near or shared (a mesh, a star, a
//! web graph in crawl order), the loops do without (`scattered`).
//!
//! [`verify`] labels the graph with a serial union-find and checks that the two partitions are
//! the same.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

use hugewise_mem::Region;
pub use hugewise_results::kernel::CcAlgo;
// The kernel's own short name for the result model's type.
use hugewise_results::kernel::CcAlgo as Algo;
use hugewise_sys::atomic;
use rayon::prelude::*;

use crate::csr::{RegionReport, RegionReportExt};
use crate::kernels::{spread, Kernel, Outcome};
use crate::probe::{Off, Probe, Span, Streams, Tracer};
use crate::rng::SplitMix64;
use crate::sampler::Sampled;
use crate::{Csr, Layout, Result};

/// Neighbours linked in Afforest's first phase.
const NEIGHBOR_ROUNDS: usize = 2;
/// Labels sampled to find the giant component.
const SAMPLES: usize = 1024;

/// Connected components with their label array.
#[derive(Debug)]
pub struct Cc {
    algo: Algo,
    comp: Region<u32>,
}

impl Cc {
    /// Arrays for `n` vertices.
    pub fn new(layout: &Layout, n: usize, algo: Algo) -> Result<Cc> {
        Ok(Cc {
            algo,
            comp: layout.region("property", "property", n)?,
        })
    }

    /// Labels of the last run.
    pub fn labels(&self) -> &[u32] {
        &self.comp
    }
}

impl Cc {
    fn body<T: Tracer>(&mut self, g: &Csr, t: &T) -> Result<()> {
        self.comp
            .par_iter_mut()
            .enumerate()
            .for_each_init(|| t.probe(), |p, (v, c)| p.write(c, v as u32));
        let comp = atomic::u32s(&mut self.comp);
        match self.algo {
            Algo::Afforest => afforest(g, comp, t),
            Algo::ShiloachVishkin => shiloach_vishkin(g, comp, t),
        }
        Ok(())
    }
}

impl Kernel for Cc {
    fn run(&mut self, g: &Csr, _: &[u32]) -> Result<()> {
        self.body(g, &Off)
    }

    fn trace(&mut self, g: &Csr, _: &[u32], t: &Streams) -> Result<()> {
        self.body(g, t)
    }

    fn sample(&mut self, g: &Csr, _: &[u32], s: &Sampled<'_>) -> Result<()> {
        self.body(g, s)
    }

    fn outcome(&self, _: &Csr) -> Outcome {
        let (components, largest) = census(&self.comp);
        Outcome::Cc {
            components,
            largest,
        }
    }

    fn verify(&self, g: &Csr, _: &[u32]) -> std::result::Result<(), String> {
        verify(g, &self.comp)
    }

    fn regions(&self) -> Result<Vec<RegionReport>> {
        Ok(vec![RegionReport::of(&self.comp)?])
    }

    fn spans(&self) -> Vec<Span> {
        vec![Span::of(&self.comp)]
    }
}

/// Join the trees of `u` and `v`: the root with the larger id is hung under the smaller one.
fn link<P: Probe>(u: u32, v: u32, comp: &[AtomicU32], p: &mut P) {
    let mut a = p.load(&comp[u as usize]);
    let mut b = p.load(&comp[v as usize]);
    while a != b {
        let (high, low) = if a > b { (a, b) } else { (b, a) };
        let up = p.load(&comp[high as usize]);
        if up == low {
            return;
        }
        if up == high && p.cas(&comp[high as usize], high, low).is_ok() {
            return;
        }
        let above = p.load(&comp[high as usize]);
        a = p.load(&comp[above as usize]);
        b = p.load(&comp[low as usize]);
    }
}

/// How many vertices (or arcs) ahead the loops prefetch labels; lists are prefetched four
/// times as far ahead.
const AHEAD: usize = 16;

#[inline]
fn prefetch_label(comp: &[AtomicU32], v: u32) {
    if let Some(c) = comp.get(v as usize) {
        hugewise_sys::hint::prefetch(c);
    }
}

/// Point every vertex straight at its root, prefetching the labels ahead when `AHEAD_ON`.
fn compress<const AHEAD_ON: bool, T: Tracer>(comp: &[AtomicU32], t: &T) {
    comp.par_iter()
        .enumerate()
        .with_min_len(4096)
        .for_each_init(
            || t.probe(),
            |p, (v, c)| {
                // The parent of the vertex AHEAD on is read soon, at a random place (that
                // load only picks what to prefetch; it is traced at the vertex's turn).
                if AHEAD_ON {
                    if let Some(ahead) = comp.get(v + AHEAD) {
                        prefetch_label(comp, ahead.load(Relaxed));
                    }
                }
                let first = p.load(c);
                let mut x = first;
                loop {
                    let up = p.load(&comp[x as usize]);
                    if up == x {
                        break;
                    }
                    x = up;
                }
                // Write only what changes: most vertices already point at their root, and a
                // store would dirty their cache line for nothing.
                if x != first {
                    p.store(c, x);
                }
            },
        );
}

fn afforest<T: Tracer>(g: &Csr, comp: &[AtomicU32], t: &T) {
    if scattered(g, &mut t.probe()) {
        afforest_with::<true, T>(g, comp, t)
    } else {
        afforest_with::<false, T>(g, comp, t)
    }
}

/// Afforest, prefetching labels and lists ahead when `AHEAD_ON` (see [`scattered`]).
fn afforest_with<const AHEAD_ON: bool, T: Tracer>(g: &Csr, comp: &[AtomicU32], t: &T) {
    let n = g.n() as u32;
    let (out, inc) = (g.out_side(), g.in_side());
    let directed = g.directed();
    for r in 0..NEIGHBOR_ROUNDS {
        (0..n).into_par_iter().with_min_len(1024).for_each_init(
            || t.probe(),
            |p, u| {
                if AHEAD_ON {
                    out.prefetch_neighbors(u.saturating_add(4 * AHEAD as u32).min(n - 1));
                    if let Some(&w) = out
                        .neighbors(u.saturating_add(AHEAD as u32).min(n - 1))
                        .get(r)
                    {
                        prefetch_label(comp, w);
                    }
                }
                if let Some(v) = p.neighbors(out, u).get(r) {
                    let v = p.read(v);
                    link(u, v, comp, p);
                }
            },
        );
        compress::<AHEAD_ON, T>(comp, t);
    }
    let giant = most_frequent_label(comp, &mut t.probe());
    (0..n).into_par_iter().with_min_len(256).for_each_init(
        || t.probe(),
        |p, u| {
            if p.load(&comp[u as usize]) == giant {
                return;
            }
            let rest = p.neighbors(out, u).get(NEIGHBOR_ROUNDS..).unwrap_or(&[]);
            if AHEAD_ON {
                for &w in rest.iter().take(AHEAD) {
                    prefetch_label(comp, w);
                }
            }
            for (k, v) in rest.iter().enumerate() {
                if AHEAD_ON {
                    if let Some(&w) = rest.get(k + AHEAD) {
                        prefetch_label(comp, w);
                    }
                }
                let v = p.read(v);
                link(u, v, comp, p);
            }
            if directed {
                for v in p.neighbors(inc, u) {
                    let v = p.read(v);
                    link(u, v, comp, p);
                }
            }
        },
    );
    compress::<AHEAD_ON, T>(comp, t);
}

/// Whether the labels Afforest reads are scattered, so that prefetching them ahead pays: in a
/// sample of vertices spread evenly, the distinct first neighbours further than [`NEAR`] ids
/// from their vertex must number at least a quarter of the vertices with arcs (a neighbour
/// many share counts once, as its label stays cached). On a mesh or a road network the
/// neighbours' labels are a few KiB away, and on a star every leaf reads the hub's: there the
/// prefetching costs instructions and saves no miss (CC on
/// star:2000000 at 0.81x the GAP suite's speed with it). Sampled shares: a star 0, a mesh 0,
/// cnr-2000 0.08, kron:22 0.95, urand:22 0.99.
fn scattered<P: Probe>(g: &Csr, p: &mut P) -> bool {
    let n = g.n();
    let out = g.out_side();
    let picks = SAMPLES.min(n);
    let mut far = Vec::with_capacity(picks);
    let mut with_arcs = 0usize;
    for u in spread(n, picks) {
        let u = u as u32;
        if let Some(v) = p.neighbors(out, u).first() {
            let v = p.read(v);
            with_arcs += 1;
            if v.abs_diff(u) > NEAR {
                far.push(v);
            }
        }
    }
    far.sort_unstable();
    far.dedup();
    with_arcs > 0 && 4 * far.len() >= with_arcs
}

/// Ids at most this far apart (16 KiB of labels) are near: their labels are read while the lines
/// around them are still cached, or soon enough that the hardware's own prefetching finds them.
const NEAR: u32 = 4096;

/// The most common label among a fixed-seed sample: almost surely the giant component's.
fn most_frequent_label<P: Probe>(comp: &[AtomicU32], p: &mut P) -> u32 {
    let mut rng = SplitMix64::new(0xaff0_4e57, 0);
    let mut counts: HashMap<u32, u32> = HashMap::new();
    for _ in 0..SAMPLES {
        let v = rng.below(comp.len() as u64) as usize;
        *counts.entry(p.load(&comp[v])).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(label, count)| (count, std::cmp::Reverse(label)))
        .map_or(0, |(label, _)| label)
}

fn shiloach_vishkin<T: Tracer>(g: &Csr, comp: &[AtomicU32], t: &T) {
    let n = g.n() as u32;
    let out = g.out_side();
    loop {
        let changed = AtomicBool::new(false);
        (0..n).into_par_iter().with_min_len(256).for_each_init(
            || t.probe(),
            |p, u| {
                let mut hooked = false;
                for v in p.neighbors(out, u) {
                    let v = p.read(v);
                    let cu = p.load(&comp[u as usize]);
                    let cv = p.load(&comp[v as usize]);
                    if cu == cv {
                        continue;
                    }
                    let (high, low) = if cu > cv { (cu, cv) } else { (cv, cu) };
                    // Hook only roots, so that no tree is ever cut; test with a plain load
                    // first, as most candidates are no longer roots.
                    let h = &comp[high as usize];
                    if p.load(h) == high && p.cas(h, high, low).is_ok() {
                        hooked = true;
                    }
                }
                if hooked {
                    changed.store(true, Relaxed);
                }
            },
        );
        compress::<true, T>(comp, t);
        if !changed.load(Relaxed) {
            break;
        }
    }
}

/// Components and the size of the largest.
fn census(labels: &[u32]) -> (u64, u64) {
    let mut size = vec![0u32; labels.len()];
    for &l in labels {
        size[l as usize] += 1;
    }
    let components = size.iter().filter(|&&s| s > 0).count() as u64;
    (components, size.iter().copied().max().unwrap_or(0) as u64)
}

/// Check that `labels` partition the vertices exactly as a serial union-find over every arc
/// does.
pub fn verify(g: &Csr, labels: &[u32]) -> std::result::Result<(), String> {
    let n = g.n();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn find(p: &mut [u32], mut x: u32) -> u32 {
        while p[x as usize] != x {
            let up = p[p[x as usize] as usize];
            p[x as usize] = up;
            x = up;
        }
        x
    }
    for u in 0..n as u32 {
        for &v in g.out_neighbors(u) {
            let (a, b) = (find(&mut parent, u), find(&mut parent, v));
            if a != b {
                parent[a.max(b) as usize] = a.min(b);
            }
        }
    }
    // root -> label and label -> root must both be functions.
    let mut label_of_root = vec![u32::MAX; n];
    let mut root_of_label: HashMap<u32, u32> = HashMap::new();
    for v in 0..n as u32 {
        let r = find(&mut parent, v);
        let l = labels[v as usize];
        if label_of_root[r as usize] == u32::MAX {
            label_of_root[r as usize] = l;
        } else if label_of_root[r as usize] != l {
            return Err(format!(
                "vertex {v} has label {l} but is connected to vertices labelled {}",
                label_of_root[r as usize]
            ));
        }
        if let Some(&r0) = root_of_label.get(&l) {
            if r0 != r {
                return Err(format!(
                    "label {l} joins vertices of two components (vertex {v} and vertex {r0})"
                ));
            }
        } else {
            root_of_label.insert(l, r);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{from_edges, generated, shaped};

    fn cc(g: &Csr, algo: Algo) -> (Cc, Outcome) {
        let mut k = Cc::new(&Layout::default(), g.n(), algo).expect("cc");
        k.run(g, &[]).expect("run");
        let o = k.outcome(g);
        (k, o)
    }

    #[test]
    fn two_components_and_an_isolated_vertex() {
        let g = from_edges(7, &[(0, 1, 1), (1, 2, 1), (3, 4, 1), (5, 4, 1)], true);
        for algo in [Algo::Afforest, Algo::ShiloachVishkin] {
            let (k, o) = cc(&g, algo);
            assert_eq!(
                o,
                Outcome::Cc {
                    components: 3,
                    largest: 3
                }
            );
            let l = k.labels();
            assert!(l[0] == l[1] && l[1] == l[2] && l[3] == l[4] && l[4] == l[5]);
            assert!(l[0] != l[3] && l[6] != l[0] && l[6] != l[3]);
            verify(&g, l).expect("verifies");
        }
    }

    #[test]
    fn directed_graphs_are_weakly_connected() {
        // 2 -> 0 and 2 -> 1: one weak component, reachable only through in-arcs from 0.
        let g = from_edges(3, &[(2, 0, 1), (2, 1, 1)], false);
        for algo in [Algo::Afforest, Algo::ShiloachVishkin] {
            let (k, o) = cc(&g, algo);
            assert!(
                matches!(o, Outcome::Cc { components: 1, .. }),
                "{algo:?} {o:?}"
            );
            verify(&g, k.labels()).expect("verifies");
        }
    }

    #[test]
    fn labels_are_prefetched_where_they_are_scattered_only() {
        for (spec, want) in [
            ("kron:16", true),
            ("urand:16", true),
            ("grid:300x300", false),
            ("road:300x300", false),
            ("star:100000", false),
        ] {
            let g = if crate::shapes::is_shape(spec) {
                shaped(spec)
            } else {
                generated(spec, true, false)
            };
            assert_eq!(scattered(&g, &mut Off), want, "{spec}");
            let (k, _) = cc(&g, Algo::Afforest);
            verify(&g, k.labels()).unwrap_or_else(|e| panic!("{spec}: {e}"));
        }
    }

    #[test]
    fn verifies_on_generated_graphs() {
        for (spec, sym) in [("kron:14", true), ("urand:14", true), ("kron:12", false)] {
            let g = generated(spec, sym, false);
            let mut found = Vec::new();
            for algo in [Algo::Afforest, Algo::ShiloachVishkin] {
                let (k, o) = cc(&g, algo);
                verify(&g, k.labels()).unwrap_or_else(|e| panic!("{spec} {algo:?}: {e}"));
                found.push(o);
            }
            assert_eq!(found[0], found[1], "{spec}");
        }
    }

    #[test]
    fn verifier_catches_split_and_merged_components() {
        let g = from_edges(4, &[(0, 1, 1), (2, 3, 1)], true);
        assert!(verify(&g, &[0, 0, 2, 2]).is_ok());
        assert!(verify(&g, &[0, 1, 2, 2])
            .expect_err("split")
            .contains("vertex 1"));
        assert!(verify(&g, &[0, 0, 0, 0])
            .expect_err("merged")
            .contains("two components"));
    }
}
