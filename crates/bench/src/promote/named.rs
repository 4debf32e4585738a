//! The workloads a user names for the promotion bench: named shapes, Zipf exponents and hot
//! spots (`4%:99%`), in that order, shaped by how each read goes.

use std::str::FromStr;

use super::driver::Workload;
use super::stream::Skew;
use crate::{Error, Result};

/// A workload known by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// [`Workload::hotspot`].
    Hotspot,
    /// [`Workload::nogain`].
    Nogain,
    /// Zipf reads with exponent 1, shaped as the Zipf and hot-spot workloads are.
    Zipf,
}

impl FromStr for Named {
    type Err = Error;

    fn from_str(s: &str) -> Result<Named> {
        match s {
            "hotspot" => Ok(Named::Hotspot),
            "nogain" => Ok(Named::Nogain),
            "zipf" => Ok(Named::Zipf),
            _ => Err(Error::Config(format!(
                "'{s}': a workload is hotspot, nogain or zipf"
            ))),
        }
    }
}

/// A hot spot as users write it, `CHUNKS:READS` in percent (`4%:99%`, the % signs optional):
/// a share `reads` of the reads on a share `chunks` of the chunks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hotspot {
    /// Share of the chunks that are hot, above 0 and below 1.
    pub chunks: f64,
    /// Share of the reads that go to them, 0 to 1.
    pub reads: f64,
}

impl FromStr for Hotspot {
    type Err = Error;

    fn from_str(s: &str) -> Result<Hotspot> {
        let pct = |p: &str| {
            let v: f64 = p.trim().trim_end_matches('%').parse().ok()?;
            (v.is_finite()).then_some(v / 100.0)
        };
        let (chunks, reads) = s
            .split_once(':')
            .and_then(|(c, r)| Some((pct(c)?, pct(r)?)))
            .ok_or_else(|| {
                Error::Config(format!(
                    "'{s}': a hot spot is CHUNKS:READS in percent, such as 4%:99%"
                ))
            })?;
        if !(chunks > 0.0 && chunks < 1.0 && (0.0..=1.0).contains(&reads)) {
            return Err(Error::Config(format!(
                "'{s}': the hot chunks are above 0% and below 100%, the reads from 0% to 100%"
            )));
        }
        Ok(Hotspot { chunks, reads })
    }
}

/// How the Zipf and hot-spot workloads read: `lines_per_page` lines of each page (64 when
/// `None`), each read waiting for the one before with `chase`. The named hot spot and no-gain
/// workloads read their own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reads {
    /// Cache lines of each 4 KiB page the reads go to [default: 64].
    pub lines_per_page: Option<u32>,
    /// Each read's address waits for the read before it.
    pub chase: bool,
}

/// The workloads asked for, in order: `named` ones, then one Zipf workload per exponent, then
/// one per hot spot; the hot spot and the no-gain workload when none is asked for. Shaping the
/// reads of a named hot spot or no-gain workload is refused.
pub fn workloads(
    named: &[Named],
    zipf: &[f64],
    hotspots: &[Hotspot],
    reads: Reads,
) -> Result<Vec<Workload>> {
    let own_way = named.iter().any(|&w| w != Named::Zipf);
    if own_way && (reads.lines_per_page.is_some() || reads.chase) {
        return Err(Error::Config(
            "--workload hotspot and nogain read their own way: --lines-per-page and --chase \
             shape zipf, --zipf and --hotspot (--hotspot 3.9%:99.9% --lines-per-page 1 --chase \
             is the named hot spot)"
                .into(),
        ));
    }
    let shaped = |skew| Workload {
        skew,
        lines_per_page: reads.lines_per_page.unwrap_or(64),
        chase: reads.chase,
    };
    let default = [Named::Hotspot, Named::Nogain];
    let named = match named.is_empty() && zipf.is_empty() && hotspots.is_empty() {
        true => &default[..],
        false => named,
    };
    Ok(named
        .iter()
        .map(|w| match w {
            Named::Hotspot => Workload::hotspot(),
            Named::Nogain => Workload::nogain(),
            Named::Zipf => shaped(Skew::Zipf(1.0)),
        })
        .chain(zipf.iter().map(|&s| shaped(Skew::Zipf(s))))
        .chain(hotspots.iter().map(|h| {
            shaped(Skew::Hotspot {
                chunks: h.chunks,
                reads: h.reads,
            })
        }))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hotspot(s: &str) -> std::result::Result<(f64, f64), String> {
        s.parse::<Hotspot>()
            .map(|h| (h.chunks, h.reads))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn without_workloads_named_the_hot_spot_and_the_no_gain_workload_run() {
        let none = Reads::default();
        let w = workloads(&[], &[], &[], none).expect("default");
        assert_eq!(w, [Workload::hotspot(), Workload::nogain()]);
        // Named ones first, then Zipf exponents, then hot spots, shaped by the read flags.
        let spot = "1%:99%".parse::<Hotspot>().expect("hot spot");
        let w = workloads(&[Named::Nogain, Named::Zipf], &[1.5], &[spot], none).expect("mixed");
        let skews: Vec<Skew> = w.iter().map(|w| w.skew).collect();
        assert_eq!(
            skews,
            [
                Workload::nogain().skew,
                Skew::Zipf(1.0),
                Skew::Zipf(1.5),
                Skew::Hotspot {
                    chunks: 0.01,
                    reads: 0.99
                }
            ]
        );
        let shaped = Reads {
            lines_per_page: Some(1),
            chase: true,
        };
        let w = workloads(&[], &[1.0], &[], shaped).expect("zipf");
        assert_eq!((w[0].lines_per_page, w[0].chase), (1, true));
        // A named shape keeps its own reads: flags that would change them are refused.
        let chase = Reads {
            chase: true,
            ..Reads::default()
        };
        let e = workloads(&[Named::Hotspot], &[], &[], chase).expect_err("refused");
        assert!(e.to_string().contains("read their own way"), "{e}");
        assert_eq!("nogain".parse::<Named>().ok(), Some(Named::Nogain));
        assert!("hot".parse::<Named>().is_err());
    }

    #[test]
    fn hot_spots_parse_as_shares_and_bad_ones_name_themselves() {
        assert_eq!(hotspot("4%:99%"), Ok((0.04, 0.99)));
        let (c, r) = hotspot(" 1 : 99.9 ").expect("no % signs");
        assert!(
            (c - 0.01).abs() < 1e-12 && (r - 0.999).abs() < 1e-12,
            "{c} {r}"
        );
        for bad in [
            "4%", "x:99%", "0%:99%", "100%:50%", "4%:101%", "4%:-1%", "nan:5",
        ] {
            let e = hotspot(bad).expect_err(bad);
            assert!(e.contains(&format!("'{bad}'")), "{e}");
        }
    }
}
