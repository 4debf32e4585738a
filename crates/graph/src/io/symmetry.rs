//! The check that a graph a file calls undirected is: every arc u → v has its v → u. A reader
//! runs it on every arc, not a sample: an asymmetric "undirected" graph makes BFS and PageRank
//! give wrong answers that only `--verify` would catch.
//!
//! Every list is sorted and free of repeats and self-loops by the time the check runs (the
//! readers check or make it so first), so the lists are symmetric exactly when the set of arcs
//! u → v with u < v, each named by its pair (u, v), equals the set of arcs u → v with u > v,
//! each named by (v, u). One pass over the arcs in file order, by all threads, adds a keyed
//! 64-bit hash of each pair to a sum, or subtracts it when u > v: the sets are equal when the
//! two sides cancel, and unequal sets cancel by chance only (the key is new in every process,
//! so no file can be made to). The pass reads the edge array once, sequentially, like the
//! structure check beside it; a binary search per arc in the other end's list, the exact
//! alternative, reads a random list per arc and costs a cache miss or more each. Only when the
//! sums differ does that search run, to name the first lone arc.

use std::hash::BuildHasher;
use std::path::Path;

use rayon::prelude::*;

use crate::csr::Adjacency;

/// An arc whose reverse is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoneArc {
    /// Its source.
    pub from: u32,
    /// Its target, whose list does not hold `from`.
    pub to: u32,
}

impl std::fmt::Display for LoneArc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (u, v) = (self.from, self.to);
        write!(
            f,
            "vertex {u} lists {v} but {v} does not list {u}: the lists are not symmetric (every \
             arc was checked)"
        )
    }
}

/// The keyed hashes of one check: each list's share by [`Fingerprint::list`], added up in
/// any order (by a reader, in the pass that checks the lists anyway), is zero when the lists
/// are symmetric.
#[derive(Debug)]
pub(crate) struct Fingerprint {
    key: u64,
}

impl Fingerprint {
    /// A fingerprint with a fresh key.
    pub(crate) fn new() -> Fingerprint {
        Fingerprint {
            key: std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64),
        }
    }

    /// Vertex `v`'s share, `list` being its sorted list.
    #[inline]
    pub(crate) fn list(&self, v: usize, list: &[u32]) -> u64 {
        // The arcs to lower ids come first: split there, each half is one tight loop of the
        // pair (lower, higher) with no comparison per arc.
        let (below, above) = list.split_at(list.partition_point(|&x| (x as usize) < v));
        let high = (v as u64) << 32 ^ self.key;
        let up = above
            .iter()
            .fold(0u64, |s, &x| s.wrapping_add(mix(high ^ x as u64)));
        let low = v as u64 ^ self.key;
        let down = below
            .iter()
            .fold(0u64, |s, &x| s.wrapping_add(mix((x as u64) << 32 ^ low)));
        up.wrapping_sub(down)
    }
}

/// The fingerprint of every list of `a`, by all threads.
pub(crate) fn fingerprint(a: &Adjacency) -> u64 {
    let (o, e): (&[u64], &[u32]) = (&a.offsets, &a.edges);
    let f = Fingerprint::new();
    super::check_pieces(o, e.len())
        .into_par_iter()
        .map(|r| {
            r.map(|v| f.list(v, &e[o[v] as usize..o[v + 1] as usize]))
                .fold(0, u64::wrapping_add)
        })
        .reduce(|| 0, u64::wrapping_add)
}

/// `Ok` when `sum`, the fingerprint of `a`'s lists, says they are symmetric; else the lone arc
/// of the lowest source, found by a binary search per arc.
pub(crate) fn settle(a: &Adjacency, sum: u64) -> Result<(), LoneArc> {
    if sum == 0 {
        return Ok(());
    }
    let (o, e): (&[u64], &[u32]) = (&a.offsets, &a.edges);
    let list = |v: usize| &e[o[v] as usize..o[v + 1] as usize];
    let lone_in = |v: usize| {
        list(v)
            .iter()
            .copied()
            .find(|&x| list(x as usize).binary_search(&(v as u32)).is_err())
    };
    let first = super::first_bad(o.len() - 1, |v| lone_in(v).is_some());
    match first.and_then(|v| lone_in(v).map(|to| LoneArc { from: v as u32, to })) {
        Some(lone) => Err(lone),
        // Not reached: the sums differ only when a lone arc exists.
        None => Ok(()),
    }
}

/// [`settle`] for a file `path` that `says` (where, and the verb: `byte 0 says`) is
/// undirected: a lone arc is a format error naming both.
pub(crate) fn require(a: &Adjacency, sum: u64, path: &Path, says: &str) -> crate::Result<()> {
    settle(a, sum).map_err(|lone| crate::Error::Format {
        path: path.to_path_buf(),
        message: format!("{says} the graph is undirected, but {lone}"),
    })
}

/// A pair's hash: one multiply by an odd constant (a bijection that moves low bits up), then
/// the high half folded down (so that a sum of hashes is not a multiple of a sum of pairs).
/// Half of SplitMix64's finalizer: the whole one doubles the work per arc, for nothing a
/// fingerprint with a fresh key needs.
#[inline]
fn mix(z: u64) -> u64 {
    let y = z.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    y ^ (y >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::generated;

    #[test]
    fn symmetric_graphs_pass_and_a_lone_arc_is_named() {
        let g = generated("kron:10", true, false);
        let check = |a: &Adjacency| settle(a, fingerprint(a));
        assert_eq!(check(g.out_adjacency()), Ok(()));
        let d = generated("kron:10", false, false);
        let lone = check(d.out_adjacency()).expect_err("a directed graph's lists are not");
        assert!(
            d.out_neighbors(lone.from).contains(&lone.to)
                && !d.out_neighbors(lone.to).contains(&lone.from),
            "{lone:?}"
        );
        // The lowest source with a lone arc.
        let first = (0..d.n() as u32).find(|&v| {
            d.out_neighbors(v)
                .iter()
                .any(|&x| !d.out_neighbors(x).contains(&v))
        });
        assert_eq!(Some(lone.from), first);
    }
}
