//! Vertex reorderings that put the hot vertices (those with many in-arcs, which a kernel's
//! scattered accesses hit most) together at the front of every vertex-indexed array, so that a
//! short huge-page prefix covers them.
//!
//! - `dbg`: degree-based grouping (Faldu et al.): 8 bins with lower bounds 32d, 16d, 8d, 4d,
//!   2d, d, d/2 and 0 (d the mean degree), hottest bin first, original order inside a bin;
//! - `degree-sort`: all vertices by degree, highest first (stable);
//! - `hub-sort`: vertices above the mean degree sorted by degree first, the others after them
//!   in their original order;
//! - `hub-cluster`: vertices above the mean degree first, both groups in original order;
//! - `random`: a seeded shuffle, the baseline that destroys locality.
//!
//! A [`Relabeling`] maps ids both ways, so sources are picked in original ids and results can
//! be mapped back; [`relabel`] builds the reordered CSR in new regions.

use std::time::Instant;

pub use hugewise_results::graph::ReorderStats;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::csr::{Adjacency, Csr};
use crate::layout::Layout;
use crate::rng::SplitMix64;
use crate::{Error, Result};

/// The orderings' output version: raise it whenever an ordering, the relabelling or the
/// weights hashed onto unweighted files ([`Csr::add_weights`]) make a different graph from
/// the same input, so that reordered graphs kept by [`crate::cache`] under the old one are not
/// taken for it.
pub const OUTPUT_VERSION: u32 = 1;

/// A reordering method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Degree-based grouping, 8 bins.
    Dbg,
    /// Full sort by degree.
    DegreeSort,
    /// Hubs sorted first, the rest in order.
    HubSort,
    /// Hubs first, both groups in order.
    HubCluster,
    /// Seeded shuffle.
    Random,
}

impl std::str::FromStr for Method {
    type Err = Error;

    fn from_str(s: &str) -> Result<Method> {
        Ok(match s {
            "dbg" => Method::Dbg,
            "degree-sort" => Method::DegreeSort,
            "hub-sort" => Method::HubSort,
            "hub-cluster" => Method::HubCluster,
            "random" => Method::Random,
            _ => {
                return Err(Error::Invalid(format!(
                    "unknown reordering '{s}': use dbg, degree-sort, hub-sort, hub-cluster or \
                     random"
                )))
            }
        })
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Method::Dbg => "dbg",
            Method::DegreeSort => "degree-sort",
            Method::HubSort => "hub-sort",
            Method::HubCluster => "hub-cluster",
            Method::Random => "random",
        })
    }
}

/// A permutation of vertex ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relabeling {
    new_of_old: Vec<u32>,
    old_of_new: Vec<u32>,
}

impl Relabeling {
    /// From the new order: `old_of_new[i]` is the original id of the vertex that becomes `i`.
    pub fn from_order(old_of_new: Vec<u32>) -> Result<Relabeling> {
        let n = old_of_new.len();
        let mut new_of_old = vec![u32::MAX; n];
        for (new, &old) in old_of_new.iter().enumerate() {
            match new_of_old.get_mut(old as usize) {
                Some(slot) if *slot == u32::MAX => *slot = new as u32,
                _ => {
                    return Err(Error::Invalid(format!(
                        "not a permutation: vertex {old} is out of range or placed twice"
                    )))
                }
            }
        }
        Ok(Relabeling {
            new_of_old,
            old_of_new,
        })
    }

    /// The new order: entry `i` is the original id of the vertex that becomes `i`.
    pub fn old_of_new(&self) -> &[u32] {
        &self.old_of_new
    }

    /// New id of an original vertex.
    pub fn new_id(&self, old: u32) -> u32 {
        self.new_of_old[old as usize]
    }

    /// Original id of a new vertex.
    pub fn old_id(&self, new: u32) -> u32 {
        self.old_of_new[new as usize]
    }

    /// Values indexed by new id, rearranged to be indexed by original id. Values that are
    /// themselves vertex ids (a BFS parent) need [`Relabeling::old_id`] as well.
    pub fn to_original<T: Copy + Send + Sync>(&self, by_new: &[T]) -> Vec<T> {
        self.new_of_old
            .par_iter()
            .map(|&new| by_new[new as usize])
            .collect()
    }
}

/// The degree that makes a vertex hot: its in-degree, since kernels touch a vertex's entry
/// once per arc that reaches it.
fn hotness(g: &Csr) -> Vec<u32> {
    (0..g.n() as u32)
        .into_par_iter()
        .map(|v| g.in_degree(v) as u32)
        .collect()
}

/// Vertices grouped by bin (`bins[v]` below `count`), highest bin first, original order inside
/// a bin: a stable counting sort.
fn by_bin(bins: &[u8], count: usize) -> Vec<u32> {
    let rank = |b: u8| count - 1 - b as usize;
    let mut at = vec![0usize; count];
    for &b in bins {
        at[rank(b)] += 1;
    }
    let mut sum = 0;
    for slot in &mut at {
        sum += std::mem::replace(slot, sum);
    }
    let mut order = vec![0u32; bins.len()];
    for (v, &b) in bins.iter().enumerate() {
        let slot = &mut at[rank(b)];
        order[*slot] = v as u32;
        *slot += 1;
    }
    order
}

/// Compute the new order of `g`'s vertices.
pub fn order(g: &Csr, method: Method, seed: u64) -> Result<Relabeling> {
    let n = g.n();
    let deg = hotness(g);
    let mean = g.arcs() as f64 / n.max(1) as f64;
    let ids = || (0..n as u32).collect::<Vec<u32>>();
    let order = match method {
        Method::Dbg => {
            let bounds = [32.0, 16.0, 8.0, 4.0, 2.0, 1.0, 0.5].map(|k| k * mean);
            let bins: Vec<u8> = deg
                .par_iter()
                .map(|&d| bounds.iter().filter(|&&b| d as f64 >= b).count() as u8)
                .collect();
            // A bin's index counts the bounds a degree reaches: the hottest bin is 7.
            by_bin(&bins, bounds.len() + 1)
        }
        Method::DegreeSort => {
            let mut o = ids();
            o.par_sort_by_key(|&v| std::cmp::Reverse(deg[v as usize]));
            o
        }
        Method::HubSort | Method::HubCluster => {
            let hub = |v: u32| deg[v as usize] as f64 > mean;
            let mut hubs: Vec<u32> = ids().into_iter().filter(|&v| hub(v)).collect();
            if method == Method::HubSort {
                hubs.par_sort_by_key(|&v| std::cmp::Reverse(deg[v as usize]));
            }
            hubs.extend((0..n as u32).filter(|&v| !hub(v)));
            hubs
        }
        Method::Random => {
            let mut o = ids();
            let mut rng = SplitMix64::new(seed, 0x5a4d);
            for i in (1..n).rev() {
                o.swap(i, rng.below(i as u64 + 1) as usize);
            }
            o
        }
    };
    Relabeling::from_order(order)
}

/// Reorder `g` with `method`: the new graph (in regions laid out by `layout`), the mapping and
/// the timings. The old graph is left to the caller to drop.
pub fn reorder(
    g: &Csr,
    method: Method,
    seed: u64,
    layout: &Layout,
) -> Result<(Csr, Relabeling, ReorderStats)> {
    let t = Instant::now();
    let r = order(g, method, seed)?;
    let order_ns = t.elapsed().as_nanos() as u64;
    let t = Instant::now();
    let h = relabel(g, &r, layout)?;
    Ok((
        h,
        r,
        ReorderStats {
            method: method.to_string(),
            order_ns,
            relabel_ns: t.elapsed().as_nanos() as u64,
            cache: None,
        },
    ))
}

/// Build `g` with every id `v` renamed `r.new_id(v)`; lists stay sorted.
pub fn relabel(g: &Csr, r: &Relabeling, layout: &Layout) -> Result<Csr> {
    let out = side(
        g.out_adjacency(),
        r,
        layout,
        ["offsets", "edges", "weights"],
    )?;
    let inc = match g.in_adjacency() {
        Some(a) => Some(side(
            a,
            r,
            layout,
            ["in-offsets", "in-edges", "in-weights"],
        )?),
        None => None,
    };
    Ok(Csr::new(g.directed(), out, inc))
}

fn side(a: &Adjacency, r: &Relabeling, layout: &Layout, names: [&str; 3]) -> Result<Adjacency> {
    let n = a.offsets.len() - 1;
    let old = a.side();
    let mut offsets = layout.region::<u64>(names[0], names[0], n + 1)?;
    let mut acc = 0u64;
    for new in 0..n {
        offsets[new] = acc;
        acc += old.degree(r.old_of_new[new]) as u64;
    }
    offsets[n] = acc;
    // Every slot is written below, by the pool's threads: each faults in the pages it fills, where
    // a populate on creation would fault them all on this thread first (at kron:24, 2 GiB of
    // fresh pages, which this machine's host backs lazily).
    let mut edges = layout.filled_region::<u32>(names[1], names[1], acc as usize)?;
    let mut weights = match &a.weights {
        Some(_) => Some(layout.filled_region::<u32>("weights", names[2], acc as usize)?),
        None => None,
    };
    let off: &[u64] = &offsets;
    let runs = Runs::of(r);
    let perm: &[u32] = &r.new_of_old;
    let edge_blocks = blocks(&mut edges, off);
    let weight_blocks = match &mut weights {
        Some(w) => blocks(w, off).into_iter().map(|(_, w)| Some(w)).collect(),
        None => (0..edge_blocks.len()).map(|_| None).collect::<Vec<_>>(),
    };
    let old_id = |new: usize| r.old_of_new.get(new).copied();
    edge_blocks
        .into_par_iter()
        .zip(weight_blocks)
        // Blocks differ in arcs (hubs first, isolated vertices last): one a task, or a thread
        // can be left with a long run of heavy blocks that rayon cannot split any more.
        .with_max_len(1)
        .for_each_init(Scratch::default, |scratch, ((vertices, e), w)| {
            let base = off[vertices.start] as usize;
            let mut w = w;
            for new in vertices {
                // Each list is read at random (new order is not old order): ask for the
                // offsets, the list and its first neighbours' new ids a few lists ahead.
                old.prefetch_ahead(new, LISTS_AHEAD, old_id);
                if let Some(v) = old_id(new + LISTS_AHEAD / 2) {
                    for &x in old.neighbors(v).iter().take(PREFETCH_AHEAD) {
                        hugewise_sys::hint::prefetch(&perm[x as usize]);
                    }
                }
                let at = off[new] as usize - base..off[new + 1] as usize - base;
                let v = r.old_of_new[new];
                let list = List {
                    edges: old.neighbors(v),
                    weights: a.weights.is_some().then(|| old.weights(v)),
                };
                let out = (&mut e[at.clone()], w.as_mut().map(|w| &mut w[at]));
                list.relabel_into(perm, runs.as_ref(), out, scratch);
            }
        });
    Ok(Adjacency {
        offsets,
        edges,
        weights,
    })
}

/// Most vertices a parallel task relabels in one go.
const BLOCK: usize = 4096;

/// Most arcs a parallel task relabels in one go, unless one list has more.
const BLOCK_ARCS: u64 = 1 << 18;

/// How many lists ahead the relabelling asks for a list's offsets (twice this) and its head.
const LISTS_AHEAD: usize = 8;

/// How many neighbours ahead the relabelling asks for a permutation entry.
const PREFETCH_AHEAD: usize = 16;

/// The most runs for which placing by run beats sorting each list.
const MAX_RUNS: usize = 16;

/// The ranges of new ids over which a relabeling keeps the original order (DBG's bins,
/// hub-cluster's two groups). A sorted list of original ids becomes, once renamed, one
/// ascending sequence per run, and the runs follow each other in new-id order; so the renamed
/// list is sorted by placing each id after the earlier ids of its run, with no comparison sort.
struct Runs {
    /// New id at which each run after the first starts, ascending, then `u32::MAX`: a fixed
    /// length, so that finding a run is a few vector compares.
    starts: [u32; MAX_RUNS - 1],
}

impl Runs {
    /// The runs of `r`, or `None` when there are too many for placing by run to pay (a random
    /// or degree-sorted order).
    fn of(r: &Relabeling) -> Option<Runs> {
        let mut starts = [u32::MAX; MAX_RUNS - 1];
        let mut next = 0;
        for (i, w) in r.old_of_new.windows(2).enumerate() {
            if w[1] < w[0] {
                *starts.get_mut(next)? = i as u32 + 1;
                next += 1;
            }
        }
        Some(Runs { starts })
    }

    /// Which run a new id is in.
    #[inline]
    fn of_id(&self, new: u32) -> usize {
        self.starts.iter().map(|&s| usize::from(s <= new)).sum()
    }
}

/// One vertex's neighbours (and weights) in original ids, sorted.
struct List<'a> {
    edges: &'a [u32],
    weights: Option<&'a [u32]>,
}

/// Per-task buffers, kept across lists.
#[derive(Default)]
struct Scratch {
    ids: Vec<u32>,
    runs: Vec<u8>,
    weights: Vec<u32>,
    pairs: Vec<(u32, u32)>,
}

impl List<'_> {
    /// Write the list renamed by `new_of_old` and sorted into `out`.
    fn relabel_into(
        &self,
        new_of_old: &[u32],
        runs: Option<&Runs>,
        out: (&mut [u32], Option<&mut [u32]>),
        scratch: &mut Scratch,
    ) {
        let (e, w) = out;
        for (k, (slot, &v)) in e.iter_mut().zip(self.edges).enumerate() {
            // The permutation is read at random: ask for the line of a later neighbour's new
            // id while this one's arrives (the first few were asked for lists earlier).
            if let Some(&ahead) = self.edges.get(k + PREFETCH_AHEAD) {
                hugewise_sys::hint::prefetch(&new_of_old[ahead as usize]);
            }
            *slot = new_of_old[v as usize];
        }
        match (runs, w, self.weights) {
            (Some(runs), w, weights) => {
                let mut w = w.map(|w| (w, weights.unwrap_or_default()));
                if let Some((w, old)) = &mut w {
                    w.copy_from_slice(old);
                }
                place_by_run(runs, e, w.map(|(w, _)| w), scratch);
            }
            (None, Some(w), Some(old)) => {
                scratch.pairs.clear();
                scratch
                    .pairs
                    .extend(e.iter().copied().zip(old.iter().copied()));
                scratch.pairs.sort_unstable();
                for (k, &(v, x)) in scratch.pairs.iter().enumerate() {
                    e[k] = v;
                    w[k] = x;
                }
            }
            (None, _, _) => e.sort_unstable(),
        }
    }
}

/// Sort `e` (and `w` alongside) whose ids ascend within each run: a stable counting sort on
/// the run, which for ids ascending within runs is the sorted order.
fn place_by_run(runs: &Runs, e: &mut [u32], w: Option<&mut [u32]>, scratch: &mut Scratch) {
    if e.len() < 2 {
        return;
    }
    let mut at = [0usize; MAX_RUNS];
    let mut in_order = true;
    let mut last = 0u32;
    scratch.runs.clear();
    for &v in e.iter() {
        in_order &= v >= last;
        last = v;
        let run = runs.of_id(v);
        at[run] += 1;
        scratch.runs.push(run as u8);
    }
    if in_order {
        return;
    }
    let mut sum = 0;
    for slot in &mut at {
        sum += std::mem::replace(slot, sum);
    }
    scratch.ids.clear();
    scratch.ids.extend_from_slice(e);
    let moves = scratch.ids.iter().zip(&scratch.runs);
    match w {
        Some(w) => {
            scratch.weights.clear();
            scratch.weights.extend_from_slice(w);
            for ((&v, &run), &x) in moves.zip(&scratch.weights) {
                let slot = &mut at[run as usize];
                e[*slot] = v;
                w[*slot] = x;
                *slot += 1;
            }
        }
        None => {
            for (&v, &run) in moves {
                let slot = &mut at[run as usize];
                e[*slot] = v;
                *slot += 1;
            }
        }
    }
    debug_assert!(
        e.windows(2).all(|p| p[0] < p[1]),
        "ids ascend within each run"
    );
}

/// Disjoint slices of an array laid out by `offsets`, one per block of vertices: at most
/// [`BLOCK`] vertices and, unless one list is longer, [`BLOCK_ARCS`] arcs, so that the hubs a
/// reordering puts first do not all fall to one task. Each comes with its vertex range.
fn blocks<'a>(all: &'a mut [u32], offsets: &[u64]) -> Vec<(std::ops::Range<usize>, &'a mut [u32])> {
    let n = offsets.len().saturating_sub(1);
    let mut rest = all;
    let mut out = Vec::new();
    let mut first = 0;
    while first < n {
        let by_arcs = offsets.partition_point(|&o| o <= offsets[first] + BLOCK_ARCS) - 1;
        let end = by_arcs.clamp(first + 1, (first + BLOCK).min(n));
        let len = offsets[end] - offsets[first];
        let (mine, tail) = std::mem::take(&mut rest).split_at_mut(len as usize);
        out.push((first..end, mine));
        rest = tail;
        first = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::bfs::{self, Arrays, BfsMode};
    use crate::kernels::testing::{from_edges, generated};

    /// A star with centre 5 and a path 0 - 1 - 2: in-degrees 1 1 2 1 1 5 1 1 ... (mean < 2).
    fn star() -> Csr {
        let mut e: Vec<(u32, u32, u32)> = (6..10).map(|v| (5, v, 7)).collect();
        e.extend([(5, 3, 7), (0, 1, 1), (1, 2, 2)]);
        from_edges(10, &e, true)
    }

    fn new_order(g: &Csr, m: Method) -> Vec<u32> {
        let r = order(g, m, 1).expect("order");
        (0..g.n() as u32).map(|i| r.old_id(i)).collect()
    }

    #[test]
    fn orders_by_hand() {
        let g = star();
        // Degrees: 0:1 1:2 2:1 3:1 4:0 5:5 6..9:1; mean 14/10 = 1.4.
        // DBG bounds 44.8 22.4 11.2 5.6 2.8 1.4 0.7: 5 reaches 3 of them (bin 3), 1 reaches 2
        // (bin 2), the 1s reach 1 (bin 1), 4 none; the hottest bin comes first.
        assert_eq!(new_order(&g, Method::Dbg), [5, 1, 0, 2, 3, 6, 7, 8, 9, 4]);
        assert_eq!(
            new_order(&g, Method::DegreeSort),
            [5, 1, 0, 2, 3, 6, 7, 8, 9, 4]
        );
        assert_eq!(
            new_order(&g, Method::HubSort),
            [5, 1, 0, 2, 3, 4, 6, 7, 8, 9]
        );
        assert_eq!(
            new_order(&g, Method::HubCluster),
            [1, 5, 0, 2, 3, 4, 6, 7, 8, 9]
        );
        let mut shuffled = new_order(&g, Method::Random);
        assert_ne!(shuffled, (0..10).collect::<Vec<_>>());
        shuffled.sort_unstable();
        assert_eq!(shuffled, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn dbg_puts_the_hottest_bin_first_on_kron() {
        let g = generated("kron:12", true, false);
        let (h, r, _) = reorder(&g, Method::Dbg, 1, &Layout::default()).expect("reorder");
        let mean = g.arcs() as f64 / g.n() as f64;
        // Every vertex of degree ≥ 32 d precedes every vertex below d / 2.
        let last_hot = (0..h.n() as u32).rfind(|&v| h.in_degree(v) as f64 >= 32.0 * mean);
        let first_cold = (0..h.n() as u32).find(|&v| (h.in_degree(v) as f64) < 0.5 * mean);
        assert!(last_hot.expect("hot") < first_cold.expect("cold"));
        for v in 0..g.n() as u32 {
            assert_eq!(g.out_degree(v), h.out_degree(r.new_id(v)));
        }
    }

    #[test]
    fn relabelled_graph_is_the_same_graph() {
        for (spec, sym) in [("kron:10", true), ("kron:9", false)] {
            let g = generated(spec, sym, true);
            for m in [
                Method::Dbg,
                Method::Random,
                Method::HubCluster,
                Method::DegreeSort,
            ] {
                let (h, r, _) = reorder(&g, m, 3, &Layout::default()).expect("reorder");
                assert_eq!(
                    (h.n(), h.arcs(), h.directed()),
                    (g.n(), g.arcs(), g.directed())
                );
                for u in 0..g.n() as u32 {
                    let mut want: Vec<(u32, u32)> = g
                        .out_neighbors(u)
                        .iter()
                        .zip(g.out_weights(u))
                        .map(|(&v, &w)| (r.new_id(v), w))
                        .collect();
                    want.sort_unstable();
                    let nu = r.new_id(u);
                    let got: Vec<(u32, u32)> = h
                        .out_neighbors(nu)
                        .iter()
                        .copied()
                        .zip(h.out_weights(nu).iter().copied())
                        .collect();
                    assert_eq!(got, want, "{spec} {m} vertex {u}");
                    let mut want_in: Vec<u32> =
                        g.in_neighbors(u).iter().map(|&v| r.new_id(v)).collect();
                    want_in.sort_unstable();
                    assert_eq!(h.in_neighbors(nu), &want_in[..]);
                }
            }
        }
    }

    #[test]
    fn orders_that_keep_runs_are_placed_without_sorting() {
        let g = generated("kron:12", true, false);
        let runs = |m| {
            let r = Runs::of(&order(&g, m, 1).expect("order"))?;
            Some(1 + r.starts.iter().filter(|&&s| s != u32::MAX).count())
        };
        assert!(runs(Method::Dbg).is_some_and(|k| (2..=8).contains(&k)));
        assert_eq!(runs(Method::HubCluster), Some(2));
        assert_eq!(runs(Method::Random), None);
        let mut starts = [u32::MAX; MAX_RUNS - 1];
        starts[..2].copy_from_slice(&[3, 5]);
        let r = Runs { starts };
        assert_eq!([0, 2, 3, 4, 5, 9].map(|v| r.of_id(v)), [0, 0, 1, 1, 2, 2]);
        // Renamed ids ascend within each run: 4 (run 1), 0 2 (run 0), 6 7 (run 2).
        let (mut e, mut w) = (vec![4, 0, 2, 6, 7], vec![40, 0, 20, 60, 70]);
        place_by_run(&r, &mut e, Some(&mut w), &mut Scratch::default());
        assert_eq!((e, w), (vec![0, 2, 4, 6, 7], vec![0, 20, 40, 60, 70]));
    }

    #[test]
    fn blocks_split_hubs_from_the_rest_and_cover_every_list_once() {
        // A hub with more than a block's arcs, then lists of 3 arcs and empty ones.
        let mut degrees = vec![BLOCK_ARCS as usize + 5];
        degrees.extend((0..3 * BLOCK).map(|v| if v % 2 == 0 { 3 } else { 0 }));
        let mut offsets = vec![0u64];
        for d in &degrees {
            offsets.push(offsets.last().copied().unwrap_or(0) + *d as u64);
        }
        let mut all = vec![0u32; *offsets.last().expect("offsets") as usize];
        let bs = blocks(&mut all, &offsets);
        assert_eq!(bs[0].0, 0..1, "the hub is a block of its own");
        let mut next = 0;
        for (vertices, slice) in &bs {
            assert_eq!(vertices.start, next);
            assert!(vertices.len() <= BLOCK);
            let arcs = offsets[vertices.end] - offsets[vertices.start];
            assert_eq!(slice.len() as u64, arcs);
            assert!(arcs <= BLOCK_ARCS || vertices.len() == 1);
            next = vertices.end;
        }
        assert_eq!(next, degrees.len());
    }

    #[test]
    fn bfs_results_map_back_to_original_ids() {
        let g = generated("kron:11", true, false);
        let (h, r, _) = reorder(&g, Method::Dbg, 1, &Layout::default()).expect("reorder");
        let src = 7u32;
        let mut a = Arrays::new(&Layout::default(), g.n()).expect("arrays");
        bfs::run(&h, r.new_id(src), BfsMode::DirectionOptimizing, &mut a);
        let parent: Vec<u32> = r
            .to_original(a.parent())
            .into_iter()
            .map(|p| if p == bfs::NONE { p } else { r.old_id(p) })
            .collect();
        bfs::verify(&g, src, &parent).expect("the mapped-back tree is a BFS tree of g");
    }

    #[test]
    fn bad_input() {
        assert!("bogus".parse::<Method>().is_err());
        assert_eq!("hub-sort".parse::<Method>().expect("m"), Method::HubSort);
        assert!(Relabeling::from_order(vec![0, 0]).is_err());
        assert!(Relabeling::from_order(vec![0, 5]).is_err());
    }
}
