//! A weighted side's arcs as `[neighbour, weight]` pairs in one array, the layout the GAP
//! suite keeps a weighted graph in.
//!
//! A graph keeps its neighbour ids and weights in two regions (so that each has its own page
//! policy and every other kernel reads ids alone). Relaxing a vertex's arcs then streams two
//! lists from two places: on cnr-2000 (17 arcs a vertex) that is four cache lines where one
//! list of pairs is three, and two streams for the prefetcher and the TLB where one list is
//! one. With the pairs SSSP went from 0.90–0.92x of GAP's speed to 0.98–1.01x there, five runs
//! alternated with the two lists (AMD EPYC; BENCHMARKS.md). The copy is made by the first run,
//! which callers do untimed as a warm-up, in the page policy of the graph's own `edges` region
//! (so that `--pages edges=thp` covers it), and kept for every run on the same graph. It costs
//! 8 bytes an arc, so it is made only when that is at most the machine's memory divided by
//! [`TOTAL_SHARE`] (a rule that does not depend on what else runs, so that every arm of a
//! comparison on one graph decides alike) and the room left divided by [`ROOM_SHARE`] (so that a
//! memory limit is never pushed). The two lists are read as they are otherwise, and when the
//! copy cannot be made (a hugetlb pool sized for the graph, a lock limit): a faster layout is
//! not worth failing a run for.

use hugewise_mem::{Region, RegionOptions};
use hugewise_sys::proc::ProcFs;
use rayon::prelude::*;

use crate::fits::Fit;
use crate::Csr;

/// The copy is made when its bytes are at most the room left divided by this: a graph that
/// fills memory must not be made to swap for a layout that gains a tenth.
pub const ROOM_SHARE: u64 = 4;

/// ... and at most the machine's memory divided by this: kron:22's 1 GiB of pairs on 24 GiB,
/// not kron:24's 4.3 GB, whose arms in a comparison would each hold a copy.
pub const TOTAL_SHARE: u64 = 16;

/// Arcs copied at a time by one thread.
const CHUNK: usize = 1 << 16;

/// Whether a copy of `arcs` arcs fits a machine of `total` bytes with `room` bytes left
/// (`None`: not read).
pub fn fits(arcs: usize, total: Option<u64>, room: Option<u64>) -> bool {
    let bytes = (arcs as u64).saturating_mul(8);
    total.is_some_and(|t| bytes <= t / TOTAL_SHARE) && room.is_some_and(|r| bytes <= r / ROOM_SHARE)
}

/// The pairs of a graph's outgoing side, when they were made, and the graph they were decided
/// for.
#[derive(Debug, Default)]
pub struct Arcs {
    copy: Option<Region<[u32; 2]>>,
    /// The graph it was decided for ([`Csr::id`], and its weights' count, as weights can be
    /// added to a graph): another graph, or the same with weights since, is decided anew.
    of: Option<(u64, usize)>,
}

impl Arcs {
    /// Make the pairs of `g`'s outgoing side unless they were decided for `g` already or do
    /// not fit (see [`fits`]); an unweighted graph has none, and a copy that cannot be made
    /// leaves the two lists to be read. Decided once per graph, so a timed run reads no memory
    /// figures.
    pub fn prepare(&mut self, g: &Csr, total: Option<u64>, room: Option<u64>) {
        let side = g.out_side();
        let of = (g.id(), side.weights.len());
        if self.of == Some(of) {
            return;
        }
        self.copy = None;
        self.of = Some(of);
        let arcs = side.edges.len();
        if side.weights.len() != arcs || arcs == 0 || !fits(arcs, total, room) {
            return;
        }
        let edges = &g.out_adjacency().edges;
        let opts = RegionOptions::new(edges.policy())
            .first_touch()
            .locked(edges.locks());
        let Ok(mut copy) = Region::<[u32; 2]>::new("arcs", arcs, opts) else {
            return;
        };
        copy.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(k, part)| {
                let at = k * CHUNK;
                let ids = &side.edges[at..at + part.len()];
                let ws = &side.weights[at..at + part.len()];
                for ((pair, &v), &w) in part.iter_mut().zip(ids).zip(ws) {
                    *pair = [v, w];
                }
            });
        self.copy = Some(copy);
    }

    /// Make them against this machine's memory and the room this process has now (see
    /// [`Fit::room_bytes`]), read only when `g` has not been decided for.
    pub fn prepare_in_room(&mut self, g: &Csr) {
        let of = (g.id(), g.out_side().weights.len());
        if self.of == Some(of) {
            return;
        }
        let total = ProcFs::default().meminfo().ok().map(|m| m.total_bytes);
        self.prepare(g, total, Fit::default().room_bytes());
    }

    /// The pairs, indexed as the side's edges; empty when the lists are read apart.
    pub fn pairs(&self) -> &[[u32; 2]] {
        self.copy.as_deref().unwrap_or(&[])
    }

    /// The region holding them, if made.
    pub fn region(&self) -> Option<&Region<[u32; 2]>> {
        self.copy.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::generated;
    use crate::Layout;

    /// Any machine, any room.
    const ALL: Option<u64> = Some(u64::MAX);

    #[test]
    fn a_copy_fits_within_a_sixteenth_of_the_machine_and_a_quarter_of_the_room() {
        // 1 000 arcs are 8 000 bytes: a machine of 128 000 and a room of 32 000 hold them.
        let big = Some(u64::MAX);
        assert!(fits(1000, Some(128_000), Some(32_000)));
        assert!(!fits(1000, big, Some(31_999)));
        assert!(!fits(1000, Some(127_999), big));
        assert!(!fits(1000, None, big) && !fits(1000, big, None));
        assert!(!fits(usize::MAX, big, big));
    }

    #[test]
    fn pairs_follow_the_lists_and_are_made_once_per_graph() {
        let mut g = generated("kron:8", true, false);
        g.add_weights(7, &Layout::default()).expect("weights");
        let mut a = Arcs::default();
        a.prepare(&g, ALL, ALL);
        same(&a, &g);
        let policy = a.region().map(|r| r.policy());
        assert_eq!(
            policy,
            Some(g.out_adjacency().edges.policy()),
            "the graph's edges' policy"
        );
        let first = a.pairs().as_ptr();
        a.prepare(&g, ALL, ALL);
        assert_eq!(a.pairs().as_ptr(), first, "the same graph's pairs are kept");
        // Another graph of the same shape gets pairs of its own, also when it is mapped where
        // the first one was (dropped first so that it may be).
        drop(g);
        let mut h = generated("kron:8", true, false);
        h.add_weights(8, &Layout::default()).expect("weights");
        a.prepare(&h, ALL, ALL);
        same(&a, &h);
    }

    fn same(a: &Arcs, g: &Csr) {
        let side = g.out_side();
        assert_eq!(a.pairs().len(), side.edges.len());
        for (k, p) in a.pairs().iter().enumerate() {
            assert_eq!(*p, [side.edges[k], side.weights[k]], "arc {k}");
        }
    }

    #[test]
    fn no_pairs_without_room_or_weights() {
        let mut g = generated("kron:8", true, false);
        let mut a = Arcs::default();
        a.prepare(&g, ALL, ALL);
        assert!(a.pairs().is_empty(), "an unweighted side has no pairs");
        g.add_weights(7, &Layout::default()).expect("weights");
        let need = g.out_side().edges.len() as u64 * 8 * ROOM_SHARE;
        a.prepare(&g, ALL, Some(need - 1));
        assert!(a.pairs().is_empty() && a.region().is_none());
        a.prepare(&g, ALL, Some(need));
        assert!(a.pairs().is_empty(), "decided once per graph");
        let mut a = Arcs::default();
        a.prepare(&g, ALL, Some(need));
        same(&a, &g);
    }
}
