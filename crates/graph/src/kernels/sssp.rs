//! Single-source shortest paths by delta-stepping (Meyer and Sanders), in the bucket-per-thread
//! form of the GAP suite: distances live in buckets of width `delta`; all threads relax the
//! shared frontier (the current bucket), each into its own buckets; a thread keeps working on
//! its own current bucket while it stays small, saving a round of synchronisation; then the
//! lowest non-empty bucket of any thread becomes the next shared frontier.
//!
//! The distance array is the "property" region; the shared frontier is a "frontier" region
//! faulted in by first touch, grown if a round ever needs more. The per-thread buckets are
//! short-lived heap vectors. [`verify`] compares with a serial Dijkstra.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use hugewise_mem::Region;
use hugewise_sys::atomic;
use rayon::prelude::*;

use crate::csr::{RegionReport, RegionReportExt, Side};
use crate::kernels::{Kernel, Outcome};
use crate::traced::{Off, Probe, Sampled, Span, Streams, Tracer};
use crate::{Csr, Layout, Result};

/// Distance of an unreached vertex.
pub const INF: u32 = u32::MAX;

/// A thread goes on with its own current bucket while it holds fewer vertices than this.
const LOCAL_LIMIT: usize = 1000;

/// Vertices a thread takes from the shared frontier at a time.
const GRAIN: usize = 64;

/// Delta-stepping with its arrays.
#[derive(Debug)]
pub struct Sssp {
    delta: u32,
    layout: Layout,
    dist: Region<u32>,
    frontier: Region<u32>,
    buckets: Vec<Mutex<Vec<Vec<u32>>>>,
    rounds: u32,
}

impl Sssp {
    /// Arrays for `n` vertices; `delta` ≥ 1.
    pub fn new(layout: &Layout, n: usize, delta: u32) -> Result<Sssp> {
        Ok(Sssp {
            delta: delta.max(1),
            layout: layout.clone(),
            dist: layout.region("property", "property", n)?,
            // Sized by a guess and grown when a round needs more; faulted in by first touch,
            // so the part never used costs no memory.
            frontier: layout.lazy_region("frontier", "frontier", (n / 4).max(GRAIN) + 1)?,
            buckets: Vec::new(),
            rounds: 0,
        })
    }

    /// Distances of the last run.
    pub fn dist(&self) -> &[u32] {
        &self.dist
    }

    fn frontier_at_least(&mut self, len: usize) -> Result<()> {
        if self.frontier.len() < len {
            self.frontier = self.layout.lazy_region("frontier", "frontier", len)?;
        }
        Ok(())
    }
}

impl Sssp {
    fn body<T: Tracer>(&mut self, g: &Csr, sources: &[u32], t: &T) -> Result<()> {
        let src = sources[0];
        let threads = rayon::current_num_threads();
        if self.buckets.len() != threads {
            self.buckets = (0..threads).map(|_| Mutex::new(Vec::new())).collect();
        }
        for b in &self.buckets {
            lock(b).iter_mut().for_each(Vec::clear);
        }
        self.dist
            .par_iter_mut()
            .for_each_init(|| t.probe(), |p, d| p.write(d, INF));
        {
            let mut p = t.probe();
            p.write(&mut self.dist[src as usize], 0);
            p.write(&mut self.frontier[0], src);
        }
        let delta = self.delta as u64;
        let mut frontier_len = 1usize;
        let mut bucket = 0usize;
        let mut rounds = 0u32;
        loop {
            rounds += 1;
            let dist = atomic::u32s(&mut self.dist);
            let frontier = &self.frontier[..frontier_len];
            let out = g.out_side();
            let cursor = AtomicUsize::new(0);
            let buckets = &self.buckets;
            rayon::broadcast(|ctx| {
                let mut p = t.probe();
                let mut mine = lock(&buckets[ctx.index()]);
                loop {
                    let start = cursor.fetch_add(GRAIN, Relaxed);
                    if start >= frontier.len() {
                        break;
                    }
                    let chunk = &frontier[start..(start + GRAIN).min(frontier.len())];
                    for (k, u) in chunk.iter().enumerate() {
                        prefetch_ahead(out, chunk, k);
                        let u = p.read(u);
                        relax(out, dist, delta, bucket, u, &mut mine, &mut p);
                    }
                }
                while mine
                    .get(bucket)
                    .is_some_and(|b| !b.is_empty() && b.len() < LOCAL_LIMIT)
                {
                    let work = std::mem::take(&mut mine[bucket]);
                    for (k, &u) in work.iter().enumerate() {
                        prefetch_ahead(out, &work, k);
                        relax(out, dist, delta, bucket, u, &mut mine, &mut p);
                    }
                }
            });
            let Some(next) = lowest_bucket(buckets, bucket) else {
                break;
            };
            let total: usize = buckets
                .iter()
                .map(|b| lock(b).get(next).map_or(0, Vec::len))
                .sum();
            self.frontier_at_least(total)?;
            let frontier = atomic::u32s(&mut self.frontier);
            let end = AtomicUsize::new(0);
            let buckets = &self.buckets;
            rayon::broadcast(|ctx| {
                let mut p = t.probe();
                let mut mine = lock(&buckets[ctx.index()]);
                if let Some(b) = mine.get_mut(next) {
                    let at = end.fetch_add(b.len(), Relaxed);
                    for (i, &v) in b.iter().enumerate() {
                        p.store(&frontier[at + i], v);
                    }
                    b.clear();
                }
            });
            frontier_len = total;
            bucket = next;
        }
        self.rounds = rounds;
        Ok(())
    }
}

impl Kernel for Sssp {
    fn run(&mut self, g: &Csr, sources: &[u32]) -> Result<()> {
        self.body(g, sources, &Off)
    }

    fn trace(&mut self, g: &Csr, sources: &[u32], t: &Streams) -> Result<()> {
        self.body(g, sources, t)
    }

    fn sample(&mut self, g: &Csr, sources: &[u32], s: &Sampled<'_>) -> Result<()> {
        self.body(g, sources, s)
    }

    fn spans(&self) -> Vec<Span> {
        vec![Span::of(&self.dist), Span::of(&self.frontier)]
    }

    fn outcome(&self, _: &Csr) -> Outcome {
        let (reached, max_dist) = self
            .dist
            .par_iter()
            .filter(|&&d| d != INF)
            .map(|&d| (1u64, d as u64))
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1.max(b.1)));
        Outcome::Sssp {
            reached,
            max_dist,
            rounds: self.rounds,
        }
    }

    fn verify(&self, g: &Csr, sources: &[u32]) -> std::result::Result<(), String> {
        verify(g, sources[0], &self.dist)
    }

    fn regions(&self) -> Result<Vec<RegionReport>> {
        let mut v = vec![RegionReport::of(&self.dist)?];
        v.push(RegionReport::of(&self.frontier)?);
        Ok(v)
    }
}

/// The next shared frontier: the lowest non-empty bucket from `from` on that any thread holds.
pub(crate) fn lowest_bucket(buckets: &[Mutex<Vec<Vec<u32>>>], from: usize) -> Option<usize> {
    buckets
        .iter()
        .filter_map(|b| {
            let b = lock(b);
            (from..b.len()).find(|&i| !b[i].is_empty())
        })
        .min()
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic inside a round propagates out of broadcast; the buckets are cleared on the next
    // run, so a poisoned lock holds nothing worth refusing.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Relax `u`'s arcs if `u` still belongs to `bucket` or later (an entry left behind when its
/// distance later dropped into an earlier bucket is stale and skipped).
#[allow(clippy::too_many_arguments)]
fn relax<P: Probe>(
    out: Side,
    dist: &[AtomicU32],
    delta: u64,
    bucket: usize,
    u: u32,
    mine: &mut Vec<Vec<u32>>,
    p: &mut P,
) {
    let du = p.load(&dist[u as usize]);
    if (du as u64) < delta * bucket as u64 {
        return;
    }
    let r = p.range(out, u);
    // Unweighted graphs are refused before a run; an empty weight list relaxes nothing.
    let weights = out.weights.get(r.clone()).unwrap_or(&[]);
    for (v, w) in out.edges[r].iter().zip(weights) {
        let (v, w) = (p.read(v), p.read(w));
        let nd = du.saturating_add(w).min(INF - 1);
        let d = &dist[v as usize];
        let mut old = p.load(d);
        while nd < old {
            match p.cas_weak(d, old, nd) {
                Ok(_) => {
                    let b = (nd as u64 / delta) as usize;
                    if b >= mine.len() {
                        mine.resize_with(b + 1, Vec::new);
                    }
                    mine[b].push(v);
                    break;
                }
                Err(cur) => old = cur,
            }
        }
    }
}

/// How many frontier entries ahead the relaxing loops prefetch adjacency lists.
const AHEAD: usize = 8;

/// Prefetch the lists (and weights) of the vertices a few places after `k` in `work`.
#[inline]
fn prefetch_ahead(out: Side, work: &[u32], k: usize) {
    out.prefetch_ahead(k, AHEAD, |i| work.get(i).copied());
    if let Some(&x) = work.get(k + AHEAD) {
        out.prefetch_weights(x);
    }
}

/// Compare `dist` with a serial Dijkstra from `src`.
pub fn verify(g: &Csr, src: u32, dist: &[u32]) -> std::result::Result<(), String> {
    let n = g.n();
    let mut want = vec![INF; n];
    let mut heap = BinaryHeap::new();
    want[src as usize] = 0;
    heap.push(Reverse((0u32, src)));
    while let Some(Reverse((d, u))) = heap.pop() {
        if d > want[u as usize] {
            continue;
        }
        for (&v, &w) in g.out_neighbors(u).iter().zip(g.out_weights(u)) {
            let nd = d.saturating_add(w).min(INF - 1);
            if nd < want[v as usize] {
                want[v as usize] = nd;
                heap.push(Reverse((nd, v)));
            }
        }
    }
    match (0..n).find(|&v| want[v] != dist[v]) {
        None => Ok(()),
        Some(v) => Err(format!(
            "vertex {v}: distance {} but Dijkstra says {}",
            show(dist[v]),
            show(want[v])
        )),
    }
}

fn show(d: u32) -> String {
    if d == INF {
        "unreachable".into()
    } else {
        d.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::pick_sources;
    use crate::kernels::testing::{from_edges, generated};

    fn sssp(g: &Csr, src: u32, delta: u32) -> Sssp {
        let mut k = Sssp::new(&Layout::default(), g.n(), delta).expect("arrays");
        k.run(g, &[src]).expect("run");
        k
    }

    #[test]
    fn small_graph_by_hand() {
        // 0 -1-> 1 -1-> 2, and a long direct arc 0 -5-> 2; 3 unreachable.
        let g = from_edges(4, &[(0, 1, 1), (1, 2, 1), (0, 2, 5)], false);
        for delta in [1, 2, 100] {
            let k = sssp(&g, 0, delta);
            assert_eq!(k.dist(), [0, 1, 2, INF], "delta {delta}");
            verify(&g, 0, k.dist()).expect("verifies");
        }
    }

    #[test]
    fn verifies_on_generated_graphs_for_several_deltas() {
        for (spec, sym) in [("kron:13", true), ("urand:13", true), ("kron:11", false)] {
            let g = generated(spec, sym, true);
            for src in pick_sources(&g, 4, 2).expect("sources") {
                for delta in [1, 2, 32] {
                    let k = sssp(&g, src, delta);
                    verify(&g, src, k.dist()).unwrap_or_else(|e| panic!("{spec} d={delta}: {e}"));
                }
            }
        }
    }

    #[test]
    fn verifier_catches_a_wrong_distance() {
        let g = generated("kron:10", true, true);
        let src = pick_sources(&g, 1, 1).expect("src")[0];
        let k = sssp(&g, src, 2);
        let mut bad = k.dist().to_vec();
        let v = (0..g.n())
            .find(|&v| bad[v] > 0 && bad[v] != INF)
            .expect("v");
        bad[v] -= 1;
        let e = verify(&g, src, &bad).expect_err("wrong");
        assert!(e.contains(&format!("vertex {v}")), "{e}");
    }
}
