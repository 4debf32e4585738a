//! Betweenness centrality, Brandes' algorithm from several sources, scores normalised by the
//! largest (as the GAP suite reports them).
//!
//! Per source: a level-synchronous parallel BFS counts shortest paths (σ, f64, the "property"
//! region) and marks in a bitmap over arcs which arcs lie on a shortest path; then the levels
//! are walked backwards, each vertex summing σ(u)/σ(v)·(1 + δ(v)) over its marked arcs. Depths,
//! dependencies and scores are further "property" regions; the queue and the arc bitmap are
//! "frontier" regions (the bitmap is created by the first run, as it needs the arc count).
//!
//! [`verify`] runs a serial Brandes with explicit predecessor lists and compares scores.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use hugewise_mem::Region;
use hugewise_sys::atomic;
use rayon::prelude::*;

use crate::csr::{RegionReport, RegionReportExt, Side};
use crate::kernels::{add_f64, in_pieces, scratch, Kernel, Outcome};
use crate::probe::{Off, Probe, Span, Streams, Tracer};
use crate::sampler::Sampled;
use crate::{Csr, Layout, Result};

const UNSEEN: u32 = u32::MAX;

/// Queue entries a thread takes at a time.
const GRAIN: usize = 64;

/// Brandes with its arrays.
#[derive(Debug)]
pub struct Bc {
    layout: Layout,
    sigma: Region<f64>,
    depth: Region<u32>,
    delta: Region<f32>,
    scores: Region<f32>,
    queue: Region<u32>,
    on_path: Option<Region<u64>>,
    last: (u32, u64),
}

impl Bc {
    /// Arrays for `n` vertices.
    pub fn new(layout: &Layout, n: usize) -> Result<Bc> {
        Ok(Bc {
            layout: layout.clone(),
            sigma: layout.region("property", "property", n)?,
            depth: layout.region("property", "property-depth", n)?,
            delta: layout.region("property", "property-delta", n)?,
            scores: layout.region("property", "property-scores", n)?,
            queue: layout.region("frontier", "frontier", n)?,
            on_path: None,
            last: (0, 0),
        })
    }

    /// Normalised scores of the last run.
    pub fn scores(&self) -> &[f32] {
        &self.scores
    }

    /// One source: add its dependencies to the scores; returns vertices reached.
    fn search<T: Tracer>(&mut self, g: &Csr, src: u32, on_path: &mut [u64], t: &T) -> u64 {
        self.depth
            .par_iter_mut()
            .for_each_init(|| t.probe(), |p, d| p.write(d, UNSEEN));
        self.sigma
            .par_iter_mut()
            .for_each_init(|| t.probe(), |p, s| p.write(s, 0.0));
        on_path
            .par_iter_mut()
            .for_each_init(|| t.probe(), |p, w| p.write(w, 0));
        {
            let mut p = t.probe();
            p.write(&mut self.depth[src as usize], 0);
            p.write(&mut self.sigma[src as usize], 1.0);
            p.write(&mut self.queue[0], src);
        }
        let depth = atomic::u32s(&mut self.depth);
        let sigma = atomic::u64s(bytemuck::cast_slice_mut(&mut self.sigma[..]));
        let queue = atomic::u32s(&mut self.queue);
        let on_path = atomic::u64s(on_path);
        // levels[i]..levels[i + 1] of the queue is depth i.
        let mut levels = vec![0usize, 1];
        let out = g.out_side();
        loop {
            let (head, tail) = (levels[levels.len() - 2], levels[levels.len() - 1]);
            if head == tail {
                break;
            }
            let d = (levels.len() - 2) as u32;
            let end = AtomicUsize::new(tail);
            let level = &queue[head..tail];
            in_pieces(
                level.len(),
                GRAIN,
                // Taken and given back within one piece's state on one thread.
                || (t.probe(), scratch::take()),
                |(p, found), piece| {
                    each_vertex(out, level, piece, sigma, p, |p, _, su, r| {
                        let first = r.start;
                        for (i, v) in out.edges[r].iter().enumerate() {
                            let v = p.read(v);
                            let dv = &depth[v as usize];
                            if p.load(dv) == UNSEEN && p.cas(dv, UNSEEN, d + 1).is_ok() {
                                found.push(v);
                            }
                            if p.load(dv) == d + 1 {
                                let arc = first + i;
                                p.fetch_or(&on_path[arc / 64], 1 << (arc % 64));
                                add_f64(&sigma[v as usize], su, p);
                            }
                        }
                    });
                },
                |(mut p, found)| {
                    let at = end.fetch_add(found.len(), Relaxed);
                    for (k, &v) in found.iter().enumerate() {
                        p.store(&queue[at + k], v);
                    }
                    scratch::give_back(found);
                },
            );
            levels.push(end.into_inner());
        }
        let reached = levels[levels.len() - 1] as u64;
        let delta = atomic::u32s(bytemuck::cast_slice_mut(&mut self.delta[..]));
        let scores = atomic::u32s(bytemuck::cast_slice_mut(&mut self.scores[..]));
        for w in levels.windows(2).rev() {
            let level = &queue[w[0]..w[1]];
            in_pieces(
                level.len(),
                GRAIN,
                || t.probe(),
                |p, piece| {
                    each_vertex(out, level, piece, sigma, p, |p, u, su, r| {
                        let first = r.start;
                        let mut dep = 0.0f64;
                        for (i, v) in out.edges[r].iter().enumerate() {
                            let arc = first + i;
                            if p.load(&on_path[arc / 64]) & (1 << (arc % 64)) != 0 {
                                let v = p.read(v);
                                let sv = f64::from_bits(p.load(&sigma[v as usize]));
                                let dv = f32::from_bits(p.load(&delta[v as usize])) as f64;
                                dep += su / sv * (1.0 + dv);
                            }
                        }
                        p.store(&delta[u as usize], (dep as f32).to_bits());
                        if u != src {
                            let s = &scores[u as usize];
                            let x = f32::from_bits(p.load(s)) + dep as f32;
                            p.store(s, x.to_bits());
                        }
                    });
                },
                drop,
            );
        }
        reached
    }

    fn body<T: Tracer>(&mut self, g: &Csr, sources: &[u32], t: &T) -> Result<()> {
        let mut on_path = match self.on_path.take() {
            Some(r) if r.len() >= g.arcs().div_ceil(64) as usize => r,
            _ => self.layout.region(
                "frontier",
                "frontier-on-path-bits",
                g.arcs().div_ceil(64) as usize,
            )?,
        };
        self.scores
            .par_iter_mut()
            .for_each_init(|| t.probe(), |p, s| p.write(s, 0.0));
        self.delta
            .par_iter_mut()
            .for_each_init(|| t.probe(), |p, d| p.write(d, 0.0));
        let mut reached = 0;
        for &src in sources {
            reached += self.search(g, src, &mut on_path, t);
        }
        self.on_path = Some(on_path);
        let max = self
            .scores
            .par_iter()
            .map_init(|| t.probe(), |p, s| p.read(s))
            .reduce(|| 0.0, f32::max);
        if max > 0.0 {
            self.scores.par_iter_mut().for_each_init(
                || t.probe(),
                |p, s| {
                    let x = p.read(s) / max;
                    p.write(s, x)
                },
            );
        }
        self.last = (sources.len() as u32, reached);
        Ok(())
    }
}

/// Each vertex `u` of `level[piece]` with its path count and where its list is, for `f`; the
/// lists a few places on are prefetched, looking on through the level past the piece's end
/// (the next piece's first lists are as likely this thread's as another's).
#[inline(always)]
fn each_vertex<P: Probe>(
    out: Side,
    level: &[AtomicU32],
    piece: Range<usize>,
    sigma: &[AtomicU64],
    p: &mut P,
    mut f: impl FnMut(&mut P, u32, f64, Range<usize>),
) {
    for k in piece {
        prefetch_ahead(out, level, k);
        let u = p.load(&level[k]);
        let su = f64::from_bits(p.load(&sigma[u as usize]));
        let r = p.range(out, u);
        f(p, u, su, r);
    }
}

/// How many queue entries ahead the passes prefetch adjacency lists.
const AHEAD: usize = 8;

/// Prefetch the lists of the vertices a few places after `k` in `queue`.
#[inline]
fn prefetch_ahead(out: Side, queue: &[AtomicU32], k: usize) {
    out.prefetch_ahead(k, AHEAD, |i| queue.get(i).map(|x| x.load(Relaxed)));
}

impl Kernel for Bc {
    fn run(&mut self, g: &Csr, sources: &[u32]) -> Result<()> {
        self.body(g, sources, &Off)
    }

    fn trace(&mut self, g: &Csr, sources: &[u32], t: &Streams) -> Result<()> {
        self.body(g, sources, t)
    }

    fn sample(&mut self, g: &Csr, sources: &[u32], s: &Sampled<'_>) -> Result<()> {
        self.body(g, sources, s)
    }

    fn outcome(&self, _: &Csr) -> Outcome {
        Outcome::Bc {
            sources: self.last.0,
            reached: self.last.1,
        }
    }

    fn verify(&self, g: &Csr, sources: &[u32]) -> std::result::Result<(), String> {
        verify(g, sources, &self.scores)
    }

    fn regions(&self) -> Result<Vec<RegionReport>> {
        let mut v = vec![
            RegionReport::of(&self.sigma)?,
            RegionReport::of(&self.depth)?,
            RegionReport::of(&self.delta)?,
            RegionReport::of(&self.scores)?,
            RegionReport::of(&self.queue)?,
        ];
        if let Some(b) = &self.on_path {
            v.push(RegionReport::of(b)?);
        }
        Ok(v)
    }

    fn spans(&self) -> Vec<Span> {
        let mut v = vec![
            Span::of(&self.sigma),
            Span::of(&self.depth),
            Span::of(&self.delta),
            Span::of(&self.scores),
            Span::of(&self.queue),
        ];
        if let Some(b) = &self.on_path {
            v.push(Span::of(b));
        }
        v
    }
}

/// Compare `scores` with a serial Brandes from the same `sources`, both normalised by their
/// largest score, within 1e-4.
pub fn verify(g: &Csr, sources: &[u32], scores: &[f32]) -> std::result::Result<(), String> {
    let n = g.n();
    let mut want = vec![0.0f64; n];
    for &s in sources {
        let mut dist = vec![-1i64; n];
        let mut paths = vec![0.0f64; n];
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut order = Vec::new();
        let mut q = VecDeque::from([s]);
        dist[s as usize] = 0;
        paths[s as usize] = 1.0;
        while let Some(u) = q.pop_front() {
            order.push(u);
            for &v in g.out_neighbors(u) {
                if dist[v as usize] < 0 {
                    dist[v as usize] = dist[u as usize] + 1;
                    q.push_back(v);
                }
                if dist[v as usize] == dist[u as usize] + 1 {
                    paths[v as usize] += paths[u as usize];
                    preds[v as usize].push(u);
                }
            }
        }
        let mut dep = vec![0.0f64; n];
        for &v in order.iter().rev() {
            for &u in &preds[v as usize] {
                dep[u as usize] += paths[u as usize] / paths[v as usize] * (1.0 + dep[v as usize]);
            }
            if v != s {
                want[v as usize] += dep[v as usize];
            }
        }
    }
    let max = want.iter().copied().fold(0.0, f64::max);
    if max > 0.0 {
        want.iter_mut().for_each(|x| *x /= max);
    }
    match (0..n).find(|&v| (want[v] - scores[v] as f64).abs() > 1e-4) {
        None => Ok(()),
        Some(v) => Err(format!(
            "vertex {v}: score {} but serial Brandes says {:.6}",
            scores[v], want[v]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::pick_sources;
    use crate::kernels::testing::{from_edges, generated, shaped};

    fn bc(g: &Csr, sources: &[u32]) -> Bc {
        let mut k = Bc::new(&Layout::default(), g.n()).expect("bc");
        k.run(g, sources).expect("run");
        k
    }

    #[test]
    fn a_path_by_hand() {
        // 0 - 1 - 2 - 3 from every source: dependencies 0, 4, 4, 0 → normalised 0, 1, 1, 0.
        let g = from_edges(4, &[(0, 1, 1), (1, 2, 1), (2, 3, 1)], true);
        let k = bc(&g, &[0, 1, 2, 3]);
        assert_eq!(k.scores(), [0.0, 1.0, 1.0, 0.0]);
        // From 0 alone: 1 lies on 2 paths, 2 on 1.
        let k = bc(&g, &[0]);
        assert_eq!(k.scores(), [0.0, 1.0, 0.5, 0.0]);
        verify(&g, &[0], k.scores()).expect("verifies");
    }

    #[test]
    fn a_diamond_splits_paths() {
        // 0 → 1 → 3 and 0 → 2 → 3: 1 and 2 each carry half of the path to 3.
        let g = from_edges(4, &[(0, 1, 1), (0, 2, 1), (1, 3, 1), (2, 3, 1)], false);
        let k = bc(&g, &[0]);
        assert_eq!(k.scores(), [0.0, 1.0, 1.0, 0.0]);
    }

    #[test]
    fn verifies_on_generated_graphs() {
        for (spec, sym) in [("kron:12", true), ("urand:12", true), ("kron:11", false)] {
            let g = generated(spec, sym, false);
            let sources = pick_sources(&g, 5, 4).expect("sources");
            let mut k = Bc::new(&Layout::default(), g.n()).expect("bc");
            for _ in 0..2 {
                k.run(&g, &sources).expect("run");
                k.verify(&g, &sources)
                    .unwrap_or_else(|e| panic!("{spec}: {e}"));
            }
        }
    }

    #[test]
    fn levels_long_enough_to_broadcast_verify() {
        // From the hub, one level holds every leaf; from a leaf, the level after the hub does:
        // both past the length from which a level runs in one broadcast.
        let g = shaped("star:200000");
        assert!(
            g.n() - 2 >= crate::kernels::BROADCAST_FROM,
            "a level too short"
        );
        let hub = (0..g.n() as u32)
            .max_by_key(|&v| g.out_side().degree(v))
            .expect("hub");
        let leaf = if hub == 0 { 1 } else { 0 };
        for sources in [vec![hub], vec![leaf], vec![hub, leaf]] {
            let k = bc(&g, &sources);
            k.verify(&g, &sources)
                .unwrap_or_else(|e| panic!("from {sources:?}: {e}"));
            let Outcome::Bc { reached, .. } = k.outcome(&g) else {
                panic!("a bc outcome");
            };
            assert_eq!(reached, g.n() as u64 * sources.len() as u64, "{sources:?}");
        }
    }

    #[test]
    fn verifier_catches_a_wrong_score() {
        let g = generated("kron:10", true, false);
        let sources = pick_sources(&g, 1, 2).expect("sources");
        let k = bc(&g, &sources);
        let mut bad = k.scores().to_vec();
        let v = (0..g.n())
            .find(|&v| bad[v] > 0.01 && bad[v] < 1.0)
            .expect("v");
        bad[v] *= 0.9;
        assert!(verify(&g, &sources, &bad).is_err());
    }
}
