//! Breadth-first search: parent of every reached vertex.
//!
//! Two variants over the same arrays: `TopDown` pushes from the frontier only (the seeds'
//! BFS); `DirectionOptimizing` switches to bottom-up steps (every unvisited vertex looks for a
//! parent in the frontier) while the frontier is large, with the GAP suite's α = 15, β = 18.
//! The parent array is the "property" region; the queue and the two bitmaps are "frontier"
//! regions. [`verify`] checks a result against a serial BFS written independently.
//!
//! A search starts from a parent array of `NONE`s. When the search before it listed every
//! vertex it reached in the queue (it took no bottom-up step), only those slots are reset, so
//! a search that reaches a few vertices of a large graph costs what it reaches, not n; else
//! the whole array is.
//!
//! Speed (BENCHMARKS.md compares it with the GAP suite on the same sources): a bottom-up piece
//! of work owns a run of vertices, their parent slots and their words of the next frontier,
//! and writes them with plain stores (an atomic OR per vertex found cost more than the
//! search); it takes them a word at a time. On a large graph it first picks the unreached
//! vertices that have an in-neighbour and asks for their lists, then searches those lists; on
//! a smaller one it searches the unreached vertices' lists in one pass, as there the
//! prefetches cost more than they saved. Top-down threads gather
//! the vertices they find and reserve queue room once per batch, and prefetch the lists of
//! the queue entries a few on. Each search records its steps with their times
//! ([`BfsStats::steps`], what GAP's `bfs -l` prints).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use hugewise_mem::Region;
pub use hugewise_results::kernel::{BfsMode, BfsStats, BfsStep, BfsStepKind};
// The kernel's own short names for the result model's types.
use hugewise_results::kernel::{
    BfsMode as Mode, BfsStats as Stats, BfsStep as Step, BfsStepKind as StepKind,
};
use hugewise_sys::atomic;
use rayon::prelude::*;

use crate::csr::{RegionReport, RegionReportExt, Side};
use crate::kernels::{Kernel, Outcome};
use crate::probe::{Off, Probe, Span, Streams, Tracer};
use crate::sampler::Sampled;
use crate::{Csr, Layout, Result};

/// Parent value of an unreached vertex.
pub const NONE: u32 = u32::MAX;

/// α: switch to bottom-up when the frontier's edges exceed the unexplored edges / α.
pub const ALPHA: u64 = 15;
/// β: switch back when the frontier holds fewer than n / β vertices and shrinks.
pub const BETA: u64 = 18;

/// The kernel's working arrays, created in the layout's order and reused across trials.
#[derive(Debug)]
pub struct Arrays {
    parent: Region<u32>,
    queue: Region<u32>,
    front: Region<u64>,
    next: Region<u64>,
    /// `Some(k)`: every parent slot is `NONE` but those of the vertices `queue[..k]` (what the
    /// last search reached, when it listed them all); `None`: unknown.
    written: Option<usize>,
}

impl Arrays {
    /// Create the arrays for `n` vertices.
    pub fn new(layout: &Layout, n: usize) -> Result<Arrays> {
        // A power of two, so that the bottom-up step's index into the bitmap is provably in
        // bounds (see `adopt`).
        let words = n.div_ceil(64).next_power_of_two();
        Ok(Arrays {
            parent: layout.region("property", "property", n)?,
            queue: layout.region("frontier", "frontier", n)?,
            front: layout.region("frontier", "frontier-bits", words)?,
            next: layout.region("frontier", "frontier-next-bits", words)?,
            written: None,
        })
    }

    /// Parent of each vertex after the last search (`NONE`: not reached).
    pub fn parent(&self) -> &[u32] {
        &self.parent
    }

    /// Size and backing of each array.
    pub fn regions(&self) -> Result<Vec<RegionReport>> {
        Ok(vec![
            RegionReport::of(&self.parent)?,
            RegionReport::of(&self.queue)?,
            RegionReport::of(&self.front)?,
            RegionReport::of(&self.next)?,
        ])
    }
}

/// BFS as a [`Kernel`].
#[derive(Debug)]
pub struct Bfs {
    mode: Mode,
    arrays: Arrays,
    last: Option<Stats>,
}

impl Bfs {
    /// Arrays for `n` vertices.
    pub fn new(layout: &Layout, n: usize, mode: Mode) -> Result<Bfs> {
        Ok(Bfs {
            mode,
            arrays: Arrays::new(layout, n)?,
            last: None,
        })
    }
}

impl Bfs {
    fn body<T: Tracer>(&mut self, g: &Csr, sources: &[u32], t: &T) -> Result<()> {
        self.last = Some(search(g, sources[0], self.mode, &mut self.arrays, t));
        Ok(())
    }
}

impl Kernel for Bfs {
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
        Outcome::Bfs(self.last.clone().unwrap_or(Stats {
            reached: 0,
            levels: 0,
            top_down_steps: 0,
            bottom_up_steps: 0,
            steps: Vec::new(),
        }))
    }

    fn verify(&self, g: &Csr, sources: &[u32]) -> std::result::Result<(), String> {
        verify(g, sources[0], self.arrays.parent())
    }

    fn regions(&self) -> Result<Vec<RegionReport>> {
        self.arrays.regions()
    }

    fn spans(&self) -> Vec<Span> {
        let a = &self.arrays;
        vec![
            Span::of(&a.parent),
            Span::of(&a.queue),
            Span::of(&a.front),
            Span::of(&a.next),
        ]
    }
}

/// Vertices per piece of work in the parallel loops (a multiple of 64, so that a piece owns
/// whole bitmap words and writes them with plain stores).
const GRAIN: usize = 1024;
/// How many queue entries ahead the top-down step prefetches.
const AHEAD: usize = 8;
/// Frontiers up to this many vertices are searched on the calling thread.
const SERIAL_FRONTIER: usize = 256;
/// Vertices a thread gathers before it reserves room for them in the shared queue.
const LOCAL_QUEUE: usize = 4096;
/// The last search's vertices are reset one by one while they are at most n / this many;
/// past that, writing the whole array in order is cheaper than the scattered writes.
const SPARSE_RESET: usize = 32;
/// Parent slots a thread resets at least: an array this short is reset on the calling thread,
/// without waking the pool.
const RESET_GRAIN: usize = 1 << 18;

/// Run BFS from `src`, untraced; `arrays.parent()` holds the tree afterwards.
pub fn run(g: &Csr, src: u32, mode: Mode, arrays: &mut Arrays) -> Stats {
    search(g, src, mode, arrays, &Off)
}

/// Run BFS from `src`, telling `t` every access.
pub fn search<T: Tracer>(g: &Csr, src: u32, mode: Mode, arrays: &mut Arrays, t: &T) -> Stats {
    search_with(g, src, mode, Ahead::for_lists(g.in_side()), arrays, t)
}

/// [`search`] with its bottom-up steps' way of reading lists given.
fn search_with<T: Tracer>(
    g: &Csr,
    src: u32,
    mode: Mode,
    ahead: Ahead,
    arrays: &mut Arrays,
    t: &T,
) -> Stats {
    let n = g.n();
    let (out, inc) = (g.out_side(), g.in_side());
    let Arrays {
        parent,
        queue,
        front,
        next,
        written,
    } = arrays;
    // Top-down steps share the parent array through atomics; a bottom-up step hands each
    // piece of work its own slots, and reads the frontier bitmap as plain memory.
    let parent: &mut [u32] = parent;
    let queue = atomic::u32s(queue);
    let (mut front, mut next): (&mut [u64], &mut [u64]) = (front, next);
    let mut clock = Clock::start();
    let mut steps = Vec::new();
    let reset = reset_parents(atomic::u32s(parent), queue, written.take(), t);
    clock.lap(&mut steps, StepKind::Reset, reset as u64);
    {
        let mut p = t.probe();
        p.write(&mut parent[src as usize], src);
        p.store(&queue[0], src);
    }
    let (mut head, mut tail) = (0usize, 1usize);
    let mut stats = Stats {
        reached: 1,
        levels: 0,
        top_down_steps: 0,
        bottom_up_steps: 0,
        steps,
    };
    let mut edges_to_check = g.arcs();
    let mut scout = t.probe().degree(out, src) as u64;
    while head < tail {
        stats.levels += 1;
        let go_bottom_up = mode == Mode::DirectionOptimizing && scout > edges_to_check / ALPHA;
        if go_bottom_up {
            queue_to_bitmap(&queue[head..tail], front, t);
            let mut awake = (tail - head) as u64;
            clock.lap(&mut stats.steps, StepKind::QueueToBitmap, awake);
            loop {
                let old = awake;
                awake = bottom_up_step(inc, parent, front, next, ahead, t);
                clock.lap(&mut stats.steps, StepKind::BottomUp, awake);
                stats.bottom_up_steps += 1;
                stats.reached += awake;
                std::mem::swap(&mut front, &mut next);
                if awake == 0 || (awake < old && awake <= n as u64 / BETA) {
                    break;
                }
                stats.levels += 1;
            }
            // Back to a queue of the last level found.
            head = tail;
            tail = bitmap_to_queue(front, queue, tail, n, t);
            clock.lap(
                &mut stats.steps,
                StepKind::BitmapToQueue,
                (tail - head) as u64,
            );
            scout = 1;
        } else {
            edges_to_check = edges_to_check.saturating_sub(scout);
            let (new_tail, s) = top_down_step(out, atomic::u32s(parent), queue, head, tail, t);
            clock.lap(
                &mut stats.steps,
                StepKind::TopDown,
                (new_tail - tail) as u64,
            );
            stats.top_down_steps += 1;
            stats.reached += (new_tail - tail) as u64;
            scout = s;
            head = tail;
            tail = new_tail;
        }
    }
    if head == tail && stats.levels > 0 {
        stats.levels -= 1;
    }
    // Top-down steps append every vertex they reach to the queue, and the queue is never
    // rewound, so without a bottom-up step it lists all the search wrote.
    if stats.bottom_up_steps == 0 {
        *written = Some(tail);
    }
    stats
}

/// The time of each step of a search, for its stats.
struct Clock(Instant);

impl Clock {
    fn start() -> Clock {
        Clock(Instant::now())
    }

    /// Record the step that ends now.
    fn lap(&mut self, steps: &mut Vec<Step>, kind: StepKind, vertices: u64) {
        let now = Instant::now();
        let ns = now.duration_since(self.0).as_nanos() as u64;
        steps.push(Step { kind, vertices, ns });
        self.0 = now;
    }
}

/// Make every parent slot `NONE`: only the slots of `queue[..k]` when `written` is `Some(k)`
/// and k is small, else all of them. Returns how many slots it wrote.
fn reset_parents<T: Tracer>(
    parent: &[AtomicU32],
    queue: &[AtomicU32],
    written: Option<usize>,
    t: &T,
) -> usize {
    match written {
        Some(k) if k <= parent.len() / SPARSE_RESET => {
            let mut p = t.probe();
            for q in &queue[..k] {
                let v = p.load(q);
                p.store(&parent[v as usize], NONE);
            }
            k
        }
        _ => {
            parent
                .par_iter()
                .with_min_len(RESET_GRAIN)
                .for_each_init(|| t.probe(), |p, x| p.store(x, NONE));
            parent.len()
        }
    }
}

/// Append vertices to the shared queue in batches: one atomic add per batch, not per vertex.
/// It carries its thread's probe, which sees the queue stores.
struct LocalQueue<'a, P: Probe> {
    queue: &'a [AtomicU32],
    end: &'a AtomicUsize,
    found: Vec<u32>,
    p: P,
}

impl<'a, P: Probe> LocalQueue<'a, P> {
    fn new(queue: &'a [AtomicU32], end: &'a AtomicUsize, p: P) -> Self {
        LocalQueue {
            queue,
            end,
            found: Vec::with_capacity(LOCAL_QUEUE),
            p,
        }
    }

    #[inline]
    fn push(&mut self, v: u32) {
        self.found.push(v);
        if self.found.len() == LOCAL_QUEUE {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let at = self.end.fetch_add(self.found.len(), Relaxed);
        for (slot, &v) in self.queue[at..at + self.found.len()]
            .iter()
            .zip(&self.found)
        {
            self.p.store(slot, v);
        }
        self.found.clear();
    }
}

impl<P: Probe> Drop for LocalQueue<'_, P> {
    fn drop(&mut self) {
        if !self.found.is_empty() {
            self.flush();
        }
    }
}

fn top_down_step<T: Tracer>(
    out: Side,
    parent: &[AtomicU32],
    queue: &[AtomicU32],
    head: usize,
    tail: usize,
    t: &T,
) -> (usize, u64) {
    let end = AtomicUsize::new(tail);
    // A vertex found in its parent slot has its list's start and end in bounds with no check
    // of their own (the degree of each vertex found was two bounds checks and a saturating
    // length, 12 instructions on the mesh).
    let visit = |local: &mut LocalQueue<'_, T::Probe<'_>>, chunk: &[AtomicU32]| {
        // Sliced here, where the loop runs: a length taken outside the closure is a load
        // the compiler cannot tie to the parent slots' (a chunk is 64 vertices).
        let n = parent.len();
        let lists = Lists {
            starts: &out.offsets[..n],
            ends: &out.offsets[1..=n],
            edges: out.edges,
        };
        let mut scout = 0u64;
        for (k, q) in chunk.iter().enumerate() {
            lists.prefetch_ahead(k, |i| chunk.get(i).map(|x| x.load(Relaxed) as usize));
            let u = local.p.load(q);
            for e in lists.of(u as usize, &mut local.p) {
                let v = local.p.read(e) as usize;
                let pv = &parent[v];
                if local.p.load(pv) == NONE && local.p.cas(pv, NONE, u).is_ok() {
                    local.push(v as u32);
                    scout += lists.degree(v, &mut local.p);
                }
            }
        }
        scout
    };
    let frontier = &queue[head..tail];
    let scout: u64 = if frontier.len() <= SERIAL_FRONTIER {
        // A high-diameter graph (a road network, a chain) has thousands of levels of a few
        // vertices each: handing each to the pool costs more than searching it here.
        let mut local = LocalQueue::new(queue, &end, t.probe());
        frontier.chunks(64).map(|c| visit(&mut local, c)).sum()
    } else {
        frontier
            .par_chunks(64)
            .map_init(|| LocalQueue::new(queue, &end, t.probe()), visit)
            .sum()
    };
    (end.into_inner(), scout)
}

/// A side's lists with their starts and ends as two slices of the vertex count: an index
/// checked against one (or against another array of that length) needs no check for the
/// other, where `offsets[v + 1]` took one of its own.
#[derive(Clone, Copy)]
struct Lists<'a> {
    starts: &'a [u64],
    ends: &'a [u64],
    edges: &'a [u32],
}

impl<'a> Lists<'a> {
    /// The list of `u`.
    #[inline(always)]
    fn of<P: Probe>(self, u: usize, p: &mut P) -> &'a [u32] {
        let (start, end) = (p.read(&self.starts[u]), p.read(&self.ends[u]));
        &self.edges[start as usize..end as usize]
    }

    /// [`Side::prefetch_ahead`] with a check only on the offset it reads: the list head of
    /// the vertex `AHEAD` places on in a work list, and the offsets of the one `2 × AHEAD` on.
    #[inline(always)]
    fn prefetch_ahead(self, k: usize, id_at: impl Fn(usize) -> Option<usize>) {
        if let Some(x) = id_at(k + 2 * AHEAD) {
            hugewise_sys::hint::prefetch_at(self.starts, x);
        }
        if let Some(&start) = id_at(k + AHEAD).and_then(|x| self.starts.get(x)) {
            hugewise_sys::hint::prefetch_at(self.edges, start as usize);
        }
    }

    /// The length of `v`'s list.
    #[inline(always)]
    fn degree<P: Probe>(self, v: usize, p: &mut P) -> u64 {
        p.read(&self.ends[v]).wrapping_sub(p.read(&self.starts[v]))
    }
}

/// Every unreached vertex looks for a parent among its in-neighbours in `front`; `next`
/// gets the vertices found. A piece of work owns `GRAIN` vertices: their parent slots and
/// their words of `next`.
fn bottom_up_step<T: Tracer>(
    inc: Side,
    parent: &mut [u32],
    front: &[u64],
    next: &mut [u64],
    ahead: Ahead,
    t: &T,
) -> u64 {
    parent
        .par_chunks_mut(GRAIN)
        .zip(next.par_chunks_mut(GRAIN / 64))
        .enumerate()
        .map_init(
            || t.probe(),
            |p, (piece, (parent, next))| {
                let base = piece * GRAIN;
                let mut found = 0u64;
                for (w, (parent, word)) in parent.chunks_mut(BATCH).zip(next).enumerate() {
                    let base = (base + w * BATCH) as u32;
                    let open = match ahead {
                        Ahead::Prefetch => unreached_with_arcs(inc, parent, base, p),
                        Ahead::Plain => unreached(parent, p),
                    };
                    let hits = adopt(inc, parent, base, open, front, p);
                    p.write(word, hits);
                    found += hits.count_ones() as u64;
                }
                found
            },
        )
        .sum()
}

/// Whether a bottom-up step asks for the lists of a word's unreached vertices before it
/// searches them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ahead {
    /// Pick the unreached vertices with a list and prefetch each list's head, then search.
    Prefetch,
    /// Search the unreached vertices' lists in one pass.
    Plain,
}

impl Ahead {
    /// Prefetch where the lists take more than [`PREFETCH_ARCS`]: below that, as measured, a
    /// second pass over a word's offsets with a prefetch per vertex cost more than it saved.
    fn for_lists(inc: Side) -> Ahead {
        if inc.edges.len() > PREFETCH_ARCS {
            Ahead::Prefetch
        } else {
            Ahead::Plain
        }
    }
}

/// Arcs above which a bottom-up step prefetches list heads (32 MiB of neighbour ids). Chosen
/// from searches with and without, on two threads of one Intel Xeon (BENCHMARKS.md's log):
/// on cnr-2000 (5.5 M arcs) one search was 4.6 % faster without the prefetch and a further
/// 7 % faster in one pass; kron:18's (7.6 M) was level; kron:20's (31 M) took 1.28x the time
/// without it, urand:20's (32 M) 1.10x. Where between 8 and 31 M arcs the prefetch starts to
/// pay, and on which caches, was not measured.
const PREFETCH_ARCS: usize = 8 << 20;

/// Vertices a bottom-up step takes at a time: one word of the next frontier.
const BATCH: usize = 64;

/// Which of the vertices `base..` (one word's worth) are unreached and have an in-neighbour
/// to look at, as bits; their lists are asked for now, and searched when the whole word has
/// been looked at.
#[inline]
fn unreached_with_arcs<P: Probe>(inc: Side, parent: &[u32], base: u32, p: &mut P) -> u64 {
    let mut unreached = unreached(parent, p);
    let offsets = word_offsets(inc, base, parent.len());
    let mut open = unreached;
    while unreached != 0 {
        let i = unreached.trailing_zeros() as usize;
        unreached &= unreached - 1;
        let (start, end) = (p.read(&offsets[i]), p.read(&offsets[i + 1]));
        if start == end {
            open &= !(1 << i);
        } else if let Some(e) = inc.edges.get(start as usize) {
            hugewise_sys::hint::prefetch(e);
        }
    }
    open
}

/// Which of a word's vertices are unreached, as bits.
#[inline]
fn unreached<P: Probe>(parent: &[u32], p: &mut P) -> u64 {
    // Without a branch per vertex: which vertices are unreached is a coin toss in the middle
    // steps of a search, and a mispredicted branch costs more than looking at all 64.
    let mut unreached = 0u64;
    for (i, pa) in parent.iter().enumerate() {
        unreached |= ((p.read(pa) == NONE) as u64) << i;
    }
    unreached
}

/// The offsets of the `len` vertices from `base` on, and the end of the last one's list.
#[inline]
fn word_offsets(inc: Side<'_>, base: u32, len: usize) -> &[u64] {
    &inc.offsets[base as usize..base as usize + len + 1]
}

/// Each vertex of `open` (bits over `base..`) takes the first of its in-neighbours that is in
/// `front` as its parent; returns the bits of those that found one.
#[inline]
fn adopt<P: Probe>(
    inc: Side,
    parent: &mut [u32],
    base: u32,
    mut open: u64,
    front: &[u64],
    p: &mut P,
) -> u64 {
    // The bitmap's length is a power of two, so masking a word's index changes no vertex's
    // word and lets the compiler drop the bounds check from the innermost loop.
    let mask = front.len().next_power_of_two() - 1;
    let front = &front[..mask + 1];
    let offsets = word_offsets(inc, base, parent.len());
    let mut hits = 0u64;
    while open != 0 {
        let i = open.trailing_zeros() as usize;
        open &= open - 1;
        for e in &inc.edges[offsets[i] as usize..offsets[i + 1] as usize] {
            let u = p.read(e);
            if p.read(&front[(u as usize / 64) & mask]) & (1 << (u % 64)) != 0 {
                p.write(&mut parent[i], u);
                hits |= 1 << i;
                break;
            }
        }
    }
    hits
}

/// Clear `bits` and set the bit of every vertex in `queue`.
fn queue_to_bitmap<T: Tracer>(queue: &[AtomicU32], bits: &mut [u64], t: &T) {
    bits.par_iter_mut()
        .for_each_init(|| t.probe(), |p, w| p.write(w, 0));
    let bits = atomic::u64s(bits);
    queue.par_iter().with_min_len(GRAIN).for_each_init(
        || t.probe(),
        |p, q| {
            let v = p.load(q);
            p.fetch_or(&bits[v as usize / 64], 1 << (v % 64));
        },
    );
}

/// Append the vertices set in `bits` to `queue` from `at` on (in no particular order);
/// returns the new end.
fn bitmap_to_queue<T: Tracer>(
    bits: &[u64],
    queue: &[AtomicU32],
    at: usize,
    n: usize,
    t: &T,
) -> usize {
    let end = AtomicUsize::new(at);
    bits[..n.div_ceil(64)]
        .par_iter()
        .enumerate()
        .with_min_len(GRAIN / 64)
        .for_each_init(
            || LocalQueue::new(queue, &end, t.probe()),
            |local, (w, word)| {
                let mut x = local.p.read(word);
                while x != 0 {
                    let v = w * 64 + x.trailing_zeros() as usize;
                    if v < n {
                        local.push(v as u32);
                    }
                    x &= x - 1;
                }
            },
        );
    end.into_inner()
}

/// Check `parent` against a serial BFS from `src`: the same vertices reached, the source its
/// own parent, and every other reached vertex's parent one level closer with an arc to it.
pub fn verify(g: &Csr, src: u32, parent: &[u32]) -> std::result::Result<(), String> {
    let n = g.n();
    let mut depth = vec![u32::MAX; n];
    let mut q = VecDeque::new();
    depth[src as usize] = 0;
    q.push_back(src);
    while let Some(u) = q.pop_front() {
        for &v in g.out_neighbors(u) {
            if depth[v as usize] == u32::MAX {
                depth[v as usize] = depth[u as usize] + 1;
                q.push_back(v);
            }
        }
    }
    if parent[src as usize] != src {
        return Err(format!("source {src} has parent {}", parent[src as usize]));
    }
    for v in 0..n {
        let (p, d) = (parent[v], depth[v]);
        match (p == NONE, d == u32::MAX) {
            (true, true) => {}
            (true, false) => {
                return Err(format!(
                    "vertex {v} is reachable (depth {d}) but has no parent"
                ))
            }
            (false, true) => return Err(format!("vertex {v} is unreachable but has parent {p}")),
            (false, false) if v as u32 == src => {}
            (false, false) => {
                if p as usize >= n || depth[p as usize] == u32::MAX || depth[p as usize] + 1 != d {
                    return Err(format!(
                        "vertex {v} at depth {d} has parent {p} not at depth {}",
                        d.wrapping_sub(1)
                    ));
                }
                if g.out_neighbors(p).binary_search(&(v as u32)).is_err() {
                    return Err(format!(
                        "vertex {v} has parent {p} but there is no arc {p} -> {v}"
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{build_default, Edge, VecSource};
    use crate::gen::{Generator, Spec};
    use crate::kernels::pick_sources;
    use crate::kernels::testing::from_edges;

    fn graph(spec: &str, symmetrize: bool) -> Csr {
        let mut g = Generator::new(spec.parse::<Spec>().expect("spec"), 3, false);
        build_default(&mut g, symmetrize).expect("build")
    }

    #[test]
    fn path_graph_by_hand() {
        let edges = (0..5)
            .map(|i| Edge {
                u: i,
                v: i + 1,
                w: 1,
            })
            .collect();
        let mut src = VecSource {
            edges,
            weighted: false,
            vertices: Some(8),
        };
        let g = build_default(&mut src, true).expect("build");
        for mode in [Mode::TopDown, Mode::DirectionOptimizing] {
            let mut a = Arrays::new(&Layout::default(), g.n()).expect("arrays");
            let s = run(&g, 2, mode, &mut a);
            assert_eq!(a.parent(), [1, 2, 2, 2, 3, 4, NONE, NONE]);
            assert_eq!(s.reached, 6);
            assert_eq!(s.levels, 3);
            verify(&g, 2, a.parent()).expect("verifies");
        }
    }

    #[test]
    fn both_modes_verify_on_kron_and_urand() {
        for (spec, sym) in [("kron:14", true), ("urand:14", true), ("kron:12", false)] {
            let g = graph(spec, sym);
            let mut a = Arrays::new(&Layout::default(), g.n()).expect("arrays");
            for src in pick_sources(&g, 1, 3).expect("sources") {
                let td = run(&g, src, Mode::TopDown, &mut a);
                verify(&g, src, a.parent()).expect("top-down verifies");
                let dobfs = run(&g, src, Mode::DirectionOptimizing, &mut a);
                verify(&g, src, a.parent()).expect("direction-optimizing verifies");
                assert_eq!(td.reached, dobfs.reached);
                for s in [&td, &dobfs] {
                    steps_add_up(s);
                }
                if sym && spec.starts_with("kron") {
                    assert!(
                        dobfs.bottom_up_steps > 0,
                        "{spec}: expected bottom-up steps"
                    );
                }
            }
        }
    }

    /// The steps recorded tell the same search as the counts: one reset first, as many
    /// search steps of each kind as counted, and together they found every vertex reached
    /// but the source.
    fn steps_add_up(s: &Stats) {
        let of = |k: StepKind| s.steps.iter().filter(move |x| x.kind == k);
        assert_eq!(s.steps[0].kind, StepKind::Reset, "{s:?}");
        assert_eq!(of(StepKind::Reset).count(), 1, "{s:?}");
        assert_eq!(of(StepKind::TopDown).count(), s.top_down_steps as usize);
        assert_eq!(of(StepKind::BottomUp).count(), s.bottom_up_steps as usize);
        let found: u64 = s
            .steps
            .iter()
            .filter(|x| matches!(x.kind, StepKind::TopDown | StepKind::BottomUp))
            .map(|x| x.vertices)
            .sum();
        assert_eq!(found + 1, s.reached, "{s:?}");
        // Each run of bottom-up steps starts from a bitmap and ends in a queue.
        let runs = s
            .steps
            .windows(2)
            .filter(|w| w[0].kind == StepKind::QueueToBitmap)
            .inspect(|w| assert_eq!(w[1].kind, StepKind::BottomUp, "{s:?}"))
            .count();
        assert_eq!(of(StepKind::BitmapToQueue).count(), runs, "{s:?}");
    }

    #[test]
    fn bottom_up_steps_find_the_same_parents_with_and_without_prefetching() {
        // kron leaves a third of its vertices without arcs, which the prefetching pass drops
        // from a word before the search; both ways take each vertex's first in-neighbour in
        // the frontier. On one thread the top-down steps and the bitmap's conversion to a
        // queue are deterministic too, so the two trees must be the same; on two, where a
        // top-down step's parents depend on which thread wins, both must verify.
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        for (spec, sym) in [("kron:14", true), ("urand:13", true), ("kron:12", false)] {
            let g = graph(spec, sym);
            assert_eq!(
                Ahead::for_lists(g.in_side()),
                Ahead::Plain,
                "{spec} is small"
            );
            let mut plain = Arrays::new(&Layout::default(), g.n()).expect("arrays");
            let mut ahead = Arrays::new(&Layout::default(), g.n()).expect("arrays");
            for src in pick_sources(&g, 1, 3).expect("sources") {
                let mode = Mode::DirectionOptimizing;
                let b = search_with(&g, src, mode, Ahead::Prefetch, &mut ahead, &Off);
                verify(&g, src, ahead.parent()).expect("prefetching verifies");
                let a = search_with(&g, src, mode, Ahead::Plain, &mut plain, &Off);
                verify(&g, src, plain.parent()).expect("plain verifies");
                assert_eq!(a.reached, b.reached);
                let a = one.install(|| search_with(&g, src, mode, Ahead::Plain, &mut plain, &Off));
                let b =
                    one.install(|| search_with(&g, src, mode, Ahead::Prefetch, &mut ahead, &Off));
                assert_eq!(plain.parent(), ahead.parent(), "{spec} from {src}");
                assert_eq!(a.reached, b.reached);
                if sym && spec.starts_with("kron") {
                    assert!(a.bottom_up_steps > 0, "{spec}: expected bottom-up steps");
                }
            }
        }
    }

    #[test]
    fn searches_in_turn_start_from_no_parents_whatever_the_last_one_reached() {
        // A star of 1000 leaves (its search goes bottom-up, and lists only the centre in the
        // queue) and pairs far from it (searches that reset only what they wrote).
        const LEAVES: u32 = 1000;
        let centre = 0;
        let pair = |i: u32| (LEAVES + 1 + 2 * i, LEAVES + 2 + 2 * i);
        let mut edges: Vec<(u32, u32, u32)> = (1..=LEAVES).map(|v| (centre, v, 1)).collect();
        edges.extend((0..4).map(|i| (pair(i).0, pair(i).1, 1)));
        let g = from_edges(LEAVES as usize + 9, &edges, true);
        let mut a = Arrays::new(&Layout::default(), g.n()).expect("arrays");
        let searches = [
            (pair(0).0, Mode::DirectionOptimizing, 2),
            (pair(1).1, Mode::TopDown, 2),
            (centre, Mode::DirectionOptimizing, LEAVES as u64 + 1),
            (pair(2).0, Mode::DirectionOptimizing, 2),
            (centre, Mode::TopDown, LEAVES as u64 + 1),
            (pair(3).0, Mode::TopDown, 2),
            (pair(0).1, Mode::TopDown, 2),
        ];
        for (src, mode, reached) in searches {
            let s = run(&g, src, mode, &mut a);
            assert_eq!(s.reached, reached, "from {src}");
            if src == centre && mode == Mode::DirectionOptimizing {
                assert!(s.bottom_up_steps > 0, "{s:?}");
            }
            verify(&g, src, a.parent()).expect("no parent left from the search before");
        }
    }

    #[test]
    fn verifier_catches_a_wrong_tree() {
        let g = graph("kron:10", true);
        let src = pick_sources(&g, 2, 1).expect("src")[0];
        let mut a = Arrays::new(&Layout::default(), g.n()).expect("arrays");
        run(&g, src, Mode::TopDown, &mut a);
        let mut bad = a.parent().to_vec();
        let v = (0..g.n())
            .find(|&v| bad[v] != NONE && v as u32 != src)
            .expect("a reached vertex");
        bad[v] = NONE;
        assert!(verify(&g, src, &bad).is_err());
        let mut bad = a.parent().to_vec();
        bad[v] = v as u32;
        assert!(verify(&g, src, &bad).is_err());
    }
}
