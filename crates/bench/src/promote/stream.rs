//! The workload stream of the promotion bench.
//!
//! The workload reads 8-byte words at random: the 2 MiB chunk by its rank, drawn from a Zipf
//! distribution or from a hot spot (a share of the reads spread evenly over a share of the
//! chunks, the rest over the others: YCSB's hotspot shape), the word uniformly inside it, and
//! the ranks spread over the region by a seeded permutation, so the hot set is scattered as a
//! program's hot objects are. Reads may keep to a few cache lines of each 4 KiB page
//! (`lines_per_page`), starting at an offset that moves from page to page as slab colouring
//! staggers objects (lines at one offset of every page would share 1/64 of the caches' sets):
//! the hot chunks' data can then stay in the caches while their pages overflow the TLB, the
//! pattern of records a page or more apart whose headers alone are read (a property array of
//! large records, a hash table of page-sized buckets), where a walk of 4 KiB page tables, not
//! the data, is the read's cost. Reads may also depend on each other (`chase`): each read's
//! address waits for the word before it, as in a pointer chase or a traversal, so a page walk
//! cannot overlap the reads around it and its whole latency is the read's.
//!
//! One workload is there to show that promotion does no harm where huge pages cannot help
//! ([`Skew::NoGain`]): dependent reads over a span whose pages the first-level TLB holds, each
//! followed by arithmetic that waits for it, in a region mapped whole and never read again.

use std::sync::atomic::{AtomicBool, Ordering};

use hugewise_promote::channel::Publisher;
use hugewise_promote::{BASE_PER_HUGE, HUGE};
use hugewise_results::promote::Hotspot;
use hugewise_sys::PageSize;

use crate::{Error, Result};

/// How a read's chunk rank is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Skew {
    /// Zipf with this exponent (1.0: the k-th hottest chunk is read 1/k as often as the
    /// hottest; larger: a sharper hot set).
    Zipf(f64),
    /// A share `reads` of the reads (0–1) spread evenly over the hottest share `chunks` of the
    /// chunks (0–1, at least one chunk), the rest evenly over the others.
    Hotspot {
        /// Share of the chunks that are hot.
        chunks: f64,
        /// Share of the reads that go to them.
        reads: f64,
    },
    /// Every read in the first `pages` 4 KiB pages (a power of two up to 512) of one chunk,
    /// followed by [`NOGAIN_WORK`] dependent multiply-xor steps: a compute-bound loop whose
    /// pages fit the TLB, which no huge page speeds up.
    NoGain {
        /// Pages read.
        pages: u32,
    },
}

/// Pages the no-gain workload reads: 256 KiB, within the first-level TLB of every recent
/// x86 core (64 entries for 4 KiB pages on Skylake and Zen, 72–96 on later ones), so that
/// its reads do not even reach the second level.
pub const NOGAIN_PAGES: u32 = 64;

/// Dependent multiply-xor steps after each read of the no-gain workload: about 15 ns of
/// arithmetic that waits for the read, so that publishing one sample in 64 (a few
/// nanoseconds each) costs the daemon's arm well under 1 %, and the loop is compute-bound.
pub const NOGAIN_WORK: u32 = 8;

/// First-level TLB entries for 4 KiB pages the no-gain workload's span must fit: the fewest
/// among recent x86 cores.
pub const L1_TLB_ENTRIES: u32 = 64;

impl Skew {
    /// Refuse shares and exponents that do not make a distribution.
    pub fn check(&self) -> Result<()> {
        match *self {
            Skew::Zipf(s) if !(s.is_finite() && s >= 0.0) => Err(Error::Config(format!(
                "a Zipf exponent is a finite number of at least 0, not {s}"
            ))),
            Skew::Hotspot { chunks, reads }
                if !(chunks > 0.0 && chunks < 1.0 && (0.0..=1.0).contains(&reads)) =>
            {
                Err(Error::Config(format!(
                    "a hot spot is a share of the chunks above 0 % and below 100 % and a share of \
                     the reads from 0 to 100 %, not {:.4} % of the chunks and {:.4} % of the reads",
                    chunks * 100.0,
                    reads * 100.0
                )))
            }
            Skew::NoGain { pages }
                if !(pages.is_power_of_two() && pages as usize <= PAGES_PER_CHUNK) =>
            {
                Err(Error::Config(format!(
                    "the no-gain span is a power of two of pages up to 512, not {pages}"
                )))
            }
            _ => Ok(()),
        }
    }
}

/// How the stream draws a rank.
enum Draw {
    /// Rank of the chunk for each of 2^16 equally likely table slots: 128 KiB, so the table
    /// stays in the L2 cache and the reads' misses are the region's own.
    Table(Vec<u16>),
    /// Ranks below `hot` take the draws whose top 32 bits are below `threshold`, evenly; the
    /// others the rest, evenly.
    Hotspot { hot: u32, threshold: u64 },
    /// Every read in the hottest chunk (rank 0).
    One,
}

/// The access stream: chunk ranks drawn by a [`Skew`], mapped to chunks by a permutation.
pub struct Stream {
    draw: Draw,
    /// Chunks in the region (ranks are below it).
    chunks: u32,
    /// Chunk of each rank.
    perm: Vec<u32>,
    /// Words of each page the reads go to, minus one (a mask), or `None` for every word of the
    /// chunk.
    page_words: Option<usize>,
    /// Each address depends on the word read before it.
    chase: bool,
    /// Words of a chunk the reads go to, minus one (a mask): the whole chunk, or the
    /// no-gain workload's span.
    span_words: usize,
    /// Dependent arithmetic after each read (the no-gain workload).
    work: bool,
}

const TABLE_BITS: u32 = 16;
pub(super) const WORDS_PER_CHUNK: usize = HUGE / 8;
const WORDS_PER_PAGE: usize = PageSize::Size4K.bytes() / 8;
const PAGES_PER_CHUNK: usize = BASE_PER_HUGE;
/// Words in a cache line (64 bytes).
const WORDS_PER_LINE: usize = 64 / 8;
/// Cache lines in a 4 KiB page.
const LINES_PER_PAGE: usize = WORDS_PER_PAGE / WORDS_PER_LINE;
/// Lines by which the first line read moves from one page to the next: odd, so that 64
/// consecutive pages start at 64 different lines.
const STAGGER: usize = 41;

/// Reads between two looks at the stop flag: a few milliseconds at the slowest reads here,
/// one well-predicted branch per million.
const STOP_EVERY: u64 = 1 << 20;

/// One pass of reads over a region: how many, from which seed, with every so many published
/// to the daemon, until `stop` is raised.
#[derive(Clone, Copy)]
pub struct Pass<'a> {
    /// Reads.
    pub n: u64,
    /// Seed of the addresses.
    pub seed: u64,
    /// Where to publish samples, and one in how many reads.
    pub sample: Option<(&'a Publisher, u32)>,
    /// Ends the pass early once raised.
    pub stop: &'a AtomicBool,
}

impl Stream {
    /// The stream over `chunks` chunks (at most 65 536: 128 GiB) with Zipf exponent `s`,
    /// permuted by `seed`.
    pub fn new(chunks: usize, s: f64, seed: u64) -> Stream {
        Stream::with_skew(chunks, Skew::Zipf(s), seed)
    }

    /// The stream over `chunks` chunks (at most 65 536: 128 GiB) drawn by `skew`, permuted by
    /// `seed`.
    pub fn with_skew(chunks: usize, skew: Skew, seed: u64) -> Stream {
        let chunks = chunks.clamp(1, 1 << 16);
        let draw = match skew {
            Skew::Zipf(s) => Draw::Table(zipf_table(chunks, s)),
            Skew::Hotspot {
                chunks: share,
                reads,
            } => {
                // At least one chunk on each side (a region of one chunk is all hot).
                let hot =
                    ((share * chunks as f64).round() as u32).clamp(1, (chunks as u32 - 1).max(1));
                let threshold = if hot as usize == chunks {
                    1 << 32
                } else {
                    (reads * 2f64.powi(32)).round() as u64
                };
                Draw::Hotspot { hot, threshold }
            }
            Skew::NoGain { .. } => Draw::One,
        };
        let (span_words, work) = match skew {
            Skew::NoGain { pages } => (
                (pages.clamp(1, PAGES_PER_CHUNK as u32) as usize * WORDS_PER_PAGE)
                    .next_power_of_two()
                    - 1,
                true,
            ),
            _ => (WORDS_PER_CHUNK - 1, false),
        };
        let mut perm: Vec<u32> = (0..chunks as u32).collect();
        let mut x = seed | 1;
        for i in (1..perm.len()).rev() {
            x = xorshift(x);
            perm.swap(i, (x % (i as u64 + 1)) as usize);
        }
        Stream {
            draw,
            chunks: chunks as u32,
            perm,
            page_words: None,
            chase: false,
            span_words,
            work,
        }
    }

    /// The rank draw `x` reads: from its top 16 bits (a Zipf table's slot), or for a hot spot
    /// the side from its top 32 bits and the rank within the side from a hash of all 64 (the
    /// word and page inside the chunk take the low 29 bits).
    #[inline]
    fn rank(&self, x: u64) -> usize {
        match &self.draw {
            Draw::Table(t) => t[(x >> (64 - TABLE_BITS)) as usize] as usize,
            &Draw::Hotspot { hot, threshold } => {
                let at = x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
                // Evenly over [0, hot) or over [hot, chunks), by a multiply and a shift; both
                // computed and one kept, which the compiler may make a conditional move.
                let in_hot = (at * u64::from(hot)) >> 32;
                let in_cold = u64::from(hot) + ((at * u64::from(self.chunks - hot)) >> 32);
                (if x >> 32 < threshold { in_hot } else { in_cold }) as usize
            }
            Draw::One => 0,
        }
    }

    /// The hot spot as drawn (the share of chunks hot and the share of reads they take, after
    /// rounding to whole chunks), or `None` for a Zipf stream.
    pub fn hotspot(&self) -> Option<Hotspot> {
        match self.draw {
            Draw::Table(_) | Draw::One => None,
            Draw::Hotspot { hot, threshold } => Some(Hotspot {
                chunks: f64::from(hot) / f64::from(self.chunks),
                reads: threshold as f64 / 2f64.powi(32),
            }),
        }
    }

    /// The same stream with each read's address waiting for the word read before it. The
    /// addresses are those of the independent stream: the word read is folded into the next
    /// draw through a mask that is zero at run time, which the compiler cannot see through
    /// and the processor cannot predict, so the reads form one dependent chain.
    pub fn chase(mut self, chase: bool) -> Stream {
        self.chase = chase;
        self
    }

    /// The same stream, reading only `lines` cache lines of each 4 KiB page (a power of two
    /// from 1 to 64), consecutive from an offset that moves by 41 lines from one page
    /// of a chunk to the next, so that the lines read fall in every cache set.
    pub fn lines_per_page(mut self, lines: u32) -> Result<Stream> {
        if !(1..=64).contains(&lines) || !lines.is_power_of_two() {
            return Err(Error::Config(format!(
                "lines per page is a power of two from 1 to 64, not {lines}"
            )));
        }
        self.page_words = (lines < 64).then(|| lines as usize * WORDS_PER_LINE - 1);
        Ok(self)
    }

    /// The word of a chunk that draw `x` reads (its top bits chose the chunk).
    #[inline]
    fn word_in_chunk(&self, x: u64) -> usize {
        match self.page_words {
            None => x as usize & self.span_words,
            Some(mask) => {
                let page = (x >> 20) as usize & (self.span_words / WORDS_PER_PAGE);
                let w = x as usize & mask;
                let line = ((w / WORDS_PER_LINE) + page * STAGGER) % LINES_PER_PAGE;
                page * WORDS_PER_PAGE + line * WORDS_PER_LINE + w % WORDS_PER_LINE
            }
        }
    }

    /// Chunks in order of expected heat, hottest first.
    pub fn hottest(&self) -> &[u32] {
        &self.perm
    }

    /// The bytes of each chunk the reads may go to: all 2 MiB, or the no-gain span.
    pub fn span_bytes(&self) -> usize {
        (self.span_words + 1) * 8
    }

    /// Sum of `n` reads of `data` from seed `seed`; every `every`-th address (times the
    /// thinning the daemon asks for) is handed to `sample` when given.
    pub fn reads(&self, data: &[u64], n: u64, seed: u64, sample: Option<(&Publisher, u32)>) -> u64 {
        let never = AtomicBool::new(false);
        self.reads_until(
            data,
            Pass {
                n,
                seed,
                sample,
                stop: &never,
            },
        )
    }

    /// [`Stream::reads`], ending early once `pass.stop` is raised (looked at every
    /// 2^20 reads, a few milliseconds apart): a run that ended early is not a
    /// measurement.
    pub fn reads_until(&self, data: &[u64], pass: Pass<'_>) -> u64 {
        match (self.chase, self.work) {
            (true, true) => self.reads_as::<true, true>(data, pass),
            (true, false) => self.reads_as::<true, false>(data, pass),
            (false, true) => self.reads_as::<false, true>(data, pass),
            (false, false) => self.reads_as::<false, false>(data, pass),
        }
    }

    /// [`Stream::reads_until`], with the chain of dependent reads or without, and with the
    /// no-gain workload's arithmetic after each read or without, each loop compiled for its
    /// own case.
    fn reads_as<const CHASE: bool, const WORK: bool>(&self, data: &[u64], pass: Pass<'_>) -> u64 {
        let Pass {
            n,
            seed,
            sample,
            stop,
        } = pass;
        // Zero, but only at run time: `x ^ (word & zero)` is `x` with a dependence on `word`.
        let zero = std::hint::black_box(0u64);
        let chunks = (data.len() / WORDS_PER_CHUNK) as u32;
        let mut x = seed | 1;
        let mut sum = 0u64;
        let (publisher, every) = match sample {
            Some((p, e)) => (Some(p), u64::from(e.max(1))),
            None => (None, u64::MAX),
        };
        let mut next_sample = every;
        // The thinning the gap to the next sample was taken at: that sample stands for it.
        let mut thin = 1u32;
        for i in 0..n {
            if i % STOP_EVERY == 0 && stop.load(Ordering::Relaxed) {
                break;
            }
            x = xorshift(x);
            let rank = self.rank(x);
            let chunk = self.perm[rank.min(self.perm.len() - 1)].min(chunks - 1) as usize;
            let word = chunk * WORDS_PER_CHUNK + self.word_in_chunk(x);
            let mut v = data[word];
            if WORK {
                for _ in 0..NOGAIN_WORK {
                    v = (v ^ (v >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                }
            }
            sum = sum.wrapping_add(v);
            if CHASE {
                x ^= v & zero;
            }
            if i == next_sample {
                if let Some(p) = publisher {
                    p.sample_weighted(&data[word] as *const u64 as usize, false, thin);
                    // The next sample as far off as the daemon asks (one in `every` times its
                    // thinning), read at each sample: a settled daemon wants few.
                    thin = p.thinning();
                    next_sample += every * u64::from(thin);
                } else {
                    next_sample += every;
                }
            }
        }
        sum
    }
}

/// The rank of each of 2^16 equally likely slots under Zipf with exponent `s` over `chunks`.
fn zipf_table(chunks: usize, s: f64) -> Vec<u16> {
    let weights: Vec<f64> = (1..=chunks).map(|k| (k as f64).powf(-s)).collect();
    let total: f64 = weights.iter().sum();
    let n = 1usize << TABLE_BITS;
    let mut table = Vec::with_capacity(n);
    let mut cum = 0.0;
    let mut rank = 0usize;
    for slot in 0..n {
        // The rank whose cumulative probability covers this slot's midpoint.
        let q = (slot as f64 + 0.5) / n as f64 * total;
        while rank + 1 < chunks && cum + weights[rank] < q {
            cum += weights[rank];
            rank += 1;
        }
        table.push(rank as u16);
    }
    table
}

fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// The plan: the `k` chunks a sampled profile of the stream reads most, hottest first.
pub fn profile_plan(stream: &Stream, chunks: usize, k: usize, seed: u64) -> Vec<u32> {
    let mut counts = vec![0u32; chunks];
    let mut x = seed | 1;
    // A million samples: the profile a short sampled run would give.
    for _ in 0..1_000_000 {
        x = xorshift(x);
        counts[stream.perm[stream.rank(x)] as usize] += 1;
    }
    // Only chunks the profile saw: one it never sampled has no rank to give it a huge page.
    let mut order: Vec<u32> = (0..chunks as u32)
        .filter(|&c| counts[c as usize] > 0)
        .collect();
    order.sort_by_key(|&c| std::cmp::Reverse(counts[c as usize]));
    order.truncate(k);
    order
}

#[cfg(test)]
mod tests {
    use hugewise_results::promote::PromoteBenchWorkload;

    use super::*;

    #[test]
    fn the_stream_follows_zipf_and_spreads_the_hot_chunks() {
        let s = Stream::new(1000, 1.0, 7);
        // Rank 0 holds 1 / H(1000) = 1 / 7.485 = 13.4 % of the table; rank 1 half of that.
        let Draw::Table(table) = &s.draw else {
            panic!("a Zipf stream draws from a table")
        };
        let r0 = table.iter().filter(|&&r| r == 0).count() as f64 / table.len() as f64;
        let r1 = table.iter().filter(|&&r| r == 1).count() as f64 / table.len() as f64;
        assert!((r0 - 0.1336).abs() < 0.001, "{r0}");
        assert!((r1 - 0.0668).abs() < 0.001, "{r1}");
        // Every rank has a slot down to 1 / (1000 * 7.485) = 1.3e-4 of the stream.
        assert_eq!(table.last(), Some(&999));
        // The permutation scatters ranks: the ten hottest chunks are not the first ten.
        assert_ne!(&s.hottest()[..10], &(0..10).collect::<Vec<u32>>()[..]);
        // The profile's plan finds the hottest chunks.
        let plan = profile_plan(&s, 1000, 5, 1);
        assert_eq!(&plan[..2], &s.hottest()[..2]);
    }

    #[test]
    fn reads_stay_in_bounds_and_publish_every_nth() {
        let s = Stream::new(4, 1.0, 1);
        let data: Vec<u64> = vec![1; 4 * WORDS_PER_CHUNK];
        let ring = std::env::temp_dir().join(format!("hw-pb-ring-{}", std::process::id()));
        let p = Publisher::create_at(&ring, 4096).expect("ring");
        assert_eq!(s.reads(&data, 10_000, 3, Some((&p, 100))), 10_000);
        // Accesses 100, 200, ..., 9900: 99 samples.
        assert_eq!(p.ring().head(), 99);
    }

    #[test]
    fn reads_keep_to_staggered_lines_of_each_page_and_spread_over_its_pages() {
        // Ones in the two lines read of every page (from line 41 p mod 64 of page p), zeros
        // elsewhere: reads of two lines a page sum to their count.
        let data: Vec<u64> = (0..4 * WORDS_PER_CHUNK)
            .map(|w| {
                let page = w / WORDS_PER_PAGE % PAGES_PER_CHUNK;
                let line = w % WORDS_PER_PAGE / WORDS_PER_LINE;
                u64::from((line + LINES_PER_PAGE - page * STAGGER % LINES_PER_PAGE) % 64 < 2)
            })
            .collect();
        let s = Stream::new(4, 1.0, 1).lines_per_page(2).expect("two lines");
        assert_eq!(s.reads(&data, 100_000, 5, None), 100_000);
        // The first lines read fall on every line offset.
        let one = Stream::new(4, 1.0, 1).lines_per_page(1).expect("one line");
        let mut x = 7u64;
        let offsets: std::collections::BTreeSet<usize> = (0..20_000)
            .map(|_| {
                x = xorshift(x);
                one.word_in_chunk(x) % WORDS_PER_PAGE / WORDS_PER_LINE
            })
            .collect();
        assert_eq!(offsets.len(), LINES_PER_PAGE);
        // Every page of a chunk is read, not only the first.
        let mut x = 9u64;
        let pages: std::collections::BTreeSet<usize> = (0..20_000)
            .map(|_| {
                x = xorshift(x);
                s.word_in_chunk(x) / WORDS_PER_PAGE
            })
            .collect();
        assert_eq!(pages.len(), PAGES_PER_CHUNK);
        // All 64 lines is the whole chunk, as before the choice existed.
        let all = Stream::new(4, 1.0, 1).lines_per_page(64).expect("64");
        assert_eq!(all.word_in_chunk(0x3_ffff), 0x3_ffff);
        for bad in [0, 3, 128] {
            let e = Stream::new(4, 1.0, 1).lines_per_page(bad).err();
            assert!(
                matches!(&e, Some(Error::Config(m)) if m.contains("power of two")),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_hot_spot_reads_its_share_evenly_and_every_cold_chunk_too() {
        // 4 % of 4096 chunks hot (164), 99 % of the reads.
        let hot = Skew::Hotspot {
            chunks: 0.04,
            reads: 0.99,
        };
        let s = Stream::with_skew(4096, hot, 5);
        let mut counts = vec![0u32; 4096];
        let mut x = 3u64;
        let n = 4_000_000;
        for _ in 0..n {
            x = xorshift(x);
            counts[s.rank(x)] += 1;
        }
        let hot_reads: u32 = counts[..164].iter().sum();
        let share = f64::from(hot_reads) / f64::from(n);
        assert!((share - 0.99).abs() < 0.001, "{share}");
        // Evenly: each hot rank within 10 % of its 1/164 of the hot reads.
        let each = f64::from(hot_reads) / 164.0;
        assert!(
            counts[..164]
                .iter()
                .all(|&c| (f64::from(c) / each - 1.0).abs() < 0.1),
            "{:?}",
            &counts[..164]
        );
        // The cold chunks share the rest evenly: about 10 reads each, none near a hot one's
        // 24 000, and their total within Poisson noise of 1 %.
        let cold: u32 = counts[164..].iter().sum();
        assert!(
            (f64::from(cold) / f64::from(n) - 0.01).abs() < 0.0005,
            "{cold}"
        );
        assert!(counts[164..].iter().all(|&c| f64::from(c) < each / 100.0));
        let read = counts[164..].iter().filter(|&&c| c > 0).count();
        assert!(read > 3900, "{read} of 3932 cold chunks read");
        // As drawn: 164 of 4096 chunks, 99 % of the reads.
        let h = s.hotspot().expect("a hot spot");
        assert!((h.chunks - 164.0 / 4096.0).abs() < 1e-12 && (h.reads - 0.99).abs() < 1e-9);
        // Rounding keeps a chunk on each side: 99.99 % of 8 chunks is 7, 0.01 % is 1.
        for (share, want) in [(0.9999, 7.0), (0.0001, 1.0)] {
            let skew = Skew::Hotspot {
                chunks: share,
                reads: 0.5,
            };
            let h = Stream::with_skew(8, skew, 1).hotspot().expect("hot spot");
            assert_eq!(h.chunks * 8.0, want);
        }
        // The profile's plan is exactly the hot chunks.
        let mut plan = profile_plan(&s, 4096, 164, 9);
        plan.sort_unstable();
        let mut want = s.hottest()[..164].to_vec();
        want.sort_unstable();
        assert_eq!(plan, want);
        assert_eq!(
            PromoteBenchWorkload::hotspot_name(0.04, 0.99, 1, true),
            "hot:4%:99%:lines:1:chase"
        );
    }

    #[test]
    fn the_no_gain_reads_keep_to_a_span_the_first_level_tlb_holds() {
        let skew = Skew::NoGain {
            pages: NOGAIN_PAGES,
        };
        skew.check().expect("a valid span");
        let s = Stream::with_skew(16, skew, 3).chase(true);
        // 64 pages of 4 KiB: 256 KiB, one entry a page, within the 64 entries it claims.
        assert_eq!(s.span_bytes(), 256 << 10);
        assert!(s.span_bytes() / PageSize::Size4K.bytes() <= L1_TLB_ENTRIES as usize);
        // Every draw reads the hottest chunk, inside the span, and reaches each of its pages.
        let hot = s.hottest()[0] as usize;
        let mut x = 17u64;
        let mut pages = std::collections::BTreeSet::new();
        for _ in 0..100_000 {
            x = xorshift(x);
            assert_eq!(s.rank(x), 0);
            let w = s.word_in_chunk(x);
            assert!(w < 64 * WORDS_PER_PAGE, "{w}");
            pages.insert(w / WORDS_PER_PAGE);
        }
        assert_eq!(pages.len(), NOGAIN_PAGES as usize);
        // The loop itself reads there only: with ones in the span and zeros elsewhere, its
        // reads without the arithmetic sum to their count.
        let data: Vec<u64> = (0..16 * WORDS_PER_CHUNK)
            .map(|w| u64::from(w / WORDS_PER_CHUNK == hot && w % WORDS_PER_CHUNK < 64 * 512))
            .collect();
        let plain = Stream {
            work: false,
            ..Stream::with_skew(16, skew, 3)
        };
        assert_eq!(plain.reads(&data, 50_000, 9, None), 50_000);
        // With the arithmetic the reads are the same, their sum mixed: not the count.
        assert_ne!(s.reads(&data, 50_000, 9, None), 50_000);
        // The profile sees one chunk: a plan of it alone, however large the budget.
        assert_eq!(profile_plan(&s, 16, 8, 1), vec![hot as u32]);
        for bad in [0, 3, 1024] {
            assert!(Skew::NoGain { pages: bad }.check().is_err(), "{bad}");
        }
        assert_eq!(
            PromoteBenchWorkload::nogain_name(s.span_bytes() as u64),
            "nogain:256KiB"
        );
    }

    #[test]
    fn a_chase_reads_the_same_words_as_independent_reads() {
        // Distinct words: equal sums mean the same words were read, the chain changing only
        // when each read may start.
        let data: Vec<u64> = (0..8 * WORDS_PER_CHUNK as u64).map(|w| w * w + 1).collect();
        for lines in [1, 64] {
            let free = Stream::new(8, 1.5, 4).lines_per_page(lines).expect("lines");
            let chained = Stream::new(8, 1.5, 4)
                .lines_per_page(lines)
                .expect("lines")
                .chase(true);
            let a = free.reads(&data, 50_000, 11, None);
            assert_eq!(chained.reads(&data, 50_000, 11, None), a, "{lines}");
            assert_ne!(free.reads(&data, 50_000, 12, None), a);
        }
        assert_eq!(
            PromoteBenchWorkload::zipf_name(2.0, 1, true),
            "zipf:2:lines:1:chase"
        );
        assert_eq!(PromoteBenchWorkload::zipf_name(1.5, 64, false), "zipf:1.5");
    }
}
