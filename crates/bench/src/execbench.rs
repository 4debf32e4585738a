//! A program hugewise did not write, run under several page rules (and once without hugewise
//! as the baseline), alternated round by round so that a drifting machine hits every variant
//! alike; the wall time of each run and the huge bytes it got.

use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use hugewise_exec::run::{self as exec, Config as ExecConfig};
use hugewise_results::exec::{ExecBenchReport, ExecBenchSample, ExecBenchVariant};
use hugewise_results::stats::BUSY_SHARE;
use hugewise_rules::Rules;

use crate::stats::{median, ratio, summarize, Stopped, Until};
use crate::{quiet, Error, Result};

/// One way of running the program.
#[derive(Debug, Clone, PartialEq)]
pub enum Variant {
    /// Without hugewise: the program as it is.
    Plain,
    /// Under `hugewise exec` with these rules.
    Rules(Rules),
    /// Under `hugewise promote` (the daemon's default policy, the program under the preload
    /// library) with this budget: `promote` (2 %, its default) or `promote:100%`.
    Promote(hugewise_mem::Amount),
}

impl Variant {
    /// `plain`, or the rules as they print.
    pub fn label(&self) -> String {
        match self {
            Variant::Plain => "plain".into(),
            Variant::Rules(r) => r.to_string(),
            Variant::Promote(b) => format!("promote:{b}"),
        }
    }

    /// `plain` or rules (`*=thp`); variants are given separated by `;` since rules hold commas.
    pub fn parse_list(text: &str) -> Result<Vec<Variant>> {
        text.split(';')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| match v {
                "plain" => Ok(Variant::Plain),
                "promote" => Ok(Variant::Promote(hugewise_mem::Amount::Percent(2.0))),
                v if v.starts_with("promote:") => v["promote:".len()..]
                    .parse()
                    .map(Variant::Promote)
                    .map_err(|e| Error::Config(format!("{v}: {e}"))),
                rules => Ok(Variant::Rules(Rules::parse(rules)?)),
            })
            .collect()
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The command, program first.
    pub argv: Vec<String>,
    /// The variants, the first being the baseline of the ratios.
    pub variants: Vec<Variant>,
    /// Rounds, at least.
    pub rounds: u32,
    /// More rounds until the speedups' intervals are narrow enough (those of the program's
    /// own times with a metric).
    pub until: Until,
    /// Allocations below this stay with the program's allocator.
    pub min_size: u64,
    /// The preload library.
    pub preload: std::path::PathBuf,
    /// Also read the time the program measured itself: a line `KEY=SECONDS` on its stdout.
    pub metric: Option<String>,
    /// Where the program's stdout goes for a moment (a file of the caller's choosing).
    pub scratch: std::path::PathBuf,
    /// Most bytes of the hot arena (rules with policy `arena`).
    pub hot_arena: u64,
}

/// The value of the last `key=NUMBER` line of `text`.
pub fn metric_value(text: &str, key: &str) -> Option<f64> {
    text.lines()
        .rev()
        .filter_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))
        .find_map(|v| v.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
}

fn plain(argv: &[String], stdout: &std::path::Path) -> Result<u64> {
    let out = std::fs::File::create(stdout).map_err(|source| Error::Write {
        path: stdout.to_path_buf(),
        source,
    })?;
    let t0 = Instant::now();
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .stdout(out)
        .stderr(Stdio::null())
        .status()
        .map_err(|source| {
            Error::Exec(hugewise_exec::Error::Launch {
                program: argv[0].clone(),
                source,
            })
        })?;
    let ns = t0.elapsed().as_nanos() as u64;
    if !status.success() {
        return Err(Error::Config(format!(
            "the program failed without hugewise ({status}); run it alone to see why"
        )));
    }
    Ok(ns)
}

/// Run the benchmark; `progress` gets the samples done and the total. `stop` ends it between
/// runs (and is passed to the run under way).
pub fn run(
    cfg: &Config,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ExecBenchReport> {
    if cfg.rounds == 0 || cfg.variants.is_empty() || cfg.argv.is_empty() {
        return Err(Error::Config(
            "a command, at least one variant and one round".into(),
        ));
    }
    let samples = all_rounds(cfg, stop, progress);
    // The program's output went to the scratch file: gone whether the rounds ended or failed.
    let _ = std::fs::remove_file(&cfg.scratch);
    let (samples, rounds, stopped) = samples?;
    let variants = summarize_variants(&cfg.variants, &samples);
    Ok(ExecBenchReport {
        command: cfg.argv.clone(),
        rounds,
        stopped: Some(stopped),
        min_size_bytes: cfg.min_size,
        samples,
        variants,
    })
}

fn all_rounds(
    cfg: &Config,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Vec<ExecBenchSample>, u32, Stopped)> {
    let total = u64::from(cfg.until.planned(cfg.rounds)) * cfg.variants.len() as u64;
    let mut samples = Vec::new();
    let first = cfg.variants[0].label();
    // The program's own times when it prints them, else the wall times.
    let watched = |samples: &[ExecBenchSample]| -> Vec<Vec<f64>> {
        cfg.variants[1..]
            .iter()
            .map(|v| match cfg.metric {
                Some(_) => ratios_vs_first(samples, &first, &v.label(), &|s| s.metric_s),
                None => ratios_vs_first(samples, &first, &v.label(), &|s| Some(s.wall_ns as f64)),
            })
            .collect()
    };
    let (rounds, stopped) = cfg.until.rounds(
        cfg.rounds,
        &mut samples,
        &|| stop.load(std::sync::atomic::Ordering::Relaxed),
        watched,
        |round, samples| {
            // Each variant runs after every other equally often (see `order`): in this VM
            // what the previous run freed changes the next one's first touch.
            let order = crate::order::balanced(cfg.variants.len(), round);
            for v in order.iter().map(|&k| &cfg.variants[k]) {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                let q = quiet::wait_quiet(BUSY_SHARE, Duration::from_millis(200), 5);
                let mut sample = match v {
                    Variant::Promote(budget) => promote(cfg, *budget, stop, round, q)?,
                    Variant::Plain => ExecBenchSample {
                        round,
                        variant: v.label(),
                        wall_ns: plain(&cfg.argv, &cfg.scratch)?,
                        metric_s: None,
                        huge_bytes: None,
                        peak_rss_bytes: None,
                        quiet: q,
                    },
                    Variant::Rules(rules) => {
                        let r = exec::run(
                            &ExecConfig {
                                argv: cfg.argv.clone(),
                                rules: rules.clone(),
                                min_size: cfg.min_size,
                                preload: cfg.preload.clone(),
                                interval: Duration::from_millis(250),
                                stdout_file: Some(cfg.scratch.clone()),
                                cgroup_procs: None,
                                promote: None,
                                profile: false,
                                hot_arena: cfg.hot_arena,
                            },
                            stop,
                            |_| {},
                        )?;
                        if r.exit_code != Some(0) {
                            return Err(Error::Config(format!(
                                "the program failed under {} (exit {:?}, signal {:?}); run it \
                             with hugewise exec to see why",
                                v.label(),
                                r.exit_code,
                                r.signal
                            )));
                        }
                        ExecBenchSample {
                            round,
                            variant: v.label(),
                            wall_ns: r.wall_ns,
                            metric_s: None,
                            huge_bytes: Some(r.totals().iter().map(|t| t.peak_huge_bytes).sum()),
                            peak_rss_bytes: r.processes.first().and_then(|p| p.peak_rss_bytes),
                            quiet: q,
                        }
                    }
                };
                if let Some(key) = &cfg.metric {
                    let text = std::fs::read_to_string(&cfg.scratch).unwrap_or_default();
                    sample.metric_s = Some(metric_value(&text, key).ok_or_else(|| {
                        Error::Config(format!(
                            "the program printed no line '{key}=SECONDS' under {} (--metric)",
                            v.label()
                        ))
                    })?);
                }
                samples.push(sample);
                progress(samples.len() as u64, total);
            }
            Ok(())
        },
    )?;
    Ok((samples, rounds, stopped))
}

/// One run under `hugewise promote` with `budget`, as the command runs it: the daemon's
/// defaults, the program under the preload library. Its time is the session's, from before the
/// program starts to when the daemon saw it end.
fn promote(
    cfg: &Config,
    budget: hugewise_mem::Amount,
    stop: &AtomicBool,
    round: u32,
    quiet: Option<hugewise_results::stats::Quiet>,
) -> Result<ExecBenchSample> {
    use hugewise_promote::{budget::Limit, daemon, session};
    let limit = match budget {
        hugewise_mem::Amount::Bytes(b) => Limit::Bytes(b.0),
        hugewise_mem::Amount::Percent(p) => Limit::Share(p / 100.0),
    };
    let s = session::Config {
        targets: session::Targets::Launch(cfg.argv.clone()),
        engine: session::Engine::Daemon {
            policy: "auto".into(),
            config: daemon::Config {
                limit,
                ..daemon::Config::default()
            },
            budget_label: budget.to_string(),
        },
        duration: None,
        launch: session::LaunchOptions {
            preload: Some(session::preload_for(cfg.preload.clone(), limit)),
            stdout_file: Some(cfg.scratch.clone()),
        },
    };
    let r = session::run(&s, stop, &mut |_| {}, &mut |_| {})?;
    if r.command_exit != Some(0) {
        return Err(Error::Config(format!(
            "the program failed under promote:{budget} (exit {:?}); run it with hugewise \
             promote to see why",
            r.command_exit
        )));
    }
    Ok(ExecBenchSample {
        round,
        variant: format!("promote:{budget}"),
        wall_ns: r.wall_ns,
        metric_s: None,
        huge_bytes: r.intervals.iter().map(|i| i.huge_bytes_after).max(),
        peak_rss_bytes: None,
        quiet,
    })
}

/// Per round that ran both, `of` the first variant's run over `of` this variant's.
fn ratios_vs_first(
    samples: &[ExecBenchSample],
    first: &str,
    label: &str,
    of: &dyn Fn(&ExecBenchSample) -> Option<f64>,
) -> Vec<f64> {
    crate::stats::ratios_in_rounds(
        samples,
        |s| s.round,
        |s| s.variant == first,
        |s| s.variant == label,
        of,
    )
}

fn summarize_variants(variants: &[Variant], samples: &[ExecBenchSample]) -> Vec<ExecBenchVariant> {
    let first = variants[0].label();
    variants
        .iter()
        .filter_map(|v| {
            let label = v.label();
            let mine: Vec<&ExecBenchSample> =
                samples.iter().filter(|s| s.variant == label).collect();
            let wall: Vec<f64> = mine.iter().map(|s| s.wall_ns as f64).collect();
            let of_first = |of: &dyn Fn(&ExecBenchSample) -> Option<f64>| match label == first {
                true => (None, None),
                false => ratio(&ratios_vs_first(samples, &first, &label, of)),
            };
            let (wall_speedup, wall_ci95) = of_first(&|s| Some(s.wall_ns as f64));
            let (metric_speedup, metric_ci95) = of_first(&|s| s.metric_s);
            let metric: Vec<f64> = mine.iter().filter_map(|s| s.metric_s).collect();
            let huge: Vec<f64> = mine
                .iter()
                .filter_map(|s| s.huge_bytes.map(|h| h as f64))
                .collect();
            Some(ExecBenchVariant {
                rules: match v {
                    Variant::Plain | Variant::Promote(_) => None,
                    Variant::Rules(_) => Some(label.clone()),
                },
                speedup_vs_first: wall_speedup,
                speedup_vs_first_ci95: wall_ci95,
                metric_s: summarize(&metric),
                metric_speedup_vs_first: metric_speedup,
                metric_speedup_vs_first_ci95: metric_ci95,
                huge_bytes: median(&huge),
                wall_ns: summarize(&wall)?,
                label,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_and_ratios_pair_rounds() {
        let v = Variant::parse_list("plain; *=base ;>=1GiB=thp,*=base").expect("parse");
        assert_eq!(v.len(), 3);
        assert_eq!(v[2].label(), ">=1GiB=thp,*=base");
        assert!(Variant::parse_list("plain;*=huge").is_err());
        let p = Variant::parse_list("promote;promote:100%").expect("promote arms");
        assert_eq!(
            p.iter().map(Variant::label).collect::<Vec<_>>(),
            ["promote:2%", "promote:100%"]
        );
        assert!(Variant::parse_list("promote:lots").is_err());
        let s = |round, variant: &str, wall_ns| ExecBenchSample {
            round,
            variant: variant.into(),
            wall_ns,
            metric_s: Some(wall_ns as f64 / 1e9),
            huge_bytes: (variant != "plain").then_some(4 << 20),
            peak_rss_bytes: None,
            quiet: None,
        };
        let samples = [
            s(0, "plain", 200),
            s(0, "*=base", 100),
            s(1, "plain", 400),
            s(1, "*=base", 100),
            s(2, "plain", 300),
            s(2, "*=base", 300),
        ];
        let out = summarize_variants(&v[..2], &samples);
        assert_eq!(out[0].speedup_vs_first, None);
        assert_eq!(out[1].speedup_vs_first, Some(2.0), "median of 2, 4 and 1");
        assert_eq!(out[1].huge_bytes, Some(f64::from(4u32 << 20)));
        assert_eq!(out[0].huge_bytes, None);
        assert_eq!(out[1].metric_speedup_vs_first, Some(2.0));
        assert_eq!(
            metric_value("warm-up\ntime_s=1.5\ntime_s=2.25 \ndone", "time_s"),
            Some(2.25)
        );
        assert_eq!(metric_value("time_s=abc\nxtime_s=3", "time_s"), None);
    }
}
