//! The sampling tracer: each worker thread publishes one access in so many of those its kernel
//! makes to a shared sample ring, which a promotion daemon reads (`hugewise promote`), and sees
//! the loops a kernel wraps in [`watch!`] one pass in [`WATCHED_PASS_EVERY`]. It is a
//! [`Tracer`] over the probes of [`crate::probe`], as the recording one is.
//!
//! [`watch!`]: crate::probe::watch

use std::sync::MutexGuard;

use crate::probe::{PerThread, Probe, Tracer};

/// Samples a thread keeps before it publishes them in one claim on the ring.
const SAMPLE_BATCH: usize = 32;

/// In the loops a kernel wraps in [`watch!`], the sampler sees one pass in this many (times
/// the thinning the ring's reader asks for).
///
/// [`watch!`]: crate::probe::watch
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
    /// Keep one sample, publishing the batch when it is full. `in_pass`: taken at the full
    /// access rate (in a watched pass, whose thinning skips passes, not accesses), which the
    /// sample says when thinned ([`DENSE_BIT`](hugewise_sys::shm::DENSE_BIT)). Out of line: it
    /// runs once in `every` accesses, and inlined it would crowd the kernel's loop.
    #[cold]
    #[inline(never)]
    fn take(&mut self, addr: usize, write: bool, in_pass: bool) {
        let dense = in_pass && self.thin > 1;
        self.batch[self.held] = hugewise_sys::shm::sample_word(addr, write, dense);
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
///
/// [`watch!`]: crate::probe::watch
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
            // At the pass's own rate: not thinned access by access.
            let in_pass = self.every == self.pass_access_every;
            self.slot.take(addr, write, in_pass);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::generated;
    use crate::kernels::{pick_sources, Spec, SpecExt};
    use crate::probe::{graph_spans, Record};
    use crate::Layout;

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
            crate::probe::watch!(p, {
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
            crate::probe::watch!(p, p.touch(pass, false));
        }
        assert_eq!(streams.into_inner()[0].count(), 16);
    }

    #[test]
    fn thinned_samples_of_a_watched_pass_say_they_are_dense_and_plain_ones_do_not() {
        use hugewise_sys::shm::{SampleRing, DENSE_BIT};
        let path = std::env::temp_dir().join(format!("hw-traced-dense-{}", std::process::id()));
        let ring = SampleRing::create(&path, 1 << 12).expect("ring");
        let reader = SampleRing::open(&path).expect("reader");
        let _ = std::fs::remove_file(&path);
        let every = WATCHED_PASS_EVERY as usize;
        let s = sampled(&ring, 1, 1);
        assert!(reader.set_thinning(4));
        // Plain accesses below 1 MiB: one in 4 is taken, each alone for the four.
        {
            let mut p = s.probe();
            for k in 0..64 {
                p.touch(0x1000 * (k + 1), false);
            }
        }
        // Watched passes from 1 MiB on: one pass in 32 x 4 is taken whole.
        for pass in 0..2 * 4 * every {
            let mut p = s.probe();
            crate::probe::watch!(p, {
                for k in 0..4 {
                    p.touch(0x10_0000 + 0x1000 * (pass * 4 + k), false);
                }
            });
        }
        drop(s);
        let mut got = Vec::new();
        ring.read_since(0, &mut got);
        let (plain, watched): (Vec<u64>, Vec<u64>) = got.iter().partition(|&&w| w < 0x10_0000);
        assert_eq!((plain.len(), watched.len()), (16, 8), "{got:x?}");
        assert!(plain.iter().all(|w| w & DENSE_BIT == 0), "{plain:x?}");
        assert!(watched.iter().all(|w| w & DENSE_BIT != 0), "{watched:x?}");
    }

    #[test]
    fn a_sampled_kernel_verifies_and_publishes_addresses_in_its_arrays() {
        let spec = Spec::default_for("bfs").expect("bfs");
        let g = generated("kron:12", true, false);
        let sources = pick_sources(&g, 5, spec.sources_per_trial()).expect("sources");
        let path = std::env::temp_dir().join(format!("hw-traced-bfs-{}", std::process::id()));
        let ring = hugewise_sys::shm::SampleRing::create(&path, 1 << 20).expect("ring");
        let _ = std::fs::remove_file(&path);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool");
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
}
