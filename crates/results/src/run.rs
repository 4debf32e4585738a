//! What `hugewise run` and `hugewise graph info` report: trials of a kernel, load and reorder times, every array's backing.

use serde::{Deserialize, Serialize};

use crate::graph::{Degrees, GraphInfo, LoadStats, RegionReport, ReorderStats};
use crate::kernel::{Outcome, Spec};
use crate::stats::Summary;

/// One timed trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Source vertices, in the input's original ids (none for kernels that take none).
    pub sources: Vec<u32>,
    /// Kernel wall time.
    pub kernel_ns: u64,
    /// Edges per second (GAP's count of edges / kernel time).
    pub edges_per_s: f64,
    /// What the kernel found.
    pub outcome: Outcome,
    /// Verified against the serial reference; `null` when not checked.
    pub verified: Option<bool>,
    /// Time the verifier took, kept apart.
    pub verify_ns: Option<u64>,
    /// What the verifier found wrong, when it did.
    pub verify_error: Option<String>,
    /// Worker threads of this trial, when they vary by trial (`--overcommit auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// Telemetry over this trial, when sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::Summary>,
}

/// The result of `hugewise run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Graph spec as given.
    pub graph_spec: String,
    /// The graph.
    pub graph: GraphInfo,
    /// Kernel and settings.
    pub kernel: Spec,
    /// Worker threads.
    pub threads: usize,
    /// The CPU each worker thread was bound to, by thread index; empty (and absent) when the
    /// threads were left to the scheduler, and in results from before threads were bound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads_bound_to: Vec<usize>,
    /// Page policies, in canonical form.
    pub pages: String,
    /// Allocation order.
    pub alloc_order: String,
    /// Load and build time, apart from kernel time.
    pub load: LoadStats,
    /// Reordering time, apart from load and kernel time; `null` when not reordered.
    pub reorder: Option<ReorderStats>,
    /// Every trial.
    pub trials: Vec<Trial>,
    /// Kernel time over trials.
    pub kernel_ns: Summary,
    /// Every array, graph and kernel, with its backing read after the last trial.
    pub regions: Vec<RegionReport>,
    /// Bytes in huge pages over all arrays / bytes mapped for them.
    pub huge_footprint_share: f64,
    /// Peak resident memory of the process.
    pub peak_rss_bytes: u64,
    /// The trials published one access in this many of those their sampler saw to a
    /// promotion daemon (their times include that cost); absent when they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_every: Option<u32>,
    /// A promotion plan replayed on the run's own arrays while its trials ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<RunReplay>,
    /// Telemetry sampled over the trials; absent when not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::Telemetry>,
    /// The memory limit the trials ran under; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::telemetry::MemoryLimit>,
    /// How the overcommit factor was chosen, with `--overcommit auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overcommit: Option<crate::telemetry::OvercommitChoice>,
}

/// A promotion plan replayed in the run's own process (`run --promote`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReplay {
    /// The plan file.
    pub plan: std::path::PathBuf,
    /// Which configuration's plan (policy and budget).
    pub label: String,
    /// Steps in the plan.
    pub steps: usize,
    /// Every action, as read back from the kernel, timed (`t_ms`) from the first trial's
    /// start: the steps due at the start were made just before it, at negative times.
    pub actions: Vec<crate::promote::Action>,
    /// Totals over the actions.
    pub totals: crate::promote::Totals,
}

impl RunReport {
    /// Trials whose result the verifier rejected.
    pub fn failed_verification(&self) -> usize {
        self.trials
            .iter()
            .filter(|t| t.verified == Some(false))
            .count()
    }
}

/// The result of `hugewise graph info`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InfoReport {
    /// Graph spec as given.
    pub graph_spec: String,
    /// The graph.
    pub graph: GraphInfo,
    /// Out-degrees.
    pub degrees: Degrees,
    /// Load time.
    pub load: LoadStats,
    /// Every array with its size and backing.
    pub regions: Vec<RegionReport>,
}
