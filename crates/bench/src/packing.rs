//! The thesis's packing, measured: profile a program once (`hugewise profile`), then run it
//! alternated round by round on 4 KiB pages only (THP `never`), under THP `always` as the
//! machine gives it, under THP for everything (`always`, with glibc's heap grown 64 MiB at a
//! time: grown 128 KiB at a time, as by default, most of it faults before a whole huge page
//! fits in it and stays on 4 KiB pages), and with the placement: its hot call sites' small
//! objects packed into the hot arena, once without huge pages (`never`: what packing alone
//! buys) and once with them (`madvise`). Each run's speed and the huge bytes its process held,
//! read from the kernel.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hugewise_env::{Host, Knob, Lifetime, Session};
use hugewise_exec::placement::{self, Options};
use hugewise_exec::run::{self as exec, Config as ExecConfig};
use hugewise_results::exec::ProfileReport;
use hugewise_results::packing::{PackingReport, PackingSample, PackingVariant};
use hugewise_results::stats::BUSY_SHARE;
use hugewise_rules::Rules;
use hugewise_sys::proc::{Pid, ProcFs};

use crate::execbench::metric_value;
use crate::stats::{median, ratio, summarize, Until};
use crate::{quiet, Error, Result};

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The command, program first.
    pub argv: Vec<String>,
    /// The preload library.
    pub preload: PathBuf,
    /// Rounds of the variants, at least.
    pub rounds: u32,
    /// More rounds until every variant's speedup interval is narrow enough.
    pub until: Until,
    /// How the placement is chosen.
    pub options: Options,
    /// The program's own time: a line `KEY=SECONDS` on its stdout.
    pub metric: Option<String>,
    /// A directory for the program's output while it runs.
    pub scratch: PathBuf,
}

/// The built-in workload's source (`benches/programs/packing.c`): hot records scattered among
/// cold ones from two call sites, then a pointer chase over the hot ones.
pub const WORKLOAD_C: &str = include_str!("../../../benches/programs/packing.c");

/// A scratch directory for the workload and the program's output, removed when dropped.
pub fn scratch() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("hugewise-packing.")
        .tempdir()
        .map_err(|source| Error::Write {
            path: std::env::temp_dir(),
            source,
        })
}

/// The command line of the built-in workload, compiled into `dir`: `records` hot records (a
/// million with `quick`), then `hops` steps of the chase (five million with `quick`).
pub fn workload(dir: &Path, records: u64, hops: u64, quick: bool) -> Result<Vec<String>> {
    let bin = build_workload(dir)?;
    let (records, hops) = if quick {
        (1_000_000, 5_000_000)
    } else {
        (records, hops)
    };
    Ok(vec![
        bin.display().to_string(),
        records.to_string(),
        hops.to_string(),
    ])
}

/// The timing line the built-in workload prints.
pub const WORKLOAD_METRIC: &str = "time_s";

/// Compile the built-in workload into `dir` with the system's C compiler; its path.
pub fn build_workload(dir: &Path) -> Result<PathBuf> {
    let src = dir.join("packing.c");
    let bin = dir.join("packing");
    std::fs::write(&src, WORKLOAD_C).map_err(|source| Error::Write {
        path: src.clone(),
        source,
    })?;
    let out = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .map_err(|e| {
            Error::Config(format!(
                "the built-in workload needs a C compiler: cannot run cc ({e}); install one \
                 (apt-get install gcc) or give a command after --"
            ))
        })?;
    if !out.status.success() {
        return Err(Error::Config(format!(
            "cc could not build the built-in workload: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(bin)
}

/// The variants, baseline first: label, THP mode, under the placement.
const VARIANTS: [(&str, &str, bool); 5] = [
    ("4k", "never", false),
    ("thp-always", "always", false),
    ("thp-all", "always", false),
    ("packed-4k", "never", true),
    ("packed", "madvise", true),
];

/// glibc's heap grown 64 MiB at a time, for `thp-all`.
const WHOLE_HEAP: (&str, &str) = ("GLIBC_TUNABLES", "glibc.malloc.top_pad=67108864");

/// Profile, then run every variant once per round; `progress` gets runs done and the total
/// (the profile counts as the first).
pub fn run(
    cfg: &Config,
    host: &Host,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<PackingReport> {
    if cfg.rounds == 0 || cfg.argv.is_empty() {
        return Err(Error::Config("a command and at least one round".into()));
    }
    let total = 1 + u64::from(cfg.until.planned(cfg.rounds)) * VARIANTS.len() as u64;
    let out = cfg.scratch.join("program.out");
    let base = ExecConfig {
        stdout_file: Some(out.clone()),
        hot_arena: cfg.options.hot_arena,
        ..ExecConfig::new(cfg.argv.clone(), Rules::default(), cfg.preload.clone())
    };
    let profile = placement::profile(&base, cfg.options, stop, |_| {})?;
    if profile.run.exit_code != Some(0) {
        return Err(Error::Config(format!(
            "the program failed in its profile run (exit {:?}, signal {:?}); run it with \
             hugewise profile to see why",
            profile.run.exit_code, profile.run.signal
        )));
    }
    let expected = fingerprint(&out, cfg.metric.as_deref());
    progress(1, total);
    let rules = Rules::parse_file("the placement", &profile.placement)?;
    let placed = ExecConfig { rules, ..base };
    let mut samples = Vec::new();
    let (rounds, stopped) = cfg.until.rounds(
        cfg.rounds,
        &mut samples,
        &|| stop.load(Ordering::Relaxed),
        watched,
        |round, samples| {
            // Each variant runs after every other equally often (see `order`).
            let order = crate::order::balanced(VARIANTS.len(), round);
            for &(label, thp, packed) in order.iter().map(|&k| &VARIANTS[k]) {
                if stop.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                let mut session = Session::open(host, Lifetime::Run)?;
                session.set(Knob::ThpEnabled, thp)?;
                let q = quiet::wait_quiet(BUSY_SHARE, Duration::from_millis(200), 5);
                let mut s = if packed {
                    let r = exec::run(&placed, stop, |_| {})?;
                    if r.exit_code != Some(0) {
                        return Err(Error::Config(format!(
                            "the program failed under its placement (exit {:?}, signal {:?}); run \
                         it with hugewise exec --placement to see why",
                            r.exit_code, r.signal
                        )));
                    }
                    let first = r.processes.first();
                    PackingSample {
                        round,
                        variant: label.into(),
                        wall_ns: r.wall_ns,
                        metric_s: None,
                        peak_huge_bytes: first.and_then(|p| p.peak_anon_huge_bytes),
                        peak_rss_bytes: first.and_then(|p| p.peak_rss_bytes),
                        quiet: q,
                    }
                } else {
                    plain(&cfg.argv, &out, round, label, q, label == "thp-all")?
                };
                drop(session);
                if fingerprint(&out, cfg.metric.as_deref()) != expected {
                    return Err(Error::Config(format!(
                    "the program's output under {label} differs from its output in the profile \
                     run: the placement must not change what a program computes"
                )));
                }
                if let Some(key) = &cfg.metric {
                    let text = std::fs::read_to_string(&out).unwrap_or_default();
                    s.metric_s = Some(metric_value(&text, key).ok_or_else(|| {
                        Error::Config(format!(
                            "the program printed no line '{key}=SECONDS' under {label} (--metric)"
                        ))
                    })?);
                }
                samples.push(s);
                progress(samples.len() as u64 + 1, total);
            }
            Ok::<_, Error>(())
        },
    )?;
    let _ = std::fs::remove_file(&out);
    Ok(PackingReport {
        command: cfg.argv.clone(),
        rounds,
        stopped: Some(stopped),
        metric: cfg.metric.clone(),
        variants: summarize_variants(&samples),
        profile: ProfileReport {
            placement_file: None,
            ..profile
        },
        samples,
    })
}

/// The program's output without its timing line: what every variant must print alike.
fn fingerprint(out: &Path, metric: Option<&str>) -> Vec<String> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .filter(|l| metric.is_none_or(|k| !l.trim_start().starts_with(&format!("{k}="))))
        .map(String::from)
        .collect()
}

/// Run the program as it is, reading its process's resident and huge bytes every 50 ms.
fn plain(
    argv: &[String],
    out: &Path,
    round: u32,
    label: &str,
    quiet: Option<hugewise_results::stats::Quiet>,
    whole_heap: bool,
) -> Result<PackingSample> {
    let file = std::fs::File::create(out).map_err(|source| Error::Write {
        path: out.to_path_buf(),
        source,
    })?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdout(file).stderr(Stdio::null());
    if whole_heap {
        cmd.env(WHOLE_HEAP.0, WHOLE_HEAP.1);
    }
    hugewise_sys::process::tie_to_parent(&mut cmd);
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(|source| {
        Error::Exec(hugewise_exec::Error::Launch {
            program: argv[0].clone(),
            source,
        })
    })?;
    let proc = ProcFs::default();
    let pid = Pid::Id(child.id() as i32);
    let (mut rss, mut huge) = (None::<u64>, None::<u64>);
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|source| Error::Write {
            path: PathBuf::from("/proc"),
            source,
        })? {
            break status;
        }
        if let Ok(r) = proc.smaps_rollup(pid) {
            rss = Some(rss.unwrap_or(0).max(r.rss_bytes));
            huge = Some(huge.unwrap_or(0).max(r.anon_huge_bytes));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let wall_ns = t0.elapsed().as_nanos() as u64;
    if !status.success() {
        return Err(Error::Config(format!(
            "the program failed under {label} ({status}); run it alone to see why"
        )));
    }
    Ok(PackingSample {
        round,
        variant: label.into(),
        wall_ns,
        metric_s: None,
        peak_huge_bytes: huge,
        peak_rss_bytes: rss,
        quiet,
    })
}

/// The ratios `--until` watches: every variant's speedup over 4 KiB pages, per round.
fn watched(samples: &[PackingSample]) -> Vec<Vec<f64>> {
    VARIANTS[1..]
        .iter()
        .map(|&(label, _, _)| speedups(samples, label))
        .collect()
}

/// Per round that ran both, the 4 KiB run's time over `label`'s, on the program's own timing
/// line when it printed one.
fn speedups(samples: &[PackingSample], label: &str) -> Vec<f64> {
    crate::stats::ratios_in_rounds(
        samples,
        |s| s.round,
        |s| s.variant == VARIANTS[0].0,
        |s| s.variant == label,
        |s| Some(s.metric_s.unwrap_or(s.wall_ns as f64 / 1e9)),
    )
}

fn summarize_variants(samples: &[PackingSample]) -> Vec<PackingVariant> {
    let huge_of = |label: &str| {
        let h: Vec<f64> = samples
            .iter()
            .filter(|s| s.variant == label)
            .filter_map(|s| s.peak_huge_bytes.map(|h| h as f64))
            .collect();
        median(&h)
    };
    let all = huge_of("thp-all").filter(|&h| h > 0.0);
    VARIANTS
        .iter()
        .filter_map(|&(label, thp, packed)| {
            let mine: Vec<&PackingSample> = samples.iter().filter(|s| s.variant == label).collect();
            let wall: Vec<f64> = mine.iter().map(|s| s.wall_ns as f64).collect();
            let metric: Vec<f64> = mine.iter().filter_map(|s| s.metric_s).collect();
            let ratios = speedups(samples, label);
            let huge = huge_of(label);
            let (speedup, ci95) = match label == VARIANTS[0].0 {
                true => (None, None),
                false => ratio(&ratios),
            };
            Some(PackingVariant {
                label: label.into(),
                thp: thp.into(),
                placement: packed,
                wall_ns: summarize(&wall)?,
                metric_s: summarize(&metric),
                speedup_vs_4k: speedup,
                speedup_vs_4k_ci95: ci95,
                huge_bytes: huge,
                huge_share_of_thp_all: huge.zip(all).map(|(h, a)| h / a),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(round: u32, variant: &str, metric: f64, huge: u64) -> PackingSample {
        PackingSample {
            round,
            variant: variant.into(),
            wall_ns: 1,
            metric_s: Some(metric),
            peak_huge_bytes: Some(huge),
            peak_rss_bytes: None,
            quiet: None,
        }
    }

    #[test]
    fn speedups_pair_rounds_and_huge_bytes_compare_with_thp_for_everything() {
        let s = vec![
            sample(0, "4k", 8.0, 0),
            sample(0, "thp-always", 7.0, 2000),
            sample(0, "thp-all", 7.0, 2000),
            sample(0, "packed-4k", 4.0, 0),
            sample(0, "packed", 2.0, 100),
            sample(1, "4k", 10.0, 0),
            sample(1, "thp-always", 10.0, 2000),
            sample(1, "thp-all", 10.0, 2000),
            sample(1, "packed-4k", 5.0, 0),
            sample(1, "packed", 4.0, 100),
        ];
        let v = summarize_variants(&s);
        let by = |l: &str| v.iter().find(|x| x.label == l).expect(l);
        assert_eq!(by("4k").speedup_vs_4k, None);
        // Rounds: 8/7 and 10/10; 8/2 and 10/4.
        assert!(
            (by("thp-always").speedup_vs_4k.expect("ratio") - (8.0 / 7.0 + 1.0) / 2.0).abs() < 1e-9
        );
        assert_eq!(by("packed").speedup_vs_4k, Some(3.25));
        assert_eq!(by("packed").huge_share_of_thp_all, Some(0.05));
        assert_eq!(by("4k").huge_share_of_thp_all, Some(0.0));
        assert!(by("packed").placement && !by("thp-always").placement);
    }

    #[test]
    fn the_timing_line_is_left_out_of_what_must_match() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("out");
        std::fs::write(&f, "time_s=1.5\nchecksum=42\n").expect("write");
        assert_eq!(fingerprint(&f, Some("time_s")), ["checksum=42"]);
        assert_eq!(fingerprint(&f, None).len(), 2);
    }
}
