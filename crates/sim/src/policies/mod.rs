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

/// Build a policy from its spec (`pcc:order=rr:interval=10s`).
pub fn parse(spec: &str, timing: &Timing, streams: u16) -> Result<Box<dyn Policy>> {
    let (name, mut o) = Options::parse(spec)?;
    let policy: Box<dyn Policy> = match name.as_str() {
        "none" => Box::new(none::NoPromotion),
        "all" => Box::new(all::Everything),
        "linux" => Box::new(linux::FirstTouch),
        "linux-khugepaged" => Box::new(khugepaged::Khugepaged::new(&mut o, timing)?),
        "hawkeye" => Box::new(hawkeye::HawkEye::new(&mut o, timing)?),
        "ingens" => Box::new(ingens::Ingens::new(&mut o, timing)?),
        "mega" => Box::new(mega::Mega::new(&mut o, timing)?),
        "pcc" => Box::new(pcc::PccPolicy::new(&mut o, timing, streams)?),
        "static" => Box::new(fixed::Static::new(&mut o)?),
        other => {
            return Err(Error::Spec(format!(
                "unknown policy '{other}' (known: {})",
                POLICIES.join(", ")
            )))
        }
    };
    o.finish()?;
    Ok(policy)
}
