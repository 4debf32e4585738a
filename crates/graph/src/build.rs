//! The streaming two-pass CSR builder.
//!
//! Pass 1 counts degrees; the arrays are then created (in the layout's allocation order) at
//! their final size bound; pass 2 places every arc; each adjacency list is then sorted and
//! cleared of duplicates in parallel, compacted, and the arrays truncated. When the edge list
//! fits beside the graph with room to spare (8 bytes an edge, 12 with weights), the first pass
//! holds it and the second replays it, so a generator or parser does its work once; otherwise
//! the source is read twice and peak memory stays near the final CSR (plus a degree counter of
//! 4 bytes and a cursor of 8 bytes per vertex).

use std::time::Instant;

use hugewise_mem::Region;
pub use hugewise_results::graph::BuildStats;
use rayon::prelude::*;

use crate::csr::{Adjacency, Csr};
use crate::fits::{count, Fit, Shape};
use crate::layout::{Layout, GRAPH_REGIONS};
use crate::owned;
use crate::{Error, Result};

/// One edge as read or generated. `w` is 1 for unweighted sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Edge {
    /// Source.
    pub u: u32,
    /// Destination.
    pub v: u32,
    /// Weight.
    pub w: u32,
}

/// A source of edges that can be replayed: every call yields the same edges in the same order.
pub trait EdgeSource {
    /// Call `f` with every edge, in chunks.
    fn each_chunk(&mut self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()>;
    /// Whether the edges carry weights.
    fn weighted(&self) -> bool;
    /// A declared vertex count, if the source has one (ids must stay below it).
    fn vertices(&self) -> Option<usize> {
        None
    }
    /// A declared edge count, if the source has one (a Matrix Market size line).
    fn declared_edges(&self) -> Option<u64> {
        None
    }
    /// How many edges the source will yield, when known before reading (a generator's count,
    /// a declared count): lets the builder judge at once whether it can hold the edge list.
    fn edges_hint(&self) -> Option<u64> {
        self.declared_edges()
    }
    /// The input's name in errors: a path or a generator spec.
    fn name(&self) -> String {
        "the edge list".into()
    }
}

/// Batches edges for an [`EdgeSource`] that reads one edge at a time.
pub struct Chunker<'a> {
    buf: Vec<Edge>,
    sink: &'a mut dyn FnMut(&[Edge]) -> Result<()>,
}

impl<'a> Chunker<'a> {
    /// Batches of 64 Ki edges into `sink`.
    pub fn new(sink: &'a mut dyn FnMut(&[Edge]) -> Result<()>) -> Self {
        Chunker {
            buf: Vec::with_capacity(1 << 16),
            sink,
        }
    }

    /// Add one edge, handing a full batch on.
    pub fn push(&mut self, e: Edge) -> Result<()> {
        self.buf.push(e);
        if self.buf.len() == self.buf.capacity() {
            (self.sink)(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Hand on what is left.
    pub fn finish(self) -> Result<()> {
        if !self.buf.is_empty() {
            (self.sink)(&self.buf)?;
        }
        Ok(())
    }
}

/// How to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BuildOptions {
    /// Store each edge in both directions (an undirected graph); otherwise the graph is
    /// directed and its in-edges are stored apart.
    pub symmetrize: bool,
    /// The size check made before anything per-vertex or per-edge is allocated.
    pub fit: Fit,
}

/// Check that a build of `n` vertices and `edges` input edges fits at its peak (the graph at
/// its bound size and the builder's cursors).
fn check(
    name: &str,
    implies: &str,
    opts: BuildOptions,
    weighted: bool,
    n: u64,
    edges: u64,
) -> Result<()> {
    let shape = shape_of(opts, weighted, n, edges);
    opts.fit.check(name, implies, shape, shape.builder_bytes())
}

/// The graph `n` vertices and `edges` edges make under `opts` (both arcs of an edge when
/// symmetrizing).
fn shape_of(opts: BuildOptions, weighted: bool, n: u64, edges: u64) -> Shape {
    Shape {
        vertices: n,
        arcs: if opts.symmetrize {
            edges.saturating_mul(2)
        } else {
            edges
        },
        directed: !opts.symmetrize,
        weighted,
    }
}

/// Below this many vertices the per-vertex arrays are too small to be worth a look at /proc.
const CHECK_FROM: u64 = 1 << 20;

/// The share of the room (in quarters) that the graph, the builder's arrays and a held edge
/// list may take together; the rest is left to whatever else runs on the machine.
const HOLD_QUARTERS: u64 = 3;

/// Build a CSR from `src`. `before_alloc(n)` runs once the vertex count is known and before any
/// graph array exists, so a kernel can fault its own arrays in first when the layout says so.
pub fn build(
    src: &mut dyn EdgeSource,
    opts: BuildOptions,
    layout: &Layout,
    before_alloc: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<(Csr, BuildStats)> {
    let weighted = src.weighted();
    let declared = src.vertices();
    let name = src.name();
    let t = Instant::now();
    let mut out_deg: Vec<u32> = Vec::new();
    let mut in_deg: Vec<u32> = Vec::new();
    if let Some(d) = declared {
        let edges = src.declared_edges();
        let implies = match edges {
            Some(m) => format!(
                "declares {} vertices and {} edges",
                count(d as u64),
                count(m)
            ),
            None => format!("declares {} vertices", count(d as u64)),
        };
        check(
            &name,
            &implies,
            opts,
            weighted,
            d as u64,
            edges.unwrap_or(0),
        )?;
        out_deg.resize(d, 0);
        if !opts.symmetrize {
            in_deg.resize(d, 0);
        }
    }
    let mut self_loops = 0u64;
    let mut edges = 0u64;
    let mut max_id: Option<u32> = None;
    // Hold the edges while the graph, the builder's arrays and the held list, at the larger of
    // the edges read so far and the count the source announces, fit in the budget.
    let hint = src.edges_hint().unwrap_or(0);
    let budget = opts.fit.room_bytes().map(|r| r / 4 * HOLD_QUARTERS);
    let mut held = budget.map(|_| Held::new(weighted));
    let holds = |n: u64, edges: u64| {
        let edges = edges.max(hint);
        let shape = shape_of(opts, weighted, n, edges);
        let need = opts
            .fit
            .need(shape, shape.builder_bytes())
            .saturating_add(edges.saturating_mul(Held::bytes_per_edge(weighted)));
        budget.is_some_and(|b| need <= b)
    };
    let grow = |v: u32, edges: u64| -> Result<()> {
        if let Some(d) = declared {
            return Err(Error::Invalid(format!(
                "{name}: vertex id {v} is beyond the declared {} vertices",
                count(d as u64)
            )));
        }
        let n = v as u64 + 1;
        if n < CHECK_FROM {
            return Ok(());
        }
        let implies = format!("vertex id {v} implies {} vertices", count(n));
        check(&name, &implies, opts, weighted, n, edges)
    };
    src.each_chunk(&mut |chunk| {
        let Some(top) = chunk
            .par_iter()
            .with_min_len(PAR)
            .map(|e| e.u.max(e.v))
            .max()
        else {
            return Ok(());
        };
        edges += chunk.len() as u64;
        max_id = Some(max_id.map_or(top, |m| m.max(top)));
        if top as usize >= out_deg.len() {
            grow(top, edges)?;
            // Ids are u32: never more than 2^32 vertices.
            let len = (top as usize + 1).max((out_deg.len() * 3 / 2).min(1 << 32));
            out_deg.resize(len, 0);
            if !opts.symmetrize {
                in_deg.resize(len, 0);
            }
        }
        let inc = (!opts.symmetrize).then_some(&mut in_deg[..]);
        self_loops += owned::count(chunk, &mut out_deg, inc);
        if held.is_some() && holds(out_deg.len() as u64, edges) {
            if let Some(h) = held.as_mut() {
                h.record(chunk);
            }
        } else {
            held = None;
        }
        Ok(())
    })?;
    // A vertex gains at most one arc per edge, so counters can wrap only past 2^32 edges;
    // the sum of the degrees tells whether one did.
    let sum = |d: &[u32]| d.par_iter().map(|&x| x as u64).sum::<u64>();
    let kept = edges - self_loops;
    let want = if opts.symmetrize { 2 * kept } else { kept };
    if sum(&out_deg) != want || (!opts.symmetrize && sum(&in_deg) != kept) {
        return Err(Error::Invalid(format!(
            "{name}: a vertex has more than 2^32 - 1 arcs"
        )));
    }
    if let (Some(d), Some(m)) = (declared, max_id) {
        if m as usize >= d {
            return Err(Error::Invalid(format!(
                "{name}: vertex id {m} is beyond the declared {} vertices",
                count(d as u64)
            )));
        }
    }
    let seen = max_id.map(|m| m as usize + 1).unwrap_or(0);
    let n = declared.unwrap_or(seen);
    if n == 0 {
        return Err(Error::Invalid(format!(
            "{name}: the graph is empty: no edges and no vertices"
        )));
    }
    if n as u64 >= CHECK_FROM || kept >= CHECK_FROM {
        let implies = format!("{} vertices and {} edges", count(n as u64), count(kept));
        check(&name, &implies, opts, weighted, n as u64, kept)?;
    }
    out_deg.resize(n, 0);
    if !opts.symmetrize {
        in_deg.resize(n, 0);
    }
    let count_ns = t.elapsed().as_nanos() as u64;

    before_alloc(n)?;
    let t = Instant::now();
    let directed = !opts.symmetrize;
    let mut side = Sides::create(layout, &out_deg, directed.then_some(&in_deg[..]), weighted)?;
    drop(out_deg);
    drop(in_deg);
    let alloc_ns = t.elapsed().as_nanos() as u64;

    let t = Instant::now();
    let mut out_cur: Vec<u64> = side.out.offsets[..n].to_vec();
    let mut in_cur: Vec<u64> = side
        .inc
        .as_ref()
        .map(|a| a.offsets[..n].to_vec())
        .unwrap_or_default();
    let mut full = false;
    {
        let inc = side.inc.as_mut().map(|a| (a, &mut in_cur[..]));
        let mut placer = owned::Placer::new(&mut side.out, &mut out_cur, inc);
        let mut place = |chunk: &[Edge]| {
            full |= !placer.place(chunk);
            Ok(())
        };
        match &held {
            Some(h) => h.replay(&mut place)?,
            None => src.each_chunk(&mut place)?,
        }
    }
    drop(held);
    let complete = owned::complete(&out_cur, &side.out.offsets)
        && side
            .inc
            .as_ref()
            .is_none_or(|a| owned::complete(&in_cur, &a.offsets));
    if full || !complete {
        return Err(Error::Invalid(format!(
            "{name}: the input changed between the builder's two readings"
        )));
    }
    drop(out_cur);
    drop(in_cur);
    let place_ns = t.elapsed().as_nanos() as u64;
    let arcs_placed = side.out.edges.len() as u64;

    let t = Instant::now();
    normalize(&mut side.out)?;
    if let Some(inc) = side.inc.as_mut() {
        normalize(inc)?;
    }
    let normalize_ns = t.elapsed().as_nanos() as u64;
    let csr = Csr::new(directed, side.out, side.inc);
    let stats = BuildStats {
        vertices: n as u64,
        arcs_placed,
        arcs: csr.arcs(),
        self_loops,
        count_ns,
        alloc_ns,
        place_ns,
        normalize_ns,
    };
    Ok((csr, stats))
}

/// Build with the default layout (the system's pages, the natural order) and no hook, for
/// tools and tests that do not study page placement.
pub fn build_default(src: &mut dyn EdgeSource, symmetrize: bool) -> Result<Csr> {
    build(
        src,
        BuildOptions {
            symmetrize,
            ..BuildOptions::default()
        },
        &Layout::default(),
        &mut |_| Ok(()),
    )
    .map(|(g, _)| g)
}

/// The edge list held in memory by the builder's first pass, so that the second replays it
/// instead of reading (or generating) the input again: 8 bytes an edge without weights, 12
/// with. Held only while it fits beside the graph with room to spare (see [`build`]).
enum Held {
    Pairs(Vec<Vec<[u32; 2]>>),
    Edges(Vec<Vec<Edge>>),
}

impl Held {
    fn new(weighted: bool) -> Held {
        if weighted {
            Held::Edges(Vec::new())
        } else {
            Held::Pairs(Vec::new())
        }
    }

    fn bytes_per_edge(weighted: bool) -> u64 {
        if weighted {
            12
        } else {
            8
        }
    }

    fn record(&mut self, chunk: &[Edge]) {
        match self {
            Held::Pairs(all) => all.push(
                chunk
                    .par_iter()
                    .with_min_len(PAR)
                    .map(|e| [e.u, e.v])
                    .collect(),
            ),
            Held::Edges(all) => all.push(chunk.to_vec()),
        }
    }

    fn replay(&self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()> {
        match self {
            Held::Pairs(all) => {
                let mut buf = Vec::new();
                for c in all {
                    buf.clear();
                    buf.par_extend(c.par_iter().with_min_len(PAR).map(|&[u, v]| Edge {
                        u,
                        v,
                        w: 1,
                    }));
                    f(&buf)?;
                }
            }
            Held::Edges(all) => {
                for c in all {
                    f(c)?;
                }
            }
        }
        Ok(())
    }
}

struct Sides {
    out: Adjacency,
    inc: Option<Adjacency>,
}

impl Sides {
    fn create(
        layout: &Layout,
        out_deg: &[u32],
        in_deg: Option<&[u32]>,
        weighted: bool,
    ) -> Result<Sides> {
        let total = |d: &[u32]| d.iter().map(|&x| x as u64).sum::<u64>() as usize;
        let mut out = Partial::default();
        let mut inc = Partial::default();
        for name in layout.order.arrange(GRAPH_REGIONS) {
            match name {
                "offsets" => out.offsets = Some(offsets(layout, "offsets", "offsets", out_deg)?),
                "edges" => {
                    out.edges = Some(layout.region("edges", "edges", total(out_deg))?);
                }
                "weights" if weighted => {
                    out.weights = Some(layout.region("weights", "weights", total(out_deg))?);
                    if let Some(d) = in_deg {
                        inc.weights = Some(layout.region("weights", "in-weights", total(d))?);
                    }
                }
                "in-offsets" => {
                    if let Some(d) = in_deg {
                        inc.offsets = Some(offsets(layout, "in-offsets", "in-offsets", d)?);
                    }
                }
                "in-edges" => {
                    if let Some(d) = in_deg {
                        inc.edges = Some(layout.region("in-edges", "in-edges", total(d))?);
                    }
                }
                _ => {}
            }
        }
        let out = out.finish()?;
        let inc = match in_deg {
            Some(_) => Some(inc.finish()?),
            None => None,
        };
        Ok(Sides { out, inc })
    }
}

/// Arrays of one side as they are created, in whatever order the layout asks.
#[derive(Default)]
struct Partial {
    offsets: Option<Region<u64>>,
    edges: Option<Region<u32>>,
    weights: Option<Region<u32>>,
}

impl Partial {
    fn finish(self) -> Result<Adjacency> {
        let missing = || Error::Invalid("internal: a graph array was not created".into());
        Ok(Adjacency {
            offsets: self.offsets.ok_or_else(missing)?,
            edges: self.edges.ok_or_else(missing)?,
            weights: self.weights,
        })
    }
}

fn offsets(layout: &Layout, group: &str, name: &str, deg: &[u32]) -> Result<Region<u64>> {
    let mut r: Region<u64> = layout.region(group, name, deg.len() + 1)?;
    let mut acc = 0u64;
    for (i, &d) in deg.iter().enumerate() {
        r[i] = acc;
        acc += d as u64;
    }
    r[deg.len()] = acc;
    Ok(r)
}

/// Edges per task when a chunk is counted or placed in parallel.
const PAR: usize = 1 << 14;

const BLOCK: usize = 4096;

/// Sort every list, drop duplicate neighbours (keeping the smallest weight) and self-loops,
/// compact, truncate.
pub(crate) fn normalize(a: &mut Adjacency) -> Result<()> {
    let n = a.offsets.len() - 1;
    let off: &[u64] = &a.offsets;
    // Disjoint per-block slices of the edge (and weight) arrays, processed in parallel.
    let mut jobs = Vec::with_capacity(n / BLOCK + 1);
    let mut edges_rest: &mut [u32] = &mut a.edges;
    let mut weights_rest: Option<&mut [u32]> = a.weights.as_deref_mut();
    for b0 in (0..n).step_by(BLOCK) {
        let b1 = (b0 + BLOCK).min(n);
        let len = (off[b1] - off[b0]) as usize;
        let (e, rest) = std::mem::take(&mut edges_rest).split_at_mut(len);
        edges_rest = rest;
        let w = match weights_rest.take() {
            Some(ws) => {
                let (w, rest) = ws.split_at_mut(len);
                weights_rest = Some(rest);
                Some(w)
            }
            None => None,
        };
        jobs.push((b0, b1, e, w));
    }
    let new_deg: Vec<Vec<u32>> = jobs
        .into_par_iter()
        .map(|(b0, b1, e, mut w)| {
            let base = off[b0];
            (b0..b1)
                .map(|v| {
                    let r = (off[v] - base) as usize..(off[v + 1] - base) as usize;
                    match w.as_deref_mut() {
                        None => dedup_sorted(&mut e[r], v as u32),
                        Some(w) => dedup_sorted_weighted(&mut e[r.clone()], &mut w[r], v as u32),
                    }
                })
                .collect()
        })
        .collect();
    // Compact left, block by block.
    let mut write = 0u64;
    let mut v = 0usize;
    for block in new_deg {
        for d in block {
            let start = a.offsets[v];
            let (s, d64) = (start as usize, d as usize);
            a.edges.copy_within(s..s + d64, write as usize);
            if let Some(w) = a.weights.as_mut() {
                w.copy_within(s..s + d64, write as usize);
            }
            a.offsets[v] = write;
            write += d as u64;
            v += 1;
        }
    }
    a.offsets[n] = write;
    a.edges.truncate(write as usize)?;
    if let Some(w) = a.weights.as_mut() {
        w.truncate(write as usize)?;
    }
    Ok(())
}

/// Sort `e` (the list of vertex `me`) and keep one of each neighbour, itself excluded.
fn dedup_sorted(e: &mut [u32], me: u32) -> u32 {
    e.sort_unstable();
    let mut k = 0;
    for i in 0..e.len() {
        if e[i] != me && (k == 0 || e[i] != e[k - 1]) {
            e[k] = e[i];
            k += 1;
        }
    }
    k as u32
}

fn dedup_sorted_weighted(e: &mut [u32], w: &mut [u32], me: u32) -> u32 {
    let mut pairs: Vec<u64> = e
        .iter()
        .zip(w.iter())
        .map(|(&v, &x)| (v as u64) << 32 | x as u64)
        .collect();
    pairs.sort_unstable();
    let mut k = 0;
    for &p in &pairs {
        let v = (p >> 32) as u32;
        if v != me && (k == 0 || e[k - 1] != v) {
            e[k] = v;
            w[k] = p as u32;
            k += 1;
        }
    }
    k as u32
}

/// Edges from a slice in memory, for tests and small tools.
#[derive(Debug, Clone)]
pub struct VecSource {
    /// The edges.
    pub edges: Vec<Edge>,
    /// Whether the weights mean anything.
    pub weighted: bool,
    /// Declared vertex count.
    pub vertices: Option<usize>,
}

impl EdgeSource for VecSource {
    fn each_chunk(&mut self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()> {
        for c in self.edges.chunks(1 << 16) {
            f(c)?;
        }
        Ok(())
    }

    fn weighted(&self) -> bool {
        self.weighted
    }

    fn vertices(&self) -> Option<usize> {
        self.vertices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(u: u32, v: u32, w: u32) -> Edge {
        Edge { u, v, w }
    }

    fn build_vec(edges: Vec<Edge>, weighted: bool, symmetrize: bool) -> Csr {
        let mut src = VecSource {
            edges,
            weighted,
            vertices: None,
        };
        build_default(&mut src, symmetrize).expect("build")
    }

    #[test]
    fn symmetric_drops_duplicates_and_self_loops() {
        let g = build_vec(
            vec![e(0, 1, 1), e(1, 0, 1), e(0, 1, 1), e(2, 2, 1), e(3, 1, 1)],
            false,
            true,
        );
        assert_eq!(g.n(), 4);
        assert!(!g.directed());
        assert_eq!(g.out_neighbors(0), [1]);
        assert_eq!(g.out_neighbors(1), [0, 3]);
        assert_eq!(g.out_neighbors(2), [] as [u32; 0]);
        assert_eq!(g.arcs(), 4);
        assert_eq!(g.edges(), 2);
        assert_eq!(g.in_neighbors(3), [1]);
    }

    #[test]
    fn directed_keeps_both_sides_and_smallest_weight() {
        let g = build_vec(
            vec![e(0, 2, 9), e(0, 2, 4), e(1, 2, 7), e(2, 0, 1)],
            true,
            false,
        );
        assert!(g.directed());
        assert_eq!(g.out_neighbors(0), [2]);
        assert_eq!(g.out_weights(0), [4]);
        assert_eq!(g.in_neighbors(2), [0, 1]);
        assert_eq!(g.in_neighbors(0), [2]);
        assert_eq!(g.out_degree(2), 1);
        assert_eq!(g.in_degree(2), 2);
    }

    #[test]
    fn declared_count_is_checked_and_empty_refused() {
        let mut src = VecSource {
            edges: vec![e(0, 5, 1)],
            weighted: false,
            vertices: Some(3),
        };
        let err = build(
            &mut src,
            BuildOptions {
                symmetrize: true,
                ..BuildOptions::default()
            },
            &Layout::default(),
            &mut |_| Ok(()),
        )
        .expect_err("beyond declared");
        assert!(err.to_string().contains("beyond the declared 3"), "{err}");
        let mut src = VecSource {
            edges: vec![],
            weighted: false,
            vertices: None,
        };
        assert!(build(
            &mut src,
            BuildOptions {
                symmetrize: true,
                ..BuildOptions::default()
            },
            &Layout::default(),
            &mut |_| Ok(())
        )
        .is_err());
    }

    #[test]
    fn before_alloc_sees_the_vertex_count() {
        let mut src = VecSource {
            edges: vec![e(0, 9, 1)],
            weighted: false,
            vertices: None,
        };
        let mut seen = 0;
        build(
            &mut src,
            BuildOptions {
                symmetrize: true,
                ..BuildOptions::default()
            },
            &Layout::default(),
            &mut |n| {
                seen = n;
                Ok(())
            },
        )
        .expect("build");
        assert_eq!(seen, 10);
    }

    /// Counts how often the builder reads its source.
    struct Passes<S> {
        src: S,
        passes: usize,
    }

    impl<S: EdgeSource> EdgeSource for Passes<S> {
        fn each_chunk(&mut self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()> {
            self.passes += 1;
            self.src.each_chunk(f)
        }

        fn weighted(&self) -> bool {
            self.src.weighted()
        }

        fn vertices(&self) -> Option<usize> {
            self.src.vertices()
        }

        fn edges_hint(&self) -> Option<u64> {
            self.src.edges_hint()
        }
    }

    #[test]
    fn a_held_edge_list_builds_the_same_graph_in_one_reading() {
        use crate::gen::{Generator, Spec};
        let spec: Spec = "kron:10".parse().expect("spec");
        for (weighted, symmetrize) in [(false, true), (true, true), (true, false)] {
            let run = |cap_bytes: Option<u64>| {
                let mut src = Passes {
                    src: Generator::new(spec, 3, weighted),
                    passes: 0,
                };
                let opts = BuildOptions {
                    symmetrize,
                    fit: Fit {
                        cap_bytes,
                        ..Fit::default()
                    },
                };
                let (g, _) =
                    build(&mut src, opts, &Layout::default(), &mut |_| Ok(())).expect("build");
                (g, src.passes)
            };
            // Under an 80 MiB cap the graph passes the check, but three quarters of the cap
            // are less than the check's own slack, so nothing is held and the source is read
            // twice.
            let ((held, one), (streamed, two)) = (run(None), run(Some(80 << 20)));
            assert_eq!((one, two), (1, 2));
            assert_eq!(held.arcs(), streamed.arcs());
            for v in 0..held.n() as u32 {
                assert_eq!(held.out_neighbors(v), streamed.out_neighbors(v));
                assert_eq!(held.in_neighbors(v), streamed.in_neighbors(v));
                if weighted {
                    assert_eq!(held.out_weights(v), streamed.out_weights(v));
                }
            }
        }
    }

    /// Gives one edge more (or, `fewer`, one less) on its second reading than on its first.
    struct Changes {
        passes: usize,
        fewer: bool,
    }

    impl EdgeSource for Changes {
        fn each_chunk(&mut self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()> {
            self.passes += 1;
            let mut edges = vec![e(0, 1, 1), e(1, 2, 1), e(2, 3, 1), e(3, 0, 1)];
            if self.passes > 1 {
                if self.fewer {
                    edges.pop();
                } else {
                    edges.push(e(2, 1, 1));
                }
            }
            f(&edges)
        }

        fn weighted(&self) -> bool {
            false
        }

        fn vertices(&self) -> Option<usize> {
            Some(4)
        }
    }

    #[test]
    fn an_input_that_changes_between_its_two_readings_is_refused_in_any_pool() {
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            for (symmetrize, fewer) in [(true, false), (false, false), (true, true), (false, true)]
            {
                let opts = BuildOptions {
                    symmetrize,
                    // Too little room to hold the edges: the source is read twice.
                    fit: Fit {
                        cap_bytes: Some(80 << 20),
                        ..Fit::default()
                    },
                };
                let mut src = Changes { passes: 0, fewer };
                let err = pool
                    .install(|| build(&mut src, opts, &Layout::default(), &mut |_| Ok(())))
                    .map(|_| ())
                    .expect_err("the lists do not match their counts");
                assert_eq!(src.passes, 2);
                assert!(
                    err.to_string().contains("changed between"),
                    "{threads} threads, symmetrize {symmetrize}, fewer {fewer}: {err}"
                );
            }
        }
    }
}
