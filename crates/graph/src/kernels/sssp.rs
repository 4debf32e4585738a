//! Single-source shortest paths by delta-stepping (Meyer and Sanders), in the bucket-per-thread
//! form of the GAP suite: distances live in buckets of width `delta`; all threads relax the
//! shared frontier (the current bucket; a frontier of one claim, the calling thread alone),
//! each into its own buckets; a thread keeps working on
//! its own current bucket while it stays small, saving a round of synchronisation; then the
//! lowest non-empty bucket of any thread becomes the next shared frontier.
//!
//! Three things keep it fast on graphs unlike the GAP suite's (road networks, meshes, chains:
//! weights in metres, diameters of thousands of hops), where a fixed `delta` of 2 made a real
//! road network take 351 325 rounds:
//!
//! - Without a given width, [`choose_delta`] takes one from the graph's weights and degrees,
//!   and a run doubles it while its rounds keep doing little work; `--delta N` stays fixed,
//!   for runs comparable with the GAP suite.
//! - A round whose frontier is one claim (64 vertices) is relaxed on the calling thread, and a
//!   next frontier of up to 4096 vertices is gathered there: waking the pool for them cost
//!   more than the work.
//! - A thread's buckets are a ring of slots for the buckets near the current one and a heap
//!   for the few that are further ahead; the filled slots' numbers are kept in a heap, so the
//!   next bucket is a min over threads, never a scan over empty buckets, however large the
//!   distances.
//!
//! The distance array is the "property" region; the shared frontier is a "frontier" region
//! faulted in by first touch, grown if a round ever needs more. The per-thread buckets are
//! heap vectors kept across runs. Arcs are relaxed from a list of `[neighbour, weight]` pairs
//! (the "arcs" region, see [`super::arcs`]) made by the first run where it fits, else from the
//! graph's two lists. [`verify`] compares with a serial Dijkstra.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use hugewise_mem::Region;
use hugewise_sys::atomic;
use rayon::prelude::*;

use crate::csr::{RegionReport, RegionReportExt, Side};
use crate::kernels::arcs::Arcs;
use crate::kernels::{spread, Kernel, Outcome};
use crate::probe::{Off, Probe, Span, Streams, Tracer};
use crate::sampler::Sampled;
use crate::{Csr, Error, Layout, Result};

/// Distance of an unreached vertex.
pub const INF: u32 = u32::MAX;

/// The cap of a distance: a run where one reaches it has no answer.
pub const SATURATED: u32 = INF - 1;

/// A thread goes on with its own current bucket while it holds fewer vertices than this.
const LOCAL_LIMIT: usize = 1000;

/// Vertices a thread takes from the shared frontier at a time; a frontier of one claim is
/// relaxed on the calling thread.
const GRAIN: usize = 64;

/// A next frontier of at most this many vertices is gathered from the threads' buckets on the
/// calling thread: copying them takes less than waking the pool.
const SERIAL_GATHER: usize = 4096;

/// Arcs sampled to choose delta.
const SAMPLE: usize = 4096;

/// The most buckets a thread keeps in its ring; pushes further ahead wait in a heap.
const MAX_SLOTS: usize = 1 << 14;

/// Rounds in a row with little work after which a width chosen from the graph is doubled.
const LITTLE_ROUNDS: u32 = 8;

/// Vertices and arcs relaxed per thread below which a round counts as little: about what a
/// round's synchronisation costs.
const LITTLE_WORK: u64 = 1024;

/// Delta-stepping with its arrays.
#[derive(Debug)]
pub struct Sssp {
    given: Option<u32>,
    used: Option<Delta>,
    layout: Layout,
    dist: Region<u32>,
    frontier: Region<u32>,
    bins: Vec<Mutex<Bins>>,
    rounds: u32,
    arcs: Arcs,
}

/// A bucket width and how it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delta {
    /// The width the run started with.
    pub delta: u32,
    /// `given`, or the rule and the graph's figures it was chosen from (and how often the run
    /// doubled it).
    pub rule: String,
}

impl Sssp {
    /// Arrays for `n` vertices; `delta` ≥ 1, or `None` to choose it from the graph on each
    /// run (see [`choose_delta`]).
    pub fn new(layout: &Layout, n: usize, delta: Option<u32>) -> Result<Sssp> {
        Ok(Sssp {
            given: delta.map(|d| d.max(1)),
            used: None,
            layout: layout.clone(),
            dist: layout.region("property", "property", n)?,
            // Sized by a guess and grown when a round needs more; faulted in by first touch,
            // so the part never used costs no memory.
            frontier: layout.lazy_region("frontier", "frontier", (n / 4).max(GRAIN) + 1)?,
            bins: Vec::new(),
            rounds: 0,
            arcs: Arcs::default(),
        })
    }

    /// Distances of the last run.
    pub fn dist(&self) -> &[u32] {
        &self.dist
    }

    /// The bucket width of the last run and how it was set.
    pub fn delta(&self) -> Option<&Delta> {
        self.used.as_ref()
    }

    fn frontier_at_least(&mut self, len: usize) -> Result<()> {
        if self.frontier.len() < len {
            self.frontier = self.layout.lazy_region("frontier", "frontier", len)?;
        }
        Ok(())
    }
}

/// Choose the bucket width from the graph: the weights of 4096 arcs at evenly spaced places
/// and the mean degree (so the choice is the same on every run, and costs microseconds).
///
/// Wide buckets mean few rounds but vertices relaxed again and again as their distances drop
/// within a bucket; narrow ones the reverse. Delta = mean weight / (2 × mean degree) is of the
/// order Meyer and Sanders give for uniform weights (largest weight / degree), with the factor
/// that makes it the GAP suite's own 2 on the suite's Kronecker and uniform graphs (weights in
/// [1, 255], 30 and 32 arcs a vertex; a vertex's arcs lighter than delta then number about a
/// quarter). On a mesh with weights in metres it gives thousands. A run widens it further
/// while its rounds stay small (see the module's documentation).
pub fn choose_delta(g: &Csr) -> Delta {
    let weights = g.out_side().weights;
    let arcs = weights.len();
    if arcs == 0 {
        return Delta {
            delta: 1,
            rule: "1: the graph has no weighted arcs".into(),
        };
    }
    let picks = SAMPLE.min(arcs);
    let total: u64 = spread(arcs, picks).map(|i| weights[i] as u64).sum();
    let mean_weight = total as f64 / picks as f64;
    let mean_degree = arcs as f64 / g.n() as f64;
    let delta = (mean_weight / (2.0 * mean_degree))
        .round()
        .clamp(1.0, u32::MAX as f64) as u32;
    Delta {
        delta,
        rule: format!(
            "mean weight {mean_weight:.0} (of {picks} arcs) / (2 × mean degree {mean_degree:.1})"
        ),
    }
}

/// The largest of the sampled weights: a guess at the largest weight, for the ring's size
/// (heavier arcs only land in the far heap).
fn sampled_max_weight(g: &Csr) -> u32 {
    let w = g.out_side().weights;
    spread(w.len(), SAMPLE.min(w.len()))
        .map(|i| w[i])
        .max()
        .unwrap_or(1)
}

/// Ring slots for `delta` when weights reach about `max_weight`: a relaxation lands at most
/// `max_weight / delta + 1` buckets ahead of the current one.
fn slots_for(delta: u64, max_weight: u32) -> usize {
    ((max_weight as u64 / delta + 2) as usize)
        .next_power_of_two()
        .clamp(64, MAX_SLOTS)
}

/// What every relaxation in a round shares.
#[derive(Clone, Copy)]
struct Round<'a> {
    out: Side<'a>,
    dist: &'a [AtomicU32],
    /// Bucket width (below 2^32, so a bucket number is a 32-bit division away).
    delta: u32,
    /// The bucket being processed.
    bucket: u64,
    /// Where it starts: `delta · bucket`.
    start: u64,
    /// The arcs as pairs, indexed as `out.edges`; empty: read `out.edges` and `out.weights`.
    pairs: &'a [[u32; 2]],
}

impl Sssp {
    fn body<T: Tracer>(&mut self, g: &Csr, sources: &[u32], t: &T) -> Result<()> {
        let src = sources[0];
        self.arcs.prepare_in_room(g);
        let chosen = match self.given {
            Some(delta) => Delta {
                delta,
                rule: "given".into(),
            },
            None => choose_delta(g),
        };
        let mut delta = chosen.delta as u64;
        let heaviest = sampled_max_weight(g);
        let mut slots = slots_for(delta, heaviest);
        let mut widen = Widen {
            on: self.given.is_none(),
            little: 0,
            times: 0,
        };
        let threads = rayon::current_num_threads();
        if self.bins.len() != threads {
            self.bins = (0..threads).map(|_| Mutex::new(Bins::default())).collect();
        }
        for b in &self.bins {
            lock(b).reset(slots);
        }
        self.dist
            .par_iter_mut()
            .for_each_init(|| t.probe(), |p, d| p.write(d, INF));
        {
            let mut p = t.probe();
            p.write(&mut self.dist[src as usize], 0);
            p.write(&mut self.frontier[0], src);
        }
        let mut frontier_len = 1usize;
        let mut bucket = 0u64;
        let mut rounds = 0u32;
        loop {
            rounds += 1;
            let dist = atomic::u32s(&mut self.dist);
            let r = Round {
                out: g.out_side(),
                dist,
                delta: delta as u32,
                bucket,
                start: delta * bucket,
                pairs: self.arcs.pairs(),
            };
            let frontier = &self.frontier[..frontier_len];
            let cursor = AtomicUsize::new(0);
            let lowest = AtomicU64::new(u64::MAX);
            let work = AtomicU64::new(0);
            let bins = &self.bins;
            // A thread's part of the round: claims of the frontier, then its own bucket while
            // it stays small.
            let relax_part = |mine: &mut Bins, p: &mut T::Probe<'_>| {
                let mut done = 0;
                loop {
                    let start = cursor.fetch_add(GRAIN, Relaxed);
                    if start >= frontier.len() {
                        break;
                    }
                    let chunk = &frontier[start..(start + GRAIN).min(frontier.len())];
                    for (k, u) in chunk.iter().enumerate() {
                        prefetch_ahead(r, chunk, k);
                        let u = p.read(u);
                        done += relax(r, u, mine, p);
                    }
                }
                done + mine.local(r, p)
            };
            // Every thread's buckets, after the round: far entries come near, and the lowest
            // filled bucket bids for the next round.
            let settle = |mine: &mut Bins, p: &mut T::Probe<'_>| {
                mine.pull_near(bucket, dist, p);
                if let Some(b) = mine.lowest() {
                    lowest.fetch_min(b, Relaxed);
                }
            };
            if frontier.len() <= GRAIN {
                // One claim: a single thread would relax it while the others woke for nothing.
                // With GAP's `-d 2` a road mesh runs thousands of such rounds, and waking the
                // pool twice a round took 45 % of its time (road:2000x2000: 416 ms a search
                // against 230 ms with this and the serial gather below).
                let mut p = t.probe();
                let me = rayon::current_thread_index()
                    .filter(|&i| i < bins.len())
                    .unwrap_or(0);
                work.fetch_add(relax_part(&mut lock(&bins[me]), &mut p), Relaxed);
                for b in bins {
                    settle(&mut lock(b), &mut p);
                }
            } else {
                rayon::broadcast(|ctx| {
                    let mut p = t.probe();
                    let mut mine = lock(&bins[ctx.index()]);
                    work.fetch_add(relax_part(&mut mine, &mut p), Relaxed);
                    settle(&mut mine, &mut p);
                });
            }
            let mut next = lowest.load(Relaxed);
            if next == u64::MAX {
                break;
            }
            if widen.after(work.load(Relaxed), threads) {
                let wider = (delta * 2).min(u32::MAX as u64);
                let base = bucket * delta / wider;
                slots = slots_for(wider, heaviest);
                rayon::broadcast(|ctx| {
                    let mut mine = lock(&bins[ctx.index()]);
                    mine.regroup(delta, wider, base, slots, dist, &mut t.probe());
                });
                (delta, bucket) = (wider, base);
                next = bins
                    .iter()
                    .filter_map(|b| lock(b).lowest())
                    .min()
                    .unwrap_or(base);
            }
            if next - bucket >= slots as u64 {
                // Every ring is empty: the next bucket waits in a heap of far entries.
                rayon::broadcast(|ctx| {
                    lock(&bins[ctx.index()]).pull_near(next, dist, &mut t.probe())
                });
            }
            let total: usize = bins.iter().map(|b| lock(b).len_of(next)).sum();
            self.frontier_at_least(total)?;
            let frontier = atomic::u32s(&mut self.frontier);
            let end = AtomicUsize::new(0);
            let bins = &self.bins;
            let gather = |mine: &mut Bins, p: &mut T::Probe<'_>| {
                if let Some(b) = mine.take(next) {
                    let at = end.fetch_add(b.len(), Relaxed);
                    for (i, &v) in b.iter().enumerate() {
                        p.store(&frontier[at + i], v);
                    }
                    mine.give_back(b);
                }
            };
            if total <= SERIAL_GATHER {
                let mut p = t.probe();
                for b in bins {
                    gather(&mut lock(b), &mut p);
                }
            } else {
                rayon::broadcast(|ctx| gather(&mut lock(&bins[ctx.index()]), &mut t.probe()));
            }
            frontier_len = total;
            bucket = next;
        }
        self.rounds = rounds;
        self.used = Some(widen.explain(chosen, delta));
        // A capped distance is not the true one: refused with or without --verify.
        match saturated(&self.dist) {
            Some(v) => Err(Error::Invalid(saturation(v))),
            None => Ok(()),
        }
    }
}

/// The distances are capped at [`SATURATED`] (the largest below [`INF`]): the first vertex
/// whose distance reached it, whose true distance is then unknown.
///
/// Searched a block at a time, each block with a plain `contains` the compiler vectorizes: a
/// parallel `position_first` over single distances paid rayon's bookkeeping for each and
/// took 17 % of a trial on star:2000000 (about 7 ns a vertex on one thread).
fn saturated(dist: &[u32]) -> Option<usize> {
    const BLOCK: usize = 1 << 14;
    let block = dist
        .par_chunks(BLOCK)
        .position_first(|b| b.contains(&SATURATED))?;
    let from = block * BLOCK;
    dist[from..]
        .iter()
        .position(|&d| d == SATURATED)
        .map(|i| from + i)
}

/// Why a run whose vertex `v` reached [`SATURATED`] has no answer.
fn saturation(v: usize) -> String {
    format!(
        "vertex {v}: its distance reaches {SATURATED}, the largest a 32-bit distance holds; the \
         weights times the graph's diameter are too large (scale the weights down)"
    )
}

impl Kernel for Sssp {
    fn run(&mut self, g: &Csr, sources: &[u32]) -> Result<()> {
        self.body(g, sources, &Off)
    }

    fn prepare(&mut self, g: &Csr) {
        self.arcs.prepare_in_room(g);
    }

    fn trace(&mut self, g: &Csr, sources: &[u32], t: &Streams) -> Result<()> {
        self.body(g, sources, t)
    }

    fn sample(&mut self, g: &Csr, sources: &[u32], s: &Sampled<'_>) -> Result<()> {
        self.body(g, sources, s)
    }

    fn spans(&self) -> Vec<Span> {
        let mut v = vec![Span::of(&self.dist), Span::of(&self.frontier)];
        v.extend(self.arcs.region().map(Span::of));
        v
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
            delta: self.used.as_ref().map(|d| d.delta),
            delta_rule: self.used.as_ref().map(|d| d.rule.clone()),
            arc_pairs: Some(self.arcs.region().is_some()),
        }
    }

    fn verify(&self, g: &Csr, sources: &[u32]) -> std::result::Result<(), String> {
        verify(g, sources[0], &self.dist)
    }

    fn regions(&self) -> Result<Vec<RegionReport>> {
        let mut v = vec![RegionReport::of(&self.dist)?];
        v.push(RegionReport::of(&self.frontier)?);
        if let Some(pairs) = self.arcs.region() {
            v.push(RegionReport::of(pairs)?);
        }
        Ok(v)
    }
}

/// Whether to widen the buckets. A width chosen from weights and degrees can be far too narrow
/// for a graph of high diameter (a long chain; a mesh near the source, where the wavefront is
/// short), where every bucket holds a vertex or two and the run becomes a long series of
/// synchronised rounds. Doubling after [`LITTLE_ROUNDS`] little rounds in a row reaches a
/// useful width within a few dozen rounds; a graph whose rounds are large from the start
/// (Kronecker, uniform) keeps its width until its last few remote vertices.
#[derive(Debug)]
struct Widen {
    on: bool,
    little: u32,
    times: u32,
}

impl Widen {
    /// After a round that relaxed `work` vertices and arcs on `threads` threads: double now?
    fn after(&mut self, work: u64, threads: usize) -> bool {
        if !self.on || work >= LITTLE_WORK * threads as u64 {
            self.little = 0;
            return false;
        }
        self.little += 1;
        if self.little < LITTLE_ROUNDS {
            return false;
        }
        self.little = 0;
        self.times += 1;
        true
    }

    /// The choice as the result records it.
    fn explain(&self, mut chosen: Delta, last: u64) -> Delta {
        if self.times > 0 {
            chosen.rule = format!(
                "{}; doubled {} times to {last} after runs of {LITTLE_ROUNDS} rounds with \
                 fewer than {LITTLE_WORK} relaxations a thread",
                chosen.rule, self.times
            );
        }
        chosen
    }
}

/// One thread's buckets. Bucket `b` lives in ring slot `b mod slots` while it is fewer than
/// `slots` buckets ahead of the current one (all buckets below the current one are empty, so
/// no two live buckets share a slot); pushes further ahead wait in a heap. The numbers of the
/// filled slots are kept in a heap too, so finding the next bucket costs nothing per empty
/// bucket, however far apart the distances are.
#[derive(Debug, Default)]
struct Bins {
    ring: Vec<Vec<u32>>,
    filled: BinaryHeap<Reverse<u64>>,
    /// (bucket, vertex, distance when pushed): the entry is stale once the vertex's distance
    /// has dropped below that.
    far: BinaryHeap<Reverse<(u64, u32, u32)>>,
    /// A vector to swap in for a bucket taken out, keeping its room.
    spare: Vec<u32>,
}

impl Bins {
    /// Empty, with `slots` (a power of two) ring slots.
    fn reset(&mut self, slots: usize) {
        self.ring.resize_with(slots, Vec::new);
        self.ring.truncate(slots);
        self.ring.iter_mut().for_each(Vec::clear);
        self.filled.clear();
        self.far.clear();
    }

    fn slot(&self, b: u64) -> usize {
        (b & (self.ring.len() as u64 - 1)) as usize
    }

    /// File `v`, at distance `d`, in bucket `b` while the current bucket is `current`. Inlined
    /// into the relaxing loop; the rare cases (a bucket's first vertex, a far bucket) are not.
    #[inline(always)]
    fn push(&mut self, current: u64, b: u64, v: u32, d: u32) {
        let slots = self.ring.len() as u64;
        if b - current < slots {
            let slot = &mut self.ring[(b & (slots - 1)) as usize];
            if slot.is_empty() {
                filled_one(&mut self.filled, b);
            }
            slot.push(v);
        } else {
            far_one(&mut self.far, b, v, d);
        }
    }

    /// The lowest bucket held.
    fn lowest(&self) -> Option<u64> {
        let near = self.filled.peek().map(|r| r.0);
        let far = self.far.peek().map(|r| r.0 .0);
        match (near, far) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Move far entries within the ring's reach of `current` into the ring, dropping stale
    /// ones.
    fn pull_near<P: Probe>(&mut self, current: u64, dist: &[AtomicU32], p: &mut P) {
        let reach = current + self.ring.len() as u64;
        while let Some(&Reverse((b, v, d))) = self.far.peek() {
            if b >= reach {
                break;
            }
            self.far.pop();
            if p.load(&dist[v as usize]) == d {
                self.push(current, b, v, d);
            }
        }
    }

    /// File every entry again for buckets `new` wide instead of `old`, in a ring of `slots`
    /// from bucket `base` (every live entry's distance is at least `base · new`), dropping
    /// stale entries.
    fn regroup<P: Probe>(
        &mut self,
        old: u64,
        new: u64,
        base: u64,
        slots: usize,
        dist: &[AtomicU32],
        p: &mut P,
    ) {
        let mut live = Vec::new();
        for Reverse(b) in std::mem::take(&mut self.filled) {
            for &v in &self.ring[self.slot(b)] {
                let d = p.load(&dist[v as usize]);
                if d as u64 >= b * old {
                    live.push((v, d));
                }
            }
        }
        for Reverse((_, v, d)) in std::mem::take(&mut self.far) {
            if p.load(&dist[v as usize]) == d {
                live.push((v, d));
            }
        }
        self.reset(slots);
        for (v, d) in live {
            self.push(base, d as u64 / new, v, d);
        }
    }

    /// Vertices held in bucket `b`, when it is this thread's lowest.
    fn len_of(&self, b: u64) -> usize {
        match self.filled.peek() {
            Some(&Reverse(x)) if x == b => self.ring[self.slot(b)].len(),
            _ => 0,
        }
    }

    /// Take bucket `b` if it is this thread's lowest; hand the vector back with
    /// [`Bins::give_back`] to keep its room.
    fn take(&mut self, b: u64) -> Option<Vec<u32>> {
        match self.filled.peek() {
            Some(&Reverse(x)) if x == b => {
                self.filled.pop();
                let spare = std::mem::take(&mut self.spare);
                let i = self.slot(b);
                Some(std::mem::replace(&mut self.ring[i], spare))
            }
            _ => None,
        }
    }

    fn give_back(&mut self, mut v: Vec<u32>) {
        v.clear();
        self.spare = v;
    }

    /// Go on with this thread's part of the round's bucket while it stays small, saving a
    /// round; returns the vertices and arcs relaxed.
    fn local<P: Probe>(&mut self, r: Round<'_>, p: &mut P) -> u64 {
        let mut done = 0;
        while (1..LOCAL_LIMIT).contains(&self.len_of(r.bucket)) {
            let Some(work) = self.take(r.bucket) else {
                break;
            };
            for (k, &u) in work.iter().enumerate() {
                prefetch_ahead(r, &work, k);
                done += relax(r, u, self, p);
            }
            self.give_back(work);
        }
        done
    }
}

#[cold]
#[inline(never)]
fn filled_one(filled: &mut BinaryHeap<Reverse<u64>>, b: u64) {
    filled.push(Reverse(b));
}

#[cold]
#[inline(never)]
fn far_one(far: &mut BinaryHeap<Reverse<(u64, u32, u32)>>, b: u64, v: u32, d: u32) {
    far.push(Reverse((b, v, d)));
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic inside a round propagates out of broadcast; the buckets are cleared on the next
    // run, so a poisoned lock holds nothing worth refusing.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Relax `u`'s arcs if `u` still belongs to the round's bucket or later (an entry left behind
/// when its distance later dropped into an earlier bucket is stale and skipped); returns the
/// work done, 1 + the arcs relaxed.
#[inline]
fn relax<P: Probe>(r: Round<'_>, u: u32, mine: &mut Bins, p: &mut P) -> u64 {
    let du = p.load(&r.dist[u as usize]);
    if (du as u64) < r.start {
        return 0;
    }
    let range = p.range(r.out, u);
    let done = range.len() as u64 + 1;
    if r.pairs.is_empty() {
        // Unweighted graphs are refused before a run; an empty weight list relaxes nothing.
        let weights = r.out.weights.get(range.clone()).unwrap_or(&[]);
        for (v, w) in r.out.edges[range].iter().zip(weights) {
            let (v, w) = (p.read(v), p.read(w));
            relax_arc(r, du, v, w, mine, p);
        }
    } else {
        for pair in &r.pairs[range] {
            let [v, w] = p.read(pair);
            relax_arc(r, du, v, w, mine, p);
        }
    }
    done
}

/// Lower `v`'s distance to `du + w` if that is shorter, and file `v` in its new bucket.
#[inline(always)]
fn relax_arc<P: Probe>(r: Round<'_>, du: u32, v: u32, w: u32, mine: &mut Bins, p: &mut P) {
    let nd = du.saturating_add(w).min(SATURATED);
    let d = &r.dist[v as usize];
    let mut old = p.load(d);
    while nd < old {
        match p.cas_weak(d, old, nd) {
            Ok(_) => {
                mine.push(r.bucket, (nd / r.delta) as u64, v, nd);
                break;
            }
            Err(cur) => old = cur,
        }
    }
}

/// How many frontier entries ahead the relaxing loops prefetch adjacency lists.
const AHEAD: usize = 8;

/// Prefetch the arcs (pairs, or lists and weights) of the vertices a few places after `k` in
/// `work`, and the offsets of those twice as far.
#[inline]
fn prefetch_ahead(r: Round<'_>, work: &[u32], k: usize) {
    let out = r.out;
    if r.pairs.is_empty() {
        out.prefetch_ahead(k, AHEAD, |i| work.get(i).copied());
        if let Some(&x) = work.get(k + AHEAD) {
            out.prefetch_weights(x);
        }
        return;
    }
    if let Some(&x) = work.get(k + 2 * AHEAD) {
        out.prefetch_offsets(x);
    }
    if let Some(&x) = work.get(k + AHEAD) {
        if let Some(pair) = r.pairs.get(out.offsets[x as usize] as usize) {
            hugewise_sys::hint::prefetch(pair);
        }
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
            let nd = d.saturating_add(w).min(SATURATED);
            if nd < want[v as usize] {
                want[v as usize] = nd;
                heap.push(Reverse((nd, v)));
            }
        }
    }
    if let Some(v) = (0..n).find(|&v| want[v] != dist[v]) {
        return Err(format!(
            "vertex {v}: distance {} but Dijkstra says {}",
            show(dist[v]),
            show(want[v])
        ));
    }
    // Both sides cap a distance at SATURATED: agreeing there says nothing about the true
    // distance, so a capped vertex fails the check.
    match saturated(&want) {
        None => Ok(()),
        Some(v) => Err(saturation(v)),
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
    use crate::kernels::testing::{from_edges, generated, shaped};

    fn sssp(g: &Csr, src: u32, delta: Option<u32>) -> Sssp {
        let mut k = Sssp::new(&Layout::default(), g.n(), delta).expect("arrays");
        k.run(g, &[src]).expect("run");
        k
    }

    #[test]
    fn the_first_saturated_distance_is_found_in_any_block() {
        let n = 3 * (1 << 14) + 5;
        let mut dist = vec![INF; n];
        assert_eq!(saturated(&dist), None);
        for at in [n - 1, (1 << 14) + 7, (1 << 14) - 1, 0] {
            dist[at] = SATURATED;
            assert_eq!(saturated(&dist), Some(at), "{at}");
        }
        assert_eq!(saturated(&[]), None);
    }

    #[test]
    fn small_graph_by_hand() {
        // 0 -1-> 1 -1-> 2, and a long direct arc 0 -5-> 2; 3 unreachable.
        let g = from_edges(4, &[(0, 1, 1), (1, 2, 1), (0, 2, 5)], false);
        for delta in [1, 2, 100] {
            let k = sssp(&g, 0, Some(delta));
            assert_eq!(k.dist(), [0, 1, 2, INF], "delta {delta}");
            verify(&g, 0, k.dist()).expect("verifies");
        }
    }

    #[test]
    fn rounds_of_one_claim_and_of_many_give_the_distances() {
        // The centre's round is one claim (relaxed on the calling thread); its leaves, all at
        // distance 1, come back as a frontier past SERIAL_GATHER (gathered and relaxed by the
        // pool); the chain hanging from the last leaf is one claim a round again.
        let leaves = SERIAL_GATHER as u32 + GRAIN as u32 + 1;
        let mut edges: Vec<(u32, u32, u32)> = (1..=leaves).map(|v| (0, v, 1)).collect();
        let chain = 50;
        edges.extend((0..chain).map(|i| (leaves + i, leaves + i + 1, 3)));
        let n = (leaves + chain + 1) as usize;
        let g = from_edges(n, &edges, true);
        for delta in [Some(2), None] {
            let k = two_threads().install(|| sssp(&g, 0, delta));
            verify(&g, 0, k.dist()).unwrap_or_else(|e| panic!("delta {delta:?}: {e}"));
            assert!(k.dist()[1..=leaves as usize].iter().all(|&d| d == 1));
            assert_eq!(k.dist()[n - 1], 1 + 3 * chain, "delta {delta:?}");
        }
    }

    #[test]
    fn a_round_on_the_calling_thread_settles_every_threads_buckets() {
        // The centre's 2,048 middle vertices and their 131,072 leaves make a round long
        // enough for both threads to relax, so both threads' buckets fill; the leaves' weights
        // spread them over tens of thousands of buckets, most far ahead of the ring of near
        // ones. Each leaf has a tail of its own, which gets a distance only when the leaf's
        // bucket is processed. Nearly every later round is one claim, relaxed on the calling
        // thread: it must still pull the other thread's entries near and let its lowest bucket
        // bid, or that thread's leaves are never processed and their tails keep no distance
        // (settling the caller's buckets alone fails here).
        let (mids, per_mid) = (32 * GRAIN as u32, 64);
        let mut edges: Vec<(u32, u32, u32)> = (1..=mids).map(|m| (0, m, 1)).collect();
        let mut leaf = mids + 1;
        for m in 1..=mids {
            for j in 0..per_mid {
                edges.push((m, leaf, 1 + (m * 7919 + j * 104_729) % 100_000));
                edges.push((leaf, leaf + 1, 1));
                leaf += 2;
            }
        }
        let g = from_edges(leaf as usize, &edges, true);
        let pool = two_threads();
        for delta in [Some(2), Some(64)] {
            let k = pool.install(|| sssp(&g, 0, delta));
            verify(&g, 0, k.dist()).unwrap_or_else(|e| panic!("delta {delta:?}: {e}"));
            assert!(k.dist().iter().all(|&d| d < INF), "every vertex is reached");
        }
    }

    fn two_threads() -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool")
    }

    #[test]
    fn pairs_and_two_lists_give_the_same_distances() {
        for (spec, sym) in [("kron:12", true), ("urand:12", true), ("kron:11", false)] {
            let g = generated(spec, sym, true);
            let src = pick_sources(&g, 1, 5).expect("source")[0];
            let with_pairs = sssp(&g, src, Some(2));
            let Outcome::Sssp { arc_pairs, .. } = with_pairs.outcome(&g) else {
                panic!("an sssp outcome");
            };
            assert_eq!(
                arc_pairs,
                Some(true),
                "{spec}: pairs fit in any room a test has"
            );
            let mut apart = Sssp::new(&Layout::default(), g.n(), Some(2)).expect("arrays");
            // No room: the run reads the graph's two lists.
            apart.arcs.prepare(&g, Some(u64::MAX), Some(0));
            apart.run(&g, &[src]).expect("run");
            let Outcome::Sssp { arc_pairs, .. } = apart.outcome(&g) else {
                panic!("an sssp outcome");
            };
            assert_eq!(arc_pairs, Some(false), "{spec}");
            verify(&g, src, apart.dist()).unwrap_or_else(|e| panic!("{spec} apart: {e}"));
            assert_eq!(with_pairs.dist(), apart.dist(), "{spec}");
        }
    }

    #[test]
    fn verifies_on_generated_graphs_for_several_deltas() {
        for (spec, sym) in [("kron:13", true), ("urand:13", true), ("kron:11", false)] {
            let g = generated(spec, sym, true);
            for src in pick_sources(&g, 4, 2).expect("sources") {
                for delta in [Some(1), Some(2), Some(32), None] {
                    let k = sssp(&g, src, delta);
                    verify(&g, src, k.dist()).unwrap_or_else(|e| panic!("{spec} d={delta:?}: {e}"));
                }
            }
        }
    }

    #[test]
    fn verifier_catches_a_wrong_distance() {
        let g = generated("kron:10", true, true);
        let src = pick_sources(&g, 1, 1).expect("src")[0];
        let k = sssp(&g, src, Some(2));
        let mut bad = k.dist().to_vec();
        let v = (0..g.n())
            .find(|&v| bad[v] > 0 && bad[v] != INF)
            .expect("v");
        bad[v] -= 1;
        let e = verify(&g, src, &bad).expect_err("wrong");
        assert!(e.contains(&format!("vertex {v}")), "{e}");
    }

    #[test]
    fn delta_comes_from_weights_and_degrees() {
        // Weights in metres (mean about 50 000) over 4 arcs a vertex.
        let d = choose_delta(&shaped("grid:200x200"));
        assert!((5_500..7_000).contains(&d.delta), "{d:?}");
        assert!(d.rule.contains("mean weight"), "{d:?}");
        // The GAP suite's own width on its graphs, whose weights are in [1, 255].
        for spec in ["kron:16", "urand:16"] {
            let d = choose_delta(&generated(spec, true, true));
            assert_eq!(d.delta, 2, "{spec}: {d:?}");
        }
    }

    #[test]
    fn runs_say_which_delta_and_why() {
        let g = shaped("chain:5000");
        let given = sssp(&g, 0, Some(7));
        assert_eq!(
            given.delta(),
            Some(&Delta {
                delta: 7,
                rule: "given".into()
            })
        );
        // A given width stays: each vertex of the chain is a bucket of its own, and a round.
        let Outcome::Sssp { rounds, .. } = given.outcome(&g) else {
            panic!("sssp")
        };
        assert!(rounds > 4900, "{rounds}");
        let chosen = sssp(&g, 0, None);
        let d = chosen.delta().expect("delta");
        assert!(
            d.rule.contains("mean weight") && d.rule.contains("doubled"),
            "{d:?}"
        );
        let Outcome::Sssp { rounds, delta, .. } = chosen.outcome(&g) else {
            panic!("sssp")
        };
        assert_eq!(delta, Some(d.delta));
        assert!(rounds < 300, "{rounds} rounds on a chain of 5000");
        verify(&g, 0, chosen.dist()).expect("verifies");
    }

    #[test]
    fn far_buckets_wait_in_a_heap_and_come_back_in_order() {
        // Delta 1 with weights in metres: most pushes land beyond the ring.
        let g = shaped("road:40x30");
        for src in pick_sources(&g, 2, 3).expect("sources") {
            let k = sssp(&g, src, Some(1));
            verify(&g, src, k.dist()).expect("delta 1");
        }
        // Gaps of billions between distances, and arcs that saturate at INF - 1.
        let big = 3_000_000_000;
        let g = from_edges(
            5,
            &[(0, 1, big), (1, 2, big), (2, 3, big), (0, 4, 3), (4, 1, 5)],
            false,
        );
        for delta in [Some(1), Some(1000), None] {
            let mut k = Sssp::new(&Layout::default(), g.n(), delta).expect("arrays");
            let e = k.run(&g, &[0]).expect_err("a capped distance is refused");
            assert!(
                e.to_string()
                    .contains("vertex 3: its distance reaches 4294967294"),
                "{e}"
            );
            assert_eq!(k.dist(), [0, 8, big + 8, SATURATED, 3], "{delta:?}");
            let e = verify(&g, 0, k.dist()).expect_err("a capped distance is not verified");
            assert!(e.contains("vertex 3") && e.contains("32-bit"), "{e}");
        }
    }

    #[test]
    fn a_chain_of_the_heaviest_gap_weights_is_refused_without_verify() {
        let w = (1 << 31) - 1;
        let g = from_edges(4, &[(0, 1, w), (1, 2, w), (2, 3, w)], false);
        let mut k = Sssp::new(&Layout::default(), g.n(), None).expect("arrays");
        let e = k.run(&g, &[0]).expect_err("saturated").to_string();
        assert!(
            e.contains("vertex 2: its distance reaches 4294967294"),
            "{e}"
        );
    }
}
