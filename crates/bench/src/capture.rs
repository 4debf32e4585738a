//! `hugewise trace`: load a graph and create a kernel as `hugewise run` does, run the kernel
//! once with a recording tracer and write every access to a `.hwt` trace, with a sidecar
//! saying what was traced and how many accesses per second the same kernel makes untraced
//! (the simulator's clock). The traced and the timed runs are one body
//! ([`hugewise_graph::kernels::Kernel::trace`] and `run`), in a pool of `--threads` threads.
//! `hugewise trace lackey` imports Valgrind lackey output into a trace instead.
//!
//! On one thread the kernel runs on one core and the encoder on the other: accesses are handed
//! over in batches, so tracing costs the kernel a store per access, and the trace is the same
//! on every run. On several threads each worker records its own stream and hands over smaller
//! batches, so that the file's blocks interleave the streams about as the threads ran.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

use hugewise_graph::cache::Cache;
use hugewise_graph::kernels::{Kernel, Spec, SpecExt};
use hugewise_graph::load::{Input, LoadOptions};
use hugewise_graph::probe::{self, PerThread, Record, Span, Streams};
use hugewise_graph::reorder::Method;
use hugewise_graph::Csr;
use hugewise_graph::Layout;
use hugewise_trace::{meta, Header, Region, TraceMeta, Writer};

use crate::run::{prepare, Graph, Prepared};
use crate::stats::summarize;
use crate::{Error, Result};
use hugewise_results::capture::{ArrayInfo, CaptureReport, LackeyImport};

/// Accesses handed to the encoder at once, and per trace block, on one thread.
const BATCH: usize = 1 << 20;
/// The same on several threads: a block is then about a millisecond of one thread's work.
const BATCH_THREADED: usize = 1 << 16;

/// What to trace.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The graph.
    pub input: Input,
    /// How to load it.
    pub load: LoadOptions,
    /// Page policies and allocation order (they set where arrays are, so which 2 MiB frames
    /// they share, and the first-touch order).
    pub layout: Layout,
    /// The kernel.
    pub kernel: Spec,
    /// Threads of the kernel's pool, each recording its own stream (1: one stream, the same on
    /// every run).
    pub threads: usize,
    /// Reorder the vertices after loading.
    pub reorder: Option<Method>,
    /// Keep a reordered file's graph here and read it back on later runs.
    pub reorder_cache: Option<Cache>,
    /// Start vertices in the input's ids (empty: picked from the seed).
    pub sources: Vec<u32>,
    /// The trace file.
    pub out: PathBuf,
    /// Untraced runs timed for the clock (0: none).
    pub rate_runs: u32,
    /// Check the traced run's result against the serial reference.
    pub verify: bool,
    /// Untraced runs on each of two fresh copies of the graph and arrays, one all on 4 KiB
    /// pages and one all asking for THP, alternated, to calibrate the simulator's cost model
    /// (0: none). The copies take twice the graph's memory on top of the traced one.
    pub calibrate_runs: u32,
}

/// A recording per stream, and the encoder thread that writes what they ship.
fn recorders(
    writer: Writer,
    streams: usize,
    batch: usize,
    complete: Arc<AtomicBool>,
) -> (
    Vec<Record>,
    std::thread::JoinHandle<hugewise_trace::Result<hugewise_trace::Summary>>,
) {
    let (tx, rx) = mpsc::sync_channel::<(u16, Vec<u64>)>(4 * streams);
    let mut backs = Vec::new();
    let mut recs = Vec::new();
    for i in 0..streams {
        let (back_tx, back) = mpsc::channel::<Vec<u64>>();
        backs.push(back_tx);
        let tx = tx.clone();
        recs.push(Record::new(
            batch,
            Box::new(move |full| {
                let next = back
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(batch));
                // A closed channel means the encoder failed; its error is reported at the end.
                let _ = tx.send((i as u16, full));
                next
            }),
        ));
    }
    let encoder = std::thread::spawn(move || -> hugewise_trace::Result<_> {
        let mut w = writer;
        for (stream, batch) in rx {
            let empty = w.push_vec(stream, batch)?;
            let _ = backs[stream as usize].send(empty);
        }
        // Recorders dropped before the kernel finished (it failed): the writer is dropped
        // unfinished and leaves no file.
        if !complete.load(Ordering::Acquire) {
            return Err(hugewise_trace::Error::Invalid(
                "the traced run stopped before it finished".into(),
            ));
        }
        w.finish()
    });
    (recs, encoder)
}

fn to_info(s: &Span) -> ArrayInfo {
    ArrayInfo {
        name: s.name.clone(),
        base: s.base,
        bytes: s.bytes,
    }
}

/// Trace `cfg.kernel` on `cfg.input`.
pub fn capture(cfg: &Config) -> Result<CaptureReport> {
    let threads = cfg.threads.clamp(1, usize::from(u16::MAX));
    let pool = crate::thread_pool(threads)?;
    let (prepared, mut kernel) = load(cfg, &cfg.layout, &pool)?;
    let run_sources = prepared.run_sources();
    let Prepared { g, sources, .. } = prepared;
    // One untraced run first, as `hugewise run`'s warm-up: it makes the arrays that a first
    // run creates (so that the header names them) and faults every array in.
    pool.install(|| kernel.run(&g, &run_sources))
        .map_err(Error::from_graph)?;
    let mut untraced = Vec::new();
    for _ in 0..cfg.rate_runs {
        let t = Instant::now();
        pool.install(|| kernel.run(&g, &run_sources))
            .map_err(Error::from_graph)?;
        untraced.push(t.elapsed().as_nanos() as f64);
    }
    let spans = spans_of(&g, kernel.as_ref());
    let mut sorted = spans.clone();
    sorted.sort_by_key(|s| s.base);
    let header = Header {
        addr_shift: 2,
        streams: threads as u16,
        regions: sorted
            .iter()
            .map(|s| Region {
                name: s.name.clone(),
                base: s.base,
                size: s.bytes,
            })
            .collect(),
    };

    let batch = if threads == 1 { BATCH } else { BATCH_THREADED };
    let writer = Writer::create(&cfg.out, &header, batch as u32)?;
    let complete = Arc::new(AtomicBool::new(false));
    let (recs, encoder) = recorders(writer, threads, batch, Arc::clone(&complete));
    let streams: Streams = PerThread::new(recs);
    let started = Instant::now();
    let prologue = {
        let mut first = streams.slot(0);
        probe::first_touch(&spans, &mut *first);
        first.count()
    };
    let traced_run = pool.install(|| kernel.trace(&g, &run_sources, &streams));
    let mut recs = streams.into_inner();
    if let Err(e) = traced_run {
        drop(recs);
        let _ = encoder.join();
        return Err(Error::from_graph(e));
    }
    complete.store(true, Ordering::Release);
    let mut stream_accesses = Vec::with_capacity(threads);
    for r in recs.iter_mut() {
        r.flush();
        stream_accesses.push(r.count());
    }
    let kernel_accesses = stream_accesses.iter().sum::<u64>() - prologue;
    drop(recs);
    let summary = encoder
        .join()
        .map_err(|_| Error::Config("the trace encoder thread panicked".into()))??;
    let capture_s = started.elapsed().as_secs_f64();
    // The serial reference can take far longer than the trace (PageRank to 1e-9 on kron:26:
    // tens of minutes), so a caller that only wants the accesses may skip it.
    let verified = cfg
        .verify
        .then(|| pool.install(|| kernel.verify(&g, &run_sources)));
    let graph = g.info();
    // The calibration's copies are loaded after the traced one is gone.
    drop(kernel);
    drop(g);
    // A failed calibration (say, no memory for the copies) keeps the trace and its sidecar
    // without times, and is reported after they are written.
    let (calibration, calibration_error) = match cfg.calibrate_runs {
        0 => (None, None),
        n => match calibrate(cfg, n, &pool) {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(e)),
        },
    };

    let untraced_ns = summarize(&untraced);
    let accesses_per_s = untraced_ns
        .as_ref()
        .map(|s| kernel_accesses as f64 / (s.median / 1e9));
    let report = CaptureReport {
        graph_spec: cfg.input.to_string(),
        graph,
        kernel: cfg.kernel,
        sources,
        trace: cfg.out.clone(),
        arrays: spans.iter().map(to_info).collect(),
        prologue_accesses: prologue,
        threads,
        stream_accesses,
        accesses: summary.accesses,
        trace_bytes: summary.bytes,
        bytes_per_access: summary.bytes as f64 / summary.accesses.max(1) as f64,
        capture_s,
        capture_accesses_per_s: summary.accesses as f64 / capture_s,
        untraced_ns,
        accesses_per_s,
        calibration,
        verified: verified.as_ref().map(|v| v.is_ok()),
    };
    let side = TraceMeta {
        schema_version: meta::SCHEMA,
        source: format!("{} on {}", cfg.kernel.name(), cfg.input),
        accesses: summary.accesses,
        accesses_per_s,
        calibration,
        warmup_accesses: prologue,
        details: serde_json::to_value(&report).unwrap_or_default(),
    };
    crate::save::write_json(&meta::sidecar(&cfg.out), &side)?;
    if let Some(Err(e)) = verified {
        return Err(Error::Config(format!(
            "the traced {} run did not verify: {e} (the trace is kept: {})",
            cfg.kernel.name(),
            cfg.out.display()
        )));
    }
    if let Some(e) = calibration_error {
        return Err(Error::Config(format!(
            "calibrating on fresh copies of the graph failed: {e} (the trace and its sidecar \
             are kept, without calibration: {})",
            cfg.out.display()
        )));
    }
    Ok(report)
}

/// The graph's arrays, then the kernel's in address order (as they were created), for the
/// header and the first-touch prologue.
fn spans_of(g: &Csr, kernel: &dyn Kernel) -> Vec<Span> {
    let mut spans = probe::graph_spans(g);
    let mut mine = kernel.spans();
    mine.sort_by_key(|s| s.base);
    spans.extend(mine);
    spans
}

/// Load the graph of `cfg` with `layout` and create the kernel, as `hugewise run` does (loading
/// on one thread, so that it leaves the same memory whatever the threads traced; the kernel's
/// arrays before the graph's when the layout says so).
fn load(
    cfg: &Config,
    layout: &Layout,
    pool: &rayon::ThreadPool,
) -> Result<(Prepared, Box<dyn Kernel>)> {
    let one = crate::thread_pool(1)?;
    let mut load_opts = cfg.load;
    if cfg.kernel.needs_weights() {
        load_opts.weighted = true;
    }
    let mut early: Option<Box<dyn Kernel>> = None;
    let p = one.install(|| {
        prepare(
            &Graph {
                input: &cfg.input,
                load: load_opts,
                layout,
                kernel: cfg.kernel,
                reorder: cfg.reorder,
                sources: &cfg.sources,
                wanted: cfg.kernel.sources_per_trial(),
                cache: cfg.reorder_cache.as_ref(),
            },
            &mut |n| {
                if layout.kernel_first() {
                    early = Some(pool.install(|| cfg.kernel.create(layout, n))?);
                }
                Ok(())
            },
        )
    })?;
    let kernel = match early {
        Some(k) => k,
        // Created in the kernel's pool: arrays sized by the pool (tc's marks) fit it.
        None => pool
            .install(|| cfg.kernel.create(layout, p.g.n()))
            .map_err(Error::from_graph)?,
    };
    Ok((p, kernel))
}

/// Time the untraced kernel on a copy all on 4 KiB pages and a copy all asking for THP,
/// `runs` each, alternated so that drift in the machine's speed falls on both.
fn calibrate(cfg: &Config, runs: u32, pool: &rayon::ThreadPool) -> Result<meta::Calibration> {
    let order = cfg.layout.order.to_string();
    let mut copies = Vec::new();
    for pages in ["all=base", "all=thp"] {
        let layout = Layout::parse(pages, &order).map_err(Error::from_graph)?;
        let (p, kernel) = load(cfg, &layout, pool)?;
        let sources = p.run_sources();
        copies.push((p.g, kernel, sources, Vec::new()));
    }
    // One run each first, untimed, as `hugewise run`'s warm-up: it makes the arrays a first
    // run creates and warms the caches as the traced clock's runs were.
    for (g, kernel, sources, _) in copies.iter_mut() {
        pool.install(|| kernel.run(g, sources))
            .map_err(Error::from_graph)?;
    }
    for _ in 0..runs {
        for (g, kernel, sources, times) in copies.iter_mut() {
            let t = Instant::now();
            pool.install(|| kernel.run(g, sources))
                .map_err(Error::from_graph)?;
            times.push(t.elapsed().as_secs_f64());
        }
    }
    let (g, kernel, _, _) = &copies[1];
    let mut regions = g.regions().map_err(Error::from_graph)?;
    regions.extend(kernel.regions().map_err(Error::from_graph)?);
    let mapped: u64 = regions.iter().map(|r| r.backing.total_bytes).sum();
    let huge: u64 = regions.iter().map(|r| r.backing.huge_bytes()).sum();
    let median = |v: &[f64]| summarize(v).map(|s| s.median).unwrap_or(0.0);
    Ok(meta::Calibration {
        base_s: median(&copies[0].3),
        huge_s: median(&copies[1].3),
        huge_share: huge as f64 / mapped.max(1) as f64,
        runs,
    })
}
/// Import Valgrind lackey output from `input` (`-` reads stdin) into the trace `out`, with
/// the first `window` accesses fixing its regions (see [`hugewise_trace::lackey`]).
pub fn import_lackey(input: &Path, out: &Path, window: usize) -> Result<LackeyImport> {
    let t0 = Instant::now();
    let r = if input == Path::new("-") {
        hugewise_trace::lackey::import(std::io::stdin().lock(), Path::new("<stdin>"), out, window)
    } else {
        let (f, _) = hugewise_sys::read::open(input).map_err(|source| Error::Open {
            path: input.to_path_buf(),
            source,
        })?;
        hugewise_trace::lackey::import(BufReader::with_capacity(1 << 20, f), input, out, window)
    }?;
    Ok(LackeyImport {
        input: input.to_path_buf(),
        trace: out.to_path_buf(),
        accesses: r.summary.accesses,
        lines: r.lines,
        instructions_skipped: r.instructions,
        trace_bytes: r.summary.bytes,
        elapsed_ns: t0.elapsed().as_nanos() as u64,
    })
}
