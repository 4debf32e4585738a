//! How much memory may be huge, and how targets share it: a budget in bytes or as a share of
//! the targets' mapped memory, shared highest score first or round-robin across targets (the
//! PCC paper's two OS policies), with a per-process bias that scales a target's scores.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::policy::ChunkInfo;
use crate::HUGE;

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
