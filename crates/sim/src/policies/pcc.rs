//! `pcc`: the promotion candidate cache. Each core's PCC counts its page walks per region;
//! every interval (30 s) the OS reads them all and promotes up to `regions` candidates, either
//! the highest counts first across cores (`order=freq`, with optional per-core `bias`
//! weights) or taking the top of each core's PCC in turn (`order=rr`). Promoted regions leave
//! every PCC. `size=1g` runs the 1 GiB variant (8 entries, 1 GiB tags).

use hugewise_sys::PageSize;

use crate::pcc::Pcc;
use crate::policy::{Ctx, Options, Policy, Timing, Walk};
use crate::{Error, Result};

/// The OS side of the PCC.
#[derive(Debug, Clone)]
pub struct PccPolicy {
    interval: u64,
    interval_s: f64,
    regions: u64,
    round_robin: bool,
    size: PageSize,
    entries: usize,
    bias: Vec<f64>,
    pccs: Vec<Pcc>,
}

/// The PCC's settings, as the spec gave them.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Promotion interval, seconds.
    pub interval_s: f64,
    /// Regions promoted per interval at most.
    pub regions: u64,
    /// Take the top of each core's PCC in turn instead of the highest counts first.
    pub round_robin: bool,
    /// Page size promoted (2 MiB or 1 GiB).
    pub size: PageSize,
    /// Entries per PCC (at least 1).
    pub entries: usize,
    /// Per-core weights of the counts (`None`: all 1); one per trace stream, checked when
    /// the policy is built for a trace.
    pub bias: Option<Vec<f64>>,
}

impl Settings {
    /// Options: `interval` (30s), `regions` per interval (128), `order` (freq|rr), `size`
    /// (2m|1g), `entries` (128 for 2m, 8 for 1g), `bias` (per-core weights, `1/2/1/1`).
    pub fn parse(o: &mut Options) -> Result<Settings> {
        let interval_s = o.seconds("interval", 30.0)?;
        let regions = o.count("regions", 128)?;
        let round_robin = o.choice("order", &["freq", "rr"], "freq")? == "rr";
        let size = match o.choice("size", &["2m", "1g"], "2m")?.as_str() {
            "1g" => PageSize::Size1G,
            _ => PageSize::Size2M,
        };
        let entries = o.count("entries", if size == PageSize::Size1G { 8 } else { 128 })?;
        if entries == 0 {
            return Err(Error::Spec(
                "policy pcc: entries=0: a PCC needs an entry".into(),
            ));
        }
        let bias = match o.string("bias") {
            None => None,
            Some(b) => {
                let w: Vec<f64> = b
                    .split('/')
                    .map(|x| x.trim().parse::<f64>())
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|_| {
                        Error::Spec(format!("policy pcc: bias={b}: expected weights like 1/2"))
                    })?;
                if w.iter().any(|x| *x < 0.0 || !x.is_finite()) {
                    return Err(Error::Spec(format!(
                        "policy pcc: bias={b}: weights must be non-negative numbers"
                    )));
                }
                Some(w)
            }
        };
        Ok(Settings {
            interval_s,
            regions,
            round_robin,
            size,
            entries: usize::try_from(entries)
                .map_err(|_| Error::Spec(format!("policy pcc: entries={entries}: too many")))?,
            bias,
        })
    }
}

impl PccPolicy {
    /// The PCC with `s` for a trace of `streams` streams (one PCC each), its interval counted
    /// in accesses by `t`; refuses a bias that does not give one weight per stream.
    pub fn new(s: &Settings, t: &Timing, streams: u16) -> Result<PccPolicy> {
        let bias = match &s.bias {
            None => vec![1.0; streams as usize],
            Some(w) if w.len() == streams as usize => w.clone(),
            Some(w) => {
                let given: Vec<String> = w.iter().map(f64::to_string).collect();
                return Err(Error::Spec(format!(
                    "policy pcc: bias={}: expected {streams} non-negative weights, one per \
                     trace stream",
                    given.join("/")
                )));
            }
        };
        Ok(PccPolicy {
            interval: t.accesses(s.interval_s),
            interval_s: s.interval_s,
            regions: s.regions,
            round_robin: s.round_robin,
            size: s.size,
            entries: s.entries,
            bias,
            pccs: (0..streams).map(|_| Pcc::new(s.entries)).collect(),
        })
    }

    fn shift(&self) -> u32 {
        if self.size == PageSize::Size1G {
            30
        } else {
            21
        }
    }

    /// The order in which this interval's candidates are tried.
    fn candidates(&self) -> Vec<u64> {
        let ranked: Vec<_> = self.pccs.iter().map(Pcc::ranked).collect();
        let mut out: Vec<u64> = Vec::new();
        if self.round_robin {
            let longest = ranked.iter().map(Vec::len).max().unwrap_or(0);
            for i in 0..longest {
                for r in &ranked {
                    if let Some(c) = r.get(i) {
                        out.push(c.tag);
                    }
                }
            }
        } else {
            let mut all: Vec<(f64, u64)> = Vec::new();
            for (s, r) in ranked.iter().enumerate() {
                all.extend(r.iter().map(|c| (f64::from(c.count) * self.bias[s], c.tag)));
            }
            all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            out.extend(all.into_iter().map(|(_, t)| t));
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|t| seen.insert(*t));
        out
    }
}

impl Policy for PccPolicy {
    fn label(&self) -> String {
        format!(
            "pcc:order={}:size={}:interval={}s:regions={}:entries={}",
            if self.round_robin { "rr" } else { "freq" },
            if self.size == PageSize::Size1G {
                "1g"
            } else {
                "2m"
            },
            self.interval_s,
            self.regions,
            self.entries
        )
    }

    fn interval(&self) -> Option<u64> {
        Some(self.interval)
    }

    fn on_walk(&mut self, _cx: &mut Ctx<'_>, w: &Walk) {
        if w.size < self.size {
            let tag = w.addr >> self.shift();
            if let Some(p) = self.pccs.get_mut(w.stream as usize) {
                p.walk(tag, w.frame_seen);
            }
        }
    }

    fn on_tick(&mut self, cx: &mut Ctx<'_>) {
        let mut done = 0;
        for tag in self.candidates() {
            if done >= self.regions || cx.budget().left() == 0 {
                break;
            }
            let id = cx.map.id(tag << self.shift());
            if cx.promote(id, self.size) {
                done += 1;
            }
            for p in &mut self.pccs {
                p.remove(tag);
            }
        }
    }
}
