//! Access probes: how a kernel tells a tracer every data access it makes, so that `hugewise
//! trace` records the very kernel `hugewise run` times.
//!
//! Every kernel body is generic over a [`Tracer`]. A tracer hands each rayon worker a
//! [`Probe`] for a piece of work; the kernel's loads, stores and atomics of its arrays and of
//! the graph go through the probe's small helpers ([`Probe::load`], [`Probe::cas`],
//! [`Probe::neighbors`], ...), which tell the probe the address and then do the access. With
//! [`Off`] as the tracer every hook is an empty inline function, so the timed kernel compiles
//! to the code it had without probes, but for one place: PageRank's sweep reads a short list
//! as a masked window past its end where no probe sees it ([`Probe::sees`]), reads of a
//! neighbouring list's arcs and contributions that a trace of the same sweep does not hold.
//! With [`Streams`] each worker thread records into its own
//! [`Record`], one trace stream per thread; the sampling tracer, which feeds a promotion
//! daemon, is [`crate::sampler`]'s. [`Span`]s name the arrays a trace's addresses fall in.
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

    /// Whether the probe sees any access. Only [`Off`] sees none, and a loop run with it may
    /// read what its algorithm does not need (a short list's window read past its end and
    /// masked, in PageRank's gather): no trace or sample is made of such a pass, so every
    /// recorded access is one the algorithm makes.
    #[inline(always)]
    fn sees(&self) -> bool {
        true
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

    #[inline(always)]
    fn sees(&self) -> bool {
        false
    }
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
            #[allow(unused_imports)]
            use $crate::probe::Probe as _;
            $p.idle()
        } {
            #[allow(unused_variables)]
            let $p = &mut $crate::probe::Off;
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
    pub(crate) fn mine(&self) -> MutexGuard<'_, P> {
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

    #[inline(always)]
    fn sees(&self) -> bool {
        (**self).sees()
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
        let bits_loads = |mode: bfs::BfsMode| {
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
        let (stats, loads) = bits_loads(bfs::BfsMode::TopDown);
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
