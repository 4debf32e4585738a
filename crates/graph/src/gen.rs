//! Seeded synthetic graphs: Kronecker (Graph500 parameters, as the GAP suite's `-g`) and
//! uniform random (GAP's `-u`).
//!
//! Edges are made in fixed blocks, each from its own random stream `(seed, block)`, so a seed
//! gives the same graph whatever the thread count. Kronecker ids are then relabelled by a
//! seeded random permutation, as the GAP suite does, so that hubs are not simply the low ids.

use std::str::FromStr;

/// The generators' output version: raise it whenever a generator makes a different graph from
/// the same spec and seed, so that graphs cached under the old one are not taken for it.
pub const OUTPUT_VERSION: u32 = 1;

use rayon::prelude::*;

use crate::build::{Edge, EdgeSource};
use crate::rng::{mix, SplitMix64};
use crate::{Error, Result};

/// Graph500 Kronecker initiator probabilities (D = 1 − A − B − C = 0.05).
pub const KRON_A: f64 = 0.57;
/// See [`KRON_A`].
pub const KRON_B: f64 = 0.19;
/// See [`KRON_A`].
pub const KRON_C: f64 = 0.19;

/// The initiator as thresholds on a 16-bit draw: A, A + B, A + B + C times 2^16, rounded.
const KRON_A_16: u32 = (KRON_A * 65536.0 + 0.5) as u32;
const KRON_AB_16: u32 = ((KRON_A + KRON_B) * 65536.0 + 0.5) as u32;
const KRON_ABC_16: u32 = ((KRON_A + KRON_B + KRON_C) * 65536.0 + 0.5) as u32;

const BLOCK: u64 = 1 << 16;
const CHUNK_BLOCKS: u64 = 64;

/// Which generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Kronecker, skewed degrees.
    Kron,
    /// Uniform random endpoints.
    Urand,
}

/// A generator spec as written on the command line: `kron:22`, `urand:20`, `kron:22:8` (scale,
/// then optional edge factor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Generator.
    pub kind: Kind,
    /// log2 of the vertex count.
    pub scale: u32,
    /// Edges generated per vertex (16 by default, as Graph500 and GAP).
    pub edge_factor: u32,
}

impl FromStr for Spec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Spec> {
        let bad =
            |why: &str| Error::Invalid(format!("graph '{s}': {why} (e.g. kron:22, urand:20:8)"));
        let mut parts = s.split(':');
        let kind = match parts.next() {
            Some("kron") => Kind::Kron,
            Some("urand") => Kind::Urand,
            _ => return Err(bad("unknown generator; use kron or urand")),
        };
        let scale: u32 = parts
            .next()
            .ok_or_else(|| bad("missing scale"))?
            .parse()
            .map_err(|_| bad("scale is not a number"))?;
        if !(1..=31).contains(&scale) {
            return Err(bad("scale must be 1 to 31 (u32 vertex ids)"));
        }
        let edge_factor = match parts.next() {
            None => 16,
            Some(f) => f.parse().map_err(|_| bad("edge factor is not a number"))?,
        };
        if edge_factor == 0 || edge_factor > 1024 {
            return Err(bad("edge factor must be 1 to 1024"));
        }
        if parts.next().is_some() {
            return Err(bad("too many ':' parts"));
        }
        Ok(Spec {
            kind,
            scale,
            edge_factor,
        })
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            Kind::Kron => "kron",
            Kind::Urand => "urand",
        };
        write!(f, "{kind}:{}:{}", self.scale, self.edge_factor)
    }
}

/// A replayable stream of generated edges.
#[derive(Debug, Clone)]
pub struct Generator {
    spec: Spec,
    seed: u64,
    weighted: bool,
    permutation: Option<Vec<u32>>,
}

impl Generator {
    /// A generator for `spec` and `seed`; `weighted` adds weights in [1, 255], the same for
    /// both directions of an edge.
    pub fn new(spec: Spec, seed: u64, weighted: bool) -> Generator {
        let permutation =
            (spec.kind == Kind::Kron).then(|| permutation(1usize << spec.scale, seed));
        Generator {
            spec,
            seed,
            weighted,
            permutation,
        }
    }

    /// Vertex count.
    pub fn vertices(&self) -> usize {
        1usize << self.spec.scale
    }

    /// Edges generated (before duplicates and self-loops are removed).
    pub fn edges(&self) -> u64 {
        (self.vertices() as u64) * self.spec.edge_factor as u64
    }

    fn block(&self, b: u64, out: &mut Vec<Edge>) {
        let mut rng = SplitMix64::new(self.seed, b);
        let start = b * BLOCK;
        let end = (start + BLOCK).min(self.edges());
        let n = self.vertices() as u64;
        for _ in start..end {
            let (u, v) = match self.spec.kind {
                Kind::Urand => (rng.below(n) as u32, rng.below(n) as u32),
                Kind::Kron => {
                    let (mut u, mut v) = (0u32, 0u32);
                    let mut bits = 0u64;
                    for level in 0..self.spec.scale {
                        // Four levels per 64-bit draw: a 16-bit field each, against integer
                        // thresholds (the initiator rounded to 1/65536).
                        if level % 4 == 0 {
                            bits = rng.next_u64();
                        }
                        let r = (bits & 0xffff) as u32;
                        bits >>= 16;
                        let down = r >= KRON_AB_16;
                        let right = if down {
                            r >= KRON_ABC_16
                        } else {
                            r >= KRON_A_16
                        };
                        u = u << 1 | down as u32;
                        v = v << 1 | right as u32;
                    }
                    match &self.permutation {
                        Some(p) => (p[u as usize], p[v as usize]),
                        None => (u, v),
                    }
                }
            };
            let w = if self.weighted {
                let key = (u.min(v) as u64) << 32 | u.max(v) as u64;
                1 + (mix(key ^ self.seed.rotate_left(17)) % 255) as u32
            } else {
                1
            };
            out.push(Edge { u, v, w });
        }
    }
}

fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    let mut rng = SplitMix64::new(seed, u64::MAX);
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        p.swap(i, j);
    }
    p
}

/// Make `blocks` blocks of edges with `make`, [`CHUNK_BLOCKS`] at a time on every thread, and
/// hand them to `f` in block order (so the stream is the same whatever the thread count).
pub(crate) fn blocks_in_order(
    blocks: u64,
    make: impl Fn(u64) -> Vec<Edge> + Sync,
    f: &mut dyn FnMut(&[Edge]) -> Result<()>,
) -> Result<()> {
    let mut first = 0;
    while first < blocks {
        let last = (first + CHUNK_BLOCKS).min(blocks);
        let parts: Vec<Vec<Edge>> = (first..last).into_par_iter().map(&make).collect();
        for p in &parts {
            f(p)?;
            crate::io::progress::add(p.len() as u64);
        }
        first = last;
    }
    Ok(())
}

impl EdgeSource for Generator {
    fn each_chunk(&mut self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()> {
        let make = |b| {
            let mut v = Vec::with_capacity(BLOCK as usize);
            self.block(b, &mut v);
            v
        };
        crate::io::progress::begin_edges(self.edges());
        blocks_in_order(self.edges().div_ceil(BLOCK), make, f)
    }

    fn weighted(&self) -> bool {
        self.weighted
    }

    fn vertices(&self) -> Option<usize> {
        Some(self.vertices())
    }

    fn edges_hint(&self) -> Option<u64> {
        Some(self.edges())
    }

    fn name(&self) -> String {
        self.spec.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::edges_of as collect;

    #[test]
    fn specs_parse_and_bad_ones_say_why() {
        let s: Spec = "kron:10".parse().expect("kron");
        assert_eq!((s.kind, s.scale, s.edge_factor), (Kind::Kron, 10, 16));
        let s: Spec = "urand:8:4".parse().expect("urand");
        assert_eq!(s.edge_factor, 4);
        for (bad, why) in [
            ("rmat:10", "unknown generator"),
            ("kron", "missing scale"),
            ("kron:40", "1 to 31"),
            ("kron:x", "not a number"),
            ("kron:4:0", "1 to 1024"),
        ] {
            let e = bad.parse::<Spec>().expect_err(bad).to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn same_seed_same_edges_whatever_the_threads() {
        let spec: Spec = "kron:12".parse().expect("spec");
        let a = collect(&mut Generator::new(spec, 7, true));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let b = pool.install(|| collect(&mut Generator::new(spec, 7, true)));
        assert_eq!(a, b);
        assert_eq!(a.len(), 16 << 12);
        let c = collect(&mut Generator::new(spec, 8, true));
        assert_ne!(a, c);
        assert!(a
            .iter()
            .all(|e| (1..=255).contains(&e.w) && e.u < 4096 && e.v < 4096));
    }

    #[test]
    fn uniform_edges_are_nearly_all_distinct() {
        // 2^20 edges among 2^32 ordered pairs: almost no duplicates, unless blocks repeat.
        let spec: Spec = "urand:16".parse().expect("spec");
        let mut all: Vec<(u32, u32)> = collect(&mut Generator::new(spec, 1, false))
            .into_iter()
            .map(|e| (e.u, e.v))
            .collect();
        let generated = all.len();
        all.sort_unstable();
        all.dedup();
        assert!(
            all.len() as f64 > 0.999 * generated as f64,
            "{} of {generated} distinct",
            all.len()
        );
    }

    #[test]
    fn kronecker_is_skewed_and_urand_is_not() {
        let deg = |kind: &str| {
            let spec: Spec = kind.parse().expect("spec");
            let mut d = vec![0u32; 1 << 12];
            for e in collect(&mut Generator::new(spec, 1, false)) {
                d[e.u as usize] += 1;
                d[e.v as usize] += 1;
            }
            d.sort_unstable();
            (d[d.len() - 1], d[d.len() / 2])
        };
        let (kmax, kmed) = deg("kron:12");
        let (umax, umed) = deg("urand:12");
        assert!(kmax > 20 * kmed.max(1), "kron max {kmax} median {kmed}");
        assert!(umax < 3 * umed, "urand max {umax} median {umed}");
    }
}
