//! The promotion candidate cache's ranking in software: per target, the `capacity` chunks with
//! the most page walks, every count halved each interval so old heat fades, highest first. The
//! PCC counts page walks in hardware; here the walks are estimated from the access samples a
//! cooperating program publishes (a sample on another page than the chunk's sample before), so
//! that a chunk streamed through in order, which costs one walk a page, does not outrank one
//! read at random, which costs a walk a read. As in the PCC, a chunk enters only once it has
//! been touched before (some of its pages are mapped). The hardware PCC has 128 entries; this
//! one keeps at least that many candidates, and as many as the budget holds when that is
//! more, or a budget larger than 128 chunks could never be filled with the chunks it ranks
//! best. Huge chunks keep their scores besides, candidates or not, so that the budget gives
//! their place only to a chunk that is clearly hotter.
//!
//! Each chunk has two scores: a fast one (halved every interval, as the PCC's counters) that
//! ranks the candidates and fills a budget with room, and a slow one (an average over about
//! half a minute) for a swap, which costs a split and a collapse. A swap weighs a candidate on
//! the lower of the two (the heat that lasted) and a huge chunk on the higher (the heat it has
//! had). The slow score is what a swap needs: a PageRank iteration on kron:26 streams through
//! its arrays in about nine seconds, so each chunk of a streamed array is hot for one look in
//! nine; on fast scores a chunk at its peak outbid one at its trough many times over, chunks
//! of the same heat changed places, and the daemon split hundreds of chunks a run for nothing.
//! Averaged over more than an iteration their heat is the same and nothing moves. A chunk
//! that turns hot for good takes a huge chunk's place some looks later than on fast scores
//! (at the 8th look of a second, at ten times the huge chunk's heat).
//!
//! A budget is a ceiling, not a quota: a chunk is promoted only while its heat is at least
//! [`FLOOR_SHARE`] of an even share of its target's walks (the mean over the chunks it has
//! touched). Under a hot spot the cold chunks get a sample or two each, which ranked above
//! nothing; a budget with room collapsed them all (122 cold chunks beside 41 hot ones in
//! `bench promote --hotspot 1%:99.9%`), each collapse 5 ms of a core and a TLB flush of the
//! target, for no walk saved. When every chunk is about as hot as the others, all stay above
//! the floor. Nor is a chunk whose heat rests on a few samples ([`MIN_SEEN`]): once a settled
//! daemon thins its target's samples (one in 64 of what it would publish, each standing for
//! 64), one sample lifts a cold chunk over the floor, and under `bench promote --hotspot
//! 1%:99%` the daemon went on collapsing 10–120 cold chunks a run from its 7th second on.

use std::collections::HashMap;

use crate::policy::{ChunkInfo, Decision, Policy};

/// The software PCC.
#[derive(Debug, Clone)]
pub struct Pcc {
    /// Candidates kept per target at least (the PCC paper's 128 entries).
    pub capacity: usize,
    /// The budget's chunks, when more than `capacity`.
    budget: usize,
    scores: HashMap<(i32, usize), Heat>,
    /// What the slow score keeps of itself at each look.
    keep: f64,
}

/// A chunk's two scores, on one scale (steady heat of `w` walks a look scores `2 w` in both),
/// and how many samples they rest on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Heat {
    fast: f64,
    slow: f64,
    /// Samples seen, halved every look as `fast` is: what the heat was estimated from.
    seen: f64,
}

impl Heat {
    /// What a look with `walks` estimated from `samples` makes of `self`, the slow score
    /// keeping `keep` of itself.
    fn after(self, walks: f64, samples: f64, keep: f64) -> Heat {
        Heat {
            fast: self.fast / 2.0 + walks,
            slow: self.slow * keep + walks * (1.0 - keep) * 2.0,
            seen: self.seen / 2.0 + samples,
        }
    }
}

/// Share of an even split of a target's walks below which a chunk is not worth a collapse.
pub const FLOOR_SHARE: f64 = 1.0 / 8.0;

/// Samples (halved every look) a chunk's heat must rest on before it is worth a collapse: one
/// sample of a target thinned to one in 64 stands for 64 walks, enough to pass the floor, and
/// an estimate from fewer than four is off by half or more. With two, a hot spot's cold chunks
/// still drew a pair of samples in one look now and then: 5 to 10 of 4 055 a run went in.
pub const MIN_SEEN: f64 = 4.0;

/// Time constant of the slow score, in seconds: longer than a kernel's pass over its arrays
/// on the graphs this runs on (an iteration of PageRank at kron:26 takes 9 s here).
pub const SLOW_S: f64 = 32.0;

/// What the slow score keeps of itself at each look, for looks `interval_s` apart (at least a
/// millisecond: at zero it would keep everything and gain nothing, and no swap could ever
/// be weighed). Decayed per look at the daemon's interval rather than by the clock: the
/// policy's decisions then depend on its inputs only, so a scenario can step it by hand; a
/// running daemon looks at its interval, except for its first few looks (see
/// `Config::first_samples`), when the slow scores are still far from any swap.
fn slow_keep(interval_s: f64) -> f64 {
    (-interval_s.max(1e-3) / SLOW_S).exp()
}

impl Default for Pcc {
    fn default() -> Self {
        Pcc {
            capacity: 128,
            budget: 0,
            scores: HashMap::new(),
            keep: slow_keep(1.0),
        }
    }
}

impl Pcc {
    /// A PCC keeping `capacity` candidates per target.
    pub fn with_capacity(capacity: usize) -> Pcc {
        Pcc {
            capacity: capacity.max(1),
            budget: 0,
            scores: HashMap::new(),
            keep: slow_keep(1.0),
        }
    }
}

impl Policy for Pcc {
    fn ranks_by_samples(&self) -> bool {
        true
    }

    fn weighs_walks(&self) -> bool {
        true
    }

    fn signal(&self, sampled: bool) -> String {
        if sampled {
            "pcc ranks its chunks by the page walks its samples show".into()
        } else {
            "it publishes no access samples, and pcc ranks chunks by samples alone: nothing \
             is promoted until it publishes some (hugewise run --sample-every N, or the C \
             API's hugewise_sample); --policy auto (the default) or mega act on its mapped \
             pages instead"
                .into()
        }
    }

    fn name(&self) -> &'static str {
        "pcc"
    }

    fn budget_chunks(&mut self, chunks: usize) {
        self.budget = chunks;
    }

    fn looks_every(&mut self, interval_s: f64) {
        self.keep = slow_keep(interval_s);
    }

    fn decide(&mut self, chunks: &[ChunkInfo], _interval_s: f64) -> Decision {
        let capacity = self.capacity.max(self.budget);
        let mut next: HashMap<(i32, usize), Heat> = HashMap::with_capacity(self.scores.len());
        let mut ranked: Vec<(usize, Heat)> = Vec::new();
        // Per target: the fast heat of its touched chunks, summed, and how many they are.
        let mut even: HashMap<i32, (f64, usize)> = HashMap::new();
        for (i, c) in chunks.iter().enumerate() {
            let key = (c.pid, c.addr);
            let heat = self.scores.get(&key).copied().unwrap_or_default().after(
                f64::from(c.walks),
                f64::from(c.samples),
                self.keep,
            );
            if c.mapped_pages == 0 {
                continue;
            }
            let e = even.entry(c.pid).or_default();
            e.0 += heat.fast.max(0.0);
            e.1 += 1;
            if heat.fast <= 0.0 {
                continue;
            }
            ranked.push((i, heat));
        }
        let floor = |pid: i32| {
            even.get(&pid)
                .map_or(0.0, |&(sum, n)| sum / n.max(1) as f64 * FLOOR_SHARE)
        };
        ranked.sort_by(|a, b| {
            b.1.fast
                .partial_cmp(&a.1.fast)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        // Each target keeps its `capacity` best, like one PCC per process.
        let mut per_target: HashMap<i32, usize> = HashMap::new();
        let mut d = Decision::default();
        for (i, heat) in ranked {
            let c = &chunks[i];
            let n = per_target.entry(c.pid).or_default();
            let candidate = *n < capacity;
            *n += usize::from(candidate);
            // A huge chunk keeps its own score, a candidate or not. Valued at zero once it
            // fell just out of the candidates, it was swapped for whichever chunk had just
            // come in at the budget's edge, and back an interval later: chunks of nearly equal
            // heat changed hands every interval, each swap a split and a collapse.
            if c.huge {
                next.insert((c.pid, c.addr), heat);
                d.keep.push((i, heat.fast.max(heat.slow)));
            } else if candidate {
                next.insert((c.pid, c.addr), heat);
                if heat.fast < floor(c.pid) || heat.seen < MIN_SEEN {
                    // Scored, so that heat that builds up counts, but not worth a collapse.
                    continue;
                }
                d.promote.push((i, heat.fast));
                // To take a huge chunk's place, heat must have lasted: a stream through an
                // array heats each chunk it passes for one look, and at a 1 s interval (the
                // PCC paper read its counters every 30 s) the chunks it had just passed
                // outbid the budget's last huge chunks at every look.
                d.lasting.push((i, heat.fast.min(heat.slow)));
            }
        }
        // Huge chunks the PCC never scored (made by the kernel, or huge before any sample
        // reached them) are kept at score 0: the first to go when the budget needs room.
        for (i, c) in chunks.iter().enumerate() {
            if c.huge && !next.contains_key(&(c.pid, c.addr)) {
                d.keep.push((i, 0.0));
            }
        }
        self.scores = next;
        d
    }
}
