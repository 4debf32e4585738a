//! Shares, intervals and counts as users write them (`30%`, `0.5s`, `20M`), each parsed in one
//! place; the range a flag allows is a check on the parsed value ([`ShareRange`],
//! [`Interval::at_least`]), not a parser of its own.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use hugewise_sys::read::shown;

use crate::{Bytes, Error, Result};

/// A share of a whole: `30%` or `0.3`. It keeps the form it was written in, so that a flag
/// can read a bare number as a percentage ([`ShareRange::bare`]) and messages quote it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    /// The number as written (30 for `30%`, 0.3 for `0.3`).
    written: f64,
    /// Whether it was written with `%`.
    percent: bool,
}

impl Share {
    /// A share from a fraction of the whole (0.3 for 30 %).
    pub fn from_fraction(fraction: f64) -> Share {
        Share {
            written: fraction,
            percent: false,
        }
    }

    /// The fraction of the whole: 0.3 for `30%` or `0.3`.
    pub fn fraction(self) -> f64 {
        if self.percent {
            self.written / 100.0
        } else {
            self.written
        }
    }

    /// The share in per cent: 3 for `3%` (exactly as written) or `0.03`.
    pub fn percent(self) -> f64 {
        if self.percent {
            self.written
        } else {
            self.written * 100.0
        }
    }

    /// `s` parsed and checked against `range`: the form its flag allows (bare numbers as
    /// fractions, percentages or refused) and the bounds, with the flag's own message.
    pub fn parse_in(s: &str, range: &ShareRange) -> Result<Share> {
        let bad = |why: &str| Error::Parse(format!("'{}': {why}", shown(s)));
        let share: Share = match (s.parse(), range.bare) {
            (Ok(share), _) => share,
            // Where a bare number is a percentage, "0.3" is 0.3 %: the general message (30% or
            // 0.3) would mislead, so the flag's own says what it takes.
            (Err(_), Bare::Percent) => return Err(bad(range.expect)),
            (Err(e), _) => return Err(e),
        };
        let share = match (share.percent, range.bare) {
            (false, Bare::Refused) => return Err(bad("give a percentage, e.g. 50%")),
            (false, Bare::Percent) => Share {
                percent: true,
                ..share
            },
            _ => share,
        };
        let f = share.fraction();
        let above_min = if range.min_open {
            f > range.min
        } else {
            f >= range.min
        };
        if !(above_min && f <= range.max) {
            return Err(bad(range.expect));
        }
        Ok(share)
    }
}

impl FromStr for Share {
    type Err = Error;

    fn from_str(s: &str) -> Result<Share> {
        let t = s.trim();
        let (num, percent) = match t.strip_suffix('%') {
            Some(p) => (p.trim(), true),
            None => (t, false),
        };
        match num.parse::<f64>() {
            Ok(written) if written.is_finite() => Ok(Share { written, percent }),
            _ => Err(Error::Parse(format!(
                "'{}': a share such as 30% or 0.3",
                shown(s)
            ))),
        }
    }
}

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.percent {
            write!(f, "{}%", self.written)
        } else {
            write!(f, "{}", self.written)
        }
    }
}

/// What a bare number (no `%`) means to a flag taking a share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bare {
    /// A fraction: `0.3` is 30 %.
    Fraction,
    /// A percentage: `4` is 4 %.
    Percent,
    /// Not allowed: the flag takes percentages only.
    Refused,
}

/// The shares a flag allows, as fractions, and what it says when given another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShareRange {
    /// The least share.
    pub min: f64,
    /// Whether `min` itself is excluded.
    pub min_open: bool,
    /// The largest share.
    pub max: f64,
    /// What a bare number means.
    pub bare: Bare,
    /// The message for a share outside the range (after the quoted input).
    pub expect: &'static str,
}

impl ShareRange {
    /// Above 0 and at most 100 % (a memory limit, a share deleted).
    pub const POSITIVE: ShareRange = ShareRange {
        min: 0.0,
        min_open: true,
        max: 1.0,
        bare: Bare::Fraction,
        expect: "a share above 0 and at most 100%",
    };

    /// 0 to 100 % of a footprint, a bare number a percentage (a plan's budget, `4%`).
    pub const FOOTPRINT: ShareRange = ShareRange {
        min: 0.0,
        min_open: false,
        max: 1.0,
        bare: Bare::Percent,
        expect: "a share of the footprint from 0% to 100%, such as 4%",
    };

    /// 0 to 1 as a fraction (`0.5`).
    pub const UNIT: ShareRange = ShareRange {
        min: 0.0,
        min_open: false,
        max: 1.0,
        bare: Bare::Fraction,
        expect: "a share from 0 to 1",
    };

    /// Above 0 %, a bare number a percentage, no upper bound (how close a ratio's interval
    /// must be: `3%`).
    pub const WIDTH: ShareRange = ShareRange {
        min: 0.0,
        min_open: true,
        max: f64::INFINITY,
        bare: Bare::Percent,
        expect: "a width in per cent above 0, such as 3%",
    };

    /// 0 % to 95 % as a percentage (free memory made useless for 2 MiB pages).
    pub const FRAGMENT: ShareRange = ShareRange {
        min: 0.0,
        min_open: false,
        max: 0.95,
        bare: Bare::Refused,
        expect: "must be between 0% and 95%",
    };
}

/// A positive time span: `100ms`, `0.5s`, `90s`, `5m`, `1h`, or plain seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Interval(pub Duration);

impl Interval {
    /// `s` parsed, refused when shorter than `min` (intervals of periodic work: `1ms`).
    pub fn at_least(s: &str, min: Duration) -> Result<Interval> {
        let i: Interval = s.parse()?;
        if i.0 < min {
            return Err(Error::Parse(format!(
                "'{}': at least {}",
                shown(s),
                Interval(min)
            )));
        }
        Ok(i)
    }
}

impl Interval {
    /// The time an interval of periodic work spans (at least 1 ms).
    pub fn period(s: &str) -> Result<Duration> {
        Interval::at_least(s, Duration::from_millis(1)).map(|i| i.0)
    }

    /// The time a duration (`90s`, `5m`, `1h`) spans.
    pub fn span(s: &str) -> Result<Duration> {
        s.parse::<Interval>().map(|i| i.0)
    }
}

impl FromStr for Interval {
    type Err = Error;

    fn from_str(s: &str) -> Result<Interval> {
        let t = s.trim();
        let bad = |why: &str| Error::Parse(format!("'{}': {why}", shown(s)));
        if let Some(ms) = t.strip_suffix("ms") {
            return match ms.parse::<f64>() {
                Ok(v) if v > 0.0 && v.is_finite() => Ok(Interval(Duration::from_secs_f64(v / 1e3))),
                _ => Err(bad("an interval such as 100ms or 0.5s")),
            };
        }
        let (num, mult) = match t.char_indices().last() {
            Some((i, 's')) => (&t[..i], 1.0),
            Some((i, 'm')) => (&t[..i], 60.0),
            Some((i, 'h')) => (&t[..i], 3600.0),
            _ => (t, 1.0),
        };
        let v: f64 = num
            .parse()
            .map_err(|_| bad("a duration such as 90s, 5m or 1h"))?;
        if !(v > 0.0 && v.is_finite()) {
            return Err(bad("must be positive"));
        }
        Duration::try_from_secs_f64(v * mult)
            .map(Interval)
            .map_err(|_| bad("too long"))
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_secs_f64() * 1e3;
        if ms < 1000.0 {
            write!(f, "{ms}ms")
        } else {
            write!(f, "{}s", self.0.as_secs_f64())
        }
    }
}

/// An interval of periodic work (at least 1 ms) or `off`: none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntervalOrOff(pub Option<Duration>);

impl FromStr for IntervalOrOff {
    type Err = Error;

    fn from_str(s: &str) -> Result<IntervalOrOff> {
        match s.trim() {
            "off" => Ok(IntervalOrOff(None)),
            other => Interval::period(other)
                .map(|d| IntervalOrOff(Some(d)))
                .map_err(|e| Error::Parse(format!("{e}, or off"))),
        }
    }
}

/// Threads as a multiple of the CPUs, as users write it: a factor of 1 or more, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overcommit {
    /// Threads = CPUs × this.
    Factor(u32),
    /// Chosen while running.
    Auto,
}

impl Overcommit {
    /// The threads to start with on `cpus` CPUs (`auto` starts from one per CPU).
    pub fn threads(self, cpus: usize) -> usize {
        match self {
            Overcommit::Factor(f) => cpus * f as usize,
            Overcommit::Auto => cpus,
        }
    }
}

impl FromStr for Overcommit {
    type Err = Error;

    fn from_str(s: &str) -> Result<Overcommit> {
        match s.trim() {
            "auto" => Ok(Overcommit::Auto),
            t => match t.parse::<u32>() {
                Ok(n) if n >= 1 => Ok(Overcommit::Factor(n)),
                _ => Err(Error::Parse(format!(
                    "'{s}': a factor of 1 or more, or auto"
                ))),
            },
        }
    }
}

/// A count of 1 or more with an optional decimal suffix: `1000`, `20M`, `1.5k`, `2G`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Count(pub u64);

impl FromStr for Count {
    type Err = Error;

    fn from_str(s: &str) -> Result<Count> {
        let t = s.trim();
        let (num, mult) = match t.char_indices().last() {
            Some((i, 'k' | 'K')) => (&t[..i], 1e3),
            Some((i, 'm' | 'M')) => (&t[..i], 1e6),
            Some((i, 'g' | 'G')) => (&t[..i], 1e9),
            _ => (t, 1.0),
        };
        let v: f64 = num
            .parse()
            .map_err(|_| Error::Parse(format!("'{}' is not a count (e.g. 1000, 20M)", shown(s))))?;
        let n = v * mult;
        if !(n >= 1.0 && n < u64::MAX as f64) {
            return Err(Error::Parse(format!("'{}' must be at least 1", shown(s))));
        }
        Ok(Count(n.round() as u64))
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A count of worker threads: 1 or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threads(pub usize);

impl FromStr for Threads {
    type Err = Error;

    fn from_str(s: &str) -> Result<Threads> {
        match s.trim().parse::<usize>() {
            Ok(0) => Err(Error::Parse(
                "0 threads run nothing: give 1 or more (default: one per CPU)".into(),
            )),
            Ok(n) => Ok(Threads(n)),
            Err(_) => Err(Error::Parse(format!(
                "'{}' is not a thread count (1 or more)",
                shown(s)
            ))),
        }
    }
}

impl Threads {
    /// A thread count (1 or more) as a number.
    pub fn count(s: &str) -> Result<usize> {
        s.parse::<Threads>().map(|t| t.0)
    }

    /// One thread per CPU this process may run on.
    pub fn per_cpu() -> Threads {
        Threads(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        )
    }
}

/// A mode for one page size as users write it: `64kB=always` (a size of whole KiB, then the
/// mode, which the kernel checks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeMode {
    /// The page size in KiB.
    pub kib: u64,
    /// The mode.
    pub mode: String,
}

impl FromStr for SizeMode {
    type Err = Error;

    fn from_str(s: &str) -> Result<SizeMode> {
        let bad = |why: String| Error::Parse(format!("'{}': {why}", shown(s)));
        let (size, mode) = s
            .split_once('=')
            .ok_or_else(|| bad("expected SIZE=MODE, e.g. 64kB=always".into()))?;
        let b: Bytes = size.parse().map_err(|e: Error| bad(e.to_string()))?;
        if !b.0.is_multiple_of(1024) {
            return Err(bad("the size must be whole KiB".into()));
        }
        Ok(SizeMode {
            kib: b.0 / 1024,
            mode: mode.to_string(),
        })
    }
}

/// A size hugewise may choose or skip: `auto`, `off`, or a size such as `1GiB` (how large a
/// THP probe after shaping is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoSize {
    /// hugewise chooses.
    Auto,
    /// None at all.
    Off,
    /// This size.
    Size(Bytes),
}

impl FromStr for AutoSize {
    type Err = Error;

    fn from_str(s: &str) -> Result<AutoSize> {
        match s {
            "auto" => Ok(AutoSize::Auto),
            "off" => Ok(AutoSize::Off),
            _ => s
                .parse::<Bytes>()
                .map(AutoSize::Size)
                .map_err(|e| Error::Parse(format!("'{}': auto, off or a size ({e})", shown(s)))),
        }
    }
}

impl From<AutoSize> for hugewise_results::env::ProbeSize {
    fn from(a: AutoSize) -> Self {
        match a {
            AutoSize::Auto => Self::Auto,
            AutoSize::Off => Self::Off,
            AutoSize::Size(b) => Self::Bytes(b.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(s: &str, r: &ShareRange) -> std::result::Result<f64, String> {
        Share::parse_in(s, r)
            .map(Share::fraction)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn shares_take_percentages_or_fractions_within_their_flags_range() {
        assert_eq!(share("30%", &ShareRange::POSITIVE), Ok(0.3));
        assert_eq!(share("0.3", &ShareRange::POSITIVE), Ok(0.3));
        let e = share("0", &ShareRange::POSITIVE).expect_err("0");
        assert_eq!(e, "'0': a share above 0 and at most 100%");
        assert_eq!(
            share("lots", &ShareRange::POSITIVE).expect_err("lots"),
            "'lots': a share such as 30% or 0.3"
        );
        assert_eq!(share("4", &ShareRange::FOOTPRINT), Ok(0.04));
        assert_eq!(share("0%", &ShareRange::FOOTPRINT), Ok(0.0));
        assert!(share("101%", &ShareRange::FOOTPRINT)
            .expect_err("101%")
            .contains("from 0% to 100%"));
        assert_eq!(share("0.5", &ShareRange::UNIT), Ok(0.5));
        assert!(share("1.5", &ShareRange::UNIT).is_err());
        assert_eq!(share("50%", &ShareRange::FRAGMENT), Ok(0.5));
        assert_eq!(
            share("50", &ShareRange::FRAGMENT).expect_err("bare"),
            "'50': give a percentage, e.g. 50%"
        );
        assert_eq!(
            share("96%", &ShareRange::FRAGMENT).expect_err("96%"),
            "'96%': must be between 0% and 95%"
        );
        for s in ["30%", "0.3"] {
            assert_eq!(s.parse::<Share>().expect(s).to_string(), s);
        }
    }

    #[test]
    fn stats_flush_is_an_interval_or_off() {
        let ms = Duration::from_millis;
        let p = |s: &str| s.parse::<IntervalOrOff>().map_err(|e| e.to_string());
        assert_eq!(p("off"), Ok(IntervalOrOff(None)));
        assert_eq!(p("20ms"), Ok(IntervalOrOff(Some(ms(20)))));
        let e = p("often").expect_err("not an interval");
        assert!(e.ends_with("or off"), "{e}");
        assert!(p("0.5ms").expect_err("too short").contains("at least 1ms"));
    }

    #[test]
    fn overcommit_is_a_factor_or_auto() {
        let p = |s: &str| s.parse::<Overcommit>().map_err(|e| e.to_string());
        assert_eq!(p("auto"), Ok(Overcommit::Auto));
        assert_eq!(p(" 4 "), Ok(Overcommit::Factor(4)));
        assert_eq!(p("0"), Err("'0': a factor of 1 or more, or auto".into()));
        assert!(p("x").is_err());
        assert_eq!(
            (
                Overcommit::Factor(4).threads(2),
                Overcommit::Auto.threads(2)
            ),
            (8, 2)
        );
    }

    #[test]
    fn intervals_from_milliseconds_to_hours() {
        let i = |s: &str| s.parse::<Interval>().map(|i| i.0).ok();
        assert_eq!(i("100ms"), Some(Duration::from_millis(100)));
        assert_eq!(i("0.5s"), Some(Duration::from_millis(500)));
        assert_eq!(i("5m"), Some(Duration::from_secs(300)));
        assert_eq!(i("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(i("2"), Some(Duration::from_secs(2)));
        let e = |s: &str| s.parse::<Interval>().expect_err(s).to_string();
        assert_eq!(e("-1s"), "'-1s': must be positive");
        assert_eq!(e("0ms"), "'0ms': an interval such as 100ms or 0.5s");
        assert_eq!(e("often"), "'often': a duration such as 90s, 5m or 1h");
        let short = Interval::at_least("0.1ms", Duration::from_millis(1)).expect_err("short");
        assert_eq!(short.to_string(), "'0.1ms': at least 1ms");
        assert!(Interval::at_least("1ms", Duration::from_millis(1)).is_ok());
    }

    #[test]
    fn counts_with_decimal_suffixes() {
        let c = |s: &str| s.parse::<Count>().map(|c| c.0).ok();
        assert_eq!(c("1000"), Some(1000));
        assert_eq!(c("20M"), Some(20_000_000));
        assert_eq!(c("1.5k"), Some(1500));
        assert_eq!(
            "0".parse::<Count>().expect_err("0").to_string(),
            "'0' must be at least 1"
        );
        assert!(c("-5").is_none());
        assert_eq!(
            "lots".parse::<Count>().expect_err("lots").to_string(),
            "'lots' is not a count (e.g. 1000, 20M)"
        );
    }

    #[test]
    fn threads_sizes_per_page_size_and_auto_sizes() {
        assert_eq!("2".parse::<Threads>().ok(), Some(Threads(2)));
        let e = "0".parse::<Threads>().expect_err("0").to_string();
        assert!(e.contains("1 or more"), "{e}");
        assert!("-1".parse::<Threads>().is_err());
        let m: SizeMode = "64kB=always".parse().expect("64kB=always");
        assert_eq!((m.kib, m.mode.as_str()), (64, "always"));
        assert!("64kB".parse::<SizeMode>().is_err());
        assert!("1000=always".parse::<SizeMode>().is_err());
        assert_eq!(
            "1GiB".parse::<AutoSize>().ok(),
            Some(AutoSize::Size(Bytes(1 << 30)))
        );
        assert_eq!("off".parse::<AutoSize>().ok(), Some(AutoSize::Off));
        assert_eq!(share("3%", &ShareRange::WIDTH), Ok(0.03));
        assert!(share("0%", &ShareRange::WIDTH).is_err());
        assert_eq!(
            share("x", &ShareRange::WIDTH).expect_err("x"),
            "'x': a width in per cent above 0, such as 3%"
        );
        let w = Share::parse_in("3", &ShareRange::WIDTH).expect("3");
        assert_eq!(w.percent(), 3.0);
    }
}
