//! Graph kernels as results name them: a kernel with its settings ([`Spec`]) and what one run
//! found ([`Outcome`]).

use serde::{Deserialize, Serialize};

/// A kernel and its settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kernel")]
pub enum Spec {
    /// Breadth-first search.
    Bfs {
        /// Variant.
        mode: BfsMode,
    },
    /// Single-source shortest paths by delta-stepping.
    Sssp {
        /// Bucket width as given (`--delta`, the GAP suite's `-d`); `null`: chosen from the
        /// graph by each run (the outcome says which and why).
        delta: Option<u32>,
    },
    /// PageRank.
    Pr {
        /// Pull or push.
        mode: PrMode,
        /// Stop when the scores' total change in one iteration is below this.
        tolerance: f64,
        /// Stop after this many iterations in any case.
        max_iters: u32,
    },
    /// Connected components (weak, for directed graphs).
    Cc {
        /// Algorithm.
        algo: CcAlgo,
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

    /// The kernel with the GAP suite's benchmark settings (sssp: its bucket width chosen from
    /// the graph, where the GAP suite takes one per graph from the command line).
    pub fn default_for(name: &str) -> Option<Spec> {
        Some(match name {
            "bfs" => Spec::Bfs {
                mode: BfsMode::DirectionOptimizing,
            },
            "sssp" => Spec::Sssp { delta: None },
            "pr" => Spec::Pr {
                mode: PrMode::PullGsBalanced,
                tolerance: 1e-4,
                max_iters: 1000,
            },
            "cc" => Spec::Cc {
                algo: CcAlgo::Afforest,
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
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Spec::Bfs { mode } => write!(
                f,
                "bfs ({})",
                match mode {
                    BfsMode::TopDown => "top-down",
                    BfsMode::DirectionOptimizing => "direction-optimizing",
                }
            ),
            Spec::Sssp { delta: Some(d) } => write!(f, "sssp (delta {d})"),
            Spec::Sssp { delta: None } => write!(f, "sssp (delta from the graph)"),
            Spec::Pr {
                mode,
                tolerance,
                max_iters,
            } => write!(
                f,
                "pr ({}, tolerance {tolerance:e}, at most {max_iters} iterations)",
                match mode {
                    PrMode::Pull => "pull",
                    PrMode::PullGs => "pull, Gauss-Seidel",
                    PrMode::PullGsBalanced => "pull, Gauss-Seidel, rebalanced",
                    PrMode::Push => "push",
                }
            ),
            Spec::Cc { algo } => write!(
                f,
                "cc ({})",
                match algo {
                    CcAlgo::Afforest => "Afforest",
                    CcAlgo::ShiloachVishkin => "Shiloach-Vishkin",
                }
            ),
            Spec::Bc { sources } => write!(f, "bc ({sources} sources a trial)"),
            Spec::Tc => write!(f, "tc (degree-ordered)"),
        }
    }
}

/// Which BFS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BfsMode {
    /// Top-down push only.
    TopDown,
    /// Direction-optimizing (Beamer).
    DirectionOptimizing,
}

/// Which direction contributions travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrMode {
    /// Each vertex gathers from its in-neighbours the contributions of the last iteration
    /// (Jacobi): how many iterations it takes does not depend on how the vertices are
    /// numbered, so a reordering changes only the time per iteration.
    Pull,
    /// Each vertex gathers from its in-neighbours, and its own contribution is refreshed as
    /// soon as its score is (Gauss–Seidel, as the GAP suite's `pr`): fewer iterations in some
    /// vertex orders, more in others (DBG's, hubs first, for one).
    PullGs,
    /// Gauss–Seidel as `PullGs`, with the total rank rebalanced after every iteration to the
    /// total the fixed point must have: the slow error Gauss–Seidel leaves in that total, which
    /// is what makes it sensitive to vertex order, is gone, and the iteration count depends
    /// little on how the vertices are numbered: DBG's order moves it by one at most on
    /// Kronecker and uniform graphs, but by 3 or 4 on a 2000x2000 road mesh and the cnr-2000
    /// web graph, where the rebalancing leaves part of the order's effect.
    PullGsBalanced,
    /// Each vertex scatters to its out-neighbours (atomic adds).
    Push,
}

/// Which algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CcAlgo {
    /// Afforest: sampled linking, skips the giant component.
    Afforest,
    /// Shiloach–Vishkin: hooking and shortcutting to a fixed point.
    ShiloachVishkin,
}

/// What one run found, per kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kernel")]
pub enum Outcome {
    /// BFS.
    Bfs(BfsStats),
    /// SSSP.
    Sssp {
        /// Vertices reached.
        reached: u64,
        /// Largest finite distance.
        max_dist: u64,
        /// Buckets processed (rounds of the shared frontier).
        rounds: u32,
        /// Bucket width used; `null` in results written before it was recorded.
        #[serde(default)]
        delta: Option<u32>,
        /// How that width was set: `given`, or the rule and the graph's figures it was chosen
        /// from; `null` in results written before it was recorded.
        #[serde(default)]
        delta_rule: Option<String>,
        /// Whether arcs were relaxed from one list of (neighbour, weight) pairs, made by the
        /// first run where it fits, rather than from the graph's two lists; `null` in results
        /// written before it was recorded.
        #[serde(default)]
        arc_pairs: Option<bool>,
    },
    /// PageRank.
    Pr {
        /// Iterations done.
        iterations: u32,
        /// Total change of the scores in the last iteration.
        last_change: f64,
        /// Iterations that ended by extrapolating away a sign-flipping error (Jacobi modes);
        /// `null` in results written before it was recorded.
        #[serde(default)]
        extrapolations: Option<u32>,
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
    /// What the kernel found, its timings left out (a BFS step's time): two runs of the same
    /// kernel from the same sources find the same, however long each took.
    pub fn untimed(&self) -> Outcome {
        let mut o = self.clone();
        if let Outcome::Bfs(s) = &mut o {
            for step in &mut s.steps {
                step.ns = 0;
            }
        }
        o
    }

    /// One line for tables.
    pub fn summary(&self) -> String {
        match self {
            Outcome::Bfs(s) => format!("{} reached, {} levels", s.reached, s.levels),
            Outcome::Sssp {
                reached,
                max_dist,
                delta,
                ..
            } => match delta {
                Some(d) => format!("{reached} reached, max dist {max_dist}, delta {d}"),
                None => format!("{reached} reached, max dist {max_dist}"),
            },
            Outcome::Pr {
                iterations,
                last_change,
                extrapolations: Some(k @ 1..),
            } => format!("{iterations} iterations ({k} extrapolated), change {last_change:.1e}"),
            Outcome::Pr {
                iterations,
                last_change,
                ..
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

/// What one search did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BfsStats {
    /// Vertices reached, the source included.
    pub reached: u64,
    /// Levels explored.
    pub levels: u32,
    /// Steps done top-down.
    pub top_down_steps: u32,
    /// Steps done bottom-up.
    pub bottom_up_steps: u32,
    /// Every step in order with its time (GAP's `bfs -l` prints the same); empty in results
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<BfsStep>,
}

/// One step of a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BfsStep {
    /// What the step did.
    pub kind: BfsStepKind,
    /// Vertices it found (a search step) or listed (a conversion); slots written (a reset).
    pub vertices: u64,
    /// Wall time.
    pub ns: u64,
}

/// What a step of a search did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BfsStepKind {
    /// Made the parent slots `NONE` (those the search before wrote, or all).
    Reset,
    /// Expanded the frontier queue into the next level's queue.
    TopDown,
    /// Turned the frontier queue into a bitmap.
    QueueToBitmap,
    /// Every unreached vertex looked for a parent in the frontier bitmap.
    BottomUp,
    /// Turned the frontier bitmap back into a queue.
    BitmapToQueue,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sssp_results_saved_before_delta_was_chosen_still_read() {
        let spec: Spec = serde_json::from_str(r#"{"kernel":"sssp","delta":2}"#).expect("spec");
        assert_eq!(spec, Spec::Sssp { delta: Some(2) });
        let old = r#"{"kernel":"sssp","reached":5,"max_dist":9,"rounds":3}"#;
        let o: Outcome = serde_json::from_str(old).expect("outcome");
        assert_eq!(
            o,
            Outcome::Sssp {
                reached: 5,
                max_dist: 9,
                rounds: 3,
                delta: None,
                delta_rule: None,
                arc_pairs: None
            }
        );
        assert_eq!(o.summary(), "5 reached, max dist 9");
        let chosen = Spec::default_for("sssp").expect("sssp");
        assert_eq!(
            serde_json::to_string(&chosen).expect("json"),
            r#"{"kernel":"sssp","delta":null}"#
        );
        assert_eq!(chosen.to_string(), "sssp (delta from the graph)");
    }
}
