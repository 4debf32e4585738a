//! The check that a graph a file calls undirected is: every arc u → v has its v → u. A reader
//! runs it on every arc, not a sample: an asymmetric "undirected" graph makes BFS and PageRank
//! give wrong answers that only `--verify` would catch.
//!
//! Every list is sorted and free of repeats and self-loops by the time the check runs, so the
//! lists are symmetric exactly when the set of arcs u → v with u < v, each named by its pair
//! (u, v), equals the set of arcs u → v with u > v, each named by (v, u). One pass over the
//! arcs in file order, by all threads, adds a keyed 64-bit hash of each pair to a sum, or
//! subtracts it when u > v: the sets are equal exactly when the two sides cancel, but for a
//! chance of 2^-64 (the key is new in every process, so no file can be made to cancel). The
//! pass reads the edge array once, sequentially, like the structure check beside it; a binary
//! search per arc in the other end's list, the exact alternative, reads a random list per
//! arc and costs a cache miss or more each. Only when the sums differ does the slower search
//! run, to name the first lone arc.

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

/// [`check`] for a file `path` that `says` (where, and the verb: `byte 0 says`) is undirected:
/// a lone arc is a format error naming both.
pub(crate) fn require(a: &Adjacency, path: &Path, says: &str) -> crate::Result<()> {
    check(a).map_err(|lone| crate::Error::Format {
        path: path.to_path_buf(),
        message: format!("{says} the graph is undirected, but {lone}"),
    })
}

/// `Ok` when every arc of `a` has its reverse; else the lone arc of the lowest source.
pub(crate) fn check(a: &Adjacency) -> Result<(), LoneArc> {
    let o: &[u64] = &a.offsets;
    let e: &[u32] = &a.edges;
    let key = std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64);
    let sum = super::check_pieces(o, e.len())
        .into_par_iter()
        .map(|r| {
            let mut sum = 0u64;
            for v in r {
                let v32 = v as u32;
                for &x in &e[o[v] as usize..o[v + 1] as usize] {
                    let (lo, hi) = (v32.min(x), v32.max(x));
                    let h = mix(((lo as u64) << 32 | hi as u64) ^ key);
                    sum = sum.wrapping_add(if v32 < x { h } else { h.wrapping_neg() });
                }
            }
            sum
        })
        .reduce(|| 0, u64::wrapping_add);
    if sum == 0 {
        return Ok(());
    }
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

/// SplitMix64's finalizer: every bit of the pair moves every bit of the hash.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::generated;

    #[test]
    fn symmetric_graphs_pass_and_a_lone_arc_is_named() {
        let g = generated("kron:10", true, false);
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
