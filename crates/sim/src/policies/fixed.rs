//! `static`: promote given ranges before the first access, in the order given, while the
//! budget lasts: `static:region=property@2%` (the leading 2 % of a region: the DBG hot
//! prefix), `static:region=edges` (a whole region), `static:range=0x7f0000000000-0x7f0000400000`.
//! Options repeat.

use crate::pagemap::{FrameId, FRAME};
use crate::policy::{parse_share, promote_in_order, share_of, Ctx, Options, Policy};
use crate::{Error, Result};

/// One thing to promote.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// The leading `share` of the region called `name`.
    Region {
        /// The trace region's name.
        name: String,
        /// Share of it, from its start.
        share: f64,
    },
    /// An address range.
    Range {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
}

/// What `static` promotes, as the spec gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Targets in the order given.
    pub targets: Vec<Target>,
    /// The options as written, for the label.
    pub spec: String,
}

/// Fixed ranges.
#[derive(Debug, Clone)]
pub struct Static {
    targets: Vec<Target>,
    spec: String,
}

fn hex(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

impl Settings {
    /// Options: `region=NAME[@SHARE]`, `range=START-END`, each repeatable; they are promoted in
    /// the order given, whatever their kind.
    pub fn parse(o: &mut Options) -> Result<Settings> {
        let mut targets = Vec::new();
        let mut spec = Vec::new();
        while let Some((key, r)) = o.next_of(&["region", "range"]) {
            spec.push(format!("{key}={r}"));
            if key == "region" {
                let (name, share) = match r.split_once('@') {
                    Some((n, s)) => (
                        n.to_string(),
                        parse_share(s).ok_or_else(|| {
                            Error::Spec(format!("policy static: region={r}: '{s}' is not a share"))
                        })?,
                    ),
                    None => (r.clone(), 1.0),
                };
                targets.push(Target::Region { name, share });
            } else {
                let (a, b) = r
                    .split_once('-')
                    .and_then(|(a, b)| Some((hex(a)?, hex(b)?)))
                    .filter(|(a, b)| a < b)
                    .ok_or_else(|| {
                        Error::Spec(format!(
                            "policy static: range={r}: expected START-END addresses, START < END"
                        ))
                    })?;
                targets.push(Target::Range { start: a, end: b });
            }
        }
        if targets.is_empty() {
            return Err(Error::Spec(
                "policy static needs region=NAME[@SHARE] or range=START-END".into(),
            ));
        }
        Ok(Settings {
            targets,
            spec: spec.join(":"),
        })
    }
}

impl Static {
    /// `static` with `s`.
    pub fn new(s: &Settings) -> Static {
        Static {
            targets: s.targets.clone(),
            spec: s.spec.clone(),
        }
    }
}

impl Policy for Static {
    fn label(&self) -> String {
        format!("static:{}", self.spec)
    }

    fn check(&self, regions: &[hugewise_trace::Region]) -> Result<()> {
        for t in &self.targets {
            if let Target::Region { name, .. } = t {
                if !regions.iter().any(|r| &r.name == name) {
                    let known: Vec<&str> = regions.iter().map(|r| r.name.as_str()).collect();
                    return Err(Error::Spec(format!(
                        "policy static: the trace has no region '{name}' (it has: {})",
                        known.join(", ")
                    )));
                }
            }
        }
        Ok(())
    }

    fn start(&mut self, cx: &mut Ctx<'_>) {
        let mut ids: Vec<FrameId> = Vec::new();
        for t in &self.targets {
            let (start, end) = match t {
                Target::Region { name, share } => {
                    match cx.map.regions().iter().find(|r| &r.name == name) {
                        Some(r) => (r.base, r.base + share_of(*share, r.size).ceil() as u64),
                        None => continue,
                    }
                }
                Target::Range { start, end } => (*start, *end),
            };
            let mut a = start & !(FRAME - 1);
            while a < end {
                ids.push(cx.map.id(a));
                a += FRAME;
            }
        }
        promote_in_order(cx, ids, u64::MAX);
    }
}
