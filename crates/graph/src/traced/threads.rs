//! The traced twins on several threads, one [`Probe`] (so one trace stream) per thread.
//!
//! Each follows its serial twin's algorithm in the parallel kernels' shape: level-synchronous
//! BFS and Brandes passes whose threads claim pieces of the current level and reserve queue
//! room per batch; delta-stepping with buckets per thread; Jacobi PageRank over vertex ranges;
//! components by hooking roots with compare-and-swap, then compressing; triangles counted per
//! vertex range. Threads take pieces of work as they free up, as a real run's would, so a
//! thread's stream holds the accesses it really made. A compare-and-swap or an atomic add is
//! recorded as one store.

use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use hugewise_sys::atomic;

use super::{Probe, Traced};
use crate::kernels::sssp::lock;
use crate::kernels::{bfs, pr, sssp, Spec};
use crate::{Csr, Error, Result};

/// Vertices (or queue entries) a thread claims at a time.
const GRAIN: usize = 64;
/// Vertices a thread finds before it reserves room for them in the shared queue.
const LOCAL_QUEUE: usize = 256;
/// A thread goes on with its own current bucket while it holds fewer vertices than this.
const LOCAL_LIMIT: usize = 1000;

/// A shared array cell that a probe can see loaded and stored.
trait Cell {
    type V: Copy;
    fn get(&self) -> Self::V;
    fn set(&self, v: Self::V);
}

impl Cell for AtomicU32 {
    type V = u32;
    #[inline(always)]
    fn get(&self) -> u32 {
        self.load(Relaxed)
    }
    #[inline(always)]
    fn set(&self, v: u32) {
        self.store(v, Relaxed)
    }
}

impl Cell for AtomicU64 {
    type V = u64;
    #[inline(always)]
    fn get(&self) -> u64 {
        self.load(Relaxed)
    }
    #[inline(always)]
    fn set(&self, v: u64) {
        self.store(v, Relaxed)
    }
}

#[inline(always)]
fn addr<T>(x: &T) -> usize {
    x as *const T as usize
}

#[inline(always)]
fn ld<C: Cell, P: Probe>(p: &mut P, s: &[C], i: usize) -> C::V {
    p.touch(addr(&s[i]), false);
    s[i].get()
}

#[inline(always)]
fn st<C: Cell, P: Probe>(p: &mut P, s: &[C], i: usize, v: C::V) {
    p.touch(addr(&s[i]), true);
    s[i].set(v)
}

/// A read of the graph (plain memory, never written while a kernel runs).
#[inline(always)]
fn rd<T: Copy, P: Probe>(p: &mut P, s: &[T], i: usize) -> T {
    p.touch(addr(&s[i]), false);
    s[i]
}

/// Compare-and-swap recorded as one store when it succeeds and one load when it fails.
#[inline(always)]
fn cas<P: Probe>(p: &mut P, s: &[AtomicU32], i: usize, old: u32, new: u32) -> bool {
    let won = s[i].compare_exchange(old, new, Relaxed, Relaxed).is_ok();
    p.touch(addr(&s[i]), won);
    won
}

fn f32s(v: &mut [f32]) -> &[AtomicU32] {
    atomic::u32s(bytemuck::cast_slice_mut(v))
}

fn f64s(v: &mut [f64]) -> &[AtomicU64] {
    atomic::u64s(bytemuck::cast_slice_mut(v))
}

/// Pieces of `0..end` handed out to whichever thread asks next.
struct Pieces {
    next: AtomicUsize,
    end: usize,
    grain: usize,
}

impl Pieces {
    fn new(range: Range<usize>, grain: usize) -> Pieces {
        Pieces {
            next: AtomicUsize::new(range.start),
            end: range.end,
            grain,
        }
    }

    fn take(&self) -> Option<Range<usize>> {
        let start = self.next.fetch_add(self.grain, Relaxed);
        (start < self.end).then(|| start..(start + self.grain).min(self.end))
    }
}

/// One thread per probe, kept for the whole run (a level of BFS or a round of sssp is too
/// short to start threads for), each running pieces of work with its own probe.
struct Team<'a, P> {
    pool: rayon::ThreadPool,
    probes: Vec<Mutex<&'a mut P>>,
}

impl<'a, P: Probe + Send> Team<'a, P> {
    fn new(probes: &'a mut [P]) -> Result<Team<'a, P>> {
        let n = probes.len();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("hw-traced-{i}"))
            .build()
            .map_err(|e| Error::Invalid(format!("cannot start {n} tracing threads: {e}")))?;
        Ok(Team {
            pool,
            probes: probes.iter_mut().map(Mutex::new).collect(),
        })
    }

    fn len(&self) -> usize {
        self.probes.len()
    }

    /// Run `work(thread, probe)` once on every thread; what each returned, in thread order.
    fn each<R, F>(&self, work: F) -> Vec<R>
    where
        R: Send,
        F: Fn(usize, &mut P) -> R + Sync,
    {
        self.pool.broadcast(|ctx| {
            let i = ctx.index();
            let mut p = lock(&self.probes[i]);
            work(i, &mut **p)
        })
    }

    /// Let the first thread's probe see what the caller does between steps.
    fn first<R>(&self, f: impl FnOnce(&mut P) -> R) -> R {
        f(&mut **lock(&self.probes[0]))
    }
}

/// Store `v` into every cell of `s`, the threads taking pieces.
fn fill<C: Cell + Sync, P: Probe + Send>(team: &Team<'_, P>, s: &[C], v: C::V)
where
    C::V: Send + Sync,
{
    let pieces = Pieces::new(0..s.len(), 4096);
    team.each(|_, p| {
        while let Some(r) = pieces.take() {
            for i in r {
                st(p, s, i, v);
            }
        }
    });
}

/// Vertices a thread found, moved into a shared queue in batches.
struct Found<'a> {
    queue: &'a [AtomicU32],
    tail: &'a AtomicUsize,
    batch: Vec<u32>,
}

impl Found<'_> {
    fn push<P: Probe>(&mut self, p: &mut P, v: u32) {
        self.batch.push(v);
        if self.batch.len() == LOCAL_QUEUE {
            self.flush(p);
        }
    }

    fn flush<P: Probe>(&mut self, p: &mut P) {
        let at = self.tail.fetch_add(self.batch.len(), Relaxed);
        for (k, &v) in self.batch.iter().enumerate() {
            st(p, self.queue, at + k, v);
        }
        self.batch.clear();
    }
}

impl Traced {
    /// Run once from `sources` on one thread per probe, telling each probe its thread's
    /// accesses. One probe runs the serial twin, [`Traced::run`], on the caller's thread.
    pub fn run_threads<P: Probe + Send>(
        &mut self,
        g: &Csr,
        sources: &[u32],
        probes: &mut [P],
    ) -> Result<()> {
        if probes.len() <= 1 {
            if let Some(p) = probes.first_mut() {
                self.run(g, sources, p);
            }
            return Ok(());
        }
        let team = &Team::new(probes)?;
        match self.spec {
            Spec::Bfs { .. } => self.bfs_threads(g, sources[0], team),
            Spec::Sssp { delta } => self.sssp_threads(g, sources[0], delta, team),
            Spec::Pr {
                tolerance,
                max_iters,
                ..
            } => self.pr_threads(g, tolerance, max_iters, team),
            Spec::Cc { .. } => self.cc_threads(g, team),
            Spec::Bc { .. } => self.bc_threads(g, sources, team),
            Spec::Tc => {
                let pieces = Pieces::new(0..g.n(), GRAIN);
                self.triangles = team.each(|_, p| tc_part(g, &pieces, p)).into_iter().sum();
            }
        }
        Ok(())
    }

    fn bfs_threads<P: Probe + Send>(&mut self, g: &Csr, src: u32, team: &Team<'_, P>) {
        let (off, edges) = (&g.out_adjacency().offsets, &g.out_adjacency().edges);
        let (parent, rest) = self.u32s.split_at_mut(1);
        let parent = atomic::u32s(&mut parent[0]);
        let queue = atomic::u32s(&mut rest[0]);
        fill(team, parent, bfs::NONE);
        team.first(|p| {
            st(p, parent, src as usize, src);
            st(p, queue, 0, src);
        });
        let (mut head, mut tail) = (0usize, 1usize);
        while head < tail {
            let level = Pieces::new(head..tail, GRAIN);
            let next_tail = AtomicUsize::new(tail);
            team.each(|_, p| {
                let mut found = Found {
                    queue,
                    tail: &next_tail,
                    batch: Vec::with_capacity(LOCAL_QUEUE),
                };
                while let Some(r) = level.take() {
                    for i in r {
                        let u = ld(p, queue, i);
                        let (a, b) = (rd(p, off, u as usize), rd(p, off, u as usize + 1));
                        for e in a as usize..b as usize {
                            let v = rd(p, edges, e) as usize;
                            if ld(p, parent, v) == bfs::NONE && cas(p, parent, v, bfs::NONE, u) {
                                found.push(p, v as u32);
                            }
                        }
                    }
                }
                found.flush(p);
            });
            head = tail;
            tail = next_tail.into_inner();
        }
    }

    fn sssp_threads<P: Probe + Send>(&mut self, g: &Csr, src: u32, delta: u32, team: &Team<'_, P>) {
        let adj = g.out_adjacency();
        let (off, edges) = (&adj.offsets, &adj.edges);
        let Some(weights) = adj.weights.as_ref() else {
            return;
        };
        let dist = atomic::u32s(&mut self.u32s[0]);
        let delta = delta.max(1);
        fill(team, dist, sssp::INF);
        team.first(|p| st(p, dist, src as usize, 0));
        // Buckets per thread and the shared frontier are heap vectors, as in the parallel
        // kernel's buckets; their accesses fall outside the named arrays.
        let bins: Vec<Mutex<Vec<Vec<u32>>>> =
            (0..team.len()).map(|_| Mutex::new(Vec::new())).collect();
        // Reused across rounds and grown when a round needs more, as the kernel's frontier.
        let mut frontier: Vec<AtomicU32> = vec![AtomicU32::new(src)];
        let mut len = 1;
        let mut bucket = 0usize;
        loop {
            let pieces = Pieces::new(0..len, GRAIN);
            let shared = &frontier;
            team.each(|t, p| {
                let mut mine = lock(&bins[t]);
                let relax = |p: &mut P, u: usize, mine: &mut Vec<Vec<u32>>| {
                    let du = ld(p, dist, u);
                    if ((du / delta) as usize) < bucket {
                        return;
                    }
                    let (a, b) = (rd(p, off, u) as usize, rd(p, off, u + 1) as usize);
                    for e in a..b {
                        let v = rd(p, edges, e) as usize;
                        let nd = du.saturating_add(rd(p, weights, e)).min(sssp::INF - 1);
                        loop {
                            let old = ld(p, dist, v);
                            if nd >= old {
                                break;
                            }
                            if cas(p, dist, v, old, nd) {
                                let bi = (nd / delta) as usize;
                                if bi >= mine.len() {
                                    mine.resize_with(bi + 1, Vec::new);
                                }
                                mine[bi].push(v as u32);
                                p.touch(addr(&mine[bi][mine[bi].len() - 1]), true);
                                break;
                            }
                        }
                    }
                };
                while let Some(r) = pieces.take() {
                    for i in r {
                        let u = ld(p, shared, i) as usize;
                        relax(p, u, &mut mine);
                    }
                }
                while mine
                    .get(bucket)
                    .is_some_and(|b| !b.is_empty() && b.len() < LOCAL_LIMIT)
                {
                    let work = std::mem::take(&mut mine[bucket]);
                    for k in 0..work.len() {
                        let u = rd(p, &work, k) as usize;
                        relax(p, u, &mut mine);
                    }
                }
            });
            let Some(next) = sssp::lowest_bucket(&bins, bucket) else {
                break;
            };
            let mut at = Vec::with_capacity(bins.len());
            let mut total = 0;
            for b in &bins {
                at.push(total);
                total += lock(b).get(next).map_or(0, Vec::len);
            }
            if frontier.len() < total {
                frontier.resize_with(total, || AtomicU32::new(0));
            }
            len = total;
            let shared = &frontier;
            team.each(|t, p| {
                let mut mine = lock(&bins[t]);
                if let Some(b) = mine.get_mut(next) {
                    for (k, &v) in b.iter().enumerate() {
                        st(p, shared, at[t] + k, v);
                    }
                    b.clear();
                }
            });
            bucket = next;
        }
    }

    fn pr_threads<P: Probe + Send>(
        &mut self,
        g: &Csr,
        tolerance: f64,
        max_iters: u32,
        team: &Team<'_, P>,
    ) {
        let n = g.n();
        let out = g.out_adjacency();
        let inc = g.in_adjacency().unwrap_or(out);
        let (score, contrib) = self.f32s.split_at_mut(1);
        let score = f32s(&mut score[0]);
        let contrib = f32s(&mut contrib[0]);
        let base = ((1.0 - pr::DAMPING) / n as f64) as f32;
        fill(team, score, (1.0 / n as f32).to_bits());
        self.last_change = f64::INFINITY;
        for _ in 0..max_iters {
            let pieces = Pieces::new(0..n, 1024);
            team.each(|_, p| {
                while let Some(r) = pieces.take() {
                    for u in r {
                        let deg = rd(p, &out.offsets, u + 1) - rd(p, &out.offsets, u);
                        let c = if deg == 0 {
                            0.0
                        } else {
                            f32::from_bits(ld(p, score, u)) / deg as f32
                        };
                        st(p, contrib, u, c.to_bits());
                    }
                }
            });
            let pieces = Pieces::new(0..n, 1024);
            let change: f64 = team
                .each(|_, p| {
                    let mut change = 0.0f64;
                    while let Some(r) = pieces.take() {
                        for v in r {
                            let (a, b) = (
                                rd(p, &inc.offsets, v) as usize,
                                rd(p, &inc.offsets, v + 1) as usize,
                            );
                            let mut sum = 0.0f32;
                            for e in a..b {
                                let u = rd(p, &inc.edges, e) as usize;
                                sum += f32::from_bits(ld(p, contrib, u));
                            }
                            let new = base + pr::DAMPING as f32 * sum;
                            change += f64::from((new - f32::from_bits(ld(p, score, v))).abs());
                            st(p, score, v, new.to_bits());
                        }
                    }
                    change
                })
                .into_iter()
                .sum();
            self.last_change = change;
            if change < tolerance {
                break;
            }
        }
    }

    fn cc_threads<P: Probe + Send>(&mut self, g: &Csr, team: &Team<'_, P>) {
        let adj = g.out_adjacency();
        let comp = atomic::u32s(&mut self.u32s[0]);
        let n = comp.len();
        let pieces = Pieces::new(0..n, 4096);
        team.each(|_, p| {
            while let Some(r) = pieces.take() {
                for v in r {
                    st(p, comp, v, v as u32);
                }
            }
        });
        let pieces = Pieces::new(0..n, GRAIN);
        team.each(|_, p| {
            while let Some(r) = pieces.take() {
                for u in r {
                    let (a, b) = (rd(p, &adj.offsets, u) as usize, rd(p, &adj.offsets, u + 1));
                    for e in a..b as usize {
                        let v = rd(p, &adj.edges, e);
                        link(p, comp, u as u32, v);
                    }
                }
            }
        });
        let pieces = Pieces::new(0..n, 4096);
        team.each(|_, p| {
            while let Some(r) = pieces.take() {
                for v in r {
                    let first = ld(p, comp, v);
                    let mut x = first;
                    loop {
                        let up = ld(p, comp, x as usize);
                        if up == x {
                            break;
                        }
                        x = up;
                    }
                    if x != first {
                        st(p, comp, v, x);
                    }
                }
            }
        });
    }

    fn bc_threads<P: Probe + Send>(&mut self, g: &Csr, sources: &[u32], team: &Team<'_, P>) {
        let adj = g.out_adjacency();
        let (off, edges) = (&adj.offsets, &adj.edges);
        let (depth, order) = self.u32s.split_at_mut(1);
        let depth = atomic::u32s(&mut depth[0]);
        let order = atomic::u32s(&mut order[0]);
        let paths = f64s(&mut self.f64s[0]);
        let (delta, scores) = self.f32s.split_at_mut(1);
        let delta = f32s(&mut delta[0]);
        let scores = f32s(&mut scores[0]);
        let n = depth.len();
        fill(team, scores, 0f32.to_bits());
        for &s in sources {
            fill(team, depth, u32::MAX);
            fill(team, paths, 0f64.to_bits());
            fill(team, delta, 0f32.to_bits());
            team.first(|p| {
                st(p, depth, s as usize, 0);
                st(p, paths, s as usize, 1f64.to_bits());
                st(p, order, 0, s);
            });
            // Where each level starts in `order`.
            let mut levels = vec![0usize, 1];
            loop {
                let (head, tail) = (levels[levels.len() - 2], levels[levels.len() - 1]);
                if head == tail {
                    break;
                }
                let level = Pieces::new(head..tail, GRAIN);
                let next_tail = AtomicUsize::new(tail);
                team.each(|_, p| {
                    let mut found = Found {
                        queue: order,
                        tail: &next_tail,
                        batch: Vec::with_capacity(LOCAL_QUEUE),
                    };
                    while let Some(r) = level.take() {
                        for i in r {
                            let u = ld(p, order, i) as usize;
                            let du = ld(p, depth, u);
                            let pu = f64::from_bits(ld(p, paths, u));
                            for e in rd(p, off, u) as usize..rd(p, off, u + 1) as usize {
                                let v = rd(p, edges, e) as usize;
                                let mut dv = ld(p, depth, v);
                                if dv == u32::MAX {
                                    if cas(p, depth, v, u32::MAX, du + 1) {
                                        found.push(p, v as u32);
                                    }
                                    dv = du + 1;
                                }
                                if dv == du + 1 {
                                    add_f64(p, paths, v, pu);
                                }
                            }
                        }
                    }
                    found.flush(p);
                });
                levels.push(next_tail.into_inner());
            }
            // Backwards, a level at a time: a vertex's dependency needs the next level's.
            for w in levels.windows(2).rev() {
                let level = Pieces::new(w[0]..w[1], GRAIN);
                team.each(|_, p| {
                    while let Some(r) = level.take() {
                        for k in r {
                            let u = ld(p, order, k) as usize;
                            let du = ld(p, depth, u);
                            let mut acc = 0.0f64;
                            for e in rd(p, off, u) as usize..rd(p, off, u + 1) as usize {
                                let v = rd(p, edges, e) as usize;
                                if ld(p, depth, v) == du + 1 {
                                    let pu = f64::from_bits(ld(p, paths, u));
                                    let pv = f64::from_bits(ld(p, paths, v));
                                    let dv = f32::from_bits(ld(p, delta, v));
                                    acc += pu / pv * (1.0 + f64::from(dv));
                                }
                            }
                            st(p, delta, u, (acc as f32).to_bits());
                            if u != s as usize {
                                let x = f32::from_bits(ld(p, scores, u)) + acc as f32;
                                st(p, scores, u, x.to_bits());
                            }
                        }
                    }
                });
            }
        }
        let pieces = Pieces::new(0..n, 4096);
        let max = team
            .each(|_, p| {
                let mut max = 0.0f32;
                while let Some(r) = pieces.take() {
                    for v in r {
                        max = max.max(f32::from_bits(ld(p, scores, v)));
                    }
                }
                max
            })
            .into_iter()
            .fold(0.0f32, f32::max);
        if max > 0.0 {
            let pieces = Pieces::new(0..n, 4096);
            team.each(|_, p| {
                while let Some(r) = pieces.take() {
                    for v in r {
                        let x = f32::from_bits(ld(p, scores, v)) / max;
                        st(p, scores, v, x.to_bits());
                    }
                }
            });
        }
    }
}

/// Add `x` to the f64 at `i`, retrying while other threads add too.
fn add_f64<P: Probe>(p: &mut P, s: &[AtomicU64], i: usize, x: f64) {
    let mut old = ld(p, s, i);
    loop {
        let new = (f64::from_bits(old) + x).to_bits();
        match s[i].compare_exchange_weak(old, new, Relaxed, Relaxed) {
            Ok(_) => {
                p.touch(addr(&s[i]), true);
                return;
            }
            Err(now) => old = now,
        }
    }
}

/// Join the trees of `u` and `v`, hanging the root with the larger id under the smaller.
fn link<P: Probe>(p: &mut P, comp: &[AtomicU32], u: u32, v: u32) {
    let mut a = ld(p, comp, u as usize);
    let mut b = ld(p, comp, v as usize);
    while a != b {
        let (high, low) = if a > b { (a, b) } else { (b, a) };
        let up = ld(p, comp, high as usize);
        if up == low || (up == high && cas(p, comp, high as usize, high, low)) {
            return;
        }
        let above = ld(p, comp, high as usize);
        a = ld(p, comp, above as usize);
        b = ld(p, comp, low as usize);
    }
}

/// The serial twin's ordered count over the vertices of the pieces this thread takes.
fn tc_part<P: Probe>(g: &Csr, pieces: &Pieces, p: &mut P) -> u64 {
    let adj = g.out_adjacency();
    let (off, edges) = (&adj.offsets, &adj.edges);
    let mut count = 0u64;
    while let Some(r) = pieces.take() {
        for u in r {
            count += super::tc_from(off, edges, u, p);
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::super::Count;
    use super::*;
    use crate::kernels::pick_sources;
    use crate::kernels::testing::generated;
    use crate::Layout;

    #[test]
    fn every_threaded_twin_verifies_and_every_thread_works() {
        let layout = Layout::default();
        // Threads take work as they free up, so on a tiny graph one thread may find none left
        // in a kernel; over all six each must have had some.
        let mut per_thread = [0u64; 3];
        for name in ["bfs", "sssp", "pr", "cc", "bc", "tc"] {
            let spec = Spec::default_for(name).expect("kernel");
            let g = generated("kron:14", true, spec.needs_weights());
            let sources = pick_sources(&g, 7, spec.sources_per_trial().max(1)).expect("sources");
            let mut t = Traced::new(spec, &layout, &g).expect("arrays");
            let mut serial = Count::default();
            t.run(&g, &sources, &mut serial);
            for threads in [2, 3] {
                let mut probes = vec![Count::default(); threads];
                t.run_threads(&g, &sources, &mut probes).expect("threads");
                t.verify(&g, &sources)
                    .unwrap_or_else(|e| panic!("{name} on {threads} threads: {e}"));
                for (i, c) in probes.iter().enumerate() {
                    per_thread[i] += c.loads;
                }
                // The same algorithm split up: the work differs by races and batching only.
                let loads: u64 = probes.iter().map(|c| c.loads).sum();
                let ratio = loads as f64 / serial.loads as f64;
                assert!(
                    (0.5..2.0).contains(&ratio),
                    "{name}: {loads} loads on {threads} threads, {} serial",
                    serial.loads
                );
            }
        }
        assert!(per_thread.iter().all(|&l| l > 0), "{per_thread:?}");
    }

    #[test]
    fn one_probe_runs_the_serial_twin() {
        let spec = Spec::default_for("bfs").expect("bfs");
        let g = generated("kron:10", true, false);
        let mut t = Traced::new(spec, &Layout::default(), &g).expect("arrays");
        let mut serial = Count::default();
        t.run(&g, &[0], &mut serial);
        let mut one = [Count::default()];
        t.run_threads(&g, &[0], &mut one).expect("one");
        assert_eq!(one[0].loads, serial.loads);
        assert_eq!(one[0].stores, serial.stores);
    }

    #[test]
    fn pieces_cover_the_range_once() {
        let p = Pieces::new(5..1000, 64);
        let mut seen = vec![0u8; 1000];
        while let Some(r) = p.take() {
            r.for_each(|i| seen[i] += 1);
        }
        assert!(seen[..5].iter().all(|&c| c == 0));
        assert!(seen[5..].iter().all(|&c| c == 1));
    }
}
