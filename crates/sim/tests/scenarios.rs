//! Every promotion policy on short hand-built traces, through the engine, with the expected
//! promotions, demotions, huge bytes and walks counted by hand in the comments.
//!
//! Conventions of these scenarios:
//! - Frames are 2 MiB, pages 4 KiB; "frame f, page p" is `BASE + f × 2 MiB + p × 4 KiB` in one
//!   region named `data`, so frame ids are frame numbers.
//! - Most scenarios use a TLB of one entry per page size and no L2: an access walks unless
//!   it repeats the page of the last access mapped at the same size, which makes walks easy
//!   to count by hand. A first touch always walks, so a page is "mapped" exactly when it
//!   has been accessed.
//! - A policy with an interval of I accesses ticks just before access number k × I (counting
//!   from 1), so "interval 1" is the first I − 1 accesses and every later interval holds I
//!   accesses. A plan event made at tick k is at access k × I; one made on a walk is at the
//!   number of the access that walked.
//! - Padding repeats the last access (a TLB hit: no walk, no new page, no accessed bit)
//!   unless a scenario says otherwise.

use hugewise_sim::config::{SizeName, TlbConfig, TlbSpec};
use hugewise_sim::pagemap::FrameId;
use hugewise_sim::policies;
use hugewise_sim::policy::{Action, Ctx, PlanEvent, Policy, Timing};
use hugewise_sim::Machine;
use hugewise_sys::PageSize;
use hugewise_trace::{Access, Header, Region};

const FRAME: u64 = 2 << 20;
const PAGE: u64 = 4096;
/// The `data` region's first address (1 GiB-aligned).
const BASE: u64 = 0x40_0000_0000;
/// A page outside every region: its frame is not part of the footprint.
const OUTSIDE: u64 = 0x7f00_0000_0000;

fn addr(frame: u64, page: u64) -> u64 {
    BASE + frame * FRAME + page * PAGE
}

fn data(frames: u64) -> Header {
    Header {
        addr_shift: 0,
        streams: 1,
        regions: vec![Region {
            name: "data".into(),
            base: BASE,
            size: frames * FRAME,
        }],
    }
}

/// One entry per page size, no L2, no page-walk cache: a walk reads 4 entries for a 4 KiB
/// page, 3 for a 2 MiB page.
fn one_entry() -> TlbConfig {
    let one = |s| TlbSpec {
        entries: 1,
        ways: 1,
        sizes: vec![s],
    };
    let c = TlbConfig {
        name: "one-entry".into(),
        l1: vec![one(SizeName::K4), one(SizeName::M2), one(SizeName::G1)],
        l2: vec![],
        pwc: None,
    };
    c.validate(None).expect("a valid TLB");
    c
}

/// `spec` on `header` with `rate` accesses per second (so an interval of `s` seconds is
/// `s × rate` accesses) and a budget of `share` of the footprint.
fn machine(spec: &str, header: &Header, rate: f64, share: Option<f64>) -> Machine {
    let timing = Timing {
        accesses_per_s: rate,
        time_scale: 1.0,
    };
    let p = policies::parse(spec, &timing, header.streams).expect("policy spec");
    Machine::new(&one_entry(), header, p, share).expect("machine")
}

/// A trace being built.
#[derive(Default)]
struct Trace {
    packed: Vec<u64>,
    /// The page padding repeats (`None`: the last access).
    pad: Option<u64>,
}

impl Trace {
    fn padded_with(pad: u64) -> Trace {
        Trace {
            packed: Vec::new(),
            pad: Some(pad),
        }
    }

    fn at(&mut self, a: u64) -> &mut Self {
        self.packed.push(
            Access {
                addr: a,
                write: false,
            }
            .pack(),
        );
        self
    }

    /// Pages `pages` of frame `frame`, in order.
    fn touch(&mut self, frame: u64, pages: impl IntoIterator<Item = u64>) -> &mut Self {
        for p in pages {
            self.at(addr(frame, p));
        }
        self
    }

    /// Pad up to the access just before tick `k` of a policy with interval `interval`.
    fn until_tick(&mut self, k: u64, interval: u64) -> &mut Self {
        let end = (k * interval - 1) as usize;
        assert!(self.packed.len() <= end, "the interval is over-full");
        let pad = match self.pad {
            Some(a) => Access {
                addr: a,
                write: false,
            }
            .pack(),
            None => *self.packed.last().expect("something to repeat"),
        };
        self.packed.resize(end, pad);
        self
    }

    fn len(&self) -> u64 {
        self.packed.len() as u64
    }
}

fn promote(at: u64, frame: u64) -> PlanEvent {
    PlanEvent {
        at_access: at,
        addr: addr(frame, 0),
        bytes: FRAME,
        page_size: PageSize::Size2M,
        action: Action::Promote,
    }
}

fn demote(at: u64, frame: u64) -> PlanEvent {
    PlanEvent {
        action: Action::Demote,
        ..promote(at, frame)
    }
}

/// (walks, walks by size, page-table reads) so far.
fn walks(m: &Machine) -> (u64, [u64; 3], u64) {
    let c = m.totals().counts;
    (c.walks, c.walks_by_size, c.walk_reads)
}

mod linux {
    use super::*;

    #[test]
    fn a_huge_page_at_each_first_touch_until_the_budget_is_gone() {
        // 4 frames, a budget of half of them: 2.
        let mut m = machine("linux", &data(4), 1.0, Some(0.5));
        let mut t = Trace::default();
        t.touch(2, [0]) // #1: 4 KiB walk; frame 2 first touched: promoted at 1
            .touch(0, [0]) // #2: 4 KiB walk; frame 0 promoted at 2: budget spent
            .touch(1, [0]) // #3: 4 KiB walk; frame 1 first touched: refused
            .touch(2, [5]) // #4: frame 2 is huge, the 2 MiB entry is empty: 2 MiB walk
            .touch(1, [3]) // #5: 4 KiB entry holds (1, 0): walk; frame 1 seen, not retried
            .touch(0, [100]) // #6: 2 MiB entry holds frame 2: 2 MiB walk
            .touch(0, [7]) // #7: same 2 MiB page: hit
            .touch(3, [0]); // #8: 4 KiB walk; frame 3 first touched: refused
        m.feed(0, &t.packed);
        assert_eq!(m.plan(), &[promote(1, 2), promote(2, 0)]);
        let n = m.totals();
        assert_eq!(n.huge_bytes, 2 * FRAME);
        assert_eq!(
            (
                n.budget.promotions,
                n.budget.refused,
                n.budget.peak_frames,
                n.budget.demotions
            ),
            (2, 2, 2, 0)
        );
        // Walks #1 #2 #3 #5 #8 at 4 KiB (4 reads each) and #4 #6 at 2 MiB (3 reads each):
        // 5 × 4 + 2 × 3 = 26 reads. No L2, so every L1 miss walks.
        assert_eq!(walks(&m), (7, [5, 2, 0], 26));
        assert_eq!((n.counts.accesses, n.counts.l1_misses), (8, 7));
    }

    #[test]
    fn a_warm_up_acts_but_is_not_counted() {
        // Budget of 1 of 2 frames; the first 3 accesses are warm-up (a first-touch prologue).
        let mut m = machine("linux", &data(2), 1.0, Some(0.5)).with_warmup(3);
        let mut t = Trace::default();
        t.touch(1, [0]) // #1 warm-up: 4 KiB walk; frame 1 promoted at 1
            .touch(0, [0]) // #2 warm-up: 4 KiB walk; frame 0 refused
            .touch(1, [9]) // #3 warm-up: 2 MiB walk
            .touch(1, [10]) // #4: the 2 MiB entry kept from the warm-up: hit
            .touch(0, [1]); // #5: 4 KiB walk
                            // Fed in two pieces, the warm-up's end inside the second.
        m.feed(0, &t.packed[..2]);
        assert_eq!(
            m.totals().counts.accesses,
            0,
            "nothing counted while warming up"
        );
        m.feed(0, &t.packed[2..]);
        assert_eq!(m.plan(), &[promote(1, 1)]);
        let n = m.totals();
        assert_eq!((n.budget.promotions, n.budget.refused), (1, 1));
        // Only #4 and #5 count: one hit, one 4 KiB walk of 4 reads.
        assert_eq!(walks(&m), (1, [1, 0, 0], 4));
        assert_eq!((n.counts.accesses, n.counts.l1_misses), (2, 1));
    }

    #[test]
    fn the_promoting_walk_flushes_its_own_4k_entry() {
        // Unlimited budget: page 0 of frame 0 walks at 4 KiB (#1) and the frame becomes
        // huge; the shootdown drops the 4 KiB entry just filled, so touching page 0 again
        // (#2) walks once more, at 2 MiB, and then hits (#3).
        let mut m = machine("linux", &data(1), 1.0, None);
        let mut t = Trace::default();
        t.touch(0, [0, 0, 0]);
        m.feed(0, &t.packed);
        assert_eq!(m.plan(), &[promote(1, 0)]);
        assert_eq!(walks(&m), (2, [1, 1, 0], 4 + 3));
    }
}

mod khugepaged {
    use super::*;

    #[test]
    fn collapses_frames_with_at_most_max_ptes_none_empty_pages_scanning_pages_to_scan() {
        // Interval 2 000 accesses; 1 024 pages per scan = 2 frames per wake-up; a frame may
        // be collapsed with at most 256 of its 512 pages unmapped, i.e. with 256 mapped.
        let i = 2000;
        let spec = "linux-khugepaged:sleep=1s:pages=1024:max_ptes_none=256";
        let mut m = machine(spec, &data(4), i as f64, None);
        let mut t = Trace::default();
        // Interval 1: frame 0 gets 256 pages (256 unmapped: allowed), frame 1 255 (257
        // unmapped: not), frame 2 300, frame 3 all 512: 1 323 first touches, 1 323 walks.
        t.touch(0, 0..256)
            .touch(1, 0..255)
            .touch(2, 0..300)
            .touch(3, 0..512)
            .until_tick(1, i);
        let first = t.packed.len();
        // Tick 1 scans frames 0 and 1: frame 0 collapses. Tick 2 scans 2 and 3: both
        // collapse, in address order. Interval 3 maps one more page of frame 1 (256 now);
        // tick 3 scans 0 (huge, skipped) and 1: collapses.
        t.until_tick(2, i)
            .touch(1, [255])
            .until_tick(3, i)
            .touch(1, [255]); // access 6 000, right after tick 3
        assert_eq!(t.len(), 6000);
        m.feed(0, &t.packed[..first]);
        assert!(m.plan().is_empty(), "no tick before access 2 000");
        m.feed(0, &t.packed[first..]);
        assert_eq!(
            m.plan(),
            &[
                promote(2000, 0),
                promote(4000, 2),
                promote(4000, 3),
                promote(6000, 1)
            ]
        );
        assert_eq!(m.totals().huge_bytes, 4 * FRAME);
        // Walks: the 1 323 first touches. The padding repeats (3, 511) and hits; it ends
        // before tick 2, so frame 3 is never touched huge. (1, 255), access 4 000, walks at
        // 4 KiB and its repeats hit, until tick 3 makes frame 1 huge: access 6 000 walks at
        // 2 MiB. 1 324 × 4 + 3 = 5 299 reads.
        assert_eq!(walks(&m), (1325, [1324, 1, 0], 5299));
    }

    #[test]
    fn the_scan_cursor_wraps_and_an_untouched_frame_is_never_collapsed() {
        // Defaults but 2 frames per scan (pages=1024), 3 frames, interval 10: max_ptes_none
        // 511 collapses a frame with a single mapped page, never one with none.
        let i = 10;
        let mut m = machine(
            "linux-khugepaged:sleep=1s:pages=1024",
            &data(3),
            i as f64,
            None,
        );
        let mut t = Trace::default();
        t.touch(2, [0]).until_tick(1, i); // tick 1 scans 0, 1: nothing mapped there
        t.touch(0, [9]).until_tick(2, i); // tick 2 scans 2, 0: both, in that order
        t.touch(1, [1]).until_tick(3, i); // tick 3 scans 1, 2: 1 (2 is huge)
        t.touch(1, [1]); // access 30
        m.feed(0, &t.packed);
        assert_eq!(m.plan(), &[promote(20, 2), promote(20, 0), promote(30, 1)]);
    }
}

mod hawkeye {
    use super::*;

    #[test]
    fn promotes_from_the_fullest_coverage_bucket_down() {
        // Interval 2 000; 2 regions per window. Buckets are coverage × 10 / 513: bucket 0 is
        // 1..=51 pages, bucket 1 52..=102, bucket 8 411..=461, bucket 9 462..=512.
        let i = 2000;
        let mut m = machine("hawkeye:window=1s:regions=2", &data(6), i as f64, None);
        let mut t = Trace::default();
        // Window 1 (each page walks once, setting its accessed bit):
        t.touch(0, 0..51) // coverage 51: bucket 0
            .touch(1, 0..52) // 52: bucket 1
            .touch(2, 0..461) // 461: bucket 8
            .touch(3, 0..462) // 462: bucket 9
            .touch(5, 0..100) // 100: bucket 1; frame 4 untouched: no bucket
            .until_tick(1, i);
        // Tick 1: order 3 (bucket 9), 2 (bucket 8), 1 and 5 (bucket 1), 0; two promoted.
        // Window 2 (bits were cleared; every page walks again, as the TLB has moved on):
        t.touch(1, 0..52) // 52: bucket 1
            .touch(5, 0..51) // 51: bucket 0
            .touch(0, [0]) // 1: bucket 0
            .until_tick(2, i);
        // Tick 2: order 1, then bucket 0 in address order: 0 (coverage 1) before 5
        // (coverage 51): within a bucket, frames go by address. Two promoted: 1 and 0.
        t.until_tick(3, i).at(addr(0, 0));
        // Window 3: only frame 0's page 0, now huge. Tick 3: no 4 KiB frame has coverage
        // (frame 5 went untouched), so nothing is promoted: coverage is per window.
        m.feed(0, &t.packed);
        assert_eq!(
            m.plan(),
            &[
                promote(2000, 3),
                promote(2000, 2),
                promote(4000, 1),
                promote(4000, 0)
            ]
        );
        assert_eq!(m.totals().huge_bytes, 4 * FRAME);
        // Walks: window 1's 1 126 pages and window 2's 104, all at 4 KiB; the padding after
        // tick 2 repeats (0, 0), now in a huge frame: one 2 MiB walk, then hits to the end.
        assert_eq!(walks(&m), (1231, [1230, 1, 0], 1230 * 4 + 3));
    }

    #[test]
    fn a_page_the_tlb_keeps_shows_no_coverage() {
        // Interval 1 000, one region per window.
        let i = 1000;
        let mut m = machine("hawkeye:window=1s:regions=1", &data(3), i as f64, None);
        let mut t = Trace::default();
        // Window 1: frame 0 coverage 60 (bucket 1), frame 1 coverage 10 (bucket 0); the
        // padding repeats (1, 9). Tick 1 promotes frame 0.
        t.touch(0, 0..60).touch(1, 0..10).until_tick(1, i);
        // Window 2: frame 1's page 9 500 times: it stays in the TLB, never walks, and its
        // accessed bit (cleared at tick 1) stays clear; then one walk to frame 2.
        for _ in 0..500 {
            t.touch(1, [9]);
        }
        t.touch(2, [0]).until_tick(2, i).touch(2, [0]);
        m.feed(0, &t.packed);
        // Tick 2 sees frame 1 at coverage 0 and frame 2 at 1: frame 2 is promoted, though
        // frame 1 took half the window's accesses.
        assert_eq!(m.plan(), &[promote(1000, 0), promote(2000, 2)]);
        // 70 + 1 walks at 4 KiB; access 2 000 repeats (2, 0), now huge: one 2 MiB walk.
        assert_eq!(walks(&m), (72, [71, 1, 0], 71 * 4 + 3));
    }
}

mod ingens {
    use super::*;

    #[test]
    fn promotes_frames_90_percent_in_use_in_address_order() {
        // Interval 2 000; one region per scan; 90 % of 512 is 460.8: 461 pages are needed.
        let i = 2000;
        let mut m = machine("ingens:scan=1s:regions=1", &data(3), i as f64, None);
        let mut t = Trace::default();
        t.touch(0, 0..460) // 460 pages: 89.8 %, not enough
            .touch(1, 0..461) // 461: 90.04 %
            .touch(2, 0..512) // all
            .until_tick(1, i);
        // Tick 1: candidates 1, 2 in address order; one per scan: 1. Tick 2: 2.
        t.until_tick(2, i);
        // Interval 3: frame 0's 461st page. Tick 3: 0.
        t.touch(0, [460]).until_tick(3, i).touch(0, [460]);
        m.feed(0, &t.packed);
        assert_eq!(
            m.plan(),
            &[promote(2000, 1), promote(4000, 2), promote(6000, 0)]
        );
        assert_eq!(m.totals().huge_bytes, 3 * FRAME);
        // 1 433 + 1 first touches at 4 KiB. The padding repeats (2, 511) and hits; it ends
        // before tick 2 makes frame 2 huge. Access 6 000 repeats (0, 460) after tick 3 made
        // frame 0 huge: one 2 MiB walk.
        assert_eq!(walks(&m), (1435, [1434, 1, 0], 1434 * 4 + 3));
    }

    #[test]
    fn the_threshold_is_an_option() {
        // util=50%: 256 pages suffice, 255 do not.
        let i = 1000;
        let mut m = machine("ingens:scan=1s:util=50%", &data(2), i as f64, None);
        let mut t = Trace::default();
        t.touch(0, 0..255)
            .touch(1, 0..256)
            .until_tick(1, i)
            .touch(1, [0]);
        m.feed(0, &t.packed);
        assert_eq!(m.plan(), &[promote(1000, 1)]);
    }
}

mod mega {
    use super::*;

    #[test]
    fn promotes_at_90_percent_mapped_and_half_used() {
        // history=1: the average is the last scan's utilisation. Interval 1 000; padding
        // goes to a page outside the footprint (one mapped page: never tracked).
        let i = 1000;
        let mut m = machine("mega:scan=1s:history=1", &data(3), i as f64, None);
        let mut t = Trace::padded_with(OUTSIDE);
        // Interval 1: frames 0, 1, 2 map 300 pages each (58.6 %): tracked from tick 1, not
        // yet 90 % mapped.
        t.touch(0, 0..300)
            .touch(1, 0..300)
            .touch(2, 0..300)
            .until_tick(1, i);
        // Interval 2, utilisation = pages accessed in it / 512:
        t.touch(0, 300..461) // frame 0: 461 mapped (90.04 %); 161 new +
            .touch(0, 0..95) //   95 old = 256 used (50 %): promoted at tick 2
            .touch(1, 300..460) // frame 1: 460 mapped (89.8 %); 360 used: not
            .touch(1, 0..200)
            .touch(2, 300..461) // frame 2: 461 mapped; 161 + 94 = 255 used
            .touch(2, 0..94) //   (49.8 %): not
            .until_tick(2, i)
            .at(OUTSIDE);
        m.feed(0, &t.packed);
        assert_eq!(m.plan(), &[promote(2000, 0)]);
        assert_eq!(m.totals().huge_bytes, FRAME);
    }

    #[test]
    fn tracking_starts_at_half_mapped_so_earlier_idle_scans_do_not_count() {
        // history=2. Frame 0 maps 255 pages in interval 1 (not tracked), frame 1 256
        // (tracked: history [0.5]).
        let i = 1000;
        let mut m = machine("mega:scan=1s:history=2", &data(2), i as f64, None);
        let mut t = Trace::padded_with(OUTSIDE);
        t.touch(0, 0..255).touch(1, 0..256).until_tick(1, i);
        // Interval 2 idle: frame 1's history [0.5, 0]; frame 0 still untracked.
        t.until_tick(2, i);
        // Interval 3: both map the rest of their pages. Frame 0: 257 used, tracked now,
        // history [257/512], average 50.2 %: promoted. Frame 1: 256 used, history [0, 0.5]
        // (the oldest scan dropped), average 25 %: not promoted.
        t.touch(0, 255..512)
            .touch(1, 256..512)
            .until_tick(3, i)
            .at(OUTSIDE);
        m.feed(0, &t.packed);
        assert_eq!(m.plan(), &[promote(3000, 0)]);
    }

    #[test]
    fn demotes_below_a_quarter_used_and_the_freed_budget_promotes_another() {
        // history=1; 2 frames, a budget of one; interval 2 000.
        let i = 2000;
        let mut m = machine("mega:scan=1s:history=1", &data(2), i as f64, Some(0.5));
        let mut t = Trace::padded_with(OUTSIDE);
        // Interval 1: frame 0 uses all 512 pages. Tick 1: promoted.
        t.touch(0, 0..512).until_tick(1, i);
        // Interval 2: frame 0 uses 128 pages (25 %: kept); frame 1 all 512, but the budget
        // is spent.
        t.touch(0, 0..128).touch(1, 0..512).until_tick(2, i);
        // Interval 3: frame 0 uses 127 (24.8 %): demoted at tick 3, before promotions, so
        // frame 1 takes its place at the same tick.
        t.touch(0, 0..127).touch(1, 0..512).until_tick(3, i);
        // Interval 4: frame 0 uses 256 (50 %, and its pages stay mapped: 100 %): a candidate
        // again, but the budget is frame 1's.
        t.touch(0, 0..256).touch(1, 0..512).until_tick(4, i);
        // Interval 5: frame 1 uses 127, frame 0 all: they swap at tick 5.
        t.touch(1, 0..127)
            .touch(0, 0..512)
            .until_tick(5, i)
            .at(OUTSIDE);
        m.feed(0, &t.packed);
        assert_eq!(
            m.plan(),
            &[
                promote(2000, 0),
                demote(6000, 0),
                promote(6000, 1),
                demote(10000, 1),
                promote(10000, 0)
            ]
        );
        let b = m.totals().budget;
        assert_eq!(
            (b.promotions, b.demotions, b.used_frames, b.peak_frames),
            (3, 2, 1, 1)
        );
    }

    #[test]
    fn with_ten_scans_of_history_an_idle_huge_frame_goes_at_the_fourth_idle_scan() {
        // Default history (10). Interval 1: all 512 pages used; tick 1: history [1],
        // promoted. Then idle: averages 1/2, 1/3, 1/4 (not below 25 %), 1/5: demoted at
        // tick 5.
        let i = 1000;
        let mut m = machine("mega:scan=1s", &data(1), i as f64, None);
        let mut t = Trace::padded_with(OUTSIDE);
        t.touch(0, 0..512).until_tick(8, i).at(OUTSIDE);
        m.feed(0, &t.packed);
        assert_eq!(m.plan(), &[promote(1000, 0), demote(5000, 0)]);
    }
}

mod fixed {
    use super::*;

    fn three_regions() -> Header {
        Header {
            addr_shift: 0,
            streams: 1,
            regions: vec![
                Region {
                    name: "a".into(),
                    base: BASE,
                    size: 10 * FRAME,
                },
                Region {
                    name: "b".into(),
                    base: BASE + 16 * FRAME,
                    size: 4 * FRAME,
                },
                Region {
                    name: "c".into(),
                    base: BASE + 32 * FRAME,
                    size: 2 * FRAME,
                },
            ],
        }
    }

    #[test]
    fn promotes_the_targets_in_the_order_given_while_the_budget_lasts() {
        // Footprint 10 + 4 + 2 = 16 frames; a budget of 6/16 = 6 frames. Targets, in order:
        // frames 2 and 3 of b (a range ending one byte into frame 3), the leading 25 % of a
        // (2.5 frames, rounded up to 3: frames 0, 1, 2), then c (2 frames): 7 wanted, the
        // last (c's second frame) past the budget.
        let b2 = BASE + 18 * FRAME;
        let spec = format!(
            "static:range={b2:#x}-{:#x}:region=a@25%:region=c",
            b2 + FRAME + 1
        );
        let mut m = machine(&spec, &three_regions(), 1.0, Some(6.0 / 16.0));
        let mut t = Trace::default();
        t.touch(18, [0]) // b's frame 2, huge: 2 MiB walk
            .touch(2, [511]) // a's frame 2: 2 MiB walk
            .touch(3, [0]) // a's frame 3, not promoted: 4 KiB walk
            .touch(2, [7]) // a's frame 2 again: the 2 MiB entry holds it: hit
            .touch(33, [0]); // c's frame 1, not promoted: 4 KiB walk
        m.feed(0, &t.packed);
        assert_eq!(
            m.plan(),
            &[
                promote(0, 18),
                promote(0, 19),
                promote(0, 0),
                promote(0, 1),
                promote(0, 2),
                promote(0, 32)
            ],
            "everything before the first access, in the order given"
        );
        assert_eq!(m.totals().huge_bytes, 6 * FRAME);
        assert_eq!(walks(&m), (4, [2, 2, 0], 2 * 4 + 2 * 3));
    }

    #[test]
    fn a_share_of_a_region_is_exact_for_whole_frames() {
        // 7 % of 100 frames is 7 frames (7 % × 200 MiB is 7.000000000000001 frames in
        // binary floating point: rounding that up would take 8).
        let m = |spec: &str| {
            let mut m = machine(spec, &data(100), 1.0, None);
            m.feed(
                0,
                &[Access {
                    addr: BASE,
                    write: false,
                }
                .pack()],
            );
            m.totals().budget.promotions
        };
        assert_eq!(m("static:region=data@7%"), 7);
        assert_eq!(m("static:region=data@29%"), 29);
        assert_eq!(m("static:region=data@6.5%"), 7, "6.5 frames round up");
        assert_eq!(m("static:region=data@0%"), 0);
    }

    #[test]
    fn a_region_the_trace_lacks_is_refused() {
        let timing = Timing {
            accesses_per_s: 1.0,
            time_scale: 1.0,
        };
        let p = policies::parse("static:region=nope", &timing, 1).expect("spec parses");
        let e = Machine::new(&one_entry(), &data(1), p, None)
            .err()
            .expect("refused");
        assert!(e.to_string().contains("no region 'nope'"), "{e}");
    }
}

mod pcc {
    use super::*;

    /// Two cores' walks in one interval of 100 accesses, then tick 1, for `spec`. Each
    /// frame's first walk is cold (no accessed bit yet): it does not enter a PCC.
    fn two_cores(spec: &str) -> Vec<PlanEvent> {
        let header = Header {
            streams: 2,
            ..data(4)
        };
        let mut m = machine(spec, &header, 100.0, None);
        let mut core0 = Trace::default();
        core0.touch(0, 0..6).touch(1, 0..2); // frame 0: 5 counted walks, frame 1: 1
        let mut core1 = Trace::default();
        core1.touch(2, 0..4).touch(3, 0..3); // frame 2: 3, frame 3: 2
                                             // Core 1 repeats its last page (a hit) up to 99 accesses in all, then once more:
                                             // the 100th access, just after tick 1.
        let last = *core1.packed.last().expect("an access");
        core1.packed.resize((100 - core0.len()) as usize, last);
        m.feed(0, &core0.packed);
        m.feed(1, &core1.packed);
        assert_eq!(m.totals().counts.accesses, 100);
        m.plan().to_vec()
    }

    #[test]
    fn highest_counts_first_across_cores() {
        // Counts 0: 5, 2: 3, 3: 2, 1: 1; three regions per interval.
        assert_eq!(
            two_cores("pcc:interval=1s:regions=3"),
            [promote(100, 0), promote(100, 2), promote(100, 3)]
        );
    }

    #[test]
    fn round_robin_takes_each_cores_top_in_turn() {
        // Core 0 ranks 0, 1; core 1 ranks 2, 3: the order is 0, 2, 1, 3.
        assert_eq!(
            two_cores("pcc:interval=1s:regions=3:order=rr"),
            [promote(100, 0), promote(100, 2), promote(100, 1)]
        );
    }

    #[test]
    fn a_bias_weights_a_cores_counts() {
        // Core 1 counts double: 2: 6, 0: 5, 3: 4, 1: 1.
        assert_eq!(
            two_cores("pcc:interval=1s:regions=3:bias=1/2"),
            [promote(100, 2), promote(100, 0), promote(100, 3)]
        );
    }

    #[test]
    fn a_region_walked_only_cold_waits_for_a_warm_walk() {
        // One core, interval 100, no limit per interval. Frame 0: 3 walks, 2 counted;
        // frame 1: one cold walk, not cached. Tick 1 promotes frame 0 only. Interval 2:
        // one more walk to frame 1 (warm now): cached, promoted at tick 2.
        let mut m = machine("pcc:interval=1s", &data(2), 100.0, None);
        let mut t = Trace::default();
        t.touch(0, 0..3).touch(1, [0]).until_tick(1, 100);
        t.touch(1, [1]).until_tick(2, 100).at(addr(1, 1));
        m.feed(0, &t.packed);
        assert_eq!(m.plan(), &[promote(100, 0), promote(200, 1)]);
    }
}

mod budget {
    use super::*;

    /// Policies that, on a trace where every frame is hot, would make every frame huge.
    const ALL_HUNGRY: &[&str] = &[
        "all",
        "linux",
        "linux-khugepaged:sleep=1s",
        "hawkeye:window=1s",
        "ingens:scan=1s",
        "mega:scan=1s",
        "pcc:interval=1s",
        "static:region=data",
    ];

    /// Six intervals of 8 000 accesses over 8 frames: every interval touches every page of
    /// every frame (4 096 distinct pages), round-robin across frames.
    fn busy() -> Vec<u64> {
        let mut out = Vec::new();
        while out.len() < 48_000 {
            for p in 0..512 {
                for f in 0..8 {
                    out.push(
                        Access {
                            addr: addr(f, p),
                            write: false,
                        }
                        .pack(),
                    );
                }
            }
            while out.len() % 8000 != 7999 {
                out.push(*out.last().expect("an access"));
            }
            out.push(*out.last().expect("an access"));
        }
        out
    }

    #[test]
    fn every_policy_fills_exactly_its_budget_and_never_more() {
        let trace = busy();
        for spec in ALL_HUNGRY {
            for k in 0..=8u64 {
                let mut m = machine(spec, &data(8), 8000.0, Some(k as f64 / 8.0));
                for chunk in trace.chunks(997) {
                    m.feed(0, chunk);
                    let b = m.totals().budget;
                    assert!(b.used_frames <= k && b.peak_frames <= k, "{spec} at {k}/8");
                }
                let n = m.totals();
                assert_eq!(n.huge_bytes, k * FRAME, "{spec}: a budget of {k} frames");
                assert_eq!(n.budget.peak_frames, k, "{spec}");
                // The plan replayed never holds more than k either, and ends where the
                // engine does.
                let mut held = 0i64;
                for e in m.plan() {
                    held += if e.action == Action::Promote { 1 } else { -1 };
                    assert!(held <= k as i64, "{spec}: plan past the budget");
                }
                assert_eq!(held, k as i64, "{spec}");
            }
        }
    }

    #[test]
    fn the_limit_is_the_share_of_the_footprint_rounded_down() {
        // 100 frames. 29 % is 29 frames (0.29 × 100 is 28.999999999999996 in floating
        // point); 29.5 % is 29.5 frames: 29; 0.5 % is half a frame: none.
        for (share, frames) in [(0.29, 29), (0.295, 29), (0.005, 0), (1.0, 100)] {
            let mut m = machine("static:region=data", &data(100), 1.0, Some(share));
            m.feed(
                0,
                &[Access {
                    addr: BASE,
                    write: false,
                }
                .pack()],
            );
            let b = m.totals().budget;
            assert_eq!(
                (b.limit_frames, b.used_frames),
                (Some(frames), frames),
                "{share}"
            );
        }
    }

    #[test]
    fn linux_counts_each_refused_first_touch() {
        // A budget of 3 of 8 frames; frames first touched in order 7, 6, ..., 0: 7, 6 and
        // 5 are promoted at accesses 1, 2, 3; the other five are refused.
        let mut m = machine("linux", &data(8), 1.0, Some(3.0 / 8.0));
        let mut t = Trace::default();
        for f in (0..8).rev() {
            t.touch(f, [0]);
        }
        m.feed(0, &t.packed);
        assert_eq!(m.plan(), &[promote(1, 7), promote(2, 6), promote(3, 5)]);
        assert_eq!(m.totals().budget.refused, 5);
    }

    /// A policy that does what it is told at given ticks, and records what the engine said.
    struct Script {
        steps: Vec<(u64, Step)>,
        tick: u64,
        said: Vec<(u64, bool)>,
        out: std::sync::Arc<std::sync::Mutex<Vec<(u64, bool)>>>,
    }

    #[derive(Clone, Copy)]
    enum Step {
        Promote(FrameId, PageSize),
        Demote(FrameId),
    }

    impl Policy for Script {
        fn label(&self) -> String {
            "script".into()
        }
        fn interval(&self) -> Option<u64> {
            Some(10)
        }
        fn on_tick(&mut self, cx: &mut Ctx<'_>) {
            self.tick += 1;
            for (_, s) in self.steps.iter().filter(|(t, _)| *t == self.tick) {
                let ok = match *s {
                    Step::Promote(id, size) => cx.promote(id, size),
                    Step::Demote(id) => cx.demote(id),
                };
                self.said.push((self.tick, ok));
            }
            *self.out.lock().expect("lock") = self.said.clone();
        }
    }

    fn scripted(
        header: &Header,
        share: f64,
        steps: Vec<(u64, Step)>,
        ticks: u64,
    ) -> (Machine, Vec<(u64, bool)>) {
        let out = std::sync::Arc::default();
        let p = Script {
            steps,
            tick: 0,
            said: Vec::new(),
            out: std::sync::Arc::clone(&out),
        };
        let mut m = Machine::new(&one_entry(), header, Box::new(p), Some(share)).expect("machine");
        let mut t = Trace::default();
        t.at(OUTSIDE).until_tick(ticks, 10).at(OUTSIDE);
        m.feed(0, &t.packed);
        let said = out.lock().expect("lock").clone();
        (m, said)
    }

    #[test]
    fn the_k_plus_first_promotion_is_refused_and_a_demotion_frees_its_frame() {
        use Step::*;
        let s2 = PageSize::Size2M;
        // 4 frames, a budget of 2.
        let (m, said) = scripted(
            &data(4),
            0.5,
            vec![
                (1, Promote(0, s2)),               // yes
                (1, Promote(1, s2)),               // yes: 2 of 2
                (1, Promote(2, s2)),               // refused
                (2, Promote(1, s2)),               // already huge: no, and not a refusal
                (2, Demote(3)),                    // not huge: no
                (2, Demote(0)),                    // yes: 1 of 2
                (2, Promote(2, s2)),               // yes: 2 of 2 again
                (3, Promote(3, s2)),               // refused
                (3, Promote(0, PageSize::Size4K)), // not a promotion
            ],
            3,
        );
        assert_eq!(
            said,
            vec![
                (1, true),
                (1, true),
                (1, false),
                (2, false),
                (2, false),
                (2, true),
                (2, true),
                (3, false),
                (3, false)
            ]
        );
        assert_eq!(
            m.plan(),
            &[
                promote(10, 0),
                promote(10, 1),
                demote(20, 0),
                promote(20, 2)
            ]
        );
        let b = m.totals().budget;
        assert_eq!(
            (
                b.used_frames,
                b.peak_frames,
                b.promotions,
                b.demotions,
                b.refused
            ),
            (2, 2, 3, 1, 2)
        );
    }

    #[test]
    fn a_gigabyte_page_needs_budget_for_the_frames_it_makes_huge() {
        use Step::*;
        // One 1 GiB region: 512 frames. Frame 5 is made huge first (1 frame used); the
        // 1 GiB page over frames 0..512 then needs the other 511.
        let g = PageSize::Size1G;
        let steps = || {
            vec![
                (1, Promote(5, PageSize::Size2M)),
                (2, Promote(0, g)),
                (3, Promote(7, g)), // the same 1 GiB page: refused again, or already huge
                (3, Demote(7)),     // a 1 GiB page is not demoted
            ]
        };
        // 511 frames of budget: 1 + 511 > 511: refused.
        let (m, said) = scripted(&data(512), 511.0 / 512.0, steps(), 3);
        assert_eq!(said, vec![(1, true), (2, false), (3, false), (3, false)]);
        assert_eq!(m.totals().budget.refused, 2);
        // All 512: the 1 GiB promotion takes the 511 left and counts once.
        let (m, said) = scripted(&data(512), 1.0, steps(), 3);
        assert_eq!(said, vec![(1, true), (2, true), (3, false), (3, false)]);
        let b = m.totals().budget;
        assert_eq!((b.used_frames, b.promotions), (512, 2));
        assert_eq!(m.totals().huge_bytes, 1 << 30);
        assert_eq!(
            m.plan()[1],
            PlanEvent {
                at_access: 20,
                addr: BASE,
                bytes: 1 << 30,
                page_size: g,
                action: Action::Promote
            }
        );
    }
}

/// Physical memory under the engine (`sim --phys`): placement, refusals and the clock. The
/// compaction choices are counted in `physmem`'s own tests.
mod phys {
    use super::*;
    use hugewise_sim::physmem::PhysSpec;

    fn with_phys(m: Machine, spec: &str, rate: f64) -> Machine {
        let timing = Timing {
            accesses_per_s: rate,
            time_scale: 1.0,
        };
        let spec: PhysSpec = spec.parse().expect("phys spec");
        m.with_phys(&spec, &timing).expect("memory")
    }

    #[test]
    fn thp_at_fault_gets_only_the_blocks_fragmentation_left_free() {
        // 4 frames, memory of 4 blocks, half of them pinned (blocks 1 and 3): frames 0 and
        // 1 take blocks 0 and 2 at their first touch; frames 2 and 3 find no free block
        // (without compaction, and with Linux's: the pinned blocks cannot be emptied), and
        // their pages go to the pinned blocks' holes.
        for compaction in ["off", "linux"] {
            let m = machine("linux", &data(4), 1.0, None);
            let mut m = with_phys(m, &format!("{compaction}:memory=1x:fragment=50%"), 1.0);
            let mut t = Trace::default();
            t.touch(0, [0]).touch(1, [0]).touch(2, [0]).touch(3, [0]);
            m.feed(0, &t.packed);
            assert_eq!(m.plan(), &[promote(1, 0), promote(2, 1)], "{compaction}");
            let r = m.totals().phys.expect("modelled");
            assert_eq!(
                (
                    r.blocks,
                    r.pinned_blocks,
                    r.free_blocks_start,
                    r.free_blocks_end
                ),
                (4, 2, 2, 0)
            );
            assert_eq!((r.placed, r.refused_no_block, r.pages_moved), (2, 2, 0));
            assert_eq!(r.latency_us, Some([500.0; 4]));
        }
    }

    #[test]
    fn without_phys_nothing_is_refused() {
        let mut m = machine("linux", &data(4), 1.0, None);
        let mut t = Trace::default();
        t.touch(0, [0]).touch(1, [0]).touch(2, [0]).touch(3, [0]);
        m.feed(0, &t.packed);
        assert_eq!(m.plan().len(), 4);
        assert!(m.totals().phys.is_none());
    }

    #[test]
    fn free_blocks_are_sampled_every_interval() {
        // 1 access a second, every 2 s: samples at accesses 2 and 4, and one at the end (5).
        // Base pages only (policy none): frame 0's first page breaks block 0 (3 of 4 free),
        // the rest of its pages and frame 1's fill block 0's holes: still 3 free.
        let m = machine("none", &data(2), 1.0, None);
        let mut m = with_phys(m, "mega:memory=2x:every=2s", 1.0);
        let mut t = Trace::default();
        t.touch(0, [0, 1, 2, 3]).touch(1, [0]);
        m.feed(0, &t.packed);
        let r = m.totals().phys.expect("modelled");
        let free: Vec<(u64, u64)> = r
            .series
            .iter()
            .map(|s| (s.at_access, s.free_blocks))
            .collect();
        assert_eq!(free, vec![(2, 3), (4, 3), (5, 3)]);
    }
}
