//! What the daemon last read of each 2 MiB chunk of one target, and which chunks a look reads
//! again.
//!
//! Reading page tables is most of what a settled daemon costs, so a look reads only the chunks
//! that may have changed: those new to it, those it acted on, and settled ones (read alike
//! twice) when their turn comes, every [`crate::daemon::Config::settled_every`] looks, in runs
//! of [`TURN_RUN`] consecutive chunks so that a look makes a few page-table scans, not one a
//! chunk. A settled chunk read since the last sign that one may have changed (see
//! [`may_have_changed`]) waits [`crate::daemon::Config::quiet_stretch`] times as long: once a
//! program's memory is in place, most looks find no such sign, and a chunk read after the last
//! one is as it was read. The state is one
//! vector sorted by address, merged with the target's chunks at each look: a settled daemon's
//! bookkeeping walks it once instead of looking each chunk up in maps.

use std::ops::Range;

use crate::chunk::Chunk;
use crate::{Result, BASE_PER_HUGE, HUGE};

/// Chunks whose turns to be read again come on the same look: those of one 128 MiB-aligned
/// window of the address space (a target's consecutive chunks may straddle two).
///
/// Settled chunks are read in turn so that each look reads about `1 / every` of them, but the
/// look reads them in runs of consecutive addresses, one page-table scan a run. Turns that
/// alternate chunk by chunk made every due chunk a run of its own: on PageRank at kron:26
/// (4,525 chunks, every 8th look) about 570 scans a look and 10 ms of a core, against 6 ms
/// for the same chunks in runs of 64. A run of 64 keeps the scans to a few a look and still
/// spreads a target of 64 × `every` chunks or more evenly over the looks.
pub const TURN_RUN: usize = 64;

/// How many times a settled chunk's wait doubles while its turns find it as it was: from
/// `settled_every` looks to 4 times that. Only a chunk of 4 KiB pages mapped whole waits
/// longer (see [`may_wait_longer`]), and only in a target whose samples the policy ranks by.
/// On PageRank at kron:26, 4,345 of 4,525 chunks are such, and reading them every 8th look
/// was most of a settled daemon's page-table reads (about 540 of 576 a look); every 32nd look
/// makes them about 136 (a settled look read 181–186 chunks in all, with the huge ones and
/// those that changed).
pub const QUIET_STEPS: u32 = 2;

/// Whether a settled chunk read as (`mapped` pages, `huge`) may wait longer than
/// `settled_every` for its next read: one of 4 KiB pages with every page mapped. It changes
/// only when the program frees some of it or the kernel collapses it on its own, and a policy
/// that ranks by samples finds its heat in them, not in its page table. A huge chunk holds the
/// budget, and what its program does to it (a split, a free) must be seen soon: the budget's
/// room and the release of broken pages follow from it. One partly mapped may still grow.
pub fn may_wait_longer((mapped, huge): (u16, bool)) -> bool {
    !huge && usize::from(mapped) == BASE_PER_HUGE
}

/// The look after `look` on which the settled chunk at `addr` is read again: the next look
/// whose number modulo `every` is its run's turn. At most `every` looks ahead, and always on
/// the same residue for one run of [`TURN_RUN`] chunks, so that a chunk settling late (after
/// the daemon acted on it) falls back into step with its neighbours.
pub fn turn_after(look: u64, addr: usize, every: u64) -> u64 {
    let every = every.max(1);
    let turn = (addr / HUGE / TURN_RUN) as u64 % every;
    let next = look + 1;
    next + (turn + every - next % every) % every
}

/// What two looks compare to tell whether a settled chunk may have changed between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The target's resident pages.
    pub resident_pages: u64,
    /// Huge pages the kernel split or collapsed in any process since boot.
    pub thp_changes: u64,
}

/// Whether what happened between the looks stamped `before` and `now`, the target having
/// taken `faults` page faults (its own, not the daemon's thread's), may have changed a chunk
/// already wholly mapped, or huge, or partly mapped and not faulting: a huge page split or
/// collapsed anywhere, or resident pages that grew by less than the faults (a page freed or
/// swapped out lowers them without a fault; a fault that adds one raises them by one, a
/// huge-page fault or a fault-around by more). Faults alone only fill chunks, and the chunks
/// they may fill are read at once anyway. Unknown counts are taken as a change.
pub fn may_have_changed(before: Option<Stamp>, now: Option<Stamp>, faults: Option<u64>) -> bool {
    let (Some(b), Some(n), Some(f)) = (before, now, faults) else {
        return true;
    };
    let grew = i128::from(n.resident_pages) - i128::from(b.resident_pages);
    n.thp_changes != b.thp_changes || grew < i128::from(f)
}

/// How one look chooses the chunks it reads.
#[derive(Debug, Clone, Copy)]
pub struct Sweep {
    /// Most chunks read (0: all), besides those new to the daemon.
    pub limit: usize,
    /// A settled chunk's turn comes every this many looks (0 or 1: every look).
    pub every: u64,
    /// How many times a whole chunk of 4 KiB pages may double its wait (see [`QUIET_STEPS`]).
    pub quiet_steps: u32,
    /// The target took page faults since the last look: a chunk not wholly mapped may be
    /// filling, and is read now.
    pub faulted: bool,
    /// Something since the last look may have changed a settled chunk ([`may_have_changed`]):
    /// every chunk read before it gets its plain turn.
    pub changed: bool,
    /// How many times as long a settled chunk read since the last change waits (1: no
    /// longer).
    pub stretch: u64,
}

/// One chunk as the daemon knows it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    addr: usize,
    /// (mapped pages, huge) as last read; `None` until read.
    read: Option<(u16, bool)>,
    /// The look that last read it.
    read_at: u64,
    /// For a chunk whose last two reads agreed and that the daemon has not acted on since: the
    /// look from which it is due again, and how many times in a row its turn found it as it
    /// was.
    settled: Option<(u64, u32)>,
}

/// Every chunk of one target's huge-capable ranges, as last read.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// Sorted by address: the chunks of the last look's ranges.
    entries: Vec<Entry>,
    /// Where the next partial sweep starts.
    cursor: usize,
    /// Looks made.
    looks: u64,
    /// The last look told that a settled chunk may have changed: chunks read before it wait
    /// only their plain turn, so a change it was told of is seen within `every` looks.
    last_change: u64,
}

impl Known {
    /// Look at `addrs` (the target's chunks now, sorted by address): read with `scan` those
    /// due (see [`Sweep`]), adding to `read` how many, and push to `broken` the chunks read
    /// huge before and now neither huge nor wholly mapped (the program freed part of a huge
    /// page). Chunks no longer in `addrs` are forgotten.
    pub fn sweep(
        &mut self,
        addrs: &[usize],
        how: Sweep,
        scan: &mut dyn FnMut(Range<usize>) -> Result<Vec<Chunk>>,
        read: &mut u64,
        broken: &mut Vec<usize>,
    ) -> Result<()> {
        self.merge(addrs);
        self.looks += 1;
        let look = self.looks;
        let every = how.every;
        if how.changed {
            self.last_change = look;
        }
        let (last_change, stretch) = (self.last_change, how.stretch.max(1));
        // While a program faults its memory in, a chunk read empty twice (or partly mapped)
        // may be filling: left to its turn, it was seen mapped up to `every` looks late, and
        // a policy on mapped pages acted on it (and the budget counted it) as late.
        let growing = |e: &Entry| {
            how.faulted
                && e.read
                    .is_some_and(|(mapped, huge)| !huge && usize::from(mapped) < BASE_PER_HUGE)
        };
        // A settled chunk's turn is its run's (`turn_after`), within `every` looks of its last
        // read (`stretch` times that, on the same run's residue, for one read since the last
        // change); one the partial sweep did not reach on its turn stays due until it does.
        let its_turn = |e: &Entry| {
            let extra = if e.read_at >= last_change {
                stretch - 1
            } else {
                0
            };
            every <= 1
                || growing(e)
                || e.settled
                    .is_none_or(|(due, q)| look >= due + (every << q).saturating_mul(extra))
        };
        let n = self.entries.len();
        let whole = how.limit == 0 || n <= how.limit;
        let mut due: Vec<bool> = self
            .entries
            .iter()
            .map(|e| e.read.is_none() || (whole && its_turn(e)))
            .collect();
        if !whole {
            // The next `limit` chunks from the cursor whose turn it is: settled chunks passed
            // over let one sweep cover more of a large target for the same reads.
            let from = self.entries.partition_point(|e| e.addr < self.cursor);
            let (mut taken, mut k) = (0, 0);
            while taken < how.limit && k < n {
                let i = (from + k) % n;
                if its_turn(&self.entries[i]) {
                    due[i] = true;
                    taken += 1;
                }
                k += 1;
            }
            self.cursor = self.entries[(from + k) % n].addr;
        }
        // Read the due chunks in runs of consecutive addresses: one page-table scan per run.
        let mut i = 0;
        while i < n {
            if !due[i] {
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < n && due[j] && self.entries[j].addr == self.entries[j - 1].addr + HUGE {
                j += 1;
            }
            *read += (j - i) as u64;
            let first = self.entries[i].addr;
            for c in scan(first..self.entries[j - 1].addr + HUGE)? {
                let Some(e) = c
                    .addr
                    .checked_sub(first)
                    .map(|d| i + d / HUGE)
                    .filter(|&k| k < j)
                    .map(|k| &mut self.entries[k])
                else {
                    continue;
                };
                let now = (c.mapped_pages, c.huge == Some(true));
                let before = e.read.replace(now);
                e.read_at = look;
                if before != Some(now) {
                    e.settled = None;
                } else {
                    // Settled, or still settled: due again at its next turn, within `every`
                    // looks, or a few times that for a chunk of 4 KiB pages mapped whole
                    // that keeps being found so.
                    let quiet = match e.settled {
                        Some((_, q)) if may_wait_longer(now) => (q + 1).min(how.quiet_steps),
                        _ => 0,
                    };
                    e.settled = Some((turn_after(look, e.addr, every << quiet), quiet));
                }
                if before.is_some_and(|b| b.1)
                    && !now.1
                    && now.0 > 0
                    && usize::from(now.0) < BASE_PER_HUGE
                {
                    broken.push(e.addr);
                }
            }
            i = j;
        }
        Ok(())
    }

    /// Keep the entries of `addrs` (sorted), in its order, adding those new to the daemon.
    fn merge(&mut self, addrs: &[usize]) {
        let same = self.entries.len() == addrs.len()
            && self.entries.iter().zip(addrs).all(|(e, &a)| e.addr == a);
        if same {
            return;
        }
        let old = std::mem::take(&mut self.entries);
        let mut k = 0;
        self.entries = addrs
            .iter()
            .map(|&a| {
                while k < old.len() && old[k].addr < a {
                    k += 1;
                }
                match old.get(k) {
                    Some(e) if e.addr == a => *e,
                    _ => Entry {
                        addr: a,
                        read: None,
                        read_at: 0,
                        settled: None,
                    },
                }
            })
            .collect();
    }

    /// Every chunk read so far, as last read: (address, mapped pages, huge), by address.
    pub fn chunks(&self) -> impl Iterator<Item = (usize, u16, bool)> + '_ {
        self.entries
            .iter()
            .filter_map(|e| e.read.map(|(m, h)| (e.addr, m, h)))
    }

    /// The daemon made the chunk at `addr` huge (`huge`) or split it, and read that back: it
    /// is so until the next read, which comes at the next look.
    pub fn acted(&mut self, addr: usize, huge: bool) {
        let i = self.entries.partition_point(|e| e.addr < addr);
        if let Some(e) = self.entries.get_mut(i).filter(|e| e.addr == addr) {
            e.settled = None;
            if let Some(r) = e.read.as_mut() {
                r.1 = huge;
                if huge {
                    r.0 = BASE_PER_HUGE as u16;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_chunks_come_due_in_runs_of_consecutive_addresses() {
        let run = (TURN_RUN * HUGE) as u64;
        let at = |k: u64| (k * run) as usize;
        // Every 8th look: the run at 0 reads on looks 8, 16, ...; the next on 1, 9, 17, ...;
        // the 9th run (k = 8) shares the first's turn.
        assert_eq!(turn_after(0, at(0), 8), 8);
        assert_eq!(turn_after(8, at(0), 8), 16);
        assert_eq!(turn_after(0, at(1), 8), 1);
        assert_eq!(turn_after(1, at(1), 8), 9);
        assert_eq!(turn_after(5, at(1), 8), 9);
        assert_eq!(turn_after(3, at(8), 8), 8);
        // All 64 chunks of a run share its turn; the chunk after them has the next.
        let last = at(2) + (TURN_RUN - 1) * HUGE;
        assert_eq!(turn_after(0, last, 8), turn_after(0, at(2), 8));
        assert_eq!(turn_after(0, last + HUGE, 8), 3);
        // Always within `every` looks, never the look itself; every look with 1 (or 0).
        for look in 0..20 {
            for k in 0..10 {
                let t = turn_after(look, at(k), 8);
                assert!(t > look && t <= look + 8, "look {look}, run {k}: {t}");
            }
            assert_eq!(turn_after(look, at(3), 1), look + 1);
            assert_eq!(turn_after(look, at(3), 0), look + 1);
        }
    }

    /// A page table for `sweep`: `n` chunks from 0, each with the (mapped pages, huge) of
    /// `state`, and the ranges scanned.
    struct Table {
        state: Vec<(u16, bool)>,
        scans: Vec<Range<usize>>,
    }

    impl Table {
        fn new(n: usize, mapped: u16) -> Table {
            Table {
                state: vec![(mapped, false); n],
                scans: Vec::new(),
            }
        }

        fn addrs(&self) -> Vec<usize> {
            (0..self.state.len()).map(|i| i * HUGE).collect()
        }

        /// One look at every chunk; the chunks it read.
        fn look(&mut self, known: &mut Known, how: Sweep) -> u64 {
            let addrs = self.addrs();
            self.look_at(known, &addrs, how).0
        }

        /// One look at the chunks at `addrs`; the chunks it read and those it found broken.
        fn look_at(&mut self, known: &mut Known, addrs: &[usize], how: Sweep) -> (u64, Vec<usize>) {
            let (state, scans) = (&self.state, &mut self.scans);
            let (mut read, mut broken) = (0, Vec::new());
            known
                .sweep(
                    addrs,
                    how,
                    &mut |r: Range<usize>| {
                        scans.push(r.clone());
                        Ok(r.step_by(HUGE)
                            .map(|a| Chunk {
                                addr: a,
                                mapped_pages: state[a / HUGE].0,
                                swapped_pages: 0,
                                huge: Some(state[a / HUGE].1),
                            })
                            .collect())
                    },
                    &mut read,
                    &mut broken,
                )
                .expect("sweep");
            (read, broken)
        }
    }

    fn every(every: u64, changed: bool) -> Sweep {
        Sweep {
            limit: 0,
            every,
            quiet_steps: 0,
            faulted: false,
            changed,
            stretch: 4,
        }
    }

    #[test]
    fn a_chunk_read_since_the_last_change_waits_longer() {
        // 2 runs of 64 chunks, settled every 2nd look: while every look is told of a change,
        // each run is read every other look (64 a look).
        let mut t = Table::new(2 * TURN_RUN, 512);
        let mut k = Known::default();
        assert_eq!(t.look(&mut k, every(2, true)), 128);
        assert_eq!(t.look(&mut k, every(2, true)), 128);
        let told: Vec<u64> = (3..=10).map(|_| t.look(&mut k, every(2, true))).collect();
        assert_eq!(told, [64; 8]);
        // From look 11 none is: the run read at 10 (the last change) waits 8 looks (stretch
        // 4) from its turn, 12: read at 18 and 26; the run read at 9 has its plain turn at
        // 11 first, then 19.
        let quiet: Vec<u64> = (11..=26).map(|_| t.look(&mut k, every(2, false))).collect();
        for (look, &n) in (11..=26).zip(&quiet) {
            let expected = if [11, 18, 19, 26].contains(&look) {
                64
            } else {
                0
            };
            assert_eq!(n, expected, "look {look}");
        }
        // A change at look 27: the run read at 19 has its plain turn (due at 21), the one
        // read at 26 waits for its own (28), unstretched.
        assert_eq!(t.look(&mut k, every(2, true)), 64);
        assert_eq!(t.look(&mut k, every(2, false)), 64);
        // The daemon acting on a chunk makes it due at the next look, changed or not.
        for _ in 0..8 {
            t.look(&mut k, every(2, false));
        }
        let before = t.scans.len();
        k.acted(5 * HUGE, true);
        t.state[5] = (512, true);
        assert_eq!(t.look(&mut k, every(2, false)), 1);
        assert_eq!(t.scans[before..].to_vec(), vec![(5 * HUGE)..(6 * HUGE)]);
        assert!(k.chunks().any(|c| c == (5 * HUGE, 512, true)));
    }

    #[test]
    fn faults_that_only_add_pages_change_no_settled_chunk() {
        let at = |resident_pages, thp_changes| {
            Some(Stamp {
                resident_pages,
                thp_changes,
            })
        };
        // Nothing happened; pages added by as many faults, or by fewer (a huge page, a
        // fault-around): no change.
        assert!(!may_have_changed(at(100, 7), at(100, 7), Some(0)));
        assert!(!may_have_changed(at(100, 7), at(150, 7), Some(50)));
        assert!(!may_have_changed(at(100, 7), at(612, 7), Some(1)));
        // A page freed (or swapped out), alone or hidden among faults; a huge page split or
        // collapsed anywhere; a count not read.
        assert!(may_have_changed(at(100, 7), at(99, 7), Some(0)));
        assert!(may_have_changed(at(100, 7), at(149, 7), Some(50)));
        assert!(may_have_changed(at(100, 7), at(100, 8), Some(0)));
        assert!(may_have_changed(None, at(100, 7), Some(0)));
        assert!(may_have_changed(at(100, 7), None, Some(0)));
        assert!(may_have_changed(at(100, 7), at(100, 7), None));
    }

    #[test]
    fn chunks_are_merged_by_address_as_the_ranges_change() {
        let mut t = Table::new(4, 100);
        let mut k = Known::default();
        t.look(&mut k, every(8, false));
        t.look(&mut k, every(8, false));
        // A chunk goes (unmapped) and one comes after the others: only the new one is read.
        let mut addrs = t.addrs();
        addrs.remove(1);
        addrs.push(6 * HUGE);
        t.state.resize(7, (7, false));
        let (read, _) = t.look_at(&mut k, &addrs, every(8, false));
        assert_eq!(read, 1);
        let got: Vec<_> = k.chunks().collect();
        assert_eq!(
            got,
            [
                (0, 100, false),
                (2 * HUGE, 100, false),
                (3 * HUGE, 100, false),
                (6 * HUGE, 7, false)
            ]
        );
    }

    #[test]
    fn a_huge_chunk_read_partly_mapped_is_broken() {
        let mut t = Table::new(2, 512);
        t.state[1] = (512, true);
        let mut k = Known::default();
        t.look(&mut k, every(1, false));
        t.state[1] = (300, false);
        let addrs = t.addrs();
        let (_, broken) = t.look_at(&mut k, &addrs, every(1, false));
        assert_eq!(broken, [HUGE]);
    }
}
