//! Page rules: which page policy an allocation of a given size gets.
//!
//! A rule is `SIZES=POLICY`, `name:NAME=POLICY` or `site:MODULE+0xOFFSET=POLICY`; rules are
//! separated by commas (on the command line) or lines (in a file, where `#` starts a comment),
//! and the first that matches wins. `SIZES` is `*`, `>=N`, `<N` or `N..M` (from N up to but not
//! including M), with sizes as `hugewise` writes them everywhere (`64k`, `2MiB`, `1.5G`); `NAME`
//! matches allocations a program named through `hugewise_exec.h` (up to 31 letters, digits, `_`,
//! `-` or `.`); a site matches allocations made by the call at that place of the program (see
//! [`crate::sites`]; `hugewise profile` writes such rules). `POLICY` is `thp`
//! (`MADV_HUGEPAGE`), `base` (4 KiB pages, `MADV_NOHUGEPAGE`), `system` (no advice: the
//! machine's THP mode decides) or `arena` (small allocations go to the hot arena, which is
//! backed by huge pages; large ones get `thp`). An allocation no rule matches gets `system`.

use std::fmt;

use hugewise_mem::Bytes;
use hugewise_sys::read::shown;

use crate::sites::Site;
use crate::{Error, Result};

/// The page policy of one allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// No advice: the machine's THP mode decides.
    System,
    /// 4 KiB pages only (`MADV_NOHUGEPAGE`).
    Base,
    /// Transparent huge pages welcome (`MADV_HUGEPAGE`).
    Thp,
    /// Small allocations packed into the hot arena (huge pages); large ones as [`Placement::Thp`].
    Arena,
}

impl Placement {
    /// Every placement, in code order.
    pub const ALL: [Placement; 4] = [
        Placement::System,
        Placement::Base,
        Placement::Thp,
        Placement::Arena,
    ];

    /// Its name in rules and results.
    pub fn name(self) -> &'static str {
        match self {
            Placement::System => "system",
            Placement::Base => "base",
            Placement::Thp => "thp",
            Placement::Arena => "arena",
        }
    }

    /// Its code in the allocation log.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The placement with `code`, None for an unknown one.
    pub fn from_code(code: u8) -> Option<Placement> {
        Placement::ALL.get(usize::from(code)).copied()
    }

    fn parse(s: &str) -> Option<Placement> {
        Placement::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// Which sizes a rule covers: `[min, max)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Smallest size covered.
    pub min: u64,
    /// First size not covered (`u64::MAX`: no bound).
    pub max: u64,
}

impl Sizes {
    /// Every size.
    pub const ALL: Sizes = Sizes {
        min: 0,
        max: u64::MAX,
    };
}

impl Rule {
    /// The rule giving `placement` to the allocations of `site` (any when None), whatever their
    /// size.
    pub fn at_site(site: Option<Site>, placement: Placement) -> Rule {
        Rule {
            sizes: Sizes::ALL,
            name: None,
            site,
            placement,
        }
    }
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The sizes it covers.
    pub sizes: Sizes,
    /// The name it covers (any allocation when absent).
    pub name: Option<String>,
    /// The call site it covers (any when absent).
    pub site: Option<Site>,
    /// The policy it gives them.
    pub placement: Placement,
}

/// Longest allocation name, in bytes.
pub const NAME_MAX: usize = 31;

/// Whether `name` can name an allocation: 1 to [`NAME_MAX`] letters, digits, `_`, `-`, `.`.
pub fn valid_name(name: &str) -> bool {
    (1..=NAME_MAX).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

/// Rules in order; the first that matches wins.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rules(pub Vec<Rule>);

impl Rules {
    /// Parse rules separated by commas, as given on the command line. Errors name the rule by
    /// its position (1-based) and text.
    pub fn parse(text: &str) -> Result<Rules> {
        let mut out = Vec::new();
        for (i, part) in text.split(',').enumerate() {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            out.push(parse_rule(part).map_err(|why| Error {
                at: format!("rule {} ('{}')", i + 1, shown(part)),
                why,
            })?);
        }
        if out.is_empty() {
            return Err(Error {
                at: "rules".into(),
                why: "no rule given (write for example '>=2MiB=thp')".into(),
            });
        }
        Ok(Rules(out))
    }

    /// Parse a rules file: one rule (or several, comma-separated) per line, `#` comments.
    /// Errors name the file and line.
    pub fn parse_file(name: &str, text: &str) -> Result<Rules> {
        let mut out = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            for part in line.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                out.push(parse_rule(part).map_err(|why| Error {
                    at: format!("{name}:{}: '{}'", n + 1, shown(part)),
                    why,
                })?);
            }
        }
        if out.is_empty() {
            return Err(Error {
                at: name.to_string(),
                why: "holds no rule".into(),
            });
        }
        Ok(Rules(out))
    }

    /// The policy for an allocation of `size` bytes named `name` (if the program named it) made
    /// at `site` (if known), and the index of the rule that chose it (None: no rule matched,
    /// `system`).
    pub fn place(
        &self,
        size: u64,
        name: Option<&str>,
        site: Option<&Site>,
    ) -> (Placement, Option<usize>) {
        self.0
            .iter()
            .position(|r| {
                (r.sizes.min..r.sizes.max).contains(&size)
                    && r.name.as_deref().is_none_or(|n| Some(n) == name)
                    && r.site.as_ref().is_none_or(|s| Some(s) == site)
            })
            .map_or((Placement::System, None), |i| {
                (self.0[i].placement, Some(i))
            })
    }
}

fn bytes(s: &str) -> std::result::Result<u64, String> {
    s.trim()
        .parse::<Bytes>()
        .map(|b| b.0)
        .map_err(|e| e.to_string())
}

fn parse_rule(s: &str) -> std::result::Result<Rule, String> {
    let (sizes, policy) = s
        .rsplit_once('=')
        .filter(|(l, _)| !l.ends_with(['>', '<']) || l.ends_with(">="))
        .ok_or("expected SIZES=POLICY, for example '>=2MiB=thp'")?;
    let policy = policy.trim();
    let placement = Placement::parse(policy).ok_or_else(|| {
        format!(
            "unknown policy '{}' (use thp, base, system or arena)",
            shown(policy)
        )
    })?;
    let sizes = sizes.trim();
    if let Some(site) = sizes.strip_prefix("site:") {
        return Ok(Rule::at_site(Some(Site::parse(site)?), placement));
    }
    if let Some(name) = sizes.strip_prefix("name:") {
        if !valid_name(name) {
            return Err(format!(
                "name '{}': 1 to {NAME_MAX} letters, digits, _, - or .",
                shown(name)
            ));
        }
        return Ok(Rule {
            sizes: Sizes::ALL,
            name: Some(name.to_string()),
            site: None,
            placement,
        });
    }
    let sizes = if sizes == "*" {
        Sizes::ALL
    } else if let Some(n) = sizes.strip_prefix(">=") {
        Sizes {
            min: bytes(n)?,
            max: u64::MAX,
        }
    } else if let Some(n) = sizes.strip_prefix('<') {
        Sizes {
            min: 0,
            max: bytes(n)?,
        }
    } else if let Some((a, b)) = sizes.split_once("..") {
        let (min, max) = (bytes(a)?, bytes(b)?);
        if min >= max {
            return Err(format!("empty range: {a} is not below {b}"));
        }
        Sizes { min, max }
    } else {
        return Err(format!(
            "sizes '{}': write *, >=N, <N, N..M, name:NAME or site:MODULE+0xOFFSET (for \
             example >=2MiB)",
            shown(sizes)
        ));
    };
    Ok(Rule {
        sizes,
        name: None,
        site: None,
        placement,
    })
}

fn size(n: u64) -> String {
    Bytes(n).to_string()
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(n) = &self.name {
            return write!(f, "name:{n}={}", self.placement.name());
        }
        if let Some(s) = &self.site {
            return write!(f, "site:{s}={}", self.placement.name());
        }
        let Sizes { min, max } = self.sizes;
        match (min, max) {
            (0, u64::MAX) => write!(f, "*"),
            (m, u64::MAX) => write!(f, ">={}", size(m)),
            (0, m) => write!(f, "<{}", size(m)),
            (a, b) => write!(f, "{}..{}", size(a), size(b)),
        }?;
        write!(f, "={}", self.placement.name())
    }
}

impl fmt::Display for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_rule_wins_and_the_rest_get_system() {
        let r = Rules::parse(">=64MiB=thp, 2M..64M=base, <1k=thp").expect("parse");
        assert_eq!(r.place(64 << 20, None, None), (Placement::Thp, Some(0)));
        assert_eq!(
            r.place((64 << 20) - 1, None, None),
            (Placement::Base, Some(1))
        );
        assert_eq!(r.place(2 << 20, None, None), (Placement::Base, Some(1)));
        assert_eq!(
            r.place((2 << 20) - 1, None, None),
            (Placement::System, None)
        );
        assert_eq!(r.place(1023, None, None), (Placement::Thp, Some(2)));
        assert_eq!(
            Rules::parse("*=base")
                .expect("star")
                .place(u64::MAX - 1, None, None),
            (Placement::Base, Some(0))
        );
    }

    #[test]
    fn a_name_matches_only_allocations_the_program_named_so() {
        let r = Rules::parse("name:hot.vertices=thp,*=base").expect("parse");
        assert_eq!(
            r.place(4096, Some("hot.vertices"), None),
            (Placement::Thp, Some(0))
        );
        assert_eq!(
            r.place(4096, Some("cold"), None),
            (Placement::Base, Some(1))
        );
        assert_eq!(r.place(4096, None, None), (Placement::Base, Some(1)));
        for bad in [
            "name:=thp",
            "name:has space=thp",
            "name:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=thp",
        ] {
            let err = Rules::parse(bad).expect_err(bad).to_string();
            assert!(err.contains("1 to 31 letters"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_site_matches_only_allocations_made_there_whatever_their_size() {
        let r = Rules::parse("site:app+0x40=arena,site:app+0x80=base,>=2MiB=thp").expect("parse");
        let hot = Site::parse("app+0x40").expect("site");
        let cold = Site::parse("app+0x80").expect("site");
        assert_eq!(r.place(32, None, Some(&hot)), (Placement::Arena, Some(0)));
        assert_eq!(
            r.place(64 << 20, None, Some(&hot)),
            (Placement::Arena, Some(0))
        );
        assert_eq!(
            r.place(4 << 20, None, Some(&cold)),
            (Placement::Base, Some(1))
        );
        assert_eq!(r.place(4 << 20, None, None), (Placement::Thp, Some(2)));
        assert_eq!(r.place(32, None, None), (Placement::System, None));
    }

    #[test]
    fn rules_print_back_as_they_parse() {
        let text =
            ">=64MiB=thp,2MiB..64MiB=base,<1KiB=system,name:hot=thp,site:app+0x1a2b=arena,*=thp";
        let r = Rules::parse(text).expect("parse");
        assert_eq!(r.to_string(), text);
        assert_eq!(Rules::parse(&r.to_string()).expect("again"), r);
    }

    #[test]
    fn a_bad_rule_is_named_with_what_is_wrong() {
        for (text, want) in [
            (
                ">=2MiB=thp,>=1MiB=huge",
                "rule 2 ('>=1MiB=huge'): unknown policy 'huge'",
            ),
            (">=2QB=thp", "unknown unit 'QB'"),
            ("2MiB=thp", "write *, >=N, <N, N..M, name:NAME or site:"),
            ("site:app=arena", "write MODULE+0xOFFSET"),
            ("thp", "expected SIZES=POLICY"),
            ("4M..2M=thp", "empty range"),
            (" , ", "no rule given"),
        ] {
            let err = Rules::parse(text).expect_err(text).to_string();
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn a_long_or_escaping_rule_is_shown_cut_and_escaped() {
        let long = format!(">=1MiB={}", "h".repeat(1_000_000));
        let text = format!("# fine\n{long}\n");
        let err = Rules::parse_file("pages.rules", &text)
            .expect_err("long")
            .to_string();
        assert!(err.len() < 400, "{} bytes of error", err.len());
        assert!(err.starts_with("pages.rules:2: '>=1MiB=hhh"), "{err}");
        assert!(err.contains("… (1000007 bytes)'"), "{err}");
        for text in [
            "\x1b[2J=thp",
            ">=1\x1b[2J=thp",
            "site:\x1b[2J=thp",
            "name:\x1b[2J=thp",
            "*=\x1b[2J",
        ] {
            let err = Rules::parse(text).expect_err(text).to_string();
            assert!(!err.contains('\x1b') && err.contains("\\u{1b}"), "{err}");
        }
    }

    #[test]
    fn a_rules_file_names_the_line_that_is_wrong() {
        let text = "# hot arrays\n>=1GiB=thp\n\n2M..1G=bse  # typo\n";
        let err = Rules::parse_file("pages.rules", text)
            .expect_err("typo")
            .to_string();
        assert!(err.starts_with("pages.rules:4: '2M..1G=bse'"), "{err}");
        let ok = Rules::parse_file("p", "# x\n>=1GiB=thp, <4k=base\n").expect("ok");
        assert_eq!(ok.0.len(), 2);
        assert!(Rules::parse_file("empty.rules", "# nothing\n")
            .expect_err("empty")
            .to_string()
            .contains("empty.rules: holds no rule"));
    }

    #[test]
    fn the_daemon_knows_base_by_its_code() {
        assert_eq!(Placement::Base.code(), hugewise_sys::alloclog::POLICY_BASE);
    }

    #[test]
    fn codes_round_trip() {
        for p in Placement::ALL {
            assert_eq!(Placement::from_code(p.code()), Some(p));
        }
        assert_eq!(Placement::from_code(9), None);
    }
}
