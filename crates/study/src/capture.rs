//! `hugewise trace`: load a graph as `hugewise run` does, run a kernel's traced twin once and
//! write every access to a `.hwt` trace, with a sidecar saying what was traced and how many
//! accesses per second the same work makes untraced (the simulator's clock).
//!
//! Serial, the kernel runs on one core and the encoder on the other: accesses are handed over
//! in batches, so tracing costs the kernel a store per access. On several threads each thread
//! records its own stream and hands over smaller batches, so that the file's blocks interleave
//! the streams about as the threads ran.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

use hugewise_graph::kernels::Spec;
use hugewise_graph::load::{Input, LoadOptions};
use hugewise_graph::reorder::Method;
use hugewise_graph::traced::{self, Probe, Span, Traced};
use hugewise_graph::Layout;
use hugewise_trace::{meta, Header, Region, TraceMeta, Writer};

use crate::graphrun::{prepare, Graph, Prepared};
use crate::stats::summarize;
use crate::{Error, Result};
pub use hugewise_results::capture::{ArrayInfo, CaptureReport as Report};

/// Accesses handed to the encoder at once, and per trace block, on one thread.
const BATCH: usize = 1 << 20;
/// The same on several threads: a block is then about a millisecond of one thread's work.
const BATCH_THREADED: usize = 1 << 16;

/// What to trace.
#[derive(Debug, Clone, PartialEq)]
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
    /// Threads, each recording its own stream (1: the serial twins).
    pub threads: usize,
    /// Reorder the vertices after loading.
    pub reorder: Option<Method>,
    /// Start vertices in the input's ids (empty: picked from the seed).
    pub sources: Vec<u32>,
    /// The trace file.
    pub out: PathBuf,
    /// Untraced runs timed for the clock (0: none).
    pub rate_runs: u32,
    /// Untraced runs on each of two fresh copies of the graph and arrays, one all on 4 KiB
    /// pages and one all asking for THP, alternated, to calibrate the simulator's cost model
    /// (0: none). The copies take twice the graph's memory on top of the traced one.
    pub calibrate_runs: u32,
}

/// One thread's probe: buffers its accesses and ships full batches to the encoder.
struct Recorder {
    stream: u16,
    batch: usize,
    buf: Vec<u64>,
    tx: mpsc::SyncSender<(u16, Vec<u64>)>,
    back: mpsc::Receiver<Vec<u64>>,
    count: u64,
}

impl Recorder {
    #[cold]
    fn ship(&mut self) {
        let next = self
            .back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(self.batch));
        let full = std::mem::replace(&mut self.buf, next);
        // A closed channel means the encoder failed; its error is reported at the end.
        let _ = self.tx.send((self.stream, full));
    }
}

impl Probe for Recorder {
    #[inline(always)]
    fn touch(&mut self, addr: usize, write: bool) {
        self.buf.push(((addr as u64) << 1) | u64::from(write));
        self.count += 1;
        if self.buf.len() == self.batch {
            self.ship();
        }
    }
}

/// A recorder per stream, and the encoder thread that writes what they ship.
fn recorders(
    writer: Writer,
    streams: usize,
    batch: usize,
    complete: Arc<AtomicBool>,
) -> (
    Vec<Recorder>,
    std::thread::JoinHandle<hugewise_trace::Result<hugewise_trace::Summary>>,
) {
    let (tx, rx) = mpsc::sync_channel::<(u16, Vec<u64>)>(4 * streams);
    let mut backs = Vec::new();
    let mut recs = Vec::new();
    for i in 0..streams {
        let (back_tx, back) = mpsc::channel::<Vec<u64>>();
        backs.push(back_tx);
        recs.push(Recorder {
            stream: i as u16,
            batch,
            buf: Vec::with_capacity(batch),
            tx: tx.clone(),
            back,
            count: 0,
        });
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
pub fn capture(cfg: &Config) -> Result<Report> {
    let prepared = load(cfg, &cfg.layout)?;
    let run_sources = prepared.run_sources();
    let Prepared { g, sources, .. } = prepared;
    let mut kernel = Traced::new(cfg.kernel, &cfg.layout, &g)?;
    let mut spans = traced::graph_spans(&g);
    spans.extend(kernel.spans());
    let mut sorted = spans.clone();
    sorted.sort_by_key(|s| s.base);
    let threads = cfg.threads.clamp(1, usize::from(u16::MAX));
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

    // Untraced first: it also faults every array in, as the real run would have.
    let mut untraced = Vec::new();
    for _ in 0..cfg.rate_runs {
        let t = Instant::now();
        kernel.run_threads(&g, &run_sources, &mut vec![traced::Off; threads])?;
        untraced.push(t.elapsed().as_nanos() as f64);
    }

    let batch = if threads == 1 { BATCH } else { BATCH_THREADED };
    let writer = Writer::create(&cfg.out, &header, batch as u32)?;
    let complete = Arc::new(AtomicBool::new(false));
    let (mut recs, encoder) = recorders(writer, threads, batch, Arc::clone(&complete));
    let started = Instant::now();
    traced::first_touch(&spans, &mut recs[0]);
    let prologue = recs[0].count;
    if let Err(e) = kernel.run_threads(&g, &run_sources, &mut recs) {
        drop(recs);
        let _ = encoder.join();
        return Err(e.into());
    }
    complete.store(true, Ordering::Release);
    let mut stream_accesses = Vec::with_capacity(threads);
    for r in recs.iter_mut() {
        r.ship();
        stream_accesses.push(r.count);
    }
    let kernel_accesses = stream_accesses.iter().sum::<u64>() - prologue;
    drop(recs);
    let summary = encoder
        .join()
        .map_err(|_| Error::Config("the trace encoder thread panicked".into()))??;
    let capture_s = started.elapsed().as_secs_f64();
    let verified = kernel.verify(&g, &run_sources);
    let graph = g.info();
    // The calibration's copies are loaded after the traced one is gone.
    drop(kernel);
    drop(g);
    // A failed calibration (say, no memory for the copies) keeps the trace and its sidecar
    // without times, and is reported after they are written.
    let (calibration, calibration_error) = match cfg.calibrate_runs {
        0 => (None, None),
        n => match calibrate(cfg, n) {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(e)),
        },
    };

    let untraced_ns = summarize(&untraced);
    let accesses_per_s = untraced_ns
        .as_ref()
        .map(|s| kernel_accesses as f64 / (s.median / 1e9));
    let report = Report {
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
        verified: verified.is_ok(),
    };
    let side = TraceMeta {
        schema_version: meta::SCHEMA,
        source: format!("{} on {}", cfg.kernel.name(), cfg.input),
        accesses: summary.accesses,
        accesses_per_s,
        calibration,
        details: serde_json::to_value(&report).unwrap_or_default(),
    };
    crate::save::write_json(&meta::sidecar(&cfg.out), &side)?;
    if let Err(e) = verified {
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

/// Load the graph of `cfg` with `layout`, as `hugewise run` does (on one thread, so that
/// loading leaves the same memory whatever the threads traced).
fn load(cfg: &Config, layout: &Layout) -> Result<Prepared> {
    let pool = crate::thread_pool(1)?;
    let mut load_opts = cfg.load;
    if cfg.kernel.needs_weights() {
        load_opts.weighted = true;
    }
    pool.install(|| {
        prepare(
            &Graph {
                input: &cfg.input,
                load: load_opts,
                layout,
                kernel: cfg.kernel,
                reorder: cfg.reorder,
                sources: &cfg.sources,
                wanted: cfg.kernel.sources_per_trial(),
            },
            &mut |_| Ok(()),
        )
    })
}

/// Time the untraced twin on a copy all on 4 KiB pages and a copy all asking for THP, `runs`
/// each, alternated so that drift in the machine's speed falls on both.
fn calibrate(cfg: &Config, runs: u32) -> Result<meta::Calibration> {
    let order = cfg.layout.order.to_string();
    let mut copies = Vec::new();
    for pages in ["all=base", "all=thp"] {
        let layout = Layout::parse(pages, &order).map_err(Error::from_graph)?;
        let p = load(cfg, &layout)?;
        let sources = p.run_sources();
        let kernel = Traced::new(cfg.kernel, &layout, &p.g).map_err(Error::from_graph)?;
        copies.push((p.g, kernel, sources, Vec::new()));
    }
    // One run each first, untimed: it faults nothing (arrays are faulted at creation) but
    // warms the caches as the traced clock's runs were.
    let mut off = vec![traced::Off; cfg.threads.max(1)];
    for (g, kernel, sources, _) in copies.iter_mut() {
        kernel
            .run_threads(g, sources, &mut off)
            .map_err(Error::from_graph)?;
    }
    for _ in 0..runs {
        for (g, kernel, sources, times) in copies.iter_mut() {
            let t = Instant::now();
            kernel
                .run_threads(g, sources, &mut off)
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
