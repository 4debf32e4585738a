//! Byte sizes and shares as users write them: `4096`, `64k`, `2M`, `1.5GiB`, `25%`.
//!
//! Units are binary whatever their spelling (`k`, `kB`, `KiB` all mean 1024), as the kernel
//! writes them in /proc and /sys.

use std::fmt;
use std::str::FromStr;

use hugewise_sys::read::shown;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A positive number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

const UNITS: &[(&[&str], u64)] = &[
    (&["", "b"], 1),
    (&["k", "kb", "kib"], 1 << 10),
    (&["m", "mb", "mib"], 1 << 20),
    (&["g", "gb", "gib"], 1 << 30),
    (&["t", "tb", "tib"], 1 << 40),
];

impl FromStr for Bytes {
    type Err = Error;

    fn from_str(s: &str) -> Result<Bytes> {
        let t = s.trim();
        let bad = |why: &str| Error::Parse(format!("size '{}': {why}", shown(s)));
        if t.is_empty() {
            return Err(bad("empty"));
        }
        if t.starts_with('-') {
            return Err(bad("a size cannot be negative"));
        }
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let unit_l = unit.trim().to_ascii_lowercase();
        let mult = UNITS
            .iter()
            .find(|(names, _)| names.contains(&unit_l.as_str()))
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                bad(&format!(
                    "unknown unit '{}' (use B, K/KiB, M/MiB, G/GiB or T/TiB)",
                    shown(unit.trim())
                ))
            })?;
        if num.is_empty() {
            return Err(bad("no number before the unit"));
        }
        let value = if num.contains('.') {
            let f: f64 = num.parse().map_err(|_| bad("not a number"))?;
            let v = f * mult as f64;
            if !v.is_finite() || v >= u64::MAX as f64 {
                return Err(bad("too large"));
            }
            v.round() as u64
        } else {
            let n: u64 = num.parse().map_err(|_| bad("too large"))?;
            n.checked_mul(mult).ok_or_else(|| bad("too large"))?
        };
        if value == 0 {
            return Err(bad("must be greater than 0"));
        }
        Ok(Bytes(value))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (unit, m) in [
            ("TiB", 1u64 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ] {
            if n >= m {
                return if n.is_multiple_of(m) {
                    write!(f, "{}{unit}", n / m)
                } else {
                    write!(f, "{:.2}{unit}", n as f64 / m as f64)
                };
            }
        }
        write!(f, "{n}B")
    }
}

/// A size given either in bytes or as a share of something (`25%`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Amount {
    /// An absolute size.
    Bytes(Bytes),
    /// A share in percent, 0 < p ≤ 100.
    Percent(f64),
}

impl Amount {
    /// The size this amount means out of `whole` bytes (never more than `whole`).
    pub fn of(self, whole: u64) -> u64 {
        match self {
            Amount::Bytes(b) => b.0.min(whole),
            Amount::Percent(p) => ((whole as f64) * p / 100.0).round() as u64,
        }
    }

    /// The share (0 to 1) of `whole` bytes this amount is: a size counts as its part of them
    /// (more than 1 when it is larger).
    pub fn share_of(self, whole: u64) -> f64 {
        match self {
            Amount::Bytes(b) => b.0 as f64 / whole.max(1) as f64,
            Amount::Percent(p) => p / 100.0,
        }
    }

    /// The share (0 to 1) a percentage is; `None` for a size.
    pub fn share(self) -> Option<f64> {
        match self {
            Amount::Bytes(_) => None,
            Amount::Percent(p) => Some(p / 100.0),
        }
    }
}

impl FromStr for Amount {
    type Err = Error;

    fn from_str(s: &str) -> Result<Amount> {
        let t = s.trim();
        match t.strip_suffix('%') {
            Some(p) => {
                let bad = |why: &str| Error::Parse(format!("share '{}': {why}", shown(s)));
                let v: f64 = p.trim().parse().map_err(|_| bad("not a number"))?;
                if !v.is_finite() || v <= 0.0 {
                    return Err(bad("must be greater than 0%"));
                }
                if v > 100.0 {
                    return Err(bad("cannot be over 100%"));
                }
                Ok(Amount::Percent(v))
            }
            None => Ok(Amount::Bytes(t.parse()?)),
        }
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Amount::Bytes(b) => b.fmt(f),
            Amount::Percent(p) => write!(f, "{p}%"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> u64 {
        s.parse::<Bytes>().expect(s).0
    }

    fn err(s: &str) -> String {
        s.parse::<Bytes>().expect_err(s).to_string()
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(b("4096"), 4096);
        assert_eq!(b("2M"), 2 << 20);
        assert_eq!(b("64kB"), 64 << 10);
        assert_eq!(b("1.5GiB"), 3 << 29);
        assert_eq!(b(" 1 g "), 1 << 30);
        assert_eq!(b("16384b"), 16384);
    }

    #[test]
    fn bad_sizes_say_why() {
        assert!(err("-1").contains("negative"));
        assert!(err("0").contains("greater than 0"));
        assert!(err("0.0M").contains("greater than 0"));
        assert!(err("99999999999999999999").contains("too large"));
        assert!(err("17179869184T").contains("too large"));
        assert!(err("3XB").contains("unknown unit 'XB'"));
        assert!(err("GiB").contains("no number"));
        assert!(err("").contains("empty"));
        assert!(err("1.2.3M").contains("not a number"));
    }

    #[test]
    fn shares_parse_and_apply() {
        let a: Amount = "25%".parse().expect("25%");
        assert_eq!(a.of(1000), 250);
        let a: Amount = "2M".parse().expect("2M");
        assert_eq!(a.of(1 << 30), 2 << 20);
        assert_eq!(a.of(4096), 4096);
        let e = "150%".parse::<Amount>().expect_err("150%").to_string();
        assert!(e.contains("over 100%"), "{e}");
        assert!("0%".parse::<Amount>().is_err());
        assert!("x%".parse::<Amount>().is_err());
        let a: Amount = "4%".parse().expect("4%");
        assert_eq!((a.share(), a.share_of(1 << 30)), (Some(0.04), 0.04));
        let a: Amount = "512MiB".parse().expect("512MiB");
        assert_eq!((a.share(), a.share_of(1 << 30)), (None, 0.5));
    }

    #[test]
    fn display_round_trips() {
        for s in ["4KiB", "2MiB", "1.50GiB", "100B"] {
            let v: Bytes = s.parse().expect(s);
            assert_eq!(v.to_string(), s);
        }
    }
}
