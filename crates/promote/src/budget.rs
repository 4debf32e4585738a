//! How much memory may be huge, and how targets share it: a budget in bytes or as a share of
//! the targets' mapped memory, shared highest score first or round-robin across targets (the
//! PCC paper's two OS policies), with a per-process bias that scales a target's scores.

use std::collections::HashMap;
use std::str::FromStr;

use hugewise_mem::Amount;
use serde::{Deserialize, Serialize};

use crate::policy::ChunkInfo;
use crate::{Error, Result, HUGE};

/// The size of the budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// At most this many bytes huge.
    Bytes(u64),
    /// At most this share (0..=1) of the targets' mapped memory, re-read every interval.
    Share(f64),
}

impl Limit {
    /// The budget in bytes, whole 2 MiB pages, for targets with `mapped_bytes` mapped.
    pub fn bytes(&self, mapped_bytes: u64) -> u64 {
        let b = match *self {
            Limit::Bytes(b) => b,
            Limit::Share(s) => (mapped_bytes as f64 * s) as u64,
        };
        b / HUGE as u64 * HUGE as u64
    }
}

impl From<Amount> for Limit {
    /// A budget as users write it: a size, or a share of the mapped memory (`2%`).
    fn from(a: Amount) -> Limit {
        match a {
            Amount::Bytes(b) => Limit::Bytes(b.0),
            Amount::Percent(p) => Limit::Share(p / 100.0),
        }
    }
}

/// How targets share the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Share {
    /// All candidates by score, whichever target they belong to.
    #[default]
    HighestFirst,
    /// Each target's best, then each target's second best, and so on.
    RoundRobin,
}

impl FromStr for Share {
    type Err = Error;

    /// `highest` or `round-robin`, as users name them.
    fn from_str(s: &str) -> Result<Share> {
        match s {
            "highest" => Ok(Share::HighestFirst),
            "round-robin" => Ok(Share::RoundRobin),
            _ => Err(Error::Usage(format!(
                "'{s}': targets share highest or round-robin"
            ))),
        }
    }
}

/// A factor on one process's scores, as users write it: `PID=FACTOR` (`4243=2`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bias {
    /// The process.
    pub pid: i32,
    /// The factor, positive.
    pub factor: f64,
}

impl FromStr for Bias {
    type Err = Error;

    fn from_str(s: &str) -> Result<Bias> {
        let bad = |why: String| Error::Usage(why);
        let (p, f) = s
            .split_once('=')
            .ok_or_else(|| bad(format!("'{s}': expected PID=FACTOR")))?;
        let pid = p
            .trim()
            .parse()
            .map_err(|_| bad(format!("'{p}' is not a pid")))?;
        let factor: f64 = f
            .trim()
            .parse()
            .map_err(|_| bad(format!("'{f}' is not a number")))?;
        if !(factor > 0.0 && factor.is_finite()) {
            return Err(bad(format!("'{s}': the factor must be positive")));
        }
        Ok(Bias { pid, factor })
    }
}

/// The factors of `biases` by process, for [`order`].
pub fn by_pid(biases: &[Bias]) -> HashMap<i32, f64> {
    biases.iter().map(|b| (b.pid, b.factor)).collect()
}

/// Order `candidates` (chunk index, score) for promotion under `share`, scores scaled by each
/// pid's `bias` (1 when absent). Returns chunk indices, best first.
pub fn order(
    candidates: &[(usize, f64)],
    chunks: &[ChunkInfo],
    share: Share,
    bias: &HashMap<i32, f64>,
) -> Vec<usize> {
    let scaled = |&(i, s): &(usize, f64)| (i, s * bias.get(&chunks[i].pid).copied().unwrap_or(1.0));
    let mut all: Vec<(usize, f64)> = candidates.iter().map(scaled).collect();
    all.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    match share {
        Share::HighestFirst => all.into_iter().map(|(i, _)| i).collect(),
        Share::RoundRobin => {
            // Per target, in score order; then one from each in turn, targets in pid order.
            let mut lists: std::collections::BTreeMap<i32, std::collections::VecDeque<usize>> =
                Default::default();
            for (i, _) in all {
                lists.entry(chunks[i].pid).or_default().push_back(i);
            }
            let mut out = Vec::with_capacity(candidates.len());
            while lists.values().any(|l| !l.is_empty()) {
                for l in lists.values_mut() {
                    if let Some(i) = l.pop_front() {
                        out.push(i);
                    }
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(pid: i32, addr: usize) -> ChunkInfo {
        ChunkInfo {
            pid,
            addr,
            mapped_pages: 512,
            huge: false,
            samples: 0,
            sampled_pages: 0,
            walks: 0,
            sampled: true,
        }
    }

    #[test]
    fn budgets_are_whole_huge_pages() {
        // A share of 100 MiB mapped at 4 %: 4 MiB, two huge pages; 3 % rounds down to one.
        assert_eq!(Limit::Share(0.04).bytes(100 << 20), 4 << 20);
        assert_eq!(Limit::Share(0.03).bytes(100 << 20), 2 << 20);
    }

    #[test]
    fn budgets_biases_and_sharing_as_users_write_them() {
        let limit = |s: &str| Limit::from(s.parse::<Amount>().expect(s));
        assert_eq!(limit("2%"), Limit::Share(0.02));
        assert_eq!(limit("512MiB"), Limit::Bytes(512 << 20));
        let bias = |s: &str| s.parse::<Bias>().map_err(|e| e.to_string());
        assert_eq!(
            bias(" 4243 = 2 "),
            Ok(Bias {
                pid: 4243,
                factor: 2.0
            })
        );
        assert_eq!(bias("4243"), Err("'4243': expected PID=FACTOR".into()));
        assert_eq!(bias("x=2"), Err("'x' is not a pid".into()));
        assert_eq!(bias("1=y"), Err("'y' is not a number".into()));
        for bad in ["1=0", "1=-2", "1=inf"] {
            assert_eq!(
                bias(bad),
                Err(format!("'{bad}': the factor must be positive"))
            );
        }
        let biases = [bias("1=2").expect("1=2"), bias("1=3").expect("1=3")];
        assert_eq!(by_pid(&biases), HashMap::from([(1, 3.0)]));
        assert_eq!("round-robin".parse::<Share>().ok(), Some(Share::RoundRobin));
        assert_eq!("highest".parse::<Share>().ok(), Some(Share::HighestFirst));
        assert!("lowest".parse::<Share>().is_err());
    }

    #[test]
    fn highest_first_and_round_robin_with_bias() {
        // pid 1 has chunks scored 10, 9, 8; pid 2 has 5, 4.
        let chunks = [
            chunk(1, 0),
            chunk(1, HUGE),
            chunk(1, 2 * HUGE),
            chunk(2, 0),
            chunk(2, HUGE),
        ];
        let cands = [(0, 10.0), (1, 9.0), (2, 8.0), (3, 5.0), (4, 4.0)];
        let none = HashMap::new();
        assert_eq!(
            order(&cands, &chunks, Share::HighestFirst, &none),
            [0, 1, 2, 3, 4]
        );
        assert_eq!(
            order(&cands, &chunks, Share::RoundRobin, &none),
            [0, 3, 1, 4, 2]
        );
        // A bias of 3 for pid 2 makes its 5 and 4 into 15 and 12: both now lead.
        let bias = HashMap::from([(2, 3.0)]);
        assert_eq!(
            order(&cands, &chunks, Share::HighestFirst, &bias),
            [3, 4, 0, 1, 2]
        );
    }
}
