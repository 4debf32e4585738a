//! Scenario tests of the online policies: hand-built chunks, hand-counted decisions.

use hugewise_promote::policies::{hawkeye, linux::Linux, mega, mega::Mega, pcc, pcc::Pcc};
use hugewise_promote::policy::{by_name, ChunkInfo, Policy, NAMES};
use hugewise_promote::HUGE;

fn chunk(pid: i32, n: usize, mapped: u16, huge: bool) -> ChunkInfo {
    ChunkInfo {
        pid,
        addr: 0x4000_0000 + n * HUGE,
        mapped_pages: mapped,
        huge,
        samples: 0,
        sampled_pages: 0,
        walks: 0,
        sampled: true,
    }
}

fn sampled(mut c: ChunkInfo, samples: u32, pages: u16) -> ChunkInfo {
    c.samples = samples;
    c.sampled_pages = pages;
    // Random reads: every sample a walk.
    c.walks = samples;
    c
}

fn promoted(p: &mut dyn Policy, chunks: &[ChunkInfo], dt: f64) -> Vec<usize> {
    p.decide(chunks, dt)
        .promote
        .iter()
        .map(|&(i, _)| i)
        .collect()
}

#[test]
fn every_name_builds_its_policy() {
    for n in NAMES {
        assert_eq!(by_name(n).expect(n).name(), n);
    }
    assert!(by_name("greedy").is_none());
}

#[test]
fn linux_scans_in_address_order_at_khugepaged_speed() {
    // 4096 pages per 10 s is 8 chunks per 10 s: 0.8 chunks per second. Over 10 chunks, a
    // 5 s interval earns 4 chunks of scan, so the first call looks at chunks 0..4, the next
    // at 4..8, the third at 8, 9, 0, 1.
    let chunks: Vec<ChunkInfo> = (0..10)
        .map(|n| chunk(1, n, if n == 2 { 0 } else { 1 }, n == 5))
        .collect();
    let mut p = Linux::default();
    // Chunk 2 has nothing mapped (needs 512 - 511 = 1 page).
    assert_eq!(promoted(&mut p, &chunks, 5.0), [0, 1, 3]);
    // Chunk 5 is huge already.
    assert_eq!(promoted(&mut p, &chunks, 5.0), [4, 6, 7]);
    assert_eq!(promoted(&mut p, &chunks, 5.0), [8, 9, 0, 1]);
    // A stricter max_ptes_none of 256 needs 256 mapped pages: none here.
    let mut strict = Linux::with(4096, 10.0, 256);
    assert!(promoted(&mut strict, &chunks, 50.0).is_empty());
    // The huge chunk is kept, never demoted.
    let d = p.decide(&chunks, 1.0);
    assert!(d.demote.is_empty());
    assert_eq!(d.keep.iter().map(|k| k.0).collect::<Vec<_>>(), [5]);
}

#[test]
fn hawkeye_promotes_from_the_fullest_coverage_bucket() {
    // Buckets are covered * 10 / 513: 512 -> 9, 300 -> 5, 60 -> 1, 51 -> 0 (51 * 10 / 513 = 0).
    let chunks = [
        sampled(chunk(1, 0, 512, false), 80, 60),
        sampled(chunk(1, 1, 512, false), 900, 512),
        sampled(chunk(1, 2, 512, false), 400, 300),
        sampled(chunk(1, 3, 512, false), 51, 51),
        // Not sampled this interval: not a candidate.
        chunk(1, 4, 512, false),
        // Same bucket as chunk 1: address order keeps chunk 1 first.
        sampled(chunk(1, 5, 512, false), 700, 470),
    ];
    assert_eq!(hawkeye::bucket(&chunks[5]), 9);
    let mut p = by_name("hawkeye").expect("hawkeye");
    assert_eq!(promoted(p.as_mut(), &chunks, 1.0), [1, 5, 2, 0, 3]);
}

#[test]
fn mega_tracks_promotes_and_demotes_at_its_thresholds() {
    // Utilization from samples: 2000 samples over 512 uniformly used pages would show
    // 512 * (1 - (511/512)^2000) = 512 * (1 - e^(2000 ln(511/512))) = 512 * (1 - 0.02004)
    // = 501.74 distinct pages.
    let full = 512.0 * (1.0 - (511.0f64 / 512.0).powi(2000));
    assert!((full - 501.74).abs() < 0.01, "{full}");
    assert!((mega::utilization(503, 2000) - 1.0).abs() < 1e-9);
    // 126 distinct pages out of 2000 samples: 126 / 501.74 = 0.2511, a quarter used.
    assert!((mega::utilization(126, 2000) - 0.2511).abs() < 1e-3);

    let mut p = Mega::default();
    // 461 of 512 pages is 90.04 % mapped; 460 is 89.8 %: only the first may be promoted.
    let busy = |n, mapped| sampled(chunk(1, n, mapped, false), 2000, 500);
    let chunks = [
        busy(0, 461),
        busy(1, 460),
        sampled(chunk(1, 2, 512, false), 2000, 126),
    ];
    // Chunk 2 is fully mapped but its utilization (0.25) is below 0.5.
    assert_eq!(promoted(&mut p, &chunks, 1.0), [0]);

    // Utilization averages the last 10 scans. A huge chunk in full use (500 of 501.74
    // expected pages: 0.9965) for 10 scans, then idle (0): after k idle scans the mean is
    // (10 - k) * 0.9965 / 10, which first falls below 0.25 at k = 8 (0.199; at k = 7 it is
    // 0.299).
    let mut p = Mega::default();
    let hot = sampled(chunk(1, 0, 512, true), 2000, 500);
    let idle = sampled(chunk(1, 0, 512, true), 0, 0);
    for _ in 0..10 {
        assert!(p.decide(&[hot], 1.0).demote.is_empty());
    }
    let mut demoted_at = None;
    for k in 1..=10 {
        if !p.decide(&[idle], 1.0).demote.is_empty() {
            demoted_at = Some(k);
            break;
        }
    }
    assert_eq!(demoted_at, Some(8));

    // A huge chunk whose mapped share falls below half is demoted at once.
    let mut p = Mega::default();
    let half = sampled(chunk(1, 0, 255, true), 2000, 250);
    assert_eq!(p.decide(&[half], 1.0).demote, [0]);

    // Without samples MEGA judges by mapped pages alone.
    let mut p = Mega::default();
    let mut c = chunk(1, 0, 512, false);
    c.sampled = false;
    assert_eq!(promoted(&mut p, &[c], 1.0), [0]);
}

#[test]
fn pcc_ranks_by_decayed_frequency_per_target() {
    let mut p = Pcc::with_capacity(2);
    // Interval 1: chunk 0 gets 100 samples, chunk 1 gets 60, chunk 2 gets 80; capacity 2 keeps
    // 0 (100) and 2 (80).
    let a = [
        sampled(chunk(1, 0, 512, false), 100, 90),
        sampled(chunk(1, 1, 512, false), 60, 50),
        sampled(chunk(1, 2, 512, false), 80, 70),
    ];
    let d = p.decide(&a, 1.0);
    assert_eq!(d.promote, [(0, 100.0), (2, 80.0)]);
    // Interval 2: chunk 0 goes quiet (100 / 2 = 50), chunk 1 gets 70, chunk 2 gets 10
    // (80 / 2 + 10 = 50; chunk 1 was not kept, so it starts again at 70).
    let b = [
        sampled(chunk(1, 0, 512, false), 0, 0),
        sampled(chunk(1, 1, 512, false), 70, 60),
        sampled(chunk(1, 2, 512, false), 10, 10),
    ];
    let d = p.decide(&b, 1.0);
    assert_eq!(d.promote[0], (1, 70.0));
    assert_eq!(d.promote.len(), 2);
    assert!(d.promote[1].1 == 50.0);
    // A second target has its own two entries.
    let c = [
        sampled(chunk(1, 0, 512, false), 9, 9),
        sampled(chunk(2, 0, 512, false), 4, 4),
        sampled(chunk(2, 1, 512, false), 6, 6),
        sampled(chunk(2, 2, 512, false), 8, 8),
    ];
    let mut p = Pcc::with_capacity(2);
    let got: Vec<usize> = promoted(&mut p, &c, 1.0);
    assert_eq!(got, [0, 3, 2]);
    // A chunk never touched (nothing mapped) does not enter.
    let mut p = Pcc::default();
    assert!(promoted(&mut p, &[sampled(chunk(1, 0, 0, false), 9, 9)], 1.0).is_empty());
}

#[test]
fn pcc_keeps_as_many_candidates_as_the_budget_holds() {
    // Five sampled chunks, 50 down to 10 samples; a PCC of 2 entries.
    let five: Vec<ChunkInfo> = (0..5)
        .map(|n| sampled(chunk(1, n, 512, false), 50 - 10 * n as u32, 10))
        .collect();
    let mut p = Pcc::with_capacity(2);
    assert_eq!(promoted(&mut p, &five, 1.0), [0, 1]);
    // A budget of 4 chunks: it keeps 4, the best first; a smaller budget than its entries
    // leaves it at its entries.
    p.budget_chunks(4);
    assert_eq!(promoted(&mut p, &five, 1.0), [0, 1, 2, 3]);
    p.budget_chunks(1);
    assert_eq!(promoted(&mut p, &five, 1.0).len(), 2);
}

#[test]
fn pcc_leaves_cold_chunks_out_of_a_budget_with_room() {
    // A hot spot: 4 chunks with 1 000 walks a look, 60 with one walk each (a mean of 63.4,
    // an eighth of it 7.9). A budget of 64 chunks has room for all; only the hot are worth
    // a collapse.
    let mut spot: Vec<ChunkInfo> = (0..64)
        .map(|n| sampled(chunk(1, n, 512, false), if n < 4 { 1000 } else { 1 }, 1))
        .collect();
    let mut p = Pcc::with_capacity(128);
    p.budget_chunks(64);
    assert_eq!(promoted(&mut p, &spot, 1.0), [0, 1, 2, 3]);
    // Even heat: every chunk stays above the floor. Touched chunks without samples count in
    // the mean: 8 chunks of 100 walks among 56 silent ones (mean 12.5) are all in.
    let mut p = Pcc::with_capacity(128);
    let even: Vec<ChunkInfo> = (0..64)
        .map(|n| sampled(chunk(1, n, 512, false), 90 + (n % 3) as u32 * 10, 1))
        .collect();
    assert_eq!(promoted(&mut p, &even, 1.0).len(), 64);
    let mut p = Pcc::with_capacity(128);
    for (n, c) in spot.iter_mut().enumerate() {
        *c = sampled(chunk(1, n, 512, false), if n < 8 { 100 } else { 0 }, 1);
    }
    assert_eq!(promoted(&mut p, &spot, 1.0), (0..8).collect::<Vec<_>>());
    // Each target is weighed against its own mean: a second target's cold chunk with 4 walks
    // and nothing else is its whole share, and goes in.
    spot.push(sampled(chunk(2, 0, 512, false), 4, 1));
    let mut p = Pcc::with_capacity(128);
    assert_eq!(promoted(&mut p, &spot, 1.0).len(), 9);
}

#[test]
fn pcc_leaves_out_a_chunk_whose_heat_rests_on_one_sample() {
    // A thinned target: each sample stands for 64 walks. Four hot chunks with 50 samples
    // each (3 200 walks), 59 cold ones with none, and one cold chunk that drew a single
    // sample: 64 walks, over the floor (an eighth of a mean of 201: 25), but one sample is no
    // heat.
    let thinned = |c: ChunkInfo, samples: u32| {
        let mut c = sampled(c, samples, 1);
        c.walks = samples * 64;
        c
    };
    let mut chunks: Vec<ChunkInfo> = (0..64)
        .map(|n| thinned(chunk(1, n, 512, false), if n < 4 { 50 } else { 0 }))
        .collect();
    chunks[10] = thinned(chunk(1, 10, 512, false), 1);
    let mut p = Pcc::with_capacity(128);
    p.budget_chunks(64);
    assert_eq!(promoted(&mut p, &chunks, 1.0), [0, 1, 2, 3]);
    // A second sample in the next look (1 / 2 + 1 = 1.5 seen) is still not enough, nor two
    // more in the look after (0.75 + 2); four in one look are (1.4 + 4).
    assert_eq!(promoted(&mut p, &chunks, 1.0), [0, 1, 2, 3]);
    chunks[10] = thinned(chunk(1, 10, 512, false), 2);
    assert_eq!(promoted(&mut p, &chunks, 1.0), [0, 1, 2, 3]);
    chunks[10] = thinned(chunk(1, 10, 512, false), 4);
    assert_eq!(promoted(&mut p, &chunks, 1.0), [0, 1, 2, 3, 10]);
}

#[test]
fn pcc_ranks_a_chunk_read_at_random_above_one_streamed_through() {
    // One interval: a chunk of an edge array streamed in order (375 samples, 16 in a row on
    // each page: 24 walks) and a chunk of a property array read at random (200 samples, each
    // on a new page: 190 walks). The PCC counts walks, so the random one leads.
    let mut streamed = sampled(chunk(1, 0, 512, false), 375, 24);
    streamed.walks = 24;
    let random = sampled(chunk(1, 1, 512, false), 200, 150);
    let mut random = random;
    random.walks = 190;
    let mut p = Pcc::with_capacity(1);
    assert_eq!(p.decide(&[streamed, random], 1.0).promote, [(1, 190.0)]);
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() < 1e-9 * want.abs().max(1.0)
}

#[test]
fn pcc_says_which_heat_has_lasted() {
    // What the slow score keeps of itself over one look a second.
    let k = (-1.0 / pcc::SLOW_S).exp();
    let mut p = Pcc::with_capacity(4);
    // Chunk 0 is hot in both looks; chunk 1 only in the second, as a stream passing through.
    let first = [
        sampled(chunk(1, 0, 512, false), 100, 100),
        sampled(chunk(1, 1, 512, false), 0, 0),
    ];
    let d = p.decide(&first, 1.0);
    // New heat: the fast score is all of it (100), the slow one its share of half a minute
    // on the same scale (100 * 2 * (1 - k), about 6), and what has lasted is the lower.
    assert_eq!(d.promote, [(0, 100.0)]);
    let slow0 = 200.0 * (1.0 - k);
    assert!(close(d.lasting[0].1, slow0), "{d:?}");
    let second = [
        sampled(chunk(1, 0, 512, false), 100, 100),
        sampled(chunk(1, 1, 512, false), 300, 300),
    ];
    let d = p.decide(&second, 1.0);
    // Chunk 1 leads (300 against 100 / 2 + 100 = 150) but has lasted one look of 300; chunk
    // 0 has lasted two looks of 100.
    assert_eq!(d.promote, [(1, 300.0), (0, 150.0)]);
    assert_eq!(d.lasting.len(), 2);
    assert!(close(d.lasting[0].1, 600.0 * (1.0 - k)), "{d:?}");
    assert!(close(d.lasting[1].1, slow0 * k + slow0), "{d:?}");
    // Steady heat: both scores reach twice a look's walks, and what has lasted is all of it.
    let steady = [sampled(chunk(1, 0, 512, false), 100, 100)];
    let mut d = p.decide(&steady, 1.0);
    for _ in 0..1000 {
        d = p.decide(&steady, 1.0);
    }
    assert!(close(d.promote[0].1, 200.0), "{d:?}");
    assert!((d.lasting[0].1 - 200.0).abs() < 0.01, "{d:?}");
    // The slow score's memory is in seconds: looking ten times as often, it loses a tenth as
    // much of itself at each look. (Read as a huge chunk's value, the higher of the two scores:
    // the fast one has halved at each look, ten times or once, to below the slow one.)
    let cold = [sampled(chunk(1, 0, 512, true), 0, 0)];
    let mut a = p.clone();
    a.looks_every(0.1);
    let mut b = p.clone();
    let mut ten = Default::default();
    for _ in 0..10 {
        ten = a.decide(&cold, 0.1);
    }
    let one = b.decide(&cold, 1.0);
    let want = 200.0 * (-1.0 / pcc::SLOW_S).exp();
    assert!((ten.keep[0].1 - want).abs() < 0.01, "{ten:?}");
    assert!((one.keep[0].1 - want).abs() < 0.01, "{one:?}");
}

#[test]
fn pcc_never_trades_a_streamed_chunk_for_another_streamed_out_of_phase() {
    // Two chunks of arrays streamed through once every `period` looks, as PageRank's
    // iterations stream its arrays (on kron:26 an iteration takes nine looks of a second):
    // chunk 0 (huge) at the first look of each period, chunk 1 (4 KiB) `lag` looks later,
    // with 10 % more walks. On fast scores the candidate at its peak has twice the heat of
    // the huge chunk at its trough or more, enough for the daemon's swap rule (twice the huge
    // chunk's value); averaged over half a minute they are the same, and no look, at any
    // lag, may offer a swap. (Averaged over eight looks instead, the worst lag of a period of
    // nine reached 3.2 times the huge chunk's value.)
    for period in [3, 9] {
        for lag in 1..period {
            let mut p = Pcc::with_capacity(4);
            let mut worst: f64 = 0.0;
            for t in 0..300 {
                let a = if t % period == 0 { 300 } else { 0 };
                let b = if t % period == lag { 330 } else { 0 };
                let chunks = [
                    sampled(chunk(1, 0, 512, true), a, a as u16),
                    sampled(chunk(1, 1, 512, false), b, b as u16),
                ];
                let d = p.decide(&chunks, 1.0);
                if t < 100 {
                    continue;
                }
                let keep = d.keep.iter().find(|k| k.0 == 0).expect("huge chunk kept").1;
                let lasting = d.lasting.iter().find(|k| k.0 == 1).map_or(0.0, |k| k.1);
                worst = worst.max(lasting / keep);
            }
            assert!(worst > 1.0, "period {period}, lag {lag}: {worst}");
            assert!(worst < 1.5, "period {period}, lag {lag}: {worst}");
        }
    }
}

#[test]
fn pcc_lets_lasting_heat_take_a_huge_chunks_place_within_seconds() {
    // A huge chunk at 10 walks a look; a 4 KiB chunk turns hot for good at 100 a look. It
    // must be worth twice the huge chunk's value within ten looks of a second.
    let mut p = Pcc::with_capacity(4);
    for _ in 0..200 {
        p.decide(&[sampled(chunk(1, 0, 512, true), 10, 10)], 1.0);
    }
    let chunks = [
        sampled(chunk(1, 0, 512, true), 10, 10),
        sampled(chunk(1, 1, 512, false), 100, 100),
    ];
    let looks = (1..=30)
        .find(|_| {
            let d = p.decide(&chunks, 1.0);
            let keep = d.keep.iter().find(|k| k.0 == 0).expect("kept").1;
            let lasting = d.lasting.iter().find(|k| k.0 == 1).expect("listed").1;
            lasting > 2.0 * keep
        })
        .expect("never");
    assert!((5..=10).contains(&looks), "{looks} looks");
}

#[test]
fn pcc_values_a_huge_chunk_by_its_heat_even_out_of_the_candidates() {
    // A PCC of 2 entries; chunks 0 and 1 are huge. Chunk 2 (4 KiB) is a little hotter than
    // chunk 1: the candidates are 0 and 2, yet chunk 1 keeps its score of 40, so the daemon
    // (which swaps only for twice the heat) leaves it huge rather than trading it for chunk 2.
    let chunks = [
        sampled(chunk(1, 0, 512, true), 100, 100),
        sampled(chunk(1, 1, 512, true), 40, 40),
        sampled(chunk(1, 2, 512, false), 45, 45),
    ];
    let mut p = Pcc::with_capacity(2);
    let d = p.decide(&chunks, 1.0);
    assert_eq!(d.promote, [(2, 45.0)]);
    assert_eq!(d.keep, [(0, 100.0), (1, 40.0)]);
    // Its history is kept too: a quiet interval halves it (20), it does not restart at 0.
    let quiet = [
        sampled(chunk(1, 0, 512, true), 100, 100),
        sampled(chunk(1, 1, 512, true), 0, 0),
        sampled(chunk(1, 2, 512, false), 45, 45),
    ];
    let d = p.decide(&quiet, 1.0);
    assert_eq!(d.keep, [(0, 150.0), (1, 20.0)]);
    // A huge chunk with no heat left is kept at 0, first to go.
    let mut fresh = Pcc::with_capacity(2);
    let d = fresh.decide(&quiet, 1.0);
    assert!(d.keep.contains(&(1, 0.0)), "{:?}", d.keep);
}
