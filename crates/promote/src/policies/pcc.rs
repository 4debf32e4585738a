//! The promotion candidate cache's ranking in software: per target, the `capacity` chunks with
//! the highest access frequency, every count halved each interval so old heat fades, highest
//! first. The PCC counts page walks in hardware; here it counts access samples that a
//! cooperating program publishes, which stand for walks when the footprint is far beyond the
//! TLB's reach. As in the PCC, a chunk enters only once it has been touched before (some of its
//! pages are mapped).

use std::collections::HashMap;

use crate::policy::{ChunkInfo, Decision, Policy};

/// The software PCC.
#[derive(Debug, Clone)]
pub struct Pcc {
    /// Candidates kept per target (the PCC paper's 128 entries).
    pub capacity: usize,
    scores: HashMap<(i32, usize), f64>,
}

impl Default for Pcc {
    fn default() -> Self {
        Pcc {
            capacity: 128,
            scores: HashMap::new(),
        }
    }
}

impl Pcc {
    /// A PCC keeping `capacity` candidates per target.
    pub fn with_capacity(capacity: usize) -> Pcc {
        Pcc {
            capacity: capacity.max(1),
            scores: HashMap::new(),
        }
    }
}

impl Policy for Pcc {
    fn name(&self) -> &'static str {
        "pcc"
    }

    fn decide(&mut self, chunks: &[ChunkInfo], _interval_s: f64) -> Decision {
        let mut next: HashMap<(i32, usize), f64> = HashMap::with_capacity(self.scores.len());
        let mut ranked: Vec<(usize, f64)> = Vec::new();
        for (i, c) in chunks.iter().enumerate() {
            let key = (c.pid, c.addr);
            let old = self.scores.get(&key).copied().unwrap_or(0.0);
            let score = old / 2.0 + f64::from(c.samples);
            if score <= 0.0 || c.mapped_pages == 0 {
                continue;
            }
            ranked.push((i, score));
        }
        ranked.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
        // Each target keeps its `capacity` best, like one PCC per process.
        let mut per_target: HashMap<i32, usize> = HashMap::new();
        let mut d = Decision::default();
        for (i, score) in ranked {
            let c = &chunks[i];
            let n = per_target.entry(c.pid).or_default();
            if *n >= self.capacity {
                continue;
            }
            *n += 1;
            next.insert((c.pid, c.addr), score);
            if c.huge {
                d.keep.push((i, score));
            } else {
                d.promote.push((i, score));
            }
        }
        // Huge chunks no longer among the candidates are kept at score 0: the first to go when
        // the budget needs room.
        for (i, c) in chunks.iter().enumerate() {
            if c.huge && !next.contains_key(&(c.pid, c.addr)) {
                d.keep.push((i, 0.0));
            }
        }
        self.scores = next;
        d
    }
}
