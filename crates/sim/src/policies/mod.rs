//! The promotion policies, one per file, all driven by the same walk events and ticks, and
//! the registry that builds one from its spec string.

use crate::policy::{Options, Policy, Timing};
use crate::{Error, Result};

pub mod all;
pub mod fixed;
pub mod hawkeye;
pub mod ingens;
pub mod khugepaged;
pub mod linux;
pub mod mega;
pub mod none;
pub mod pcc;

/// Policy names [`parse`] knows.
pub const POLICIES: &[&str] = &[
    "none",
    "all",
    "linux",
    "linux-khugepaged",
    "hawkeye",
    "ingens",
    "mega",
    "pcc",
    "static",
];

/// A policy and its settings, parsed once from its spec (`pcc:order=rr:interval=10s`) and
/// built as many times as there are budgets.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicySpec {
    /// `none`: no huge page ever.
    None,
    /// `all`: every frame huge from the start.
    All,
    /// `linux`: THP at first touch.
    Linux,
    /// `linux-khugepaged`.
    Khugepaged(khugepaged::Settings),
    /// `hawkeye`.
    HawkEye(hawkeye::Settings),
    /// `ingens`.
    Ingens(ingens::Settings),
    /// `mega`.
    Mega(mega::Settings),
    /// `pcc`.
    Pcc(pcc::Settings),
    /// `static`.
    Static(fixed::Settings),
}

impl PolicySpec {
    /// The policy's name, as specs write it.
    pub fn name(&self) -> &'static str {
        match self {
            PolicySpec::None => "none",
            PolicySpec::All => "all",
            PolicySpec::Linux => "linux",
            PolicySpec::Khugepaged(_) => "linux-khugepaged",
            PolicySpec::HawkEye(_) => "hawkeye",
            PolicySpec::Ingens(_) => "ingens",
            PolicySpec::Mega(_) => "mega",
            PolicySpec::Pcc(_) => "pcc",
            PolicySpec::Static(_) => "static",
        }
    }

    /// Whether this is one of the curves' ends (`none`, `all`), simulated in any case.
    pub fn is_end(&self) -> bool {
        matches!(self, PolicySpec::None | PolicySpec::All)
    }

    /// Build the policy for a trace of `streams` streams, its intervals counted in accesses by
    /// `timing`. Fails only on what depends on the trace (a bias with one weight per stream).
    pub fn build(&self, timing: &Timing, streams: u16) -> Result<Box<dyn Policy>> {
        Ok(match self {
            PolicySpec::None => Box::new(none::NoPromotion),
            PolicySpec::All => Box::new(all::Everything),
            PolicySpec::Linux => Box::new(linux::FirstTouch),
            PolicySpec::Khugepaged(s) => Box::new(khugepaged::Khugepaged::new(s, timing)),
            PolicySpec::HawkEye(s) => Box::new(hawkeye::HawkEye::new(s, timing)),
            PolicySpec::Ingens(s) => Box::new(ingens::Ingens::new(s, timing)),
            PolicySpec::Mega(s) => Box::new(mega::Mega::new(s, timing)),
            PolicySpec::Pcc(s) => Box::new(pcc::PccPolicy::new(s, timing, streams)?),
            PolicySpec::Static(s) => Box::new(fixed::Static::new(s)),
        })
    }
}

impl std::str::FromStr for PolicySpec {
    type Err = Error;

    /// `name` or `name:key=value:key=value`; unknown names and options are refused.
    fn from_str(spec: &str) -> Result<PolicySpec> {
        let (name, mut o) = Options::parse(spec)?;
        let parsed = match name.as_str() {
            "none" => PolicySpec::None,
            "all" => PolicySpec::All,
            "linux" => PolicySpec::Linux,
            "linux-khugepaged" => PolicySpec::Khugepaged(khugepaged::Settings::parse(&mut o)?),
            "hawkeye" => PolicySpec::HawkEye(hawkeye::Settings::parse(&mut o)?),
            "ingens" => PolicySpec::Ingens(ingens::Settings::parse(&mut o)?),
            "mega" => PolicySpec::Mega(mega::Settings::parse(&mut o)?),
            "pcc" => PolicySpec::Pcc(pcc::Settings::parse(&mut o)?),
            "static" => PolicySpec::Static(fixed::Settings::parse(&mut o)?),
            other => {
                return Err(Error::Spec(format!(
                    "unknown policy '{other}' (known: {})",
                    POLICIES.join(", ")
                )))
            }
        };
        o.finish()?;
        Ok(parsed)
    }
}

/// Parse `spec` and build it (one policy, one budget: tests and benchmarks).
pub fn parse(spec: &str, timing: &Timing, streams: u16) -> Result<Box<dyn Policy>> {
    spec.parse::<PolicySpec>()?.build(timing, streams)
}
