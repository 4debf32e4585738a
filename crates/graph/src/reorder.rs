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
use serde::Serialize;

use crate::csr::{Adjacency, Csr};
use crate::layout::Layout;
use crate::rng::SplitMix64;
use crate::{Error, Result};

/// A reordering method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

/// Compute the new order of `g`'s vertices.
pub fn order(g: &Csr, method: Method, seed: u64) -> Result<Relabeling> {
    let n = g.n();
    let deg = hotness(g);
    let mean = g.arcs() as f64 / n.max(1) as f64;
    let ids = || (0..n as u32).collect::<Vec<u32>>();
    let order = match method {
        Method::Dbg => {
            let bounds = [32.0, 16.0, 8.0, 4.0, 2.0, 1.0, 0.5].map(|k| k * mean);
            let bin = |v: u32| {
                let d = deg[v as usize] as f64;
                bounds.iter().position(|&b| d >= b).unwrap_or(bounds.len())
            };
            let mut o = ids();
            o.par_sort_by_key(|&v| bin(v));
            o
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
    let old_range =
        |old: u32| a.offsets[old as usize] as usize..a.offsets[old as usize + 1] as usize;
    let groups = [names[0], names[1], "weights"];
    let mut offsets = layout.region::<u64>(groups[0], names[0], n + 1)?;
    let mut acc = 0u64;
    for new in 0..n {
        offsets[new] = acc;
        acc += old_range(r.old_id(new as u32)).len() as u64;
    }
    offsets[n] = acc;
    let mut edges = layout.region::<u32>(groups[1], names[1], acc as usize)?;
    let mut weights = match &a.weights {
        Some(_) => Some(layout.region::<u32>(groups[2], names[2], acc as usize)?),
        None => None,
    };
    let off: &[u64] = &offsets;
    let mut edge_lists = split(&mut edges, off);
    match (&mut weights, &a.weights) {
        (Some(w), Some(old_w)) => {
            let weight_lists = split(w, off);
            edge_lists
                .par_iter_mut()
                .zip(weight_lists)
                .enumerate()
                .with_min_len(1024)
                .for_each(|(new, (e, w))| {
                    let range = old_range(r.old_id(new as u32));
                    let mut pairs: Vec<(u32, u32)> = a.edges[range.clone()]
                        .iter()
                        .zip(&old_w[range])
                        .map(|(&v, &x)| (r.new_id(v), x))
                        .collect();
                    pairs.sort_unstable();
                    for (k, (v, x)) in pairs.into_iter().enumerate() {
                        e[k] = v;
                        w[k] = x;
                    }
                });
        }
        _ => edge_lists
            .par_iter_mut()
            .enumerate()
            .with_min_len(1024)
            .for_each(|(new, e)| {
                let src = &a.edges[old_range(r.old_id(new as u32))];
                for (k, (slot, &v)) in e.iter_mut().zip(src).enumerate() {
                    // The permutation is read at random: ask for the line of a later
                    // neighbour's new id while this one's arrives.
                    if let Some(&ahead) = src.get(k + PREFETCH_AHEAD) {
                        hugewise_sys::hint::prefetch(&r.new_of_old[ahead as usize]);
                    }
                    *slot = r.new_id(v);
                }
                e.sort_unstable();
            }),
    }
    drop(edge_lists);
    Ok(Adjacency {
        offsets,
        edges,
        weights,
    })
}

/// How many neighbours ahead the relabelling asks for a permutation entry.
const PREFETCH_AHEAD: usize = 16;

/// Disjoint per-vertex slices of an array laid out by `offsets`.
fn split<'a>(all: &'a mut [u32], offsets: &[u64]) -> Vec<&'a mut [u32]> {
    let mut rest = all;
    let mut lists = Vec::with_capacity(offsets.len().saturating_sub(1));
    for w in offsets.windows(2) {
        let (mine, tail) = std::mem::take(&mut rest).split_at_mut((w[1] - w[0]) as usize);
        lists.push(mine);
        rest = tail;
    }
    lists
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::bfs::{self, Arrays, Mode};
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
        // DBG bounds 44.8 22.4 11.2 5.6 2.8 1.4 0.7 0: 5 → bin 4, 1 → bin 5, the 1s → bin 6.
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
            for m in [Method::Dbg, Method::Random] {
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
    fn bfs_results_map_back_to_original_ids() {
        let g = generated("kron:11", true, false);
        let (h, r, _) = reorder(&g, Method::Dbg, 1, &Layout::default()).expect("reorder");
        let src = 7u32;
        let mut a = Arrays::new(&Layout::default(), g.n()).expect("arrays");
        bfs::run(&h, r.new_id(src), Mode::DirectionOptimizing, &mut a);
        let parent: Vec<u32> = r
            .to_original(&a.parent)
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
