//! Graph kernels, each beside an independent serial verifier.
//!
//! A [`Spec`] names a kernel and its settings; [`Spec::create`] makes a [`Kernel`], which owns
//! the kernel's working arrays as regions (so their page policy comes from the layout) and is
//! reused by every trial. Arrays that depend on the edge count are created by the first run,
//! which callers do untimed as a warm-up.
//!
//! Region groups, for `--pages`: `property` is every vertex-indexed array that the kernel reads
//! or writes at neighbours' ids (the scattered accesses that thrash the TLB); `frontier` is
//! queues, bitmaps and other working lists.

pub mod bc;
pub mod bfs;
pub mod cc;
pub mod pr;
pub mod sssp;
pub mod tc;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use serde::Serialize;

use crate::csr::RegionReport;
use crate::rng::SplitMix64;
use crate::{Csr, Error, Layout, Result};

/// A kernel with its working arrays.
pub trait Kernel: Send + Sync {
    /// Run once from `sources` (as many as [`Spec::sources_per_trial`] says). Only this is
    /// timed.
    fn run(&mut self, g: &Csr, sources: &[u32]) -> Result<()>;
    /// What the last run found, summarised after the clock stopped.
    fn outcome(&self, g: &Csr) -> Outcome;
    /// Check the last run's result against an independent serial implementation; the error
    /// says what is wrong.
    fn verify(&self, g: &Csr, sources: &[u32]) -> std::result::Result<(), String>;
    /// Size and backing of every working array.
    fn regions(&self) -> Result<Vec<RegionReport>>;
}

/// A kernel and its settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kernel")]
pub enum Spec {
    /// Breadth-first search.
    Bfs {
        /// Variant.
        mode: bfs::Mode,
    },
    /// Single-source shortest paths by delta-stepping.
    Sssp {
        /// Bucket width.
        delta: u32,
    },
    /// PageRank.
    Pr {
        /// Pull or push.
        mode: pr::Mode,
        /// Stop when the scores' total change in one iteration is below this.
        tolerance: f64,
        /// Stop after this many iterations in any case.
        max_iters: u32,
    },
    /// Connected components (weak, for directed graphs).
    Cc {
        /// Algorithm.
        algo: cc::Algo,
    },
    /// Betweenness centrality (Brandes) from several sources.
    Bc {
        /// Sources per trial.
        sources: u32,
    },
    /// Triangle counting, degree-ordered.
    Tc,
}

impl Spec {
    /// The kernel's short name.
    pub fn name(&self) -> &'static str {
        match self {
            Spec::Bfs { .. } => "bfs",
            Spec::Sssp { .. } => "sssp",
            Spec::Pr { .. } => "pr",
            Spec::Cc { .. } => "cc",
            Spec::Bc { .. } => "bc",
            Spec::Tc => "tc",
        }
    }

    /// The kernel with the GAP suite's benchmark settings.
    pub fn default_for(name: &str) -> Option<Spec> {
        Some(match name {
            "bfs" => Spec::Bfs {
                mode: bfs::Mode::DirectionOptimizing,
            },
            "sssp" => Spec::Sssp { delta: 2 },
            "pr" => Spec::Pr {
                mode: pr::Mode::Pull,
                tolerance: 1e-4,
                max_iters: 1000,
            },
            "cc" => Spec::Cc {
                algo: cc::Algo::Afforest,
            },
            "bc" => Spec::Bc { sources: 4 },
            "tc" => Spec::Tc,
            _ => return None,
        })
    }

    /// Whether the kernel reads edge weights.
    pub fn needs_weights(&self) -> bool {
        matches!(self, Spec::Sssp { .. })
    }

    /// Whether the kernel needs an undirected graph.
    pub fn needs_undirected(&self) -> bool {
        matches!(self, Spec::Tc)
    }

    /// Sources each trial takes.
    pub fn sources_per_trial(&self) -> usize {
        match self {
            Spec::Bfs { .. } | Spec::Sssp { .. } => 1,
            Spec::Bc { sources } => *sources as usize,
            Spec::Pr { .. } | Spec::Cc { .. } | Spec::Tc => 0,
        }
    }

    /// Check the settings and that `g` suits the kernel.
    pub fn check(&self, g: &Csr) -> Result<()> {
        match *self {
            Spec::Sssp { delta: 0 } => Err(Error::Invalid("sssp: delta must be at least 1".into())),
            Spec::Pr {
                tolerance,
                max_iters,
                ..
            } if !(tolerance >= 0.0 && tolerance.is_finite()) || max_iters == 0 => {
                Err(Error::Invalid(format!(
                    "pr: tolerance must be a finite number ≥ 0 (got {tolerance}) and the \
                     iteration cap at least 1 (got {max_iters})"
                )))
            }
            Spec::Bc { sources: 0 } => Err(Error::Invalid("bc: take at least one source".into())),
            _ if self.needs_weights() && !g.weighted() => Err(Error::Invalid(format!(
                "{} needs edge weights: use a .wel, .wsg or weighted .mtx file, or a \
                 generator (which then draws weights in [1, 255])",
                self.name()
            ))),
            _ if self.needs_undirected() && g.directed() => Err(Error::Invalid(format!(
                "{} needs an undirected graph: pass --symmetrize with a text edge list, \
                 or use a symmetric file",
                self.name()
            ))),
            _ => Ok(()),
        }
    }

    /// Create the kernel's vertex arrays for `n` vertices, in the layout's policies.
    pub fn create(&self, layout: &Layout, n: usize) -> Result<Box<dyn Kernel>> {
        Ok(match *self {
            Spec::Bfs { mode } => Box::new(bfs::Bfs::new(layout, n, mode)?),
            Spec::Sssp { delta } => Box::new(sssp::Sssp::new(layout, n, delta)?),
            Spec::Pr {
                mode,
                tolerance,
                max_iters,
            } => Box::new(pr::Pr::new(layout, n, mode, tolerance, max_iters)?),
            Spec::Cc { algo } => Box::new(cc::Cc::new(layout, n, algo)?),
            Spec::Bc { .. } => Box::new(bc::Bc::new(layout, n)?),
            Spec::Tc => Box::new(tc::Tc::new(layout)),
        })
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Spec::Bfs { mode } => write!(
                f,
                "bfs ({})",
                match mode {
                    bfs::Mode::TopDown => "top-down",
                    bfs::Mode::DirectionOptimizing => "direction-optimizing",
                }
            ),
            Spec::Sssp { delta } => write!(f, "sssp (delta {delta})"),
            Spec::Pr {
                mode,
                tolerance,
                max_iters,
            } => write!(
                f,
                "pr ({}, tolerance {tolerance:e}, at most {max_iters} iterations)",
                match mode {
                    pr::Mode::Pull => "pull",
                    pr::Mode::Push => "push",
                }
            ),
            Spec::Cc { algo } => write!(
                f,
                "cc ({})",
                match algo {
                    cc::Algo::Afforest => "Afforest",
                    cc::Algo::ShiloachVishkin => "Shiloach-Vishkin",
                }
            ),
            Spec::Bc { sources } => write!(f, "bc ({sources} sources a trial)"),
            Spec::Tc => write!(f, "tc (degree-ordered)"),
        }
    }
}

/// What one run found, per kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kernel")]
pub enum Outcome {
    /// BFS.
    Bfs(bfs::Stats),
    /// SSSP.
    Sssp {
        /// Vertices reached.
        reached: u64,
        /// Largest finite distance.
        max_dist: u64,
        /// Buckets processed (rounds of the shared frontier).
        rounds: u32,
    },
    /// PageRank.
    Pr {
        /// Iterations done.
        iterations: u32,
        /// Total change of the scores in the last iteration.
        last_change: f64,
    },
    /// Connected components.
    Cc {
        /// Components.
        components: u64,
        /// Vertices in the largest.
        largest: u64,
    },
    /// Betweenness centrality.
    Bc {
        /// Sources searched.
        sources: u32,
        /// Vertices reached, summed over sources.
        reached: u64,
    },
    /// Triangle counting.
    Tc {
        /// Triangles.
        triangles: u64,
        /// Whether vertices were ranked by degree (skewed degrees) rather than taken in id
        /// order.
        ranked: bool,
    },
}

impl Outcome {
    /// One line for tables.
    pub fn summary(&self) -> String {
        match self {
            Outcome::Bfs(s) => format!("{} reached, {} levels", s.reached, s.levels),
            Outcome::Sssp {
                reached, max_dist, ..
            } => format!("{reached} reached, max dist {max_dist}"),
            Outcome::Pr {
                iterations,
                last_change,
            } => format!("{iterations} iterations, change {last_change:.1e}"),
            Outcome::Cc {
                components,
                largest,
            } => format!("{components} components, largest {largest}"),
            Outcome::Bc { sources, reached } => format!("{sources} sources, {reached} reached"),
            Outcome::Tc { triangles, ranked } => format!(
                "{triangles} triangles ({})",
                if *ranked {
                    "ranked by degree"
                } else {
                    "id order"
                }
            ),
        }
    }
}

/// `count` source vertices drawn reproducibly from `seed`, none of them isolated (out-degree 0),
/// as the GAP suite's source picker does.
pub fn pick_sources(g: &Csr, seed: u64, count: usize) -> Result<Vec<u32>> {
    let mut rng = SplitMix64::new(seed, 0x5eed);
    let n = g.n() as u64;
    let mut out = Vec::with_capacity(count);
    let mut tries = 0u64;
    while out.len() < count {
        let v = rng.below(n) as u32;
        tries += 1;
        if g.out_degree(v) > 0 {
            out.push(v);
        } else if tries > 64 * n.max(1024) {
            return Err(Error::Invalid(
                "no vertex with outgoing edges to start from".into(),
            ));
        }
    }
    Ok(out)
}

/// Atomic `a += x` on an f32 stored as bits.
pub(crate) fn add_f32(a: &AtomicU32, x: f32) {
    let mut old = a.load(Relaxed);
    loop {
        let new = (f32::from_bits(old) + x).to_bits();
        match a.compare_exchange_weak(old, new, Relaxed, Relaxed) {
            Ok(_) => return,
            Err(cur) => old = cur,
        }
    }
}

/// Atomic `a += x` on an f64 stored as bits.
pub(crate) fn add_f64(a: &AtomicU64, x: f64) {
    let mut old = a.load(Relaxed);
    loop {
        let new = (f64::from_bits(old) + x).to_bits();
        match a.compare_exchange_weak(old, new, Relaxed, Relaxed) {
            Ok(_) => return,
            Err(cur) => old = cur,
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Graphs shared by the kernels' tests.

    use crate::build::{build_default, Edge, VecSource};
    use crate::gen::{Generator, Spec};
    use crate::Csr;

    /// A generated graph.
    pub fn generated(spec: &str, symmetrize: bool, weighted: bool) -> Csr {
        let mut g = Generator::new(spec.parse::<Spec>().expect("spec"), 3, weighted);
        build_default(&mut g, symmetrize).expect("build")
    }

    /// A graph from `(u, v, w)` triples over `n` vertices.
    pub fn from_edges(n: usize, edges: &[(u32, u32, u32)], symmetrize: bool) -> Csr {
        let mut src = VecSource {
            edges: edges.iter().map(|&(u, v, w)| Edge { u, v, w }).collect(),
            weighted: true,
            vertices: Some(n),
        };
        build_default(&mut src, symmetrize).expect("build")
    }
}
