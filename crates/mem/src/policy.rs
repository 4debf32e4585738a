//! Page policies per region, and the order in which regions are faulted in.

use std::fmt;
use std::str::FromStr;

use hugewise_sys::PageSize;
use serde::{Serialize, Serializer};

use crate::bytes::Amount;
use crate::{Error, Result};

/// What a region asks of the kernel for its pages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PagePolicy {
    /// No advice: whatever the system's THP mode gives.
    System,
    /// 4 KiB pages only (`MADV_NOHUGEPAGE`).
    Base,
    /// Transparent huge pages welcome (`MADV_HUGEPAGE`).
    Thp,
    /// THP for the leading part only (rounded up to 2 MiB), 4 KiB for the rest.
    ThpPrefix(Amount),
    /// Pages from the 2 MiB hugetlb pool.
    Hugetlb2M,
    /// Pages from the 1 GiB hugetlb pool.
    Hugetlb1G,
}

const VALID: &str = "system, base, thp, thp-prefix:<size or %>, hugetlb-2m, hugetlb-1g (in a \
                     region map, any of them followed by +lock)";

impl PagePolicy {
    /// The hugetlb page size, for the hugetlb policies.
    pub fn hugetlb(self) -> Option<PageSize> {
        match self {
            PagePolicy::Hugetlb2M => Some(PageSize::Size2M),
            PagePolicy::Hugetlb1G => Some(PageSize::Size1G),
            _ => None,
        }
    }
}

impl FromStr for PagePolicy {
    type Err = Error;

    fn from_str(s: &str) -> Result<PagePolicy> {
        let t = s.trim();
        Ok(match t {
            "system" => PagePolicy::System,
            "base" | "4k" => PagePolicy::Base,
            "thp" => PagePolicy::Thp,
            "hugetlb-2m" => PagePolicy::Hugetlb2M,
            "hugetlb-1g" => PagePolicy::Hugetlb1G,
            _ => match t.strip_prefix("thp-prefix:") {
                Some(a) => PagePolicy::ThpPrefix(
                    a.parse()
                        .map_err(|e| Error::Parse(format!("policy '{t}': {e}")))?,
                ),
                None => {
                    return Err(Error::Parse(format!(
                        "unknown page policy '{t}'; valid policies: {VALID}"
                    )))
                }
            },
        })
    }
}

impl fmt::Display for PagePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PagePolicy::System => f.write_str("system"),
            PagePolicy::Base => f.write_str("base"),
            PagePolicy::Thp => f.write_str("thp"),
            PagePolicy::ThpPrefix(a) => write!(f, "thp-prefix:{a}"),
            PagePolicy::Hugetlb2M => f.write_str("hugetlb-2m"),
            PagePolicy::Hugetlb1G => f.write_str("hugetlb-1g"),
        }
    }
}

impl Serialize for PagePolicy {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Policies per region name, parsed from `offsets=base,edges=thp,all=base`; `all` is the
/// default for names not listed, and later entries win. A policy may end in `+lock`: the
/// region's pages are then locked in memory (`mlock`), the huge prefix only for `thp-prefix`,
/// so that a memory limit swaps out everything else first.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyMap {
    default: Pages,
    by_name: Vec<(String, Pages)>,
}

impl Serialize for PolicyMap {
    /// As written on the command line, in the canonical form [`fmt::Display`] gives.
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One region's entry: its policy, and whether its pages are locked in memory.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pages {
    policy: PagePolicy,
    lock: bool,
}

impl Pages {
    fn parse(s: &str) -> Result<Pages> {
        let t = s.trim();
        Ok(match t.strip_suffix("+lock") {
            Some(p) => Pages {
                policy: p.parse()?,
                lock: true,
            },
            None => Pages {
                policy: t.parse()?,
                lock: false,
            },
        })
    }
}

impl fmt::Display for Pages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.policy, if self.lock { "+lock" } else { "" })
    }
}

impl Default for PolicyMap {
    fn default() -> Self {
        PolicyMap {
            default: Pages {
                policy: PagePolicy::System,
                lock: false,
            },
            by_name: Vec::new(),
        }
    }
}

impl PolicyMap {
    /// Parse, accepting only region names from `known` (plus `all`).
    pub fn parse(s: &str, known: &[&str]) -> Result<PolicyMap> {
        let mut map = PolicyMap::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, pol) = part.split_once('=').ok_or_else(|| {
                Error::Parse(format!(
                    "'{part}': expected <region>=<policy>, e.g. all=thp"
                ))
            })?;
            let (name, pol) = (name.trim(), Pages::parse(pol)?);
            if name == "all" {
                map.default = pol;
                map.by_name.clear();
            } else if known.contains(&name) {
                map.by_name.retain(|(n, _)| n != name);
                map.by_name.push((name.to_string(), pol));
            } else {
                return Err(Error::Parse(format!(
                    "unknown region '{name}'; regions: all, {}",
                    known.join(", ")
                )));
            }
        }
        Ok(map)
    }

    fn entry(&self, name: &str) -> Pages {
        self.by_name
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, p)| *p)
            .unwrap_or(self.default)
    }

    /// The policy of region `name`.
    pub fn get(&self, name: &str) -> PagePolicy {
        self.entry(name).policy
    }

    /// Whether region `name` is to be locked in memory (`+lock`).
    pub fn locked(&self, name: &str) -> bool {
        self.entry(name).lock
    }
}

impl fmt::Display for PolicyMap {
    /// The canonical form: `all=<default>` then each named override.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "all={}", self.default)?;
        for (n, p) in &self.by_name {
            write!(f, ",{n}={p}")?;
        }
        Ok(())
    }
}

/// The order in which regions are created and faulted in. Whoever faults first gets the huge
/// pages when they are scarce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AllocOrder {
    /// The program's natural order.
    Natural,
    /// The named region first, then the natural order.
    First(String),
    /// An explicit order; regions not named follow in natural order.
    Explicit(Vec<String>),
}

impl AllocOrder {
    /// Parse `natural`, `<name>-first` or `a,b,c`, accepting only names from `known`.
    pub fn parse(s: &str, known: &[&str]) -> Result<AllocOrder> {
        let t = s.trim();
        let check = |n: &str| -> Result<String> {
            if known.contains(&n) {
                Ok(n.to_string())
            } else {
                Err(Error::Parse(format!(
                    "allocation order '{t}': unknown region '{n}'; regions: {}",
                    known.join(", ")
                )))
            }
        };
        if t == "natural" {
            return Ok(AllocOrder::Natural);
        }
        if let Some(n) = t.strip_suffix("-first") {
            return Ok(AllocOrder::First(check(n)?));
        }
        let names = t
            .split(',')
            .map(|n| check(n.trim()))
            .collect::<Result<Vec<_>>>()?;
        Ok(AllocOrder::Explicit(names))
    }

    /// Arrange `natural` (the program's order) in this order.
    pub fn arrange<'a>(&self, natural: &[&'a str]) -> Vec<&'a str> {
        let front: Vec<&str> = match self {
            AllocOrder::Natural => Vec::new(),
            AllocOrder::First(n) => vec![n.as_str()],
            AllocOrder::Explicit(v) => v.iter().map(String::as_str).collect(),
        };
        let mut out: Vec<&'a str> = front
            .iter()
            .filter_map(|f| natural.iter().find(|n| **n == *f).copied())
            .collect();
        out.extend(natural.iter().filter(|n| !front.contains(n)));
        out
    }
}

impl fmt::Display for AllocOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocOrder::Natural => f.write_str("natural"),
            AllocOrder::First(n) => write!(f, "{n}-first"),
            AllocOrder::Explicit(v) => f.write_str(&v.join(",")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: &[&str] = &["offsets", "edges", "property"];

    #[test]
    fn policies_parse_and_print() {
        for s in [
            "system",
            "base",
            "thp",
            "thp-prefix:25%",
            "thp-prefix:64MiB",
            "hugetlb-2m",
        ] {
            let p: PagePolicy = s.parse().expect(s);
            assert_eq!(p.to_string(), s);
        }
        let e = "huge"
            .parse::<PagePolicy>()
            .expect_err("unknown")
            .to_string();
        assert!(e.contains("valid policies: system, base, thp"), "{e}");
        let e = "thp-prefix:150%"
            .parse::<PagePolicy>()
            .expect_err("over")
            .to_string();
        assert!(e.contains("over 100%"), "{e}");
    }

    #[test]
    fn policy_map_defaults_and_overrides() {
        let m = PolicyMap::parse("all=base,property=thp-prefix:2%", R).expect("map");
        assert_eq!(m.get("edges"), PagePolicy::Base);
        assert!(matches!(m.get("property"), PagePolicy::ThpPrefix(_)));
        let m = PolicyMap::parse("property=thp,all=base", R).expect("map");
        assert_eq!(m.get("property"), PagePolicy::Base, "a later all= resets");
        let e = PolicyMap::parse("weights=thp", R)
            .expect_err("unknown")
            .to_string();
        assert!(e.contains("unknown region 'weights'"), "{e}");
        assert!(PolicyMap::parse("thp", R).is_err());
        let m = PolicyMap::parse("edges=thp,all=base,property=thp-prefix:2%", R).expect("map");
        assert_eq!(m.to_string(), "all=base,property=thp-prefix:2%");
        assert_eq!(PolicyMap::parse(&m.to_string(), R).expect("again"), m);
    }

    #[test]
    fn lock_rides_on_a_policy() {
        let m = PolicyMap::parse("all=base,property=thp-prefix:5%+lock", R).expect("map");
        assert!(m.locked("property"));
        assert!(!m.locked("edges"));
        assert!(matches!(m.get("property"), PagePolicy::ThpPrefix(_)));
        assert_eq!(m.to_string(), "all=base,property=thp-prefix:5%+lock");
        assert_eq!(PolicyMap::parse(&m.to_string(), R).expect("again"), m);
        let m = PolicyMap::parse("all=thp+lock,property=base", R).expect("map");
        assert!(m.locked("edges") && !m.locked("property"));
        let e = PolicyMap::parse("property=lock", R).expect_err("no policy");
        assert!(e.to_string().contains("unknown page policy 'lock'"), "{e}");
        assert!(PolicyMap::parse("property=thp+locked", R).is_err());
    }

    #[test]
    fn alloc_orders() {
        let o = AllocOrder::parse("property-first", R).expect("first");
        assert_eq!(o.arrange(R), ["property", "offsets", "edges"]);
        let o = AllocOrder::parse("edges,offsets", R).expect("explicit");
        assert_eq!(o.arrange(R), ["edges", "offsets", "property"]);
        assert_eq!(AllocOrder::Natural.arrange(R), R);
        assert!(AllocOrder::parse("weights-first", R).is_err());
        for t in ["natural", "property-first", "edges,offsets"] {
            assert_eq!(AllocOrder::parse(t, R).expect(t).to_string(), t);
        }
    }
}
