//! The simulator's grammar for what a user asks of it: a list of policies, a list of budgets
//! and a measured calibration, each parsed once into typed values (through `FromStr`, so a
//! command line can use them as value parsers).

use std::str::FromStr;

use hugewise_trace::meta::Calibration;

use crate::policies::PolicySpec;
use crate::policy::parse_share;
use crate::{Error, Result};

/// Policies, comma-separated, each with its options after ':' (`pcc:order=rr,hawkeye`).
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyList(pub Vec<PolicySpec>);

impl FromStr for PolicyList {
    type Err = Error;

    fn from_str(s: &str) -> Result<PolicyList> {
        let specs = s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(PolicySpec::from_str)
            .collect::<Result<Vec<_>>>()?;
        if specs.is_empty() {
            return Err(Error::Spec(format!("'{s}' names no policy")));
        }
        Ok(PolicyList(specs))
    }
}

/// Budgets as shares of the footprint, written as percentages, comma-separated: `0,1,2.5%,100`
/// is 0, 0.01, 0.025 and 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Budgets(pub Vec<f64>);

impl FromStr for Budgets {
    type Err = Error;

    fn from_str(s: &str) -> Result<Budgets> {
        s.split(',')
            .map(|b| {
                let b = b.trim();
                let v = b.strip_suffix('%').unwrap_or(b);
                parse_share(&format!("{v}%"))
                    .ok_or_else(|| Error::Spec(format!("{b}: expected a percentage 0..100")))
            })
            .collect::<Result<Vec<_>>>()
            .map(Budgets)
    }
}

/// Untraced run times measured by hand, `base=S,huge=S` (seconds, an `s` suffix allowed): the
/// program on 4 KiB pages and all on huge pages.
pub fn parse_calibration(s: &str) -> Result<Calibration> {
    let bad = |what: String| Error::Spec(format!("{s}: {what}"));
    let (mut base, mut huge) = (None, None);
    for part in s.split(',') {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| bad("expected base=S,huge=S".into()))?;
        let secs = v
            .trim()
            .trim_end_matches('s')
            .parse::<f64>()
            .ok()
            .filter(|x| *x > 0.0 && x.is_finite())
            .ok_or_else(|| bad(format!("{v} is not a positive time in seconds")))?;
        match k.trim() {
            "base" => base = Some(secs),
            "huge" => huge = Some(secs),
            other => return Err(bad(format!("unknown key {other} (base, huge)"))),
        }
    }
    match (base, huge) {
        (Some(base_s), Some(huge_s)) => Ok(Calibration {
            base_s,
            huge_s,
            huge_share: 1.0,
            runs: 1,
        }),
        _ => Err(bad("needs both base=S and huge=S".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_percentages() {
        let b: Budgets = "0, 1,2.5%,100".parse().expect("budgets");
        assert_eq!(b.0, vec![0.0, 0.01, 0.025, 1.0]);
        for bad in ["", "101", "-1", "x", "1,,2"] {
            assert!(bad.parse::<Budgets>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn policy_lists_parse_each_spec_once_into_settings() {
        let l: PolicyList = "pcc:order=rr:interval=10s, hawkeye,linux"
            .parse()
            .expect("list");
        let names: Vec<_> = l.0.iter().map(PolicySpec::name).collect();
        assert_eq!(names, ["pcc", "hawkeye", "linux"]);
        match &l.0[0] {
            PolicySpec::Pcc(s) => {
                assert!(s.round_robin);
                assert_eq!(s.interval_s, 10.0);
                assert_eq!(s.entries, 128);
            }
            other => panic!("not pcc: {other:?}"),
        }
        assert!(" , ".parse::<PolicyList>().is_err());
        let e = "pcc:intervl=3s".parse::<PolicyList>().expect_err("typo");
        assert!(e.to_string().contains("intervl"), "{e}");
        let e = "khugepaged".parse::<PolicyList>().expect_err("unknown");
        assert!(e.to_string().contains("linux-khugepaged"), "{e}");
        assert!("pcc:bias=1/-2".parse::<PolicyList>().is_err());
    }

    #[test]
    fn calibrations() {
        let c = parse_calibration("base=1.92,huge=1.31s").expect("calibration");
        assert_eq!((c.base_s, c.huge_s, c.runs), (1.92, 1.31, 1));
        for bad in [
            "base=1",
            "base=0,huge=1",
            "base=1,huge=x",
            "base=1,huge=1,tiny=2",
            "1,2",
        ] {
            assert!(parse_calibration(bad).is_err(), "{bad} accepted");
        }
    }
}
