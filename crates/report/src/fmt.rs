//! Human-readable numbers: bytes in binary units, durations in the unit that fits.

/// `1536` → `1.5 KiB`; exact multiples print without decimals.
pub fn bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (u, m) in UNITS {
        if n >= m {
            return if n.is_multiple_of(m) {
                format!("{} {u}", n / m)
            } else {
                format!("{:.1} {u}", n as f64 / m as f64)
            };
        }
    }
    format!("{n} B")
}

/// `1536` → `1.50KiB`, as sizes are written on the command line (`16GiB`).
pub fn bytes_compact(n: u64) -> String {
    for (u, m) in [
        ("TiB", 1u64 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if n >= m {
            return if n.is_multiple_of(m) {
                format!("{}{u}", n / m)
            } else {
                format!("{:.2}{u}", n as f64 / m as f64)
            };
        }
    }
    format!("{n}B")
}

/// A time span to the second in the largest units that keep it short: `59 s`, `2 min 05 s`,
/// `1 h 11 min`; a negative one reads `0 s`.
pub fn duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// Nanoseconds as `850 ns`, `2.9 µs`, `118 µs`, `1.20 ms`, `3.41 s`.
pub fn ns(n: f64) -> String {
    if n < 1e3 {
        format!("{n:.0} ns")
    } else if n < 1e4 {
        format!("{:.1} µs", n / 1e3)
    } else if n < 1e6 {
        format!("{:.0} µs", n / 1e3)
    } else if n < 1e9 {
        format!("{:.2} ms", n / 1e6)
    } else {
        format!("{:.2} s", n / 1e9)
    }
}

/// A share as a percentage with one decimal.
pub fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// A median of per-round ratios with its 95 % interval, each to `digits` decimals and `x`:
/// `1.31x [1.18–1.44]`; `1.31x [n<6]` when `rounds` were too few for an interval, `1.31x [-]`
/// when the result kept none (saved before intervals were, or a bootstrap some resample of
/// which had no figure).
pub fn ratio_ci(
    ratio: f64,
    ci: Option<hugewise_results::stats::MedianInterval>,
    rounds: usize,
    digits: usize,
) -> String {
    format!("{ratio:.digits$}x {}", interval(ci, rounds, digits))
}

/// The bracket of [`ratio_ci`] alone: `[1.18–1.44]`, `[n<6]` or `[-]`.
pub fn interval(
    ci: Option<hugewise_results::stats::MedianInterval>,
    rounds: usize,
    digits: usize,
) -> String {
    match ci {
        Some(i) => format!("[{:.digits$}–{:.digits$}]", i.lo, i.hi),
        None if rounds < 6 => "[n<6]".into(),
        None => "[-]".into(),
    }
}

/// A share as [`pct`] with its 95 % interval: `45.0% [30.1–60.2%]`, brackets as in
/// [`ratio_ci`].
pub fn pct_ci(
    share: f64,
    ci: Option<hugewise_results::stats::MedianInterval>,
    rounds: usize,
) -> String {
    pct_bounds(share, ci.map(|i| (i.lo, i.hi)), rounds)
}

/// A share as [`pct`] with the bounds of any 95 % interval (a bootstrap's too): brackets as
/// in [`pct_ci`].
pub fn pct_bounds(share: f64, bounds: Option<(f64, f64)>, rounds: usize) -> String {
    match bounds {
        Some((lo, hi)) => format!("{} [{:.1}–{}]", pct(share), lo * 100.0, pct(hi)),
        None => format!("{} {}", pct(share), interval(None, rounds, 0)),
    }
}

/// A pool's threads and where they ran: `2 threads (bound to CPUs 0, 1)`, or `2 threads` when
/// the scheduler placed them.
pub fn threads(n: usize, bound_to: &[usize]) -> String {
    let mut s = format!("{n} thread{}", if n == 1 { "" } else { "s" });
    if !bound_to.is_empty() {
        let cpus: Vec<String> = bound_to.iter().map(|c| c.to_string()).collect();
        s.push_str(&format!(" (bound to CPUs {})", cpus.join(", ")));
    }
    s
}

/// Why the rounds stopped, as a clause after their count: empty when the rounds asked for ran.
pub fn stopped(s: Option<hugewise_results::stats::Stopped>) -> &'static str {
    use hugewise_results::stats::Stopped;
    match s {
        None | Some(Stopped::Rounds) => "",
        Some(Stopped::Narrow) => ", until the intervals were as narrow as --until asked",
        Some(Stopped::MaxRounds) => {
            ", stopped at --max-rounds before the intervals were as narrow as --until asked"
        }
        Some(Stopped::MaxTime) => {
            ", stopped at --max-time before the intervals were as narrow as --until asked"
        }
        Some(Stopped::Interrupted) => {
            ", stopped by a signal (Ctrl-C): the rounds done before it, the one under way dropped"
        }
    }
}

/// The reads of a cgroup's `memory.stat` made while a command ran: how often, how many, what
/// they took, and why they stopped early if they did.
pub fn stats_flush(f: &hugewise_results::telemetry::StatsFlush) -> String {
    format!(
        "memory.stat read every {:.0} ms ({} reads, {}){}",
        f.interval_ms,
        f.reads,
        ns(f.busy_ms * 1e6),
        f.stopped
            .as_ref()
            .map_or(String::new(), |w| format!(", stopped {w}"))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(2 << 20), "2 MiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(ns(850.0), "850 ns");
        assert_eq!(ns(2900.0), "2.9 µs");
        assert_eq!(ns(118_000.0), "118 µs");
        assert_eq!(ns(1_200_000.0), "1.20 ms");
        assert_eq!(pct(0.25), "25.0%");
        let ci = hugewise_results::stats::MedianInterval {
            lo: 1.18,
            hi: 1.444,
            coverage: 0.97,
        };
        assert_eq!(ratio_ci(1.31, Some(ci), 6, 2), "1.31x [1.18–1.44]");
        assert_eq!(ratio_ci(1.31, None, 5, 2), "1.31x [n<6]");
        assert_eq!(ratio_ci(1.31, None, 7, 3), "1.310x [-]");
    }
}

#[cfg(test)]
mod threads_tests {
    #[test]
    fn a_bound_pool_names_its_cpus_and_a_free_one_only_counts() {
        assert_eq!(super::threads(2, &[0, 1]), "2 threads (bound to CPUs 0, 1)");
        assert_eq!(super::threads(2, &[]), "2 threads");
        assert_eq!(super::threads(1, &[]), "1 thread");
    }
}
