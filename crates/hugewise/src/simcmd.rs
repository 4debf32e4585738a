//! `hugewise trace` and `hugewise sim`: arguments to library configs, progress, output.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use hugewise_report::simview;
use hugewise_results::capture::LackeyImport;
use hugewise_results::sim::ReuseReport;
use hugewise_results::Saved;
use hugewise_sim::curve::{self, CurveSpec};
use hugewise_sim::{reuse, TlbConfig};
use hugewise_study::{capture, save};

use crate::cli::{SimArgs, SimCommand, TraceArgs, TraceImport};
use crate::output::{self, Stream};
use crate::progress::{Mode, Steps, Unit};
use crate::{cancel_flag, emit, meta, usage_error};

/// `hugewise trace lackey`.
fn import_lackey(
    input: PathBuf,
    out: PathBuf,
    window: usize,
    json: bool,
    progress: Mode,
) -> anyhow::Result<()> {
    let steps = Steps::new(progress, "importing", Unit::Items);
    let t0 = Instant::now();
    let r = if input == Path::new("-") {
        hugewise_trace::lackey::import(std::io::stdin().lock(), Path::new("<stdin>"), &out, window)
    } else {
        let (f, _) = hugewise_sys::read::open(&input)
            .with_context(|| format!("opening {}", input.display()))?;
        hugewise_trace::lackey::import(BufReader::with_capacity(1 << 20, f), &input, &out, window)
    }?;
    let elapsed_ns = t0.elapsed().as_nanos() as u64;
    steps.update(r.summary.accesses, r.summary.accesses);
    steps.finish();
    let r = LackeyImport {
        input,
        trace: out,
        accesses: r.summary.accesses,
        lines: r.lines,
        instructions_skipped: r.instructions,
        trace_bytes: r.summary.bytes,
        elapsed_ns,
    };
    output::emit_to(Stream::Stdout, json, None, r, Some(simview::lackey))
}

/// `hugewise trace`.
pub fn trace(a: TraceArgs, progress: Mode) -> anyhow::Result<()> {
    if let Some(TraceImport::Lackey {
        input,
        out,
        window,
        json,
    }) = a.import
    {
        return import_lackey(input, out, window, json, progress);
    }
    let Some(kernel) = a.kernel else {
        usage_error("name a kernel (bfs, sssp, pr, cc, bc, tc) or an importer (lackey)".into())
    };
    let spec = a
        .settings
        .to_settings()
        .spec(kernel.name())
        .unwrap_or_else(|e| usage_error(e.to_string()));
    let cfg = capture::Config {
        input: a.input.graph.clone(),
        load: a.input.load_options(),
        layout: a.place.layout(),
        kernel: spec,
        threads: usize::from(a.threads),
        reorder: a.place.reorder,
        reorder_cache: a.place.cache.cache(),
        sources: a.settings.source.clone(),
        out: a.out.clone(),
        rate_runs: a.rate_runs,
        verify: !a.no_verify,
        calibrate_runs: a.calibrate,
    };
    let steps = Steps::new(progress, "tracing", Unit::Items);
    let r = capture::capture(&cfg)
        .with_context(|| format!("tracing {} on {}", spec.name(), a.input.graph))?;
    steps.update(r.accesses, r.accesses);
    steps.finish();
    output::emit_to(Stream::Stdout, a.json, None, r, Some(simview::capture))
}

/// `hugewise sim`.
pub fn sim(a: SimArgs, progress: Mode) -> anyhow::Result<()> {
    let cancel = cancel_flag()?;
    if let Some(SimCommand::Reuse { trace, output }) = a.reuse {
        let steps = Steps::new(progress, "reuse", Unit::Items);
        let r = reuse::run(&trace, &steps)
            .with_context(|| format!("reuse distance of {}", trace.display()))?;
        steps.finish();
        let r = ReuseReport {
            trace,
            granularities: r,
        };
        return emit(&output, r, |r| simview::reuse(&r.granularities));
    }
    let Some(trace) = a.trace.clone() else {
        usage_error("--trace FILE is required (make one with `hugewise trace`)".into())
    };
    let spec = CurveSpec {
        policies: a.policy.0,
        budgets: a.budget.0,
        tlb: TlbConfig::resolve(&a.config)?,
        accesses_per_s: a.rate,
        time_scale: a.time_scale,
        calibration: a.calibrate,
        reuse: a.with_reuse,
        warmup_accesses: a.warmup,
    };
    let steps = Steps::new(progress, "simulating", Unit::Items);
    let (curves, plans) = curve::run(&trace, &spec, &steps, &cancel)
        .with_context(|| format!("simulating {}", trace.display()))?;
    steps.finish();
    if curves.accesses == 0 {
        bail!("{} holds no accesses", trace.display());
    }
    if let Some(p) = &a.plan {
        plans
            .validate()
            .context("the simulator made a plan a promotion engine would refuse")?;
        save::write_json(p, &Saved::new(meta(), plans))?;
    }
    emit(&a.output, curves, simview::curves)
}
