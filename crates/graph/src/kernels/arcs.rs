//! A weighted side's arcs as `[neighbour, weight]` pairs in one array, the layout the GAP
//! suite keeps a weighted graph in.
//!
//! A graph keeps its neighbour ids and weights in two regions (so that each has its own page
//! policy and every other kernel reads ids alone). Relaxing a vertex's arcs then streams two
//! lists from two places: on cnr-2000 (17 arcs a vertex) that is four cache lines where one
//! list of pairs is three, and two streams for the prefetcher and the TLB where one list is
//! one. With the pairs SSSP went from 0.90–0.92x of GAP's speed to 0.98–1.01x there, five runs
//! alternated with the two lists (AMD EPYC; BENCHMARKS.md). The copy is made by the first run,
//! which callers do untimed as a warm-up, in the `edges` group's page policy, and kept for
//! every run on the same graph; it costs 8 bytes an arc, so it is made only when that is at
//! most the memory the process has left divided by [`ROOM_SHARE`], and the two lists are read
//! as they are otherwise.

use hugewise_mem::Region;
use rayon::prelude::*;

use crate::fits::Fit;
use crate::{Csr, Layout, Result};

/// The copy is made when its bytes are at most the room left divided by this: a graph that
/// fills memory must not be made to swap for a layout that gains a tenth.
pub const ROOM_SHARE: u64 = 4;

/// Whether a copy of `arcs` arcs fits in `room` bytes (`None`: the room could not be read).
pub fn fits(arcs: usize, room: Option<u64>) -> bool {
    let bytes = (arcs as u64).saturating_mul(8);
    room.is_some_and(|r| bytes <= r / ROOM_SHARE)
}

/// The pairs of one side, or the reason there are none.
#[derive(Debug, Default)]
pub struct Arcs {
    copy: Option<Region<[u32; 2]>>,
    /// The graph it was decided for ([`Csr::id`], and its weights' count, as weights can be
    /// added to a graph): another graph, or the same with weights since, is decided anew.
    of: Option<(u64, usize)>,
}

impl Arcs {
    /// Make the pairs of `g`'s outgoing side unless they were decided for `g` already or do
    /// not fit in `room` bytes (see [`fits`]); an unweighted graph has none. Decided once per
    /// graph, so a timed run reads no memory figures.
    pub fn prepare(&mut self, layout: &Layout, g: &Csr, room: Option<u64>) -> Result<()> {
        let side = g.out_side();
        let of = (g.id(), side.weights.len());
        if self.of == Some(of) {
            return Ok(());
        }
        self.copy = None;
        self.of = Some(of);
        let arcs = side.edges.len();
        if side.weights.len() != arcs || arcs == 0 || !fits(arcs, room) {
            return Ok(());
        }
        let mut copy: Region<[u32; 2]> = layout.filled_region("edges", "arcs", arcs)?;
        copy.par_chunks_mut(1 << 16)
            .enumerate()
            .for_each(|(k, part)| {
                let at = k << 16;
                let ids = &side.edges[at..at + part.len()];
                let ws = &side.weights[at..at + part.len()];
                for ((pair, &v), &w) in part.iter_mut().zip(ids).zip(ws) {
                    *pair = [v, w];
                }
            });
        self.copy = Some(copy);
        Ok(())
    }

    /// Make them within the room this process has now (see [`Fit::room_bytes`]), read only
    /// when `g` has not been decided for.
    pub fn prepare_in_room(&mut self, layout: &Layout, g: &Csr) -> Result<()> {
        let of = (g.id(), g.out_side().weights.len());
        if self.of == Some(of) {
            return Ok(());
        }
        self.prepare(layout, g, Fit::default().room_bytes())
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

    #[test]
    fn a_copy_fits_within_a_quarter_of_the_room() {
        // 1 000 arcs are 8 000 bytes: a room of 32 000 holds them, 31 999 does not.
        assert!(fits(1000, Some(32_000)));
        assert!(!fits(1000, Some(31_999)));
        assert!(!fits(1000, None));
        assert!(!fits(usize::MAX, Some(u64::MAX)));
    }

    #[test]
    fn pairs_follow_the_lists_and_are_made_once_per_graph() {
        let mut g = generated("kron:8", true, false);
        g.add_weights(7, &Layout::default()).expect("weights");
        let mut a = Arcs::default();
        a.prepare(&Layout::default(), &g, Some(u64::MAX))
            .expect("pairs");
        same(&a, &g);
        let first = a.pairs().as_ptr();
        a.prepare(&Layout::default(), &g, Some(u64::MAX))
            .expect("again");
        assert_eq!(a.pairs().as_ptr(), first, "the same graph's pairs are kept");
        // Another graph of the same shape, wherever it is mapped, gets pairs of its own.
        let mut h = generated("kron:8", true, false);
        h.add_weights(8, &Layout::default()).expect("weights");
        a.prepare(&Layout::default(), &h, Some(u64::MAX))
            .expect("another");
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
        a.prepare(&Layout::default(), &g, Some(u64::MAX))
            .expect("unweighted");
        assert!(a.pairs().is_empty(), "an unweighted side has no pairs");
        g.add_weights(7, &Layout::default()).expect("weights");
        let need = g.out_side().edges.len() as u64 * 8 * ROOM_SHARE;
        a.prepare(&Layout::default(), &g, Some(need - 1))
            .expect("tight");
        assert!(a.pairs().is_empty() && a.region().is_none());
        a.prepare(&Layout::default(), &g, Some(need))
            .expect("decided");
        assert!(a.pairs().is_empty(), "decided once per graph");
        let mut a = Arcs::default();
        a.prepare(&Layout::default(), &g, Some(need)).expect("room");
        same(&a, &g);
    }
}
