//! Does promotion pay? A skewed random-read workload run four ways, alternated round by round:
//! 4 KiB pages only (`base`), every chunk huge (`ideal`), a promotion plan replayed at start
//! (`plan`), and the online daemon promoting while the workload runs (`daemon`).
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
//! The plan holds the chunks a sampled profile of the same access stream ranks highest (the
//! software PCC's ranking), as many as the budget allows. The daemon runs the `pcc` policy on
//! the samples the workload publishes (one access in `sample_every`) through the same channel
//! any cooperating program uses, within the same budget. Every huge-page share is read back
//! from the kernel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hugewise_mem::{Bytes, PagePolicy, Region, RegionOptions};
use hugewise_promote::action::ActionKind;
use hugewise_promote::budget::Limit;
use hugewise_promote::channel::{Publisher, Subscriber};
use hugewise_promote::daemon::{self, Daemon};
use hugewise_promote::replay::{replay, Step};
use hugewise_promote::target::Target;
use hugewise_promote::{BASE_PER_HUGE, HUGE};
pub use hugewise_results::promote::{
    Arm, Hotspot, PromoteBenchArm as ArmSummary, PromoteBenchReport as Report,
    PromoteBenchSample as Sample, PromoteBenchWorkload as Workload,
};
use hugewise_sys::proc::ProcFs;
use hugewise_sys::PageSize;

use crate::quiet;
use crate::stats::{median, summarize};
use crate::{Error, Progress, Result};

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Region size.
    pub bytes: Bytes,
    /// How the chunks' ranks are drawn, one workload each, run in turn.
    pub skews: Vec<Skew>,
    /// Timed reads per run.
    pub reads: u64,
    /// Rounds (each runs every arm once).
    pub rounds: u32,
    /// Share of the region that may be huge for `plan` and `daemon`.
    pub budget_share: f64,
    /// The daemon's interval.
    pub interval: Duration,
    /// One access in this many is published as a sample (daemon arm).
    pub sample_every: u32,
    /// Seed of the permutation and the address stream.
    pub seed: u64,
    /// Cache lines of each 4 KiB page the reads go to: a power of two from 1 to 64 (every
    /// line).
    pub lines_per_page: u32,
    /// Each read's address waits for the read before it (a chase), rather than every read
    /// being known in advance.
    pub chase: bool,
    /// Run every arm of a round on the same physical pages (see [`SHARED_ORDER`]) instead of
    /// mapping the region afresh for each.
    pub same_frames: bool,
    /// Fault each arm's region chunk by chunk, coldest first, as a program that fills its bulk
    /// data before its hot index: THP at fault (the ideal arm) then spends scarce huge pages
    /// on the cold chunks, as Linux does for whatever faults first.
    pub cold_first: bool,
    /// Run even when the region is larger than the memory available (swap to spare).
    pub force: bool,
}

/// Beside the region: the daemon's sample ring (2^20 slots of 8 bytes) and room for one
/// collapse's new 2 MiB page.
const BESIDE_REGION: u64 = (8 << 20) + (2 << 20);

/// The arms' order in a round on shared frames: each arm's backing is reached from the one
/// before by splitting huge pages in place, which keeps their physical pages; only the daemon
/// collapses, and it comes last.
pub const SHARED_ORDER: [Arm; 4] = [Arm::Ideal, Arm::Plan, Arm::Base, Arm::Daemon];

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
}

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
}

const TABLE_BITS: u32 = 16;
const WORDS_PER_CHUNK: usize = HUGE / 8;
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
        }
    }

    /// The hot spot as drawn (the share of chunks hot and the share of reads they take, after
    /// rounding to whole chunks), or `None` for a Zipf stream.
    pub fn hotspot(&self) -> Option<Hotspot> {
        match self.draw {
            Draw::Table(_) => None,
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
            None => x as usize & (WORDS_PER_CHUNK - 1),
            Some(mask) => {
                let page = (x >> 20) as usize & (PAGES_PER_CHUNK - 1);
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
        if self.chase {
            self.reads_as::<true>(data, pass)
        } else {
            self.reads_as::<false>(data, pass)
        }
    }

    /// [`Stream::reads_until`], with the chain of dependent reads or without, each loop
    /// compiled for its own case.
    fn reads_as<const CHASE: bool>(&self, data: &[u64], pass: Pass<'_>) -> u64 {
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
            let v = data[word];
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
    let mut order: Vec<u32> = (0..chunks as u32).collect();
    order.sort_by_key(|&c| std::cmp::Reverse(counts[c as usize]));
    order.truncate(k);
    order
}

/// A fresh region for `arm`, each word holding its own index, faulted chunk by chunk in
/// `order` when one is given (the first write decides which chunks THP at fault makes huge),
/// else populated in address order when created.
fn make(arm: Arm, words: usize, order: Option<&[u32]>) -> Result<Region<u64>> {
    let policy = match arm {
        Arm::Ideal => PagePolicy::Thp,
        // No advice: with THP `madvise` or `never` the faults give 4 KiB pages, and (unlike
        // MADV_NOHUGEPAGE) collapse stays allowed for the plan and the daemon.
        Arm::Base | Arm::Plan | Arm::Daemon => PagePolicy::System,
    };
    let mut r = Region::new(arm.name(), words, fault_options(policy, order.is_some()))?;
    match order {
        Some(chunks) => {
            for &c in chunks {
                let at = c as usize * WORDS_PER_CHUNK;
                for (i, x) in r[at..at + WORDS_PER_CHUNK].iter_mut().enumerate() {
                    *x = (at + i) as u64;
                }
            }
        }
        None => {
            for (i, x) in r.iter_mut().enumerate() {
                *x = i as u64;
            }
        }
    }
    if arm != Arm::Ideal && r.backing()?.huge_bytes() > 0 {
        return Err(Error::Config(
            "the kernel gave huge pages at fault to memory without advice (THP `always`): run \
             with THP `madvise` (hugewise env thp --enabled madvise) so the base arm is 4 KiB"
                .into(),
        ));
    }
    Ok(r)
}

/// How a region is faulted: left to its first writes when they come in an order of their own
/// (populating on creation would fault it in address order first).
fn fault_options(policy: PagePolicy, ordered: bool) -> RegionOptions {
    let opts = RegionOptions::new(policy);
    if ordered {
        opts.first_touch()
    } else {
        opts
    }
}

/// A region faulted with 4 KiB pages and then collapsed whole, for a round on shared frames:
/// every arm's pages are then these, split in place or not.
fn all_huge(words: usize) -> Result<Region<u64>> {
    let r = make(Arm::Base, words, None)?;
    let out = r.collapse(0..r.mapped_bytes())?;
    if out.huge_bytes_after < r.mapped_bytes() as u64 {
        return Err(Error::Config(format!(
            "MADV_COLLAPSE made only {} of the region's {} MiB huge ({}): on shared frames \
             every chunk must start huge; free memory or compact, or leave out --same-frames",
            out.huge_bytes_after >> 20,
            r.mapped_bytes() >> 20,
            out.errno.as_deref().unwrap_or("no error")
        )));
    }
    Ok(r)
}

/// Times a split that left huge pages is asked again.
const SPLIT_RETRIES: usize = 4;

/// Split in place the huge chunks of `r` marked in `which`, one call for each run of
/// neighbouring chunks, and check the kernel did.
fn split_chunks(target: &Target, r: &Region<u64>, which: &[bool]) -> Result<()> {
    let mut c = 0;
    while c < which.len() {
        if !which[c] {
            c += 1;
            continue;
        }
        let end = c + which[c..].iter().take_while(|&&w| w).count();
        let a = r.addr() + c * HUGE;
        // The kernel gives up on a split it cannot make at once (a page still held by a
        // per-CPU batch, say) and says nothing: ask again, a little later, for what stayed.
        let span = c * HUGE..end * HUGE;
        let mut act = target.demote(a..a + (end - c) * HUGE)?;
        let mut left = r.backing_of(span.clone())?.huge_bytes();
        for _ in 0..SPLIT_RETRIES {
            if act.outcome != "ok" || left == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            act = target.demote(a..a + (end - c) * HUGE)?;
            left = r.backing_of(span.clone())?.huge_bytes();
        }
        if act.outcome != "ok" || left != 0 {
            return Err(Error::Config(format!(
                "splitting chunks {c}..{end} in place left {} MiB huge ({}): the arms cannot \
                 share frames on this kernel; leave out --same-frames",
                left >> 20,
                act.outcome
            )));
        }
        c = end;
    }
    Ok(())
}

/// How many of `chunks` are huge, and how many are not, read back from the kernel.
fn huge_chunks(r: &Region<u64>, chunks: &[u32]) -> Result<(u32, u32)> {
    let mut huge = 0;
    for &c in chunks {
        let off = c as usize * HUGE;
        if r.backing_of(off..off + HUGE)?.huge_bytes() == HUGE as u64 {
            huge += 1;
        }
    }
    Ok((huge, chunks.len() as u32 - huge))
}

struct DaemonRun {
    reach_ms: Option<f64>,
    cpu_ns: u64,
    /// CPU of the intervals that began after the budget was reached, and when that was.
    steady_cpu_ns: u64,
    reached_at: Option<Instant>,
    steady_wall_ns: Option<u64>,
    /// The last look that promoted: when it began (from the daemon's start), when it was
    /// reported (an instant), and the daemon's CPU up to then. A daemon that stays below its budget (nothing else
    /// worth a collapse) is settled from then on.
    settled_ms: Option<f64>,
    settled_at: Option<Instant>,
    cpu_at_settle_ns: u64,
    promoted: u32,
    failed: u32,
    demoted: u32,
    swaps: u32,
    collapse_ns: Vec<u64>,
}

/// Run the benchmark: every workload in turn, each with all its arms alternated round by
/// round. `progress` counts runs done of the total.
pub fn run(cfg: &Config, cancel: &AtomicBool, progress: Progress<'_>) -> Result<Report> {
    if cfg.rounds == 0 || cfg.reads == 0 {
        return Err(Error::Config("rounds and reads must be at least 1".into()));
    }
    if cfg.skews.is_empty() {
        return Err(Error::Config(
            "name at least one workload (a Zipf exponent or a hot spot)".into(),
        ));
    }
    for skew in &cfg.skews {
        skew.check()?;
    }
    if cfg.cold_first && cfg.same_frames {
        return Err(Error::Config(
            "faulting coldest first orders the faults of each arm's fresh region; on shared \
             frames one region is collapsed whole: choose one"
                .into(),
        ));
    }
    // Each arm's region is dropped before the next is made: one at a time, every page touched.
    let implies = format!(
        "a region of {} with every page touched, one arm at a time, and the daemon's sample ring",
        cfg.bytes
    );
    crate::room::check(cfg.bytes, cfg.bytes.0 + BESIDE_REGION, &implies, cfg.force)?;
    let per = u64::from(cfg.rounds) * Arm::ALL.len() as u64;
    let total = per * cfg.skews.len() as u64;
    let mut workloads = Vec::with_capacity(cfg.skews.len());
    for (i, &skew) in cfg.skews.iter().enumerate() {
        let before = per * i as u64;
        let mut w = run_workload(cfg, skew, cancel, &mut |done, _| {
            progress(before + done, total)
        })?;
        w.fill_headline();
        workloads.push(w);
    }
    Ok(Report { workloads })
}

fn run_workload(
    cfg: &Config,
    skew: Skew,
    cancel: &AtomicBool,
    progress: Progress<'_>,
) -> Result<Workload> {
    let chunks = (cfg.bytes.0 as usize / HUGE).max(1);
    if chunks < 2 {
        return Err(Error::Config(
            "the region must hold at least two 2 MiB chunks".into(),
        ));
    }
    if !(0.0..=1.0).contains(&cfg.budget_share) {
        return Err(Error::Config(
            "the budget is a share between 0 and 1".into(),
        ));
    }
    let words = chunks * WORDS_PER_CHUNK;
    let stream = Stream::with_skew(chunks, skew, cfg.seed)
        .lines_per_page(cfg.lines_per_page)?
        .chase(cfg.chase);
    if cfg.cold_first && stream.hottest().len() < chunks {
        return Err(Error::Config(format!(
            "faulting coldest first ranks at most {} chunks, and the region has {chunks}: use a \
             region of at most {} GiB",
            stream.hottest().len(),
            (stream.hottest().len() * HUGE) >> 30
        )));
    }
    let budget_bytes = Limit::Share(cfg.budget_share).bytes((chunks * HUGE) as u64);
    let k = (budget_bytes / HUGE as u64) as usize;
    let plan = profile_plan(&stream, chunks, k, cfg.seed ^ 0x5eed);
    let coldest_first: Option<Vec<u32>> = cfg
        .cold_first
        .then(|| stream.hottest().iter().rev().copied().collect());
    let total = u64::from(cfg.rounds) * Arm::ALL.len() as u64;
    let proc = ProcFs::default();
    let me = std::process::id() as i32;
    let mut samples = Vec::new();
    for round in 0..cfg.rounds {
        // Alternate the order within a round too: A B C D, then D C B A. On shared frames the
        // order follows the splits.
        let mut arms = Arm::ALL.to_vec();
        if cfg.same_frames {
            arms = SHARED_ORDER.to_vec();
        } else if round % 2 == 1 {
            arms.reverse();
        }
        // On shared frames, the round's one region, from arm to arm.
        let mut shared: Option<Region<u64>> = None;
        for arm in arms {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            let t0 = Instant::now();
            let mut collapse_ns = Vec::new();
            // Plan arm: its chunks made huge, and those that were not (after retries).
            let mut plan_outcomes = None;
            let mut fresh = None;
            let r: &Region<u64> = if cfg.same_frames {
                let r = match shared.take() {
                    Some(r) => r,
                    None => all_huge(words)?,
                };
                match arm {
                    Arm::Plan => {
                        let mut rest = vec![true; chunks];
                        for &c in &plan {
                            rest[c as usize] = false;
                        }
                        split_chunks(&Target::attach(&proc, me, t0)?, &r, &rest)?;
                        plan_outcomes = Some(huge_chunks(&r, &plan)?);
                    }
                    Arm::Base => {
                        split_chunks(&Target::attach(&proc, me, t0)?, &r, &vec![true; chunks])?
                    }
                    Arm::Ideal | Arm::Daemon => {}
                }
                shared.insert(r)
            } else {
                fresh.insert(make(arm, words, coldest_first.as_deref())?)
            };
            if arm == Arm::Plan && !cfg.same_frames {
                let target = Target::attach(&proc, me, t0)?;
                let steps: Vec<Step> = plan
                    .iter()
                    .map(|&c| {
                        let a = r.addr() + c as usize * HUGE;
                        Step {
                            at: Duration::ZERO,
                            range: a..a + HUGE,
                            kind: ActionKind::Promote,
                        }
                    })
                    .collect();
                let done = replay(&target, &steps, t0, &AtomicBool::new(false), &mut |_| {})?;
                collapse_ns = done.actions.iter().map(|a| a.latency_ns).collect();
                let ok = done.actions.iter().filter(|a| a.outcome == "ok").count() as u32;
                plan_outcomes = Some((ok, plan.len() as u32 - ok.min(plan.len() as u32)));
            }
            let setup_ns = t0.elapsed().as_nanos() as u64;
            let q = quiet::wait_quiet(0.10, Duration::from_millis(200), 5);
            let seed = cfg.seed.wrapping_add(u64::from(round));
            let warm = (cfg.reads / 20).max(1);
            let warm_up = Pass {
                n: warm,
                seed: seed ^ 0xabcdef,
                sample: None,
                stop: cancel,
            };
            std::hint::black_box(stream.reads_until(r, warm_up));
            let (ns, dr) = if arm == Arm::Daemon {
                let (ns, d) = timed_with_daemon(cfg, &stream, r, seed, budget_bytes, cancel)?;
                collapse_ns = d.collapse_ns.clone();
                (ns, Some(d))
            } else {
                let t = Instant::now();
                let timed = Pass {
                    n: cfg.reads,
                    seed,
                    sample: None,
                    stop: cancel,
                };
                std::hint::black_box(stream.reads_until(r, timed));
                (t.elapsed().as_nanos() as u64, None)
            };
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            let huge_share = r.backing()?.huge_bytes() as f64 / r.mapped_bytes() as f64;
            let (hot_huge, _) = huge_chunks(r, &plan)?;
            samples.push(Sample {
                huge_share,
                setup_ns,
                reach_budget_ms: dr.as_ref().and_then(|d| d.reach_ms),
                daemon_cpu_ns: dr.as_ref().map(|d| d.cpu_ns),
                wall_ns: ns,
                settled_ms: dr.as_ref().and_then(|d| d.settled_ms),
                daemon_steady_cpu_ns: dr
                    .as_ref()
                    .and_then(|d| d.steady_wall_ns.map(|_| d.steady_cpu_ns)),
                daemon_steady_wall_ns: dr.as_ref().and_then(|d| d.steady_wall_ns),
                promotions: dr
                    .as_ref()
                    .map(|d| (d.promoted, d.failed))
                    .or(plan_outcomes),
                demotions: dr.as_ref().map(|d| (d.demoted, Some(d.swaps))),
                hot_chunks_huge: Some(hot_huge),
                collapse_ns,
                quiet: q,
                ..Sample::timed(round, arm, ns as f64 / cfg.reads as f64)
            });
            progress(samples.len() as u64, total);
        }
    }
    let summary = summarize_arms(&samples);
    Ok(Workload {
        workload: match skew {
            Skew::Zipf(s) => Workload::zipf_name(s, cfg.lines_per_page, cfg.chase),
            Skew::Hotspot { chunks, reads } => {
                Workload::hotspot_name(chunks, reads, cfg.lines_per_page, cfg.chase)
            }
        },
        bytes: (chunks * HUGE) as u64,
        unit: Workload::NS_PER_READ.into(),
        zipf_s: match skew {
            Skew::Zipf(s) => Some(s),
            Skew::Hotspot { .. } => None,
        },
        hotspot: stream.hotspot(),
        lines_per_page: Some(cfg.lines_per_page),
        lines_staggered: cfg.lines_per_page < 64,
        chase: cfg.chase,
        same_frames: cfg.same_frames,
        cold_first: cfg.cold_first,
        reads: cfg.reads,
        budget_share: cfg.budget_share,
        plan_chunks: plan.len() as u64,
        interval_ms: cfg.interval.as_millis() as u64,
        sample_every: cfg.sample_every,
        samples,
        summary,
        // The headline is filled from the samples by the caller.
        ..Workload::default()
    })
}

/// Time the reads while a daemon thread promotes the region within `budget_bytes`.
fn timed_with_daemon(
    cfg: &Config,
    stream: &Stream,
    r: &Region<u64>,
    seed: u64,
    budget_bytes: u64,
    cancel: &AtomicBool,
) -> Result<(u64, DaemonRun)> {
    // In shared memory, beside where programs publish (a ring in a file on disk would add
    // writeback and write faults to the sampled reads), under a name of its own: a run of a
    // graph kernel in this process publishes at the program's name. Ctrl-C ends the reads and
    // drops the ring; a bench killed outright leaves it behind, and the next one removes it.
    hugewise_promote::channel::remove_dead_rings();
    let ring = hugewise_promote::channel::bench_path(std::process::id() as i32);
    let publisher = Publisher::create_at(&ring, 1 << 20)?;
    let t0 = Instant::now();
    // Only the workload's region: other memory of this process (a test beside it) is not the
    // daemon's to count or split.
    let target = Target::attach(&ProcFs::default(), std::process::id() as i32, t0)?
        .within(r.addr()..r.addr() + r.mapped_bytes());
    let dcfg = daemon::Config {
        interval: cfg.interval,
        limit: Limit::Bytes(budget_bytes),
        ..daemon::Config::default()
    };
    let policy = hugewise_promote::policy::by_name("pcc")
        .ok_or_else(|| Error::Config("no pcc policy".into()))?;
    let mut d = Daemon::new(policy, dcfg, t0);
    let samples = Subscriber::open_at(&ring, target.writer())?;
    d.add_with(target, Some(samples));
    let stop = AtomicBool::new(false);
    let log: Mutex<DaemonRun> = Mutex::new(DaemonRun {
        reach_ms: None,
        cpu_ns: 0,
        steady_cpu_ns: 0,
        reached_at: None,
        steady_wall_ns: None,
        settled_ms: None,
        settled_at: None,
        cpu_at_settle_ns: 0,
        promoted: 0,
        failed: 0,
        demoted: 0,
        swaps: 0,
        collapse_ns: Vec::new(),
    });
    let (ns, end, res) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            d.run(&stop, &mut |iv, actions| {
                let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
                l.collapse_ns.extend(
                    actions
                        .iter()
                        .filter(|a| a.kind == ActionKind::Promote)
                        .map(|a| a.latency_ns),
                );
                l.cpu_ns += iv.cpu_ns;
                if l.reach_ms.is_some() {
                    l.steady_cpu_ns += iv.cpu_ns;
                }
                l.promoted += iv.promoted;
                if iv.promoted > 0 {
                    l.settled_ms = Some(iv.t_ms);
                    l.settled_at = Some(Instant::now());
                    l.cpu_at_settle_ns = l.cpu_ns;
                }
                l.failed += iv.failed;
                l.demoted += iv.demoted;
                l.swaps += iv.swaps.unwrap_or(0);
                if l.reach_ms.is_none() && iv.huge_bytes_after + HUGE as u64 > budget_bytes {
                    l.reach_ms = Some(iv.t_ms);
                    l.reached_at = Some(Instant::now());
                }
            })
        });
        let t = Instant::now();
        let timed = Pass {
            n: cfg.reads,
            seed,
            sample: Some((&publisher, cfg.sample_every)),
            stop: cancel,
        };
        std::hint::black_box(stream.reads_until(r, timed));
        let ns = t.elapsed().as_nanos() as u64;
        let end = Instant::now();
        stop.store(true, Ordering::Relaxed);
        (ns, end, h.join())
    });
    match res {
        Ok(r) => r?,
        Err(_) => return Err(Error::Config("the daemon thread panicked".into())),
    }
    drop(publisher);
    let mut run = log.into_inner().unwrap_or_else(|e| e.into_inner());
    // The steady state: from the budget's being reached to the clock's stop, or, for a
    // daemon that stayed below its budget, from its last promotion.
    match (run.reached_at, run.settled_at) {
        (Some(r), _) => {
            run.steady_wall_ns = Some(end.saturating_duration_since(r).as_nanos() as u64);
        }
        (None, Some(at)) => {
            run.steady_wall_ns = Some(end.saturating_duration_since(at).as_nanos() as u64);
            run.steady_cpu_ns = run.cpu_ns - run.cpu_at_settle_ns;
        }
        (None, None) => {}
    }
    Ok((ns, run))
}

pub(crate) fn summarize_arms(samples: &[Sample]) -> Vec<ArmSummary> {
    let in_round = |arm: Arm, round: u32| {
        samples
            .iter()
            .find(|s| s.arm == arm && s.round == round)
            .map(|s| s.time)
    };
    Arm::ALL
        .iter()
        .filter_map(|&a| {
            let mine: Vec<&Sample> = samples.iter().filter(|s| s.arm == a).collect();
            let ns: Vec<f64> = mine.iter().map(|s| s.time).collect();
            let speedups: Vec<f64> = mine
                .iter()
                .filter_map(|s| Some(in_round(Arm::Base, s.round)? / s.time))
                .collect();
            let shares: Vec<f64> = mine
                .iter()
                .filter_map(|s| {
                    let base = in_round(Arm::Base, s.round)?;
                    let ideal = base / in_round(Arm::Ideal, s.round)? - 1.0;
                    (ideal > 0.0).then(|| (base / s.time - 1.0) / ideal)
                })
                .collect();
            let huge: Vec<f64> = mine.iter().map(|s| s.huge_share).collect();
            Some(ArmSummary {
                // Filled from the samples with the headline.
                time_vs_ideal: None,
                share_of_ideal_saving: None,
                arm: a,
                time: summarize(&ns)?,
                speedup_vs_base: if a == Arm::Base {
                    None
                } else {
                    median(&speedups)
                },
                share_of_ideal: if matches!(a, Arm::Base | Arm::Ideal) {
                    None
                } else {
                    median(&shares)
                },
                huge_footprint_share: median(&huge).unwrap_or(0.0),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
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
            Workload::hotspot_name(0.04, 0.99, 1, true),
            "hot:4%:99%:lines:1:chase"
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
        assert_eq!(Workload::zipf_name(2.0, 1, true), "zipf:2:lines:1:chase");
        assert_eq!(Workload::zipf_name(1.5, 64, false), "zipf:1.5");
    }

    /// One run at a time: each daemon manages its own region only, but two runs at once on two
    /// cores leave a daemon so little time that a short run may end before it promotes.
    static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn small(reads: u64) -> Config {
        Config {
            bytes: Bytes(16 << 20),
            skews: vec![Skew::Zipf(1.0)],
            reads,
            rounds: 1,
            budget_share: 0.25,
            interval: Duration::from_millis(10),
            sample_every: 64,
            seed: 5,
            lines_per_page: 64,
            chase: true,
            same_frames: false,
            cold_first: false,
            force: false,
        }
    }

    #[test]
    fn a_region_past_the_memory_available_is_refused_before_anything_is_touched() {
        let cfg = Config {
            bytes: Bytes(1 << 50),
            ..small(1000)
        };
        let e = run(&cfg, &AtomicBool::new(false), &mut |_, _| panic!("ran")).expect_err("refused");
        let m = e.to_string();
        for want in ["size 1024TiB", "available", "--force"] {
            assert!(m.contains(want), "{want}: {m}");
        }
    }

    #[test]
    fn a_raised_stop_flag_ends_the_bench_before_its_next_run() {
        let mut calls = 0;
        let e =
            run(&small(1000), &AtomicBool::new(true), &mut |_, _| calls += 1).expect_err("stopped");
        assert!(matches!(e, Error::Interrupted), "{e}");
        assert_eq!(calls, 0);
    }

    #[test]
    fn a_stop_in_the_middle_of_the_daemons_reads_ends_them_and_removes_its_ring() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        // Reads that would take hours: only the stop flag ends them.
        let cfg = small(1 << 40);
        let stream = Stream::new(8, 1.0, 5).chase(true);
        let r = make(Arm::Daemon, 8 * WORDS_PER_CHUNK, None).expect("region");
        let cancel = AtomicBool::new(false);
        let (ns, _) = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                cancel.store(true, Ordering::Relaxed);
            });
            timed_with_daemon(&cfg, &stream, &r, 1, 4 * HUGE as u64, &cancel).expect("run")
        });
        assert!(ns >= 300_000_000, "stopped after {ns} ns, before the flag");
        let ring = hugewise_promote::channel::bench_path(std::process::id() as i32);
        assert!(!ring.exists(), "{} left behind", ring.display());
    }

    #[test]
    fn a_small_run_measures_every_arm_of_every_workload_within_the_budget() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let cfg = Config {
            bytes: Bytes(64 << 20),
            skews: vec![Skew::Zipf(1.0), Skew::Zipf(1.5)],
            // Enough reads for the daemon's reads to span many intervals
            // even on a fast machine: it decides one interval after its
            // first samples, and a run that ends first promotes nothing.
            reads: 2_000_000,
            rounds: 1,
            budget_share: 0.125,
            interval: Duration::from_millis(10),
            sample_every: 64,
            seed: 3,
            lines_per_page: 64,
            chase: false,
            same_frames: false,
            cold_first: false,
            force: false,
        };
        let mut calls = Vec::new();
        let r = match run(&cfg, &AtomicBool::new(false), &mut |done, total| {
            calls.push((done, total))
        }) {
            Ok(r) => r,
            Err(Error::Config(m)) if m.contains("THP `always`") => {
                hugewise_sys::testing::skip(&m);
                return;
            }
            Err(e) => panic!("{e}"),
        };
        // Progress counts over both workloads: 8 runs.
        assert_eq!(calls.len(), 8);
        assert_eq!(calls.last(), Some(&(8, 8)));
        let names: Vec<&str> = r.workloads.iter().map(|w| w.workload.as_str()).collect();
        assert_eq!(names, ["zipf:1", "zipf:1.5"]);
        for w in &r.workloads {
            assert_eq!((w.samples.len(), w.summary.len()), (4, 4));
            // 12.5 % of 32 chunks: a plan of 4.
            assert_eq!(w.plan_chunks, 4);
            let arm = |a: Arm| w.samples.iter().find(|s| s.arm == a).expect("arm");
            assert_eq!(arm(Arm::Base).huge_share, 0.0);
            assert_eq!(arm(Arm::Base).hot_chunks_huge, Some(0));
            // The plan's collapses that succeeded are its huge hot chunks, read back.
            let (made, _) = arm(Arm::Plan).promotions.expect("plan outcomes");
            assert_eq!(arm(Arm::Plan).hot_chunks_huge, Some(made));
            // The headline is the summaries' figures.
            let sum = |a: Arm| w.summary.iter().find(|s| s.arm == a).expect("arm");
            assert_eq!(w.ideal_speedup, sum(Arm::Ideal).speedup_vs_base);
            assert_eq!(w.plan_speedup, sum(Arm::Plan).speedup_vs_base);
            assert_eq!(w.daemon_speedup, sum(Arm::Daemon).speedup_vs_base);
            assert_eq!(
                w.huge_footprint_share,
                Some(sum(Arm::Plan).huge_footprint_share)
            );
            assert!(w.daemon_cpu_share.is_some_and(|c| c > 0.0), "{w:?}");
            if ProcFs::default().kpageflags().is_ok() {
                // The plan's chunks read back huge are the ones its steps report made: all 4,
                // unless the kernel refused one even after the retries (seen once in a full CI
                // run: 3 of 4).
                let plan = arm(Arm::Plan);
                let (ok, failed) = plan.promotions.expect("the plan's outcomes");
                assert_eq!(ok + failed, 4, "{plan:?}");
                assert!(ok >= 3, "{plan:?}");
                assert!(
                    (plan.huge_share - f64::from(ok) / 32.0).abs() < 1e-9,
                    "{plan:?}"
                );
                let d = arm(Arm::Daemon);
                assert!(d.huge_share <= 0.125 + 1e-9, "{d:?}");
                assert!(d.promotions.is_some_and(|(ok, _)| ok >= 1), "{d:?}");
                // Either at its budget or settled below it, and timed either way.
                assert!(
                    d.reach_budget_ms.is_some() || d.settled_ms.is_some(),
                    "{d:?}"
                );
            }
            assert!(w.summary[0].speedup_vs_base.is_none());
            assert!(w.summary[2].huge_footprint_share > 0.0);
        }
    }

    #[test]
    fn on_shared_frames_the_arms_run_in_split_order_with_the_backing_each_needs() {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        let cfg = Config {
            bytes: Bytes(64 << 20),
            skews: vec![Skew::Hotspot {
                chunks: 0.1,
                reads: 0.99,
            }],
            reads: 2_000_000,
            rounds: 2,
            budget_share: 0.125,
            interval: Duration::from_millis(10),
            sample_every: 64,
            seed: 5,
            lines_per_page: 1,
            chase: true,
            same_frames: true,
            cold_first: false,
            force: false,
        };
        let r = match run(&cfg, &AtomicBool::new(false), &mut |_, _| {}) {
            Ok(r) => r,
            Err(Error::Config(m))
                if m.contains("THP `always`")
                    || m.contains("MADV_COLLAPSE")
                    || m.contains("cannot share frames") =>
            {
                hugewise_sys::testing::skip(&m);
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let w = &r.workloads[0];
        assert!(w.same_frames);
        assert!(
            w.describe().contains("same physical pages"),
            "{}",
            w.describe()
        );
        let order: Vec<(u32, Arm)> = w.samples.iter().map(|s| (s.round, s.arm)).collect();
        let expected: Vec<(u32, Arm)> = (0..2)
            .flat_map(|round| SHARED_ORDER.iter().map(move |&a| (round, a)))
            .collect();
        assert_eq!(order, expected);
        for s in &w.samples {
            match s.arm {
                Arm::Ideal => assert_eq!(s.huge_share, 1.0, "{s:?}"),
                Arm::Base => assert_eq!(s.huge_share, 0.0, "{s:?}"),
                // The plan keeps its 4 chunks of 32 huge, every one of them.
                Arm::Plan => {
                    assert_eq!(s.promotions, Some((4, 0)), "{s:?}");
                    assert!((s.huge_share - 4.0 / 32.0).abs() < 1e-9, "{s:?}");
                }
                Arm::Daemon => assert!(s.huge_share <= 0.125 + 1e-9, "{s:?}"),
            }
        }
    }

    #[test]
    fn bad_exponents_are_refused_before_anything_is_mapped() {
        let mut cfg = Config {
            bytes: Bytes(64 << 20),
            skews: vec![],
            reads: 1,
            rounds: 1,
            budget_share: 0.1,
            interval: Duration::from_millis(20),
            sample_every: 64,
            seed: 3,
            lines_per_page: 64,
            chase: false,
            same_frames: false,
            cold_first: false,
            force: false,
        };
        let msg = |cfg: &Config| match run(cfg, &AtomicBool::new(false), &mut |_, _| {}) {
            Err(Error::Config(m)) => m,
            other => panic!("{:?}", other.map(|r| r.workloads.len())),
        };
        assert!(msg(&cfg).contains("at least one"));
        cfg.skews = vec![Skew::Zipf(1.0), Skew::Zipf(f64::NAN)];
        assert!(msg(&cfg).contains("not NaN"), "{}", msg(&cfg));
        cfg.skews = vec![Skew::Hotspot {
            chunks: 1.0,
            reads: 0.99,
        }];
        assert!(msg(&cfg).contains("below 100 %"), "{}", msg(&cfg));
        cfg.skews = vec![Skew::Hotspot {
            chunks: 0.04,
            reads: 1.5,
        }];
        assert!(
            msg(&cfg).contains("150.0000 % of the reads"),
            "{}",
            msg(&cfg)
        );
        cfg.skews = vec![Skew::Zipf(1.0)];
        (cfg.same_frames, cfg.cold_first) = (true, true);
        assert!(msg(&cfg).contains("choose one"), "{}", msg(&cfg));
    }

    #[test]
    fn a_region_faulted_coldest_first_holds_the_same_words() {
        let words = 4 * WORDS_PER_CHUNK;
        let stream = Stream::with_skew(4, Skew::Zipf(1.0), 5);
        let coldest: Vec<u32> = stream.hottest().iter().rev().copied().collect();
        let made = |order| match make(Arm::Base, words, order) {
            Err(Error::Config(m)) if m.contains("THP `always`") => None,
            other => Some(other.expect("region")),
        };
        let (Some(a), Some(b)) = (made(None), made(Some(&coldest))) else {
            return hugewise_sys::testing::skip("THP `always`: the base arm cannot be 4 KiB");
        };
        assert!(a.iter().eq(b.iter()));
        assert!(b.iter().enumerate().all(|(i, &x)| x == i as u64));
        // In an order of its own, the region is faulted by those writes, not on creation.
        let populate = |ordered| fault_options(PagePolicy::Thp, ordered).populate;
        assert_eq!(populate(true), hugewise_mem::Populate::FirstTouch);
        assert_eq!(populate(false), hugewise_mem::Populate::OnCreate);
    }
}
