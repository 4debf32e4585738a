//! Counting and placing arcs with each thread owning a range of vertex ids. Every thread reads
//! the whole batch of edges and handles the ends that fall in its range, with plain loads and
//! stores into its own part of the degree, cursor and edge arrays. The alternative, one atomic
//! increment per arc into shared arrays, is a locked instruction on x86: it waits for its cache
//! miss before any later load may start, so the random accesses of a large graph run one miss
//! at a time. Plain increments let the core keep many misses in flight. The price is that each
//! thread reads every edge of the batch (a batch fits the caches, so that costs little at a few
//! threads); past [`MAX_PARTS`] threads the extra readers would cost more than they bring, and
//! the rest of the pool idles in this step.

use rayon::prelude::*;

use crate::build::Edge;
use crate::csr::Adjacency;

/// The most ranges a batch is split into.
pub const MAX_PARTS: usize = 8;

/// How many ranges to use in the current pool, for `n` vertices.
pub fn parts(n: usize) -> usize {
    rayon::current_num_threads()
        .clamp(1, MAX_PARTS)
        .min(n.max(1))
}

/// `v` cut at the given ascending `bounds` (the first 0, the last `v.len()`).
fn cut<'a, T>(mut v: &'a mut [T], bounds: &[usize]) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(bounds.len().saturating_sub(1));
    for w in bounds.windows(2) {
        let (head, rest) = std::mem::take(&mut v).split_at_mut(w[1] - w[0]);
        out.push(head);
        v = rest;
    }
    out
}

/// `parts` + 1 bounds splitting `0..n` into ranges of nearly equal size.
pub fn even(n: usize, parts: usize) -> Vec<usize> {
    (0..=parts).map(|k| n * k / parts).collect()
}

/// Add the arcs of `batch` to the degrees: every edge `u → v` adds one to `out[u]` and one to
/// `inc[v]`, or to `out[v]` when the graph is symmetrized (`inc` is `None`). Self-loops add
/// nothing and are returned as a count. Every id must be below `out.len()`.
pub fn count(batch: &[Edge], out: &mut [u32], inc: Option<&mut [u32]>) -> u64 {
    let n = out.len();
    let parts = parts(n);
    let bounds = even(n, parts);
    let outs = cut(out, &bounds);
    let incs: Vec<Option<&mut [u32]>> = match inc {
        Some(i) => cut(i, &bounds).into_iter().map(Some).collect(),
        None => (0..parts).map(|_| None).collect(),
    };
    outs.into_par_iter()
        .zip(incs)
        .enumerate()
        .map(|(k, (o, mut i))| {
            // In usize: a graph of 2^32 vertices has ranges past u32.
            let (lo, span) = (bounds[k], o.len());
            let mut loops = 0u64;
            for e in batch {
                if e.u == e.v {
                    loops += 1;
                    continue;
                }
                let a = (e.u as usize).wrapping_sub(lo);
                if a < span {
                    o[a] += 1;
                }
                let b = (e.v as usize).wrapping_sub(lo);
                if b < span {
                    match i {
                        Some(ref mut i) => i[b] += 1,
                        None => o[b] += 1,
                    }
                }
            }
            // Every part sees every self-loop; the first one counts them.
            if k == 0 {
                loops
            } else {
                0
            }
        })
        .sum()
}

/// One side's arrays cut by vertex range for placing arcs: each range's cursors (the next free
/// slot of each of its lists, as an index into the whole edge array) and its lists' slots.
struct Side<'a> {
    cursors: Vec<&'a mut [u64]>,
    edges: Vec<&'a mut [u32]>,
    weights: Vec<Option<&'a mut [u32]>>,
    /// Index in the whole edge array of each range's first slot.
    base: Vec<u64>,
}

impl<'a> Side<'a> {
    fn cut(a: &'a mut Adjacency, cursor: &'a mut [u64], bounds: &[usize]) -> Side<'a> {
        let base: Vec<u64> = bounds.iter().map(|&b| a.offsets[b]).collect();
        let slots: Vec<usize> = base.iter().map(|&b| b as usize).collect();
        let weights = match a.weights.as_mut() {
            Some(w) => cut(&mut w[..], &slots).into_iter().map(Some).collect(),
            None => (1..bounds.len()).map(|_| None).collect(),
        };
        Side {
            cursors: cut(cursor, bounds),
            edges: cut(&mut a.edges[..], &slots),
            weights,
            base,
        }
    }

    /// Each range's part, to hand to its thread.
    fn parts(&mut self) -> Vec<Part<'_>> {
        self.cursors
            .iter_mut()
            .zip(self.edges.iter_mut())
            .zip(self.weights.iter_mut())
            .zip(&self.base)
            .map(|(((c, e), w), &base)| Part {
                cursor: c,
                edges: e,
                weights: w.as_deref_mut(),
                base,
            })
            .collect()
    }
}

/// One range's part of one side, owned by one thread while a batch is placed.
struct Part<'s> {
    cursor: &'s mut [u64],
    edges: &'s mut [u32],
    weights: Option<&'s mut [u32]>,
    base: u64,
}

impl Part<'_> {
    /// Place the arc `from → to` (`from` relative to the range); false when the range's slots
    /// are all taken. A list that takes more than its own slots spills into the next list's:
    /// [`Placer`]'s caller checks every cursor against its list's end afterwards.
    #[inline]
    fn place(&mut self, from: usize, to: u32, w: u32) -> bool {
        let c = &mut self.cursor[from];
        let at = (*c - self.base) as usize;
        *c += 1;
        let Some(slot) = self.edges.get_mut(at) else {
            return false;
        };
        *slot = to;
        if let Some(ws) = self.weights.as_deref_mut() {
            ws[at] = w;
        }
        true
    }
}

/// Places the arcs of batches of edges into a graph's lists, each thread its own range of
/// vertices. The cursors start as a copy of the offsets, and each ends at its list's end when
/// the input gave the arcs it counted: the caller checks that with [`complete`] (an input
/// read twice may change between the readings).
pub struct Placer<'a> {
    bounds: Vec<usize>,
    out: Side<'a>,
    inc: Option<Side<'a>>,
}

impl<'a> Placer<'a> {
    /// Cut `out` (and `inc`, for a directed graph) and their cursors into ranges of vertices
    /// holding nearly equal numbers of arcs.
    pub fn new(
        out: &'a mut Adjacency,
        out_cursor: &'a mut [u64],
        inc: Option<(&'a mut Adjacency, &'a mut [u64])>,
    ) -> Placer<'a> {
        let n = out.offsets.len() - 1;
        let parts = parts(n);
        let total = out.offsets[n];
        let mut bounds: Vec<usize> = (0..=parts)
            .map(|k| {
                let want = total * k as u64 / parts as u64;
                out.offsets[..n].partition_point(|&o| o < want)
            })
            .collect();
        bounds[parts] = n;
        let out = Side::cut(out, out_cursor, &bounds);
        let inc = inc.map(|(a, c)| Side::cut(a, c, &bounds));
        Placer { bounds, out, inc }
    }

    /// Place every arc of `batch`: `u → v` in `u`'s list and `v → u` in `v`'s (the incoming
    /// side's for a directed graph); self-loops are skipped. False when an id is not a vertex
    /// or a range ran out of slots (the input gave more arcs than it counted).
    pub fn place(&mut self, batch: &[Edge]) -> bool {
        let bounds = &self.bounds;
        let outs = self.out.parts();
        let incs: Vec<Option<Part<'_>>> = match self.inc.as_mut() {
            Some(s) => s.parts().into_iter().map(Some).collect(),
            None => (0..outs.len()).map(|_| None).collect(),
        };
        outs.into_par_iter()
            .zip(incs)
            .enumerate()
            .all(|(k, (mut o, mut i))| {
                let (lo, span, n) = (
                    bounds[k],
                    bounds[k + 1] - bounds[k],
                    bounds[bounds.len() - 1],
                );
                for e in batch.iter().filter(|e| e.u != e.v) {
                    if e.u as usize >= n || e.v as usize >= n {
                        return false;
                    }
                    let a = (e.u as usize).wrapping_sub(lo);
                    if a < span && !o.place(a, e.v, e.w) {
                        return false;
                    }
                    let b = (e.v as usize).wrapping_sub(lo);
                    if b < span {
                        let back = i.as_mut().unwrap_or(&mut o);
                        if !back.place(b, e.u, e.w) {
                            return false;
                        }
                    }
                }
                true
            })
    }
}

/// Whether every list got exactly the arcs counted for it: each cursor (after placing) at its
/// list's end, the next list's offset.
pub fn complete(cursor: &[u64], offsets: &[u64]) -> bool {
    cursor
        .par_iter()
        .zip(offsets[1..].par_iter())
        .all(|(c, end)| c == end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(pairs: &[(u32, u32)]) -> Vec<Edge> {
        pairs
            .iter()
            .map(|&(u, v)| Edge {
                u,
                v,
                w: u * 10 + v,
            })
            .collect()
    }

    #[test]
    fn counts_match_a_serial_count_in_any_pool() {
        let batch = edges(&[(0, 1), (1, 2), (2, 2), (5, 0), (4, 5), (3, 1), (0, 5)]);
        for threads in [1, 2, 3, 7] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let (mut sym, mut out, mut inc) = (vec![0u32; 6], vec![0u32; 6], vec![0u32; 6]);
            let loops = pool.install(|| count(&batch, &mut sym, None));
            assert_eq!(loops, 1);
            assert_eq!(sym, [3, 3, 1, 1, 1, 3], "{threads} threads");
            let loops = pool.install(|| count(&batch, &mut out, Some(&mut inc)));
            assert_eq!(loops, 1);
            assert_eq!(out, [2, 1, 0, 1, 1, 1], "{threads} threads");
            assert_eq!(inc, [1, 2, 1, 0, 0, 2], "{threads} threads");
        }
    }
}
