//! Triangle counting: every triangle is found once, from one of its vertices, whose list's
//! elements (its candidates) are looked up from the lists of those elements: through a bitmap
//! where they were marked, or, in id order for a vertex whose whole list holds at most 8, by a
//! scan of the few.
//!
//! Which vertex finds it depends on the degrees, as in the GAP suite's hybrid:
//! - **Skewed degrees** (the sampled mean degree above 1.3 × the median, and id order sampled
//!   to look up more than ranking costs): vertices are ranked by (degree, id) and every edge
//!   is oriented from the lower rank to the higher, which bounds every list by about √(2m);
//!   the lowest rank finds the triangle. The oriented graph is stored in rank ids, so the
//!   hubs' short lists sit together at the end. Ranking and orienting are part of the
//!   kernel's time (the GAP suite likewise counts its relabelling); the rank and the oriented
//!   graph are "property" regions, created by the first run that ranks.
//! - **Even degrees** (uniform random graphs, road networks): the graph's own lists serve as
//!   they are, and the highest id finds the triangle, from the part of its list below it.
//!
//! Each pool thread has a bitmap of n bits (the "frontier-marks" region: threads × n / 8
//! bytes). [`verify_count`] counts with a serial marking method of its own.

use std::sync::atomic::AtomicU64;

use hugewise_mem::Region;
use rayon::prelude::*;

use crate::csr::{RegionReport, RegionReportExt, Side};
use crate::kernels::{Kernel, Outcome};
use crate::probe::{Off, Probe, Span, Streams, Tracer};
use crate::rng::SplitMix64;
use crate::sampler::Sampled;
use crate::{Csr, Layout, Result};

/// Triangle counting with its oriented graph.
#[derive(Debug)]
pub struct Tc {
    layout: Layout,
    arrays: Option<Dag>,
    marks: Option<Region<u64>>,
    triangles: u64,
    ranked: bool,
}

/// Vertices sampled to decide whether ranking pays.
const SAMPLES: usize = 1000;
/// How many lists ahead the counting loop prefetches.
const AHEAD: usize = 4;
/// Ranking pays when counting in id order would look up this many times more per vertex than
/// ranking and orienting cost (a sort, log2 n a vertex, and two passes over the arcs).
const RANK_COST: f64 = 2.0;

/// The oriented graph, relabelled by rank so that every list holds higher ranks only.
#[derive(Debug)]
struct Dag {
    rank: Region<u32>,
    offsets: Region<u64>,
    edges: Region<u32>,
}

impl Tc {
    /// Arrays are made by the first run, when the edge count is known.
    pub fn new(layout: &Layout) -> Tc {
        Tc {
            layout: layout.clone(),
            arrays: None,
            marks: None,
            triangles: 0,
            ranked: false,
        }
    }

    fn arrays(&mut self, n: usize, m: usize) -> Result<Dag> {
        match self.arrays.take() {
            Some(d) if d.rank.len() == n && d.edges.len() >= m => Ok(d),
            _ => Ok(Dag {
                rank: self.layout.region("property", "property-rank", n)?,
                offsets: self
                    .layout
                    .region("property", "property-dag-offsets", n + 1)?,
                edges: self.layout.region("property", "property", m)?,
            }),
        }
    }
}

impl Tc {
    fn body<T: Tracer>(&mut self, g: &Csr, t: &T) -> Result<()> {
        self.ranked = worth_ranking(g, &mut t.probe());
        let mut marks = self.marks(g.n())?;
        self.triangles = if self.ranked {
            self.count_ranked(g, &mut marks, t)?
        } else {
            count(g.out_side(), Order::Id, &mut marks, t)
        };
        self.marks = Some(marks);
        Ok(())
    }
}

impl Kernel for Tc {
    fn run(&mut self, g: &Csr, _: &[u32]) -> Result<()> {
        self.body(g, &Off)
    }

    fn trace(&mut self, g: &Csr, _: &[u32], t: &Streams) -> Result<()> {
        self.body(g, t)
    }

    fn sample(&mut self, g: &Csr, _: &[u32], s: &Sampled<'_>) -> Result<()> {
        self.body(g, s)
    }

    fn outcome(&self, _: &Csr) -> Outcome {
        Outcome::Tc {
            triangles: self.triangles,
            ranked: self.ranked,
        }
    }

    fn verify(&self, g: &Csr, _: &[u32]) -> std::result::Result<(), String> {
        let want = verify_count(g);
        if want == self.triangles {
            Ok(())
        } else {
            Err(format!(
                "counted {} triangles but the serial count is {want}",
                self.triangles
            ))
        }
    }

    fn regions(&self) -> Result<Vec<RegionReport>> {
        let mut v = Vec::new();
        if let Some(d) = &self.arrays {
            v.push(RegionReport::of(&d.edges)?);
            v.push(RegionReport::of(&d.offsets)?);
            v.push(RegionReport::of(&d.rank)?);
        }
        if let Some(m) = &self.marks {
            v.push(RegionReport::of(m)?);
        }
        Ok(v)
    }

    fn spans(&self) -> Vec<Span> {
        let mut v = Vec::new();
        if let Some(d) = &self.arrays {
            v.push(Span::of(&d.edges));
            v.push(Span::of(&d.offsets));
            v.push(Span::of(&d.rank));
        }
        if let Some(m) = &self.marks {
            v.push(Span::of(m));
        }
        v
    }
}

impl Tc {
    /// Rank, orient into the "property" arrays, and count. The order being sorted is heap
    /// scratch (untraced); the rank, the oriented offsets and lists are traced.
    fn count_ranked<T: Tracer>(&mut self, g: &Csr, marks: &mut Region<u64>, t: &T) -> Result<u64> {
        let n = g.n();
        let mut dag = self.arrays(n, g.edges() as usize)?;
        let out = g.out_side();
        // Rank by (degree, id): ranks grow towards the hubs.
        let mut order: Vec<u64> = (0..n as u32)
            .into_par_iter()
            .map_init(
                || t.probe(),
                |p, v| (p.degree(out, v) as u64) << 32 | v as u64,
            )
            .collect();
        order.par_sort_unstable();
        {
            let rank = hugewise_sys::atomic::u32s(&mut dag.rank);
            order.par_iter().enumerate().for_each_init(
                || t.probe(),
                |p, (r, &key)| p.store(&rank[key as u32 as usize], r as u32),
            );
        }
        let rank: &[u32] = &dag.rank;
        let vertex_of = |r: usize| order[r] as u32;
        dag.offsets[..n]
            .par_iter_mut()
            .enumerate()
            .with_min_len(1024)
            .for_each_init(
                || t.probe(),
                |p, (r, d)| {
                    let mut ups = 0u64;
                    for w in p.neighbors(out, vertex_of(r)) {
                        let w = p.read(w);
                        ups += u64::from(p.read(&rank[w as usize]) as usize > r);
                    }
                    p.write(d, ups)
                },
            );
        let mut acc = 0u64;
        {
            let mut p = t.probe();
            for o in dag.offsets[..n].iter_mut() {
                let d = p.read(o);
                p.write(o, acc);
                acc += d;
            }
            p.write(&mut dag.offsets[n], acc);
        }
        {
            let off: &[u64] = &dag.offsets;
            let mut rest: &mut [u32] = &mut dag.edges[..acc as usize];
            let mut lists = Vec::with_capacity(n);
            for r in 0..n {
                let len = (off[r + 1] - off[r]) as usize;
                let (mine, tail) = std::mem::take(&mut rest).split_at_mut(len);
                lists.push(mine);
                rest = tail;
            }
            lists
                .into_par_iter()
                .enumerate()
                .with_min_len(1024)
                .for_each_init(
                    || t.probe(),
                    |p, (r, list)| {
                        let mut slots = list.iter_mut();
                        for w in p.neighbors(out, vertex_of(r)) {
                            let w = p.read(w);
                            let x = p.read(&rank[w as usize]);
                            if x as usize > r {
                                let Some(slot) = slots.next() else { break };
                                p.write(slot, x);
                            }
                        }
                    },
                );
        }
        drop(order);
        let dag = self.arrays.insert(dag);
        let side = Side {
            offsets: &dag.offsets,
            edges: &dag.edges,
            weights: &[],
        };
        Ok(count(side, Order::Rank, marks, t))
    }

    /// One bitmap of n bits per pool thread, kept across runs.
    fn marks(&mut self, n: usize) -> Result<Region<u64>> {
        let len = rayon::current_num_threads() * n.div_ceil(64).max(1);
        match self.marks.take() {
            Some(m) if m.len() == len => Ok(m),
            _ => self.layout.region("frontier", "frontier-marks", len),
        }
    }
}

/// Whether ranking pays: the degrees are skewed (the GAP suite's test: the degrees of a sample
/// of non-isolated vertices have a mean above 1.3 × their median), and counting in id order
/// would look up more per vertex than ranking costs ([`RANK_COST`]). The suite asks for a mean
/// degree of at least 10 in place of the second test; cnr-2000, a web graph of mean degree 8.4,
/// fails it, and in id order the lists below its hubs hold thousands (1.1 s a count for the
/// suite against 42 ms ranked).
fn worth_ranking<P: Probe>(g: &Csr, p: &mut P) -> bool {
    let n = g.n();
    if n == 0 || !skewed(g, p) {
        return false;
    }
    let per_vertex = (n as f64).log2() + 2.0 * g.arcs() as f64 / n as f64;
    id_order_lookups(g, p) > RANK_COST * per_vertex
}

/// The GAP suite's test of skew: the degrees of a sample of non-isolated vertices (from a
/// fixed seed) have a mean above 1.3 × their median.
fn skewed<P: Probe>(g: &Csr, p: &mut P) -> bool {
    let n = g.n();
    let out = g.out_side();
    let mut rng = SplitMix64::new(0x7c_5a3e, 0);
    let mut degrees: Vec<u64> = (0..SAMPLES * 100)
        .map(|_| p.degree(out, rng.below(n as u64) as u32) as u64)
        .filter(|&d| d > 0)
        .take(SAMPLES.min(n))
        .collect();
    if degrees.is_empty() {
        return false;
    }
    degrees.sort_unstable();
    let mean = degrees.iter().sum::<u64>() as f64 / degrees.len() as f64;
    mean / 1.3 > degrees[degrees.len() / 2] as f64
}

/// Lookups a vertex makes when counting in id order, averaged over a sample of vertices (from a
/// fixed seed): for each neighbour below it, that neighbour's list below itself.
fn id_order_lookups<P: Probe>(g: &Csr, p: &mut P) -> f64 {
    let n = g.n();
    let out = g.out_side();
    let mut rng = SplitMix64::new(0x1d_0e4d, 0);
    let samples = SAMPLES.min(n);
    let mut total = 0u64;
    for _ in 0..samples {
        let u = rng.below(n as u64) as u32;
        for v in p.neighbors(out, u) {
            let v = p.read(v);
            if v >= u {
                break;
            }
            let list = p.neighbors(out, v);
            total += list.partition_point(|&w| w < v) as u64;
        }
    }
    total as f64 / samples as f64
}

/// Which vertex of a triangle finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// Lists hold higher ranks only (the oriented graph): the lowest rank finds it.
    Rank,
    /// Lists are the graph's own, sorted by id: the highest id finds it, from the part of its
    /// list below it.
    Id,
}

/// Triangles of the graph whose lists `lists` are: every vertex marks its candidates (the
/// list, or the part below it) in its thread's bitmap, then looks up each candidate's own
/// candidates there. A lookup does not depend on the one before, unlike a step of a merge, so
/// lookups overlap; the candidates' lists are prefetched a few ahead, in two stages (offset,
/// then the list's head), as each is a likely cache and TLB miss.
fn count<T: Tracer>(lists: Side, order: Order, marks: &mut Region<u64>, t: &T) -> u64 {
    let n = lists.n();
    let words = n.div_ceil(64).max(1);
    let marks = hugewise_sys::atomic::u64s(marks);
    (0..n as u32)
        .into_par_iter()
        .with_min_len(64)
        .map_init(
            || (Marks::for_this_thread(marks, words), t.probe()),
            |(mine, p), u| {
                let list = p.neighbors(lists, u);
                // A triangle found here takes two candidates. A star's leaves have one, and
                // calling out for each cost twice the GAP suite's whole count on star:2000000.
                if list.len() < 2 {
                    return 0;
                }
                let own = match order {
                    Order::Rank => list,
                    // A short list is scanned up to u as it is counted; a long one's part below
                    // u is searched for first.
                    Order::Id if list.len() <= SHORT => return count_short(lists, list, u, p),
                    Order::Id => &list[..list.partition_point(|&v| v < u)],
                };
                mine.count(lists, own, order, p)
            },
        )
        .sum()
}

/// One thread's bitmap: its slot in the shared region, or a private one when the thread is
/// not one of the pool's.
enum Marks<'a> {
    Slot(&'a [AtomicU64]),
    Private(Vec<AtomicU64>),
}

impl<'a> Marks<'a> {
    fn for_this_thread(all: &'a [AtomicU64], words: usize) -> Marks<'a> {
        match rayon::current_thread_index() {
            Some(i) if (i + 1) * words <= all.len() => {
                Marks::Slot(&all[i * words..(i + 1) * words])
            }
            _ => Marks::Private((0..words).map(|_| AtomicU64::new(0)).collect()),
        }
    }

    /// Triangles found from a vertex whose candidates are `own`, through the bitmap.
    fn count<P: Probe>(&self, lists: Side, own: &[u32], order: Order, p: &mut P) -> u64 {
        // A triangle found here takes two of the candidates: a star's leaves, and most
        // vertices of a road network, have fewer.
        if own.len() < 2 {
            return 0;
        }
        // Only this thread touches its bitmap: relaxed loads and stores are plain moves.
        let bits = match self {
            Marks::Slot(s) => s,
            Marks::Private(v) => &v[..],
        };
        let flip = |x: u32, p: &mut P| {
            let w = &bits[x as usize / 64];
            let old = p.load(w);
            p.store(w, old ^ (1 << (x % 64)));
        };
        for x in own {
            let x = p.read(x);
            flip(x, p);
        }
        for &x in own.iter().take(2 * AHEAD) {
            lists.prefetch_offsets(x);
        }
        for &x in own.iter().take(AHEAD) {
            lists.prefetch_neighbors(x);
        }
        let mut c = 0;
        for (k, b) in own.iter().enumerate() {
            lists.prefetch_ahead(k, AHEAD, |i| own.get(i).copied());
            let b = p.read(b);
            let marked = |x: u32, p: &mut P| (p.load(&bits[x as usize / 64]) >> (x % 64)) & 1;
            match order {
                Order::Rank => {
                    for x in p.neighbors(lists, b) {
                        let x = p.read(x);
                        c += marked(x, p);
                    }
                }
                // The part above b would find each triangle a second time.
                Order::Id => {
                    for x in p.neighbors(lists, b) {
                        let x = p.read(x);
                        if x >= b {
                            break;
                        }
                        c += marked(x, p);
                    }
                }
            }
        }
        for x in own {
            let x = p.read(x);
            flip(x, p);
        }
        c
    }
}

/// In id order, a vertex's list this short is counted by [`count_short`], without the bitmap:
/// on a road network nearly every list is this short, and marking and unmarking it cost more
/// than the lookups it saves.
const SHORT: usize = 8;

/// Triangles found in id order from a vertex whose list, of at most [`SHORT`] elements, is
/// `list`: its candidates are the leading elements below `bound` (the vertex). Each element of
/// a candidate's list below it is looked for among the candidates before it (the first has
/// none; the part above it would find each triangle a second time) by a scan of a few words
/// already in L1, where [`Marks::count`] would mark and unmark them.
// Out of line: inlined into the counting loop, it left the bitmap's loop 5-12 % slower on
// urand:22 (where it never runs) for the same instructions; out of line, level with the build
// before it.
#[inline(never)]
fn count_short<P: Probe>(lists: Side, list: &[u32], bound: u32, p: &mut P) -> u64 {
    let mut c = 0;
    for (j, b) in list.iter().enumerate().skip(1) {
        let b = p.read(b);
        if b >= bound {
            break;
        }
        let before = &list[..j];
        for x in p.neighbors(lists, b) {
            let x = p.read(x);
            if x >= b {
                break;
            }
            c += u64::from(before.contains(&x));
        }
    }
    c
}

/// Serial count: rank vertices by (degree, id); for each vertex mark its higher-ranked
/// neighbours, then look for marks among the higher-ranked neighbours of each of them.
pub fn verify_count(g: &Csr) -> u64 {
    let n = g.n();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&v| (g.out_degree(v), v));
    let mut rank = vec![0u32; n];
    for (r, &v) in order.iter().enumerate() {
        rank[v as usize] = r as u32;
    }
    let higher: Vec<Vec<u32>> = (0..n as u32)
        .map(|x| {
            let rx = rank[x as usize];
            g.out_neighbors(x)
                .iter()
                .copied()
                .filter(|&y| rank[y as usize] > rx)
                .collect()
        })
        .collect();
    let mut mark = vec![false; n];
    let mut count = 0u64;
    for ups in &higher {
        for &b in ups {
            mark[b as usize] = true;
        }
        for &b in ups {
            count += higher[b as usize]
                .iter()
                .filter(|&&c| mark[c as usize])
                .count() as u64;
        }
        for &b in ups {
            mark[b as usize] = false;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{from_edges, generated};

    fn tc(g: &Csr) -> u64 {
        let mut k = Tc::new(&Layout::default());
        k.run(g, &[]).expect("run");
        match k.outcome(g) {
            Outcome::Tc { triangles, .. } => {
                k.verify(g, &[]).expect("verifies");
                triangles
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn small_graphs_by_hand() {
        let triangle = from_edges(3, &[(0, 1, 1), (1, 2, 1), (2, 0, 1)], true);
        assert_eq!(tc(&triangle), 1);
        // K4 has 4 triangles; a square with one diagonal has 2; a 4-cycle has none.
        let k4: Vec<_> = (0..4)
            .flat_map(|u| (u + 1..4).map(move |v| (u, v, 1)))
            .collect();
        assert_eq!(tc(&from_edges(4, &k4, true)), 4);
        let square = [(0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 0, 1)];
        assert_eq!(tc(&from_edges(4, &square, true)), 0);
        let mut diag = square.to_vec();
        diag.push((0, 2, 1));
        assert_eq!(tc(&from_edges(4, &diag, true)), 2);
    }

    #[test]
    fn agrees_with_the_serial_count_on_generated_graphs() {
        for spec in ["kron:13", "urand:13"] {
            let g = generated(spec, true, false);
            let t = tc(&g);
            assert!(spec.starts_with("urand") || t > 0, "{spec}");
        }
    }

    #[test]
    fn skewed_degrees_rank_and_even_ones_do_not() {
        let kron = generated("kron:13", true, false);
        let urand = generated("urand:13", true, false);
        assert!(worth_ranking(&kron, &mut Off));
        assert!(!worth_ranking(&urand, &mut Off));
        // A star's sampled degrees are its leaves' ones, even; and a leaf has no list below it.
        let star: Vec<_> = (1..200).map(|v| (0, v, 1)).collect();
        let star = from_edges(200, &star, true);
        assert!(!worth_ranking(&star, &mut Off));
        assert_eq!(id_order_lookups(&star, &mut Off), 0.0);
        // Skewed with few edges per vertex (4, as a web graph may have): the lists below its
        // hubs make id order look up far more than ranking costs, and it ranks.
        let sparse = generated("kron:13:4", true, false);
        assert!(sparse.edges() / (sparse.n() as u64) < 10);
        assert!(worth_ranking(&sparse, &mut Off));
        assert_eq!(tc(&sparse), verify_count(&sparse));
    }

    #[test]
    fn both_orders_count_the_same() {
        for spec in ["kron:12", "urand:12"] {
            let g = generated(spec, true, false);
            let want = verify_count(&g);
            let mut k = Tc::new(&Layout::default());
            let mut marks = k.marks(g.n()).expect("marks");
            assert_eq!(
                k.count_ranked(&g, &mut marks, &Off).expect("ranked"),
                want,
                "{spec} ranked"
            );
            assert_eq!(
                count(g.out_side(), Order::Id, &mut marks, &Off),
                want,
                "{spec} by id"
            );
            assert!(marks.iter().all(|&w| w == 0), "{spec}: marks left set");
        }
    }

    #[test]
    fn a_short_list_counts_what_the_bitmap_counts_vertex_by_vertex() {
        let (mut lists, mut found) = (0, 0);
        for spec in ["kron:12", "kron:13:4"] {
            let g = generated(spec, true, false);
            let side = g.out_side();
            let words = g.n().div_ceil(64);
            let marks = Marks::Private((0..words).map(|_| AtomicU64::new(0)).collect());
            for u in (0..g.n() as u32).filter(|&u| side.degree(u) <= SHORT) {
                let list = side.neighbors(u);
                let below = &list[..list.partition_point(|&v| v < u)];
                let want = marks.count(side, below, Order::Id, &mut Off);
                assert_eq!(count_short(side, list, u, &mut Off), want, "{spec}: {u}");
                lists += 1;
                found += want;
            }
        }
        // Both paths saw many short lists, and triangles among them.
        assert!(lists > 1000 && found > 100, "{lists} lists, {found} found");
    }

    #[test]
    fn a_thread_without_a_slot_counts_with_a_bitmap_of_its_own() {
        let g = generated("urand:12", true, false);
        let want = verify_count(&g);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .expect("pool");
        // One slot for three threads: the other two fall back to private bitmaps.
        let mut one: Region<u64> = Layout::default()
            .region("frontier", "frontier-marks", g.n().div_ceil(64))
            .expect("region");
        let got = pool.install(|| count(g.out_side(), Order::Id, &mut one, &Off));
        assert_eq!(got, want);
    }

    #[test]
    fn a_second_run_reuses_the_arrays_and_counts_the_same() {
        let g = generated("kron:12", true, false);
        let mut k = Tc::new(&Layout::default());
        k.run(&g, &[]).expect("first");
        let first = k.outcome(&g);
        assert!(
            matches!(first, Outcome::Tc { ranked: true, .. }),
            "{first:?}"
        );
        k.run(&g, &[]).expect("second");
        assert_eq!(k.outcome(&g), first);
        k.verify(&g, &[]).expect("verifies");
    }
}
