//! From a profile run to a placement: which call sites' memory is hot enough to spend huge
//! pages on, written as rules that `hugewise exec --placement` reads.
//!
//! The thesis's packing: small objects of hot sites share one hot arena of huge pages (up to
//! its size, hottest first), large allocations of hot sites get THP, and everything else stays
//! on 4 KiB pages. Hotness is the share of a site's resident bytes accessed between two
//! readings, averaged over the readings (the accessed bits of its pages, as HawkEye's
//! coverage): a site whose pages are nearly all touched every interval is worth a huge page
//! per 2 MiB; one whose pages sit idle is not.

use std::collections::BTreeMap;
use std::fmt::Write;

use hugewise_mem::Bytes;
use hugewise_results::exec::{ExecReport, ProfileReport, ProfileSite};
use hugewise_rules::sites::Site;
use hugewise_rules::{Placement, Rule, Rules};

/// How a placement is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Most bytes of small objects the hot arena takes.
    pub hot_arena: u64,
    /// The least accessed share that counts as hot.
    pub min_share: f64,
}

/// A placement: the sites ranked, and the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Every site seen, hottest first, with what the rules give it.
    pub sites: Vec<ProfileSite>,
    /// The rules, ending with `*=base`.
    pub rules: Rules,
    /// The rules as a file, each site's rule with its figures in a comment.
    pub text: String,
}

#[derive(Default)]
struct Acc {
    allocations: u64,
    resident: u64,
    /// Accessed share weighted by resident bytes.
    weighted: f64,
    weight: u64,
}

/// Rank the call sites of a profile run and choose their placement.
pub fn plan(r: &ExecReport, opts: Options) -> Plan {
    let mut small: BTreeMap<String, Acc> = BTreeMap::new();
    let mut large: BTreeMap<String, Acc> = BTreeMap::new();
    for a in r.processes.iter().flat_map(|p| &p.allocations) {
        let Some(site) = a.site.clone() else {
            continue;
        };
        let acc = if a.origin == "arena" {
            small.entry(site).or_default()
        } else {
            large.entry(site).or_default()
        };
        let resident = a.peak_resident_bytes.unwrap_or(0);
        acc.allocations += 1;
        acc.resident += resident;
        if let Some(s) = a.accessed_share {
            acc.weighted += s * resident.max(1) as f64;
            acc.weight += resident.max(1);
        }
    }
    let share = |a: &Acc| (a.weight > 0).then(|| a.weighted / a.weight as f64);
    let mut sites: Vec<ProfileSite> = small
        .iter()
        .map(|(s, a)| (s, a, "small"))
        .chain(large.iter().map(|(s, a)| (s, a, "large")))
        .map(|(site, a, kind)| ProfileSite {
            site: site.clone(),
            kind: kind.into(),
            allocations: (kind == "large").then_some(a.allocations),
            peak_resident_bytes: a.resident,
            accessed_share: share(a),
            placement: None,
        })
        .collect();
    sites.sort_by(|a, b| {
        b.accessed_share
            .unwrap_or(-1.0)
            .total_cmp(&a.accessed_share.unwrap_or(-1.0))
            .then(a.peak_resident_bytes.cmp(&b.peak_resident_bytes))
            .then(a.site.cmp(&b.site))
    });
    let mut arena_used = 0u64;
    for s in &mut sites {
        let hot =
            s.accessed_share.is_some_and(|x| x >= opts.min_share) && s.peak_resident_bytes > 0;
        s.placement = match (s.kind.as_str(), hot) {
            ("small", true) if arena_used + s.peak_resident_bytes <= opts.hot_arena => {
                arena_used += s.peak_resident_bytes;
                Some("arena".into())
            }
            ("small", _) => None,
            (_, true) => Some("thp".into()),
            (_, false) => Some("base".into()),
        };
    }
    let mut rules = Vec::new();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# hugewise placement, from a profile of: {}\n# small allocations of these sites go to \
         the hot arena (huge pages, up to {}); large ones of hot sites get THP; everything else \
         4 KiB pages.\n# A site is hot when at least {:.0}% of its resident bytes were accessed \
         between two readings, on average.",
        r.command.join(" ").replace('\n', " "),
        Bytes(opts.hot_arena),
        opts.min_share * 100.0,
    );
    for s in &sites {
        let (Some(p), Ok(site)) = (&s.placement, Site::parse(&s.site)) else {
            continue;
        };
        let placement = match p.as_str() {
            "arena" => Placement::Arena,
            "thp" => Placement::Thp,
            _ => Placement::Base,
        };
        let rule = Rule::at_site(Some(site), placement);
        let _ = writeln!(
            text,
            "{rule}  # {} {}, {} accessed per reading",
            s.kind,
            Bytes(s.peak_resident_bytes),
            s.accessed_share
                .map_or_else(|| "-".to_string(), |x| format!("{:.0}%", x * 100.0)),
        );
        rules.push(rule);
    }
    let rest = Rule::at_site(None, Placement::Base);
    let _ = writeln!(text, "{rest}");
    rules.push(rest);
    Plan {
        sites,
        rules: Rules(rules),
        text,
    }
}

/// Profile a program: run it with an arena per call site (4 KiB pages, every allocation of
/// `cfg.min_size` or more under `*=base`), read how much of each is accessed at every interval,
/// and choose a placement. `cfg.rules` and `cfg.profile` are set here.
pub fn profile(
    cfg: &crate::run::Config,
    opts: Options,
    stop: &std::sync::atomic::AtomicBool,
    tick: impl FnMut(&crate::run::Tick),
) -> crate::Result<ProfileReport> {
    let cfg = crate::run::Config {
        rules: Rules(vec![Rule::at_site(None, Placement::Base)]),
        profile: true,
        ..cfg.clone()
    };
    let proc = hugewise_sys::proc::ProcFs::default();
    let kdamonds_before = proc.kdamonds().unwrap_or(0);
    let run = crate::run::run(&cfg, stop, tick)?;
    let p = plan(&run, opts);
    Ok(ProfileReport {
        run,
        hot_arena_bytes: opts.hot_arena,
        min_accessed_share: opts.min_share,
        sites: p.sites,
        placement: p.text,
        placement_file: None,
        kdamonds: kdamonds_before.max(proc.kdamonds().unwrap_or(0)) as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_results::exec::{ExecAllocation, ExecProcess};

    fn alloc(origin: &str, site: &str, resident: u64, share: f64) -> ExecAllocation {
        ExecAllocation {
            start: 0,
            len_bytes: 0,
            requested_bytes: 0,
            policy: "base".into(),
            rule: None,
            name: None,
            origin: origin.into(),
            advice_error: None,
            born_ns: 0,
            lifetime_ns: None,
            peak_resident_bytes: Some(resident),
            peak_huge_bytes: Some(0),
            site: Some(site.into()),
            accessed_share: Some(share),
        }
    }

    fn report(allocations: Vec<ExecAllocation>) -> ExecReport {
        ExecReport {
            command: vec!["app".into()],
            rules: "*=base".into(),
            min_size_bytes: 2 << 20,
            preload: String::new(),
            interval_ns: 0,
            exit_code: Some(0),
            signal: None,
            wall_ns: 0,
            processes: vec![ExecProcess {
                pid: 1,
                allocator: "glibc".into(),
                rules_refused: false,
                sites_missing: false,
                unlogged: 0,
                fallbacks: 0,
                last_fallback_error: None,
                peak_rss_bytes: None,
                peak_anon_huge_bytes: None,
                allocations,
            }],
            promote: None,
            promote_error: None,
            profile: true,
            hot_arena_bytes: None,
        }
    }

    #[test]
    fn the_hottest_small_sites_fill_the_arena_and_hot_large_ones_get_thp() {
        let r = report(vec![
            alloc("arena", "app+0x10", 40 << 20, 0.95),
            alloc("arena", "app+0x20", 30 << 20, 0.90),
            alloc("arena", "app+0x30", 500 << 20, 0.05),
            alloc("arena", "app+0x40", 1 << 20, 0.60),
            alloc("malloc", "app+0x50", 8 << 20, 0.80),
            alloc("malloc", "app+0x50", 8 << 20, 0.70),
            alloc("malloc", "app+0x60", 64 << 20, 0.01),
        ]);
        let p = plan(
            &r,
            Options {
                hot_arena: 64 << 20,
                min_share: 0.5,
            },
        );
        let got: Vec<(&str, Option<&str>)> = p
            .sites
            .iter()
            .map(|s| (s.site.as_str(), s.placement.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("app+0x10", Some("arena")),
                // 40 + 30 MiB would overflow the 64 MiB arena.
                ("app+0x20", None),
                ("app+0x50", Some("thp")),
                ("app+0x40", Some("arena")),
                ("app+0x30", None),
                ("app+0x60", Some("base")),
            ]
        );
        let large = &p.sites[2];
        assert_eq!(
            (large.allocations, large.peak_resident_bytes),
            (Some(2), 16 << 20)
        );
        assert!((large.accessed_share.expect("seen") - 0.75).abs() < 1e-9);
        assert_eq!(
            p.rules.to_string(),
            "site:app+0x10=arena,site:app+0x50=thp,site:app+0x40=arena,site:app+0x60=base,*=base"
        );
        let again = Rules::parse_file("placement.rules", &p.text).expect("the file reads back");
        assert_eq!(again, p.rules);
        assert!(
            p.text
                .contains("site:app+0x10=arena  # small 40MiB, 95% accessed"),
            "{}",
            p.text
        );
    }
}
