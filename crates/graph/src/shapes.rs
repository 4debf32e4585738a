//! Shaped graphs for high-diameter and pathological inputs: `grid:W×H` (a 4-neighbour mesh),
//! `road:W×H` (a road-like mesh), `chain:N` (a path) and `star:N` (one hub, N leaves).
//!
//! Kronecker and uniform graphs have a diameter of a few dozen hops; road networks and meshes
//! have thousands, and kernels that synchronise once per level or per distance bucket behave
//! very differently on them. These generators make such graphs in tests and benchmarks without
//! downloaded data. All are symmetric. Vertex `(x, y)` of a mesh has id `y · W + x`.
//!
//! Weights (drawn when a weighted graph is asked for) are a hash of the seed and the edge, so
//! a seed gives the same graph whatever the thread count: grid and road edges are metre-like,
//! uniform in [1, [`METRES_MAX`]]; chain and star edges are in [1, 255] as the Kronecker and
//! uniform generators' (a chain of a million metre-like hops would overflow 32-bit distances).
//! A very long mesh (`grid:1x100000`) or chain (over about 3 × 10^7 vertices) can still pass
//! 32-bit distances: SSSP then caps them, and `--verify` says so.

use std::str::FromStr;

use crate::build::{Edge, EdgeSource};
use crate::gen::blocks_in_order;
use crate::rng::mix;
use crate::{Error, Result};

/// The largest weight of a grid or road edge: "metres" in [1, 10^5].
pub const METRES_MAX: u32 = 100_000;

/// Per mille of a road's grid edges that are removed (dead ends, blocks without a through
/// street): the mean degree drops from 4 to about 2.8, as in real road networks.
pub const ROAD_REMOVED_PER_MILLE: u64 = 300;

/// Per mille of a road's blocks (grid cells) crossed by a diagonal shortcut.
pub const ROAD_DIAGONAL_PER_MILLE: u64 = 20;

/// Edge slots per piece of work.
const PIECE: u64 = 1 << 16;

/// A shaped graph as written on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spec {
    /// `grid:W×H`: W × H vertices, each joined to its left, right, upper and lower neighbour.
    Grid {
        /// Vertices per row.
        width: u32,
        /// Rows.
        height: u32,
    },
    /// `road:W×H`: a grid with [`ROAD_REMOVED_PER_MILLE`] of its edges removed and a diagonal
    /// across [`ROAD_DIAGONAL_PER_MILLE`] of its cells, chosen by the seed.
    Road {
        /// Vertices per row.
        width: u32,
        /// Rows.
        height: u32,
    },
    /// `chain:N`: the path 0 – 1 – … – N−1.
    Chain {
        /// Vertices.
        vertices: u32,
    },
    /// `star:N`: vertex 0 joined to each of vertices 1 to N.
    Star {
        /// Leaves.
        leaves: u32,
    },
}

/// Whether `s` names a shaped graph (and is to be parsed as one).
pub fn is_shape(s: &str) -> bool {
    ["grid:", "road:", "chain:", "star:"]
        .iter()
        .any(|p| s.starts_with(p))
}

impl FromStr for Spec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Spec> {
        let bad = |why: &str| {
            Error::Invalid(format!(
                "graph '{s}': {why} (e.g. grid:1000x1000, road:1000x1000, chain:1000000, \
                 star:1000000)"
            ))
        };
        let (kind, arg) = s.split_once(':').ok_or_else(|| bad("missing size"))?;
        let number = |t: &str, what: &str| -> Result<u32> {
            t.trim()
                .parse::<u32>()
                .map_err(|_| bad(&format!("{what} is not a number from 1 to 4294967295")))
        };
        let mesh = || -> Result<(u32, u32)> {
            let (w, h) = arg
                .split_once(['x', 'X', '×'])
                .ok_or_else(|| bad("write the size as WIDTHxHEIGHT"))?;
            let (w, h) = (number(w, "width")?, number(h, "height")?);
            let n = w as u64 * h as u64;
            if w == 0 || h == 0 || n < 2 {
                return Err(bad("a mesh needs at least 2 vertices"));
            }
            if n > u32::MAX as u64 {
                return Err(bad("width × height must stay below 2^32 (u32 vertex ids)"));
            }
            Ok((w, h))
        };
        Ok(match kind {
            "grid" => {
                let (width, height) = mesh()?;
                Spec::Grid { width, height }
            }
            "road" => {
                let (width, height) = mesh()?;
                Spec::Road { width, height }
            }
            "chain" => {
                let vertices = number(arg, "the vertex count")?;
                if vertices < 2 {
                    return Err(bad("a chain needs at least 2 vertices"));
                }
                Spec::Chain { vertices }
            }
            "star" => {
                let leaves = number(arg, "the leaf count")?;
                if leaves == 0 || leaves == u32::MAX {
                    return Err(bad("a star needs 1 to 4294967294 leaves"));
                }
                Spec::Star { leaves }
            }
            _ => return Err(bad("unknown shape; use grid, road, chain or star")),
        })
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Spec::Grid { width, height } => write!(f, "grid:{width}x{height}"),
            Spec::Road { width, height } => write!(f, "road:{width}x{height}"),
            Spec::Chain { vertices } => write!(f, "chain:{vertices}"),
            Spec::Star { leaves } => write!(f, "star:{leaves}"),
        }
    }
}

impl Spec {
    /// Vertex count.
    pub fn vertices(&self) -> u64 {
        match *self {
            Spec::Grid { width, height } | Spec::Road { width, height } => {
                width as u64 * height as u64
            }
            Spec::Chain { vertices } => vertices as u64,
            Spec::Star { leaves } => leaves as u64 + 1,
        }
    }

    /// Edge slots: the edges a grid or road may have (a road keeps fewer), one per vertex but
    /// one for a chain, one per leaf for a star.
    pub fn slots(&self) -> u64 {
        match *self {
            Spec::Grid { width, height } | Spec::Road { width, height } => {
                let (w, h) = (width as u64, height as u64);
                let mesh = (w - 1) * h + w * (h - 1);
                let cells = (w - 1) * (h - 1);
                if matches!(self, Spec::Road { .. }) {
                    mesh + cells
                } else {
                    mesh
                }
            }
            Spec::Chain { vertices } => vertices as u64 - 1,
            Spec::Star { leaves } => leaves as u64,
        }
    }
}

/// A replayable stream of a shaped graph's edges.
#[derive(Debug, Clone)]
pub struct Shaped {
    spec: Spec,
    seed: u64,
    weighted: bool,
}

impl Shaped {
    /// The graph `spec` for `seed`; `weighted` draws weights (see the module's documentation).
    pub fn new(spec: Spec, seed: u64, weighted: bool) -> Shaped {
        Shaped {
            spec,
            seed,
            weighted,
        }
    }

    /// A hash of the seed and slot `i`, different for each use (`salt`).
    fn hash(&self, salt: u64, i: u64) -> u64 {
        mix(i ^ salt.rotate_left(56) ^ self.seed.rotate_left(23))
    }

    fn weight(&self, i: u64, max: u32) -> u32 {
        if self.weighted {
            1 + (self.hash(1, i) % max as u64) as u32
        } else {
            1
        }
    }

    /// The edge in slot `i`, if the graph has it. Mesh slots: horizontal edges row by row,
    /// then vertical ones, then (roads) one per cell for a diagonal.
    fn slot(&self, i: u64) -> Option<Edge> {
        let (width, height, road) = match self.spec {
            Spec::Grid { width, height } => (width as u64, height as u64, false),
            Spec::Road { width, height } => (width as u64, height as u64, true),
            Spec::Chain { .. } => {
                let (u, v) = (i as u32, i as u32 + 1);
                return Some(Edge {
                    u,
                    v,
                    w: self.weight(i, 255),
                });
            }
            Spec::Star { .. } => {
                return Some(Edge {
                    u: 0,
                    v: i as u32 + 1,
                    w: self.weight(i, 255),
                })
            }
        };
        let horizontal = (width - 1) * height;
        let vertical = width * (height - 1);
        let id = |x: u64, y: u64| (y * width + x) as u32;
        let (u, v) = if i < horizontal {
            let (y, x) = (i / (width - 1), i % (width - 1));
            (id(x, y), id(x + 1, y))
        } else if i < horizontal + vertical {
            let j = i - horizontal;
            let (y, x) = (j / width, j % width);
            (id(x, y), id(x, y + 1))
        } else {
            let j = i - horizontal - vertical;
            if self.hash(2, i) % 1000 >= ROAD_DIAGONAL_PER_MILLE {
                return None;
            }
            let (y, x) = (j / (width - 1), j % (width - 1));
            if self.hash(3, i) & 1 == 0 {
                (id(x, y), id(x + 1, y + 1))
            } else {
                (id(x + 1, y), id(x, y + 1))
            }
        };
        if road && i < horizontal + vertical && self.hash(2, i) % 1000 < ROAD_REMOVED_PER_MILLE {
            return None;
        }
        Some(Edge {
            u,
            v,
            w: self.weight(i, METRES_MAX),
        })
    }
}

impl EdgeSource for Shaped {
    fn each_chunk(&mut self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()> {
        let slots = self.spec.slots();
        let make = |p: u64| {
            (p * PIECE..((p + 1) * PIECE).min(slots))
                .filter_map(|i| self.slot(i))
                .collect()
        };
        crate::io::progress::begin_edges(slots);
        blocks_in_order(slots.div_ceil(PIECE), make, f)
    }

    fn weighted(&self) -> bool {
        self.weighted
    }

    fn vertices(&self) -> Option<usize> {
        Some(self.spec.vertices() as usize)
    }

    fn declared_edges(&self) -> Option<u64> {
        Some(self.spec.slots())
    }

    fn name(&self) -> String {
        self.spec.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::build_default;
    use crate::kernels::testing::edges_of as collect;

    fn shape(s: &str, weighted: bool) -> Shaped {
        Shaped::new(s.parse().expect("spec"), 5, weighted)
    }

    #[test]
    fn specs_parse_both_ways_and_bad_ones_say_why() {
        for (s, want) in [
            (
                "grid:1000x1000",
                Spec::Grid {
                    width: 1000,
                    height: 1000,
                },
            ),
            (
                "grid:30×20",
                Spec::Grid {
                    width: 30,
                    height: 20,
                },
            ),
            (
                "road:4X5",
                Spec::Road {
                    width: 4,
                    height: 5,
                },
            ),
            ("chain:10", Spec::Chain { vertices: 10 }),
            ("star:7", Spec::Star { leaves: 7 }),
        ] {
            let got: Spec = s.parse().expect(s);
            assert_eq!(got, want, "{s}");
            assert_eq!(got.to_string().parse::<Spec>().expect("again"), want);
        }
        assert_eq!(
            "grid:30×20".parse::<Spec>().expect("grid").to_string(),
            "grid:30x20"
        );
        for (bad, why) in [
            ("grid:10", "WIDTHxHEIGHT"),
            ("grid:0x10", "at least 2 vertices"),
            ("grid:1x1", "at least 2 vertices"),
            ("grid:70000x70000", "below 2^32"),
            ("road:ax3", "width is not a number"),
            ("chain:1", "at least 2"),
            ("chain:-4", "not a number"),
            ("star:0", "1 to 4294967294"),
            ("ring:5", "unknown shape"),
        ] {
            let e = bad.parse::<Spec>().expect_err(bad).to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn a_grid_is_a_four_neighbour_mesh_with_metre_like_weights() {
        let g = build_default(&mut shape("grid:5x4", true), true).expect("build");
        assert_eq!((g.n(), g.edges()), (20, 4 * 4 + 5 * 3));
        // Corners have 2 neighbours, borders 3, the inside 4.
        assert_eq!(g.out_neighbors(0), [1, 5]);
        assert_eq!(g.out_neighbors(7), [2, 6, 8, 12]);
        assert_eq!(g.out_neighbors(19), [14, 18]);
        let w = collect(&mut shape("grid:300x300", true));
        assert!(w.iter().all(|e| (1..=METRES_MAX).contains(&e.w)));
        let mean = w.iter().map(|e| e.w as f64).sum::<f64>() / w.len() as f64;
        assert!(
            (mean - METRES_MAX as f64 / 2.0).abs() < 2000.0,
            "mean {mean}"
        );
        assert!(collect(&mut shape("grid:30x30", false))
            .iter()
            .all(|e| e.w == 1));
    }

    #[test]
    fn a_road_loses_streets_and_gains_diagonals() {
        let spec: Spec = "road:400x300".parse().expect("spec");
        let g = build_default(&mut Shaped::new(spec, 5, true), true).expect("build");
        let mean = g.arcs() as f64 / g.n() as f64;
        assert!((2.6..3.0).contains(&mean), "mean degree {mean}");
        let diagonals = (0..g.n() as u32)
            .flat_map(|u| g.out_neighbors(u).iter().map(move |&v| (u, v)))
            .filter(|&(u, v)| u.abs_diff(v) == 399 || u.abs_diff(v) == 401)
            .count()
            / 2;
        let cells = 399 * 299;
        assert!(
            (cells / 100..cells / 25).contains(&diagonals),
            "{diagonals} diagonals in {cells} cells"
        );
        let other = build_default(&mut Shaped::new(spec, 6, true), true).expect("build");
        assert_ne!(g.arcs(), other.arcs(), "the seed chooses the streets");
    }

    #[test]
    fn same_seed_same_edges_whatever_the_threads() {
        for s in ["road:700x200", "chain:200000", "star:100000"] {
            let a = collect(&mut shape(s, true));
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .expect("pool");
            let b = pool.install(|| collect(&mut shape(s, true)));
            assert_eq!(a, b, "{s}");
        }
    }

    #[test]
    fn chains_and_stars() {
        let g = build_default(&mut shape("chain:6", true), true).expect("chain");
        assert_eq!((g.n(), g.edges()), (6, 5));
        assert_eq!(g.out_neighbors(3), [2, 4]);
        assert!((0..6).all(|v| g.out_weights(v).iter().all(|w| (1..=255).contains(w))));
        let g = build_default(&mut shape("star:9", false), true).expect("star");
        assert_eq!((g.n(), g.out_degree(0)), (10, 9));
        assert!((1..10).all(|v| g.out_neighbors(v) == [0]));
    }
}
