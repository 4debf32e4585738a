//! Access probes: how a kernel tells a tracer every data access it makes, so that `hugewise
//! trace` records the very kernel `hugewise run` times.
//!
//! Every kernel body is generic over a [`Tracer`]. A tracer hands each rayon worker a
//! [`Probe`] for a piece of work; the kernel's loads, stores and atomics of its arrays and of
//! the graph go through the probe's small helpers ([`Probe::load`], [`Probe::cas`],
//! [`Probe::neighbors`], ...), which tell the probe the address and then do the access. With
//! [`Off`] as the tracer every hook is an empty inline function, so the timed kernel compiles
//! to the code it had without probes. With [`Streams`] each worker thread records into its own
//! [`Record`], one trace stream per thread.
//!
//! What is not traced: prefetch hints (the demand load of the same address follows a few
//! steps later and is recorded then; a hint changes no memory and cannot fault), and
//! per-thread scratch on the heap (batches of found vertices, delta-stepping's buckets,
//! sort buffers), which is private to a thread and has no page policy of its own. Every
//! traced address is therefore inside the graph's or the kernel's regions.

use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, TryLockError};

use bytemuck::Pod;
use hugewise_mem::Region;

use crate::csr::Side;
use crate::Csr;

/// A shared array cell a probe can see loaded, stored and swapped.
pub trait Atom {
    /// The value held.
    type V: Copy + Eq;
    /// Relaxed load.
    fn get(&self) -> Self::V;
    /// Relaxed store.
    fn set(&self, v: Self::V);
    /// Relaxed compare-and-swap.
    fn swap_if(&self, old: Self::V, new: Self::V) -> Result<Self::V, Self::V>;
    /// Relaxed compare-and-swap that may fail spuriously.
    fn swap_if_weak(&self, old: Self::V, new: Self::V) -> Result<Self::V, Self::V>;
}

macro_rules! atom {
    ($a:ty, $v:ty) => {
        impl Atom for $a {
            type V = $v;
            #[inline(always)]
            fn get(&self) -> $v {
                self.load(Relaxed)
            }
            #[inline(always)]
            fn set(&self, v: $v) {
                self.store(v, Relaxed)
            }
            #[inline(always)]
            fn swap_if(&self, old: $v, new: $v) -> Result<$v, $v> {
                self.compare_exchange(old, new, Relaxed, Relaxed)
            }
            #[inline(always)]
            fn swap_if_weak(&self, old: $v, new: $v) -> Result<$v, $v> {
                self.compare_exchange_weak(old, new, Relaxed, Relaxed)
            }
        }
    };
}
atom!(AtomicU32, u32);
atom!(AtomicU64, u64);

#[inline(always)]
fn addr<T>(x: &T) -> usize {
    x as *const T as usize
}

/// Receives the accesses of one thread's piece of work. Only [`Probe::touch`] is a probe's
/// own; the helpers report an access and then make it.
pub trait Probe {
    /// A load (`write` false) or store at `addr`.
    fn touch(&mut self, addr: usize, write: bool);

    /// Whether the probe skips the next pass of a loop wrapped in [`watch!`], which then runs
    /// without probes. A recording sees every pass; a sampler skips most.
    #[inline(always)]
    fn idle(&mut self) -> bool {
        false
    }

    /// Read plain memory (the graph, or an array only this thread writes).
    #[inline(always)]
    fn read<T: Copy>(&mut self, x: &T) -> T {
        self.touch(addr(x), false);
        *x
    }

    /// Write plain memory this thread owns.
    #[inline(always)]
    fn write<T>(&mut self, x: &mut T, v: T) {
        self.touch(addr(x), true);
        *x = v;
    }

    /// Relaxed atomic load.
    #[inline(always)]
    fn load<A: Atom>(&mut self, x: &A) -> A::V {
        self.touch(addr(x), false);
        x.get()
    }

    /// Relaxed atomic store.
    #[inline(always)]
    fn store<A: Atom>(&mut self, x: &A, v: A::V) {
        self.touch(addr(x), true);
        x.set(v)
    }

    /// Compare-and-swap, recorded as a store when it succeeds and a load when it fails.
    #[inline(always)]
    fn cas<A: Atom>(&mut self, x: &A, old: A::V, new: A::V) -> Result<A::V, A::V> {
        let r = x.swap_if(old, new);
        self.touch(addr(x), r.is_ok());
        r
    }

    /// Weak compare-and-swap, recorded as [`Probe::cas`] is.
    #[inline(always)]
    fn cas_weak<A: Atom>(&mut self, x: &A, old: A::V, new: A::V) -> Result<A::V, A::V> {
        let r = x.swap_if_weak(old, new);
        self.touch(addr(x), r.is_ok());
        r
    }

    /// Atomic OR, recorded as a store.
    #[inline(always)]
    fn fetch_or(&mut self, x: &AtomicU64, v: u64) -> u64 {
        self.touch(addr(x), true);
        x.fetch_or(v, Relaxed)
    }

    /// Where `v`'s list sits in `s.edges`: two offset loads.
    #[inline(always)]
    fn range(&mut self, s: Side<'_>, v: u32) -> Range<usize> {
        let v = v as usize;
        self.read(&s.offsets[v]) as usize..self.read(&s.offsets[v + 1]) as usize
    }

    /// `v`'s neighbours; the offsets are recorded now, each element when the caller
    /// [`Probe::read`]s it.
    #[inline(always)]
    fn neighbors<'a>(&mut self, s: Side<'a>, v: u32) -> &'a [u32] {
        let r = self.range(s, v);
        &s.edges[r]
    }

    /// `v`'s degree: two offset loads.
    #[inline(always)]
    fn degree(&mut self, s: Side<'_>, v: u32) -> usize {
        self.range(s, v).len()
    }
}

/// No tracing: every hook compiles away.
#[derive(Debug, Default, Clone, Copy)]
pub struct Off;

impl Probe for Off {
    #[inline(always)]
    fn touch(&mut self, _: usize, _: bool) {}
}

/// Run `$body` with the probe `$p`, or, for the passes the probe skips ([`Probe::idle`]), with
/// `$p` bound to [`Off`]: the body is compiled twice, once with probes and once without, and
/// the pass picks one. Wrap the innermost loops of a kernel in it, where a probe's cost per
/// access is a large share of the loop's. `$p` is the probe's name: a probe or a `&mut` to
/// one.
#[macro_export]
macro_rules! watch {
    ($p:ident, $body:expr $(,)?) => {
        if {
            use $crate::traced::Probe as _;
            $p.idle()
        } {
            #[allow(unused_variables)]
            let $p = &mut $crate::traced::Off;
            $body
        } else {
            $body
        }
    };
}
pub use watch;

/// Hands each rayon worker a probe for a piece of work. A kernel takes a probe at the start of
/// a piece that runs no parallel work inside (a `for_each_init` leaf, a broadcast body, a
/// serial step) and drops it at the end.
pub trait Tracer: Sync {
    /// The probe of one piece of work.
    type Probe<'a>: Probe
    where
        Self: 'a;
    /// The calling thread's probe.
    fn probe(&self) -> Self::Probe<'_>;
}

impl Tracer for Off {
    type Probe<'a> = Off;
    #[inline(always)]
    fn probe(&self) -> Off {
        Off
    }
}

/// One probe per worker thread of the pool the kernel runs in, chosen by
/// `rayon::current_thread_index()` (a thread outside any pool gets the first).
#[derive(Debug)]
pub struct PerThread<P> {
    slots: Vec<Mutex<P>>,
}

impl<P: Send> PerThread<P> {
    /// A slot for each probe; the kernel's pool should have as many threads (more share slots).
    pub fn new(probes: Vec<P>) -> PerThread<P> {
        PerThread {
            slots: probes.into_iter().map(Mutex::new).collect(),
        }
    }

    /// The probe of thread `i`, for what happens outside the kernel (the first-touch
    /// prologue).
    pub fn slot(&self, i: usize) -> MutexGuard<'_, P> {
        lock(&self.slots[i % self.slots.len()])
    }

    /// The probes back, in thread order.
    pub fn into_inner(self) -> Vec<P> {
        self.slots
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
            .collect()
    }
}

fn lock<P>(m: &Mutex<P>) -> MutexGuard<'_, P> {
    // A panic in a kernel propagates to the caller, which then discards the trace: the
    // probe's state is not worth refusing.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<P: Probe + Send> Tracer for PerThread<P> {
    type Probe<'a>
        = MutexGuard<'a, P>
    where
        P: 'a;

    fn probe(&self) -> MutexGuard<'_, P> {
        self.mine()
    }
}

impl<P: Send> PerThread<P> {
    /// The calling worker thread's slot.
    fn mine(&self) -> MutexGuard<'_, P> {
        let i = rayon::current_thread_index().unwrap_or(0);
        if i >= self.slots.len() {
            return lock(&self.slots[i % self.slots.len()]);
        }
        match self.slots[i].try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            // Only this thread takes this slot: it already holds it, so a kernel kept a probe
            // across a parallel step, which would deadlock.
            Err(TryLockError::WouldBlock) => {
                panic!("thread {i} took its probe twice: a kernel held one across parallel work")
            }
        }
    }
}

impl<P: Probe> Probe for MutexGuard<'_, P> {
    #[inline(always)]
    fn touch(&mut self, addr: usize, write: bool) {
        (**self).touch(addr, write)
    }

    #[inline(always)]
    fn idle(&mut self) -> bool {
        (**self).idle()
    }
}

/// Where a full batch of a [`Record`] goes; it returns an empty buffer to fill next.
pub type Ship = Box<dyn FnMut(Vec<u64>) -> Vec<u64> + Send>;

/// One thread's recording: accesses encoded as `addr << 1 | write`, shipped in batches.
pub struct Record {
    buf: Vec<u64>,
    batch: usize,
    count: u64,
    ship: Ship,
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("batch", &self.batch)
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

impl Record {
    /// Ship every `batch` accesses to `ship`.
    pub fn new(batch: usize, ship: Ship) -> Record {
        let batch = batch.max(1);
        Record {
            buf: Vec::with_capacity(batch.min(1 << 20)),
            batch,
            count: 0,
            ship,
        }
    }

    /// Accesses recorded so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Ship what is buffered (at the end of the run).
    #[cold]
    pub fn flush(&mut self) {
        let full = std::mem::take(&mut self.buf);
        self.buf = (self.ship)(full);
        self.buf.clear();
    }
}

impl Probe for Record {
    #[inline(always)]
    fn touch(&mut self, addr: usize, write: bool) {
        self.buf.push(((addr as u64) << 1) | u64::from(write));
        self.count += 1;
        if self.buf.len() >= self.batch {
            self.flush();
        }
    }
}

/// The recording tracer: one [`Record`] per worker thread.
pub type Streams = PerThread<Record>;

/// Samples a thread keeps before it publishes them in one claim on the ring.
const SAMPLE_BATCH: usize = 32;

/// In the loops a kernel wraps in [`watch!`], the sampler sees one pass in this many (times
/// the thinning the ring's reader asks for).
pub const WATCHED_PASS_EVERY: u32 = 32;

/// What one thread's sampler keeps between pieces of work: the samples not yet published and
/// where its countdowns stand. Samples are published 32 at a time, one atomic add for each
/// batch: with one add per sample the kernel's threads would take the ring's head from each
/// other at every sample.
#[derive(Debug)]
pub struct SampleSlot<'a> {
    ring: &'a hugewise_sys::shm::SampleRing,
    left: u32,
    passes_left: u32,
    /// The thinning the held samples were taken at: they are published as standing for it.
    thin: u32,
    batch: [u64; SAMPLE_BATCH],
    held: usize,
}

impl SampleSlot<'_> {
    /// Keep one sample, publishing the batch when it is full. Out of line: it runs once in
    /// `every` accesses, and inlined it would crowd the kernel's loop.
    #[cold]
    #[inline(never)]
    fn take(&mut self, addr: usize, write: bool) {
        self.batch[self.held] = addr as u64 & !1 | u64::from(write);
        self.held += 1;
        if self.held == SAMPLE_BATCH {
            self.flush();
        }
    }

    /// Publish what the thread holds, each sample standing for the thinning it was taken at.
    pub fn flush(&mut self) {
        self.ring.push_weighted(&self.batch[..self.held], self.thin);
        self.held = 0;
    }
}

impl Drop for SampleSlot<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// One piece of work's sampler: every `every`-th access it sees goes to the thread's
/// [`SampleSlot`], the rest cost a decrement and a branch. That is still a third more
/// instructions in a loop as tight as pull PageRank's (a load, a load at random and an add an
/// edge), and sampled that loop took 1.73 times as long on kron:22: so the loops a kernel wraps
/// in [`watch!`] are seen one pass in [`WATCHED_PASS_EVERY`], and the other passes run the
/// loop compiled without probes. The countdowns are the probe's own fields while a piece runs,
/// kept in registers rather than behind the slot's lock, and go back to the slot at its end.
///
///
/// The reader of the ring may ask for fewer samples (a promotion daemon whose budget is full and
/// steady has no use for more): a piece of work reads the thinning when it starts and stretches
/// one countdown by it, the passes' in the loops a kernel wraps in [`watch!`] (so a kernel
/// watched by a settled daemon runs its loops without probes nearly everywhere), the accesses'
/// elsewhere. Its samples are published as standing for that thinning, so the reader can weigh
/// them. (A piece of work that mixed watched loops with plain ones would sample its plain
/// loops after a watched pass at the full rate; PageRank, the kernel that watches, watches
/// every loop.)
#[derive(Debug)]
pub struct Sample<'s, 'a> {
    left: u32,
    every: u32,
    /// One access in this many inside a watched pass: the pass is already thinned.
    pass_access_every: u32,
    passes_left: u32,
    pass_every: u32,
    slot: MutexGuard<'s, SampleSlot<'a>>,
}

impl Drop for Sample<'_, '_> {
    fn drop(&mut self) {
        self.slot.left = self.left;
        self.slot.passes_left = self.passes_left;
    }
}

impl Probe for Sample<'_, '_> {
    #[inline(always)]
    fn touch(&mut self, addr: usize, write: bool) {
        self.left -= 1;
        if self.left == 0 {
            self.left = self.every;
            self.slot.take(addr, write);
        }
    }

    #[inline(always)]
    fn idle(&mut self) -> bool {
        self.passes_left -= 1;
        if self.passes_left == 0 {
            self.passes_left = self.pass_every;
            self.every = self.pass_access_every;
            self.left = self.left.min(self.every);
            return false;
        }
        true
    }
}

/// The sampling tracer: one [`SampleSlot`] per worker thread, publishing one access in
/// `every` of those it sees to a shared sample ring, which a promotion daemon reads
/// (`hugewise promote`).
#[derive(Debug)]
pub struct Sampled<'a> {
    every: u32,
    slots: PerThread<SampleSlot<'a>>,
}

impl<'a> Tracer for Sampled<'a> {
    type Probe<'s>
        = Sample<'s, 'a>
    where
        Self: 's;

    fn probe(&self) -> Sample<'_, 'a> {
        let mut slot = self.slots.mine();
        let thin = slot.ring.thinning();
        if thin != slot.thin {
            // What the thread holds was taken at the old thinning and stands for it.
            slot.flush();
            slot.thin = thin;
        }
        let every = self.every.saturating_mul(thin);
        let pass_every = WATCHED_PASS_EVERY.saturating_mul(thin);
        // A countdown started under more thinning than now is cut short, so that a reader
        // asking for samples again gets them within one period.
        Sample {
            left: slot.left.min(every),
            every,
            pass_access_every: self.every,
            passes_left: slot.passes_left.min(pass_every),
            pass_every,
            slot,
        }
    }
}

/// A sampling tracer for `threads` worker threads, writing one access in `every` (at least 1)
/// of those it sees to `ring`. The threads' countdowns start staggered, so they do not all
/// sample the same step of their loops.
pub fn sampled(ring: &hugewise_sys::shm::SampleRing, every: u32, threads: usize) -> Sampled<'_> {
    let every = every.max(1);
    Sampled {
        every,
        slots: PerThread::new(
            (0..threads.max(1))
                .map(|i| {
                    let phase = (i as u32).wrapping_mul(2_654_435_761);
                    SampleSlot {
                        ring,
                        left: 1 + phase % every,
                        passes_left: 1 + phase % WATCHED_PASS_EVERY,
                        thin: 1,
                        batch: [0; SAMPLE_BATCH],
                        held: 0,
                    }
                })
                .collect(),
        ),
    }
}

/// One array of the traced program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Array name.
    pub name: String,
    /// First address.
    pub base: u64,
    /// Bytes of data.
    pub bytes: u64,
}

impl Span {
    /// The span of a region.
    pub fn of<T: Pod>(r: &Region<T>) -> Span {
        Span {
            name: r.name().to_string(),
            base: r.addr() as u64,
            bytes: r.data_bytes() as u64,
        }
    }

    /// Whether `addr` falls inside.
    pub fn holds(&self, addr: u64) -> bool {
        addr >= self.base && addr < self.base + self.bytes
    }
}

/// The graph's arrays, in allocation order.
pub fn graph_spans(g: &Csr) -> Vec<Span> {
    let mut out = Vec::new();
    for (a, prefix) in [(Some(g.out_adjacency()), ""), (g.in_adjacency(), "in-")] {
        let Some(a) = a else { continue };
        let mut s = Span::of(&a.offsets);
        s.name = format!("{prefix}{}", s.name);
        out.push(s);
        let mut s = Span::of(&a.edges);
        s.name = format!("{prefix}{}", s.name);
        out.push(s);
        if let Some(w) = &a.weights {
            let mut s = Span::of(w);
            s.name = format!("{prefix}{}", s.name);
            out.push(s);
        }
    }
    out
}

/// The first touch of every 4 KiB page of `spans`, in order: what loading the graph and
/// creating the arrays did before the kernel ran, so that a first-touch policy sees the
/// program's real allocation order.
pub fn first_touch<P: Probe>(spans: &[Span], p: &mut P) {
    for s in spans {
        let mut a = s.base;
        while a < s.base + s.bytes {
            p.touch(a as usize, true);
            a += 4096;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::kernels::testing::generated;
    use crate::kernels::{bfs, pick_sources, Kernel, Outcome, Spec, SpecExt};
    use crate::Layout;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool")
    }

    /// Every stream's accesses of one traced run of `k` in `pool`.
    fn record(
        k: &mut dyn Kernel,
        pool: &rayon::ThreadPool,
        g: &Csr,
        sources: &[u32],
    ) -> Vec<Vec<u64>> {
        let threads = pool.current_num_threads();
        let sinks: Vec<Arc<Mutex<Vec<u64>>>> = (0..threads).map(|_| Arc::default()).collect();
        let recs = sinks
            .iter()
            .map(|sink| {
                let sink = Arc::clone(sink);
                // A small batch, so that shipping mid-run is exercised too.
                Record::new(
                    1000,
                    Box::new(move |mut full: Vec<u64>| {
                        lock(&sink).extend_from_slice(&full);
                        full.clear();
                        full
                    }),
                )
            })
            .collect();
        let streams = PerThread::new(recs);
        pool.install(|| k.trace(g, sources, &streams))
            .expect("trace");
        let mut counts = Vec::new();
        for mut r in streams.into_inner() {
            r.flush();
            counts.push(r.count());
        }
        let got: Vec<Vec<u64>> = sinks.iter().map(|s| lock(s).clone()).collect();
        for (c, s) in counts.iter().zip(&got) {
            assert_eq!(*c, s.len() as u64, "a stream's count is what it shipped");
        }
        got
    }

    /// A kernel of `spec` on `g`, warmed up and traced on `threads` threads: its spans and
    /// every stream's accesses.
    fn traced(
        spec: Spec,
        g: &Csr,
        sources: &[u32],
        threads: usize,
    ) -> (Box<dyn Kernel>, Vec<Span>, Vec<Vec<u64>>) {
        let pool = pool(threads);
        let mut k = pool
            .install(|| spec.create(&Layout::default(), g.n()))
            .expect("kernel");
        pool.install(|| k.run(g, sources)).expect("warm-up");
        let got = record(k.as_mut(), &pool, g, sources);
        let mut spans = graph_spans(g);
        spans.extend(k.spans());
        (k, spans, got)
    }

    #[test]
    fn every_traced_kernel_verifies_and_stays_in_its_regions() {
        // Threads take work as they free up, so on a small graph one may find none left in a
        // kernel; over all six each must have had some.
        let mut per_thread = [0u64; 3];
        for name in ["bfs", "sssp", "pr", "cc", "bc", "tc"] {
            let spec = Spec::default_for(name).expect("kernel");
            let g = generated("kron:12", true, spec.needs_weights());
            let sources = pick_sources(&g, 7, spec.sources_per_trial()).expect("sources");
            for threads in [1, 3] {
                let (k, spans, streams) = traced(spec, &g, &sources, threads);
                k.verify(&g, &sources)
                    .unwrap_or_else(|e| panic!("{name} on {threads} threads: {e}"));
                let all: Vec<u64> = streams.concat();
                // At least a pass over a vertex array (a direction-optimizing BFS reads far
                // fewer arcs than there are).
                assert!(all.len() > g.n(), "{name}: {} accesses", all.len());
                for &a in &all {
                    let at = a >> 1;
                    assert!(
                        spans.iter().any(|s| s.holds(at)),
                        "{name}: {at:#x} outside every array ({spans:?})"
                    );
                }
                if threads == 3 {
                    for (t, s) in per_thread.iter_mut().zip(&streams) {
                        *t += s.len() as u64;
                    }
                }
            }
        }
        assert!(per_thread.iter().all(|&n| n > 0), "{per_thread:?}");
    }

    #[test]
    fn the_sampler_takes_every_nth_access_across_pieces_of_work() {
        let path = std::env::temp_dir().join(format!("hw-traced-nth-{}", std::process::id()));
        let ring = hugewise_sys::shm::SampleRing::create(&path, 1024).expect("ring");
        let _ = std::fs::remove_file(&path);
        let s = sampled(&ring, 4, 1);
        // Thread 0's countdown starts at 1: accesses 0, 4, 8, ... are taken, and the count
        // carries over from one piece of work to the next (7 + 13 + 20 accesses).
        let mut k = 0usize;
        for piece in [7, 13, 20] {
            let mut p = s.probe();
            for _ in 0..piece {
                p.touch(0x1000 * (k + 1), k.is_multiple_of(3));
                k += 1;
            }
        }
        // Held back until a batch fills or the tracer goes.
        assert_eq!(ring.head(), 0);
        drop(s);
        let mut got = Vec::new();
        ring.read_since(0, &mut got);
        let want: Vec<u64> = (0usize..40)
            .step_by(4)
            .map(|k| (0x1000 * (k + 1)) as u64 | u64::from(k.is_multiple_of(3)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_sampler_publishes_less_while_the_reader_asks_for_thinning_and_all_again_after() {
        let path = std::env::temp_dir().join(format!("hw-traced-thin-{}", std::process::id()));
        let ring = hugewise_sys::shm::SampleRing::create(&path, 1 << 12).expect("ring");
        let reader = hugewise_sys::shm::SampleRing::open(&path).expect("reader");
        let _ = std::fs::remove_file(&path);
        let s = sampled(&ring, 4, 1);
        let run = |pieces: usize| {
            for _ in 0..pieces {
                let mut p = s.probe();
                for k in 0..64 {
                    p.touch(0x1000 * (k + 1), false);
                }
            }
        };
        // 10 pieces of 64 accesses at one in 4: 160 samples, published by batches of 32.
        run(10);
        assert_eq!((ring.head(), ring.weight()), (160, 160));
        // Thinned by 8, one in 32: 200 samples for 100 pieces, 192 of them published so far.
        assert!(reader.set_thinning(8));
        run(100);
        assert_eq!(ring.head(), 160 + 192);
        // Asked again, the sampler flushes what it took thinned, as standing for 8 each, and
        // is back to one in 4 at once.
        assert!(reader.set_thinning(1));
        run(10);
        drop(s);
        assert_eq!(ring.head(), 160 + 200 + 160);
        assert_eq!(ring.weight(), 160 + 200 * 8 + 160);
    }

    #[test]
    fn a_watched_loop_is_sampled_one_pass_in_so_many_and_recorded_in_every_pass() {
        let path = std::env::temp_dir().join(format!("hw-traced-watch-{}", std::process::id()));
        let ring = hugewise_sys::shm::SampleRing::create(&path, 1024).expect("ring");
        let _ = std::fs::remove_file(&path);
        let every = WATCHED_PASS_EVERY as usize;
        let s = sampled(&ring, 1, 1);
        for pass in 0..2 * every {
            // A probe held by value, as kernels with a serial step hold theirs.
            let mut p = s.probe();
            crate::traced::watch!(p, {
                for k in 0..4 {
                    p.touch(0x1000 * (pass * 4 + k + 1), false);
                }
            });
        }
        drop(s);
        let mut got = Vec::new();
        ring.read_since(0, &mut got);
        // Thread 0 sees its first pass, then one in WATCHED_PASS_EVERY: two passes, all four
        // accesses of each.
        let want: Vec<u64> = [0, every]
            .iter()
            .flat_map(|&pass| (0..4).map(move |k| (0x1000 * (pass * 4 + k + 1)) as u64))
            .collect();
        assert_eq!(got, want);
        // A recording sees every pass, through the lock guard kernels get from `Streams`.
        let streams = PerThread::new(vec![Record::new(
            1 << 10,
            Box::new(|mut full: Vec<u64>| {
                full.clear();
                full
            }),
        )]);
        for pass in 0..16 {
            let mut g = streams.probe();
            let p = &mut g;
            crate::traced::watch!(p, p.touch(pass, false));
        }
        assert_eq!(streams.into_inner()[0].count(), 16);
    }

    #[test]
    fn a_sampled_kernel_verifies_and_publishes_addresses_in_its_arrays() {
        let spec = Spec::default_for("bfs").expect("bfs");
        let g = generated("kron:12", true, false);
        let sources = pick_sources(&g, 5, spec.sources_per_trial()).expect("sources");
        let path = std::env::temp_dir().join(format!("hw-traced-bfs-{}", std::process::id()));
        let ring = hugewise_sys::shm::SampleRing::create(&path, 1 << 20).expect("ring");
        let _ = std::fs::remove_file(&path);
        let pool = pool(2);
        let mut k = pool
            .install(|| spec.create(&Layout::default(), g.n()))
            .expect("kernel");
        let s = sampled(&ring, 16, 2);
        pool.install(|| k.sample(&g, &sources, &s))
            .expect("sampled run");
        drop(s);
        k.verify(&g, &sources).expect("a sampled run verifies");
        let mut spans = graph_spans(&g);
        spans.extend(k.spans());
        let mut got = Vec::new();
        ring.read_since(0, &mut got);
        assert!(!got.is_empty());
        assert!(got.iter().all(|a| spans.iter().any(|s| s.holds(a & !1))));
    }

    #[test]
    fn one_thread_traces_the_same_every_run() {
        for name in ["bfs", "sssp", "cc", "bc", "tc"] {
            let spec = Spec::default_for(name).expect("kernel");
            let g = generated("kron:11", true, spec.needs_weights());
            let sources = pick_sources(&g, 3, spec.sources_per_trial()).expect("sources");
            let (mut k, _, first) = traced(spec, &g, &sources, 1);
            let again = record(k.as_mut(), &pool(1), &g, &sources);
            assert_eq!(first.len(), 1);
            assert!(first == again, "{name}: two one-thread traces differ");
        }
    }

    #[test]
    fn the_traced_bfs_is_the_direction_optimizing_one() {
        let g = generated("kron:14", true, false);
        let src = pick_sources(&g, 1, 1).expect("source");
        let bits_loads = |mode: bfs::Mode| {
            let (k, spans, streams) = traced(Spec::Bfs { mode }, &g, &src, 2);
            k.verify(&g, &src).expect("verifies");
            let Outcome::Bfs(stats) = k.outcome(&g) else {
                panic!("not a bfs outcome")
            };
            let bits = spans
                .iter()
                .find(|s| s.name == "frontier-bits")
                .expect("bitmap span")
                .clone();
            let loads = streams
                .concat()
                .iter()
                .filter(|&&a| a & 1 == 0 && bits.holds(a >> 1))
                .count();
            (stats, loads)
        };
        let default = Spec::default_for("bfs").expect("bfs");
        let Spec::Bfs { mode } = default else {
            panic!("{default:?}")
        };
        let (stats, loads) = bits_loads(mode);
        assert!(stats.bottom_up_steps > 0, "{stats:?}");
        // Bottom-up steps read the frontier bitmap; the trace has those reads.
        assert!(loads > 0, "no bitmap reads in the default BFS's trace");
        let (stats, loads) = bits_loads(bfs::Mode::TopDown);
        assert_eq!(stats.bottom_up_steps, 0);
        assert_eq!(loads, 0, "a top-down BFS reads no bitmap");
    }

    #[test]
    fn a_record_ships_full_batches_and_the_rest_on_flush() {
        let shipped: Arc<Mutex<Vec<usize>>> = Arc::default();
        let s = Arc::clone(&shipped);
        let mut r = Record::new(
            4,
            Box::new(move |mut full: Vec<u64>| {
                lock(&s).push(full.len());
                full.clear();
                full
            }),
        );
        let x = [7u32; 10];
        for v in &x {
            r.read(v);
        }
        r.store(&AtomicU32::new(0), 1);
        assert_eq!(*lock(&shipped), [4, 4]);
        r.flush();
        assert_eq!(*lock(&shipped), [4, 4, 3]);
        assert_eq!(r.count(), 11);
    }
}
