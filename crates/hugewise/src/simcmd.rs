//! `hugewise trace` and `hugewise sim`: arguments to library configs, progress, output.

use std::io::BufReader;
use std::path::Path;

use anyhow::{bail, Context};
use hugewise_results::sim::ReuseReport;
use hugewise_results::Saved;
use hugewise_sim::curve::{self, CurveSpec, Progress};
use hugewise_sim::{reuse, TlbConfig};
use hugewise_study::{capture, save};
use indicatif::ProgressBar;

use crate::cli::{Output, SimArgs, SimCommand, TraceArgs, TraceImport};
use crate::{bar, cancel_flag, emit, load_options, meta, spinner, usage_error};

struct Bar(ProgressBar);

impl Progress for Bar {
    fn update(&self, done: u64, total: u64) {
        if total > 0 {
            self.0.set_length(total);
        }
        self.0.set_position(done);
    }
}

/// `hugewise trace`.
pub fn trace(a: TraceArgs, progress: bool) -> anyhow::Result<()> {
    if let Some(TraceImport::Lackey { input, out, window }) = a.import {
        let b = spinner(progress, "importing");
        let r = if input == Path::new("-") {
            hugewise_trace::lackey::import(
                std::io::stdin().lock(),
                Path::new("<stdin>"),
                &out,
                window,
            )
        } else {
            let f = std::fs::File::open(&input)
                .with_context(|| format!("opening {}", input.display()))?;
            hugewise_trace::lackey::import(
                BufReader::with_capacity(1 << 20, f),
                &input,
                &out,
                window,
            )
        }?;
        b.finish_and_clear();
        println!(
            "{}: {} accesses from {} lines ({} instruction fetches skipped), {} bytes",
            out.display(),
            r.summary.accesses,
            r.lines,
            r.instructions,
            r.summary.bytes
        );
        return Ok(());
    }
    let Some(kernel) = a.kernel else {
        usage_error("name a kernel (bfs, sssp, pr, cc, bc, tc) or an importer (lackey)".into())
    };
    let spec = a
        .settings
        .spec(kernel.name())
        .unwrap_or_else(|m| usage_error(m));
    let cfg = capture::Config {
        input: a.input.graph.clone(),
        load: load_options(&a.input),
        layout: a.place.layout(),
        kernel: spec,
        threads: usize::from(a.threads),
        reorder: a.place.reorder,
        sources: a.settings.source.clone(),
        out: a.out.clone(),
        rate_runs: a.rate_runs,
        calibrate_runs: a.calibrate,
    };
    let b = spinner(progress, "tracing");
    let r = capture::capture(&cfg)
        .with_context(|| format!("tracing {} on {}", spec.name(), a.input.graph))?;
    b.finish_and_clear();
    let out = Output {
        json: a.json,
        out: None,
    };
    emit(&out, r, hugewise_report::simview::capture)
}

/// `hugewise sim`.
pub fn sim(a: SimArgs, progress: bool) -> anyhow::Result<()> {
    let cancel = cancel_flag()?;
    if let Some(SimCommand::Reuse { trace, output }) = a.reuse {
        let b = Bar(bar(progress, "reuse", false));
        let r = reuse::run(&trace, &b)
            .with_context(|| format!("reuse distance of {}", trace.display()))?;
        b.0.finish_and_clear();
        let r = ReuseReport {
            trace,
            granularities: r,
        };
        return emit(&output, r, |r| {
            hugewise_report::simview::reuse(&r.granularities)
        });
    }
    let Some(trace) = a.trace.clone() else {
        usage_error("--trace FILE is required (make one with `hugewise trace`)".into())
    };
    let tlb = TlbConfig::resolve(&a.config)?;
    let spec = CurveSpec {
        policies: a.policy.0,
        budgets: a.budget.0,
        tlb,
        accesses_per_s: a.rate,
        time_scale: a.time_scale,
        calibration: a.calibrate,
        reuse: a.with_reuse,
    };
    let b = Bar(bar(progress, "simulating", false));
    let (curves, plans) = curve::run(&trace, &spec, &b, &cancel)
        .with_context(|| format!("simulating {}", trace.display()))?;
    b.0.finish_and_clear();
    if curves.accesses == 0 {
        bail!("{} holds no accesses", trace.display());
    }
    if let Some(p) = &a.plan {
        plans
            .validate()
            .context("the simulator made a plan a promotion engine would refuse")?;
        save::write_json(p, &Saved::new(meta(), plans))?;
    }
    emit(&a.output, curves, hugewise_report::simview::curves)
}
