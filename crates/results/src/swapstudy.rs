//! What a study's `swap` run measured: one kernel under memory limits of several shares of
//! its footprint and several thread overcommit factors, each point a whole `hugewise run
//! --memory` result (trials, telemetry, the limit, the factor `auto` chose).

use serde::{Deserialize, Serialize};

use crate::run::RunReport;

/// A `swap` run of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwapStudy {
    /// The graph as given.
    pub graph_spec: String,
    /// Kernel name.
    pub kernel: String,
    /// Page policies of every array.
    pub pages: String,
    /// Vertex order the points ran in (`dbg`), `null` for the graph's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<String>,
    /// `vm.page-cluster` asked for (`null`: the machine's).
    pub page_cluster: Option<u32>,
    /// Every point, in the order run.
    pub points: Vec<SwapPoint>,
}

/// One memory share at one overcommit factor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwapPoint {
    /// Share of the footprint allowed in memory.
    pub share: f64,
    /// Overcommit factor asked for (`1`, `4`, `auto`).
    pub factor: String,
    /// The run, if it finished.
    pub run: Option<RunReport>,
    /// Why it did not (killed by the OOM killer, refused), if it did not.
    pub error: Option<String>,
}

impl SwapPoint {
    /// Median kernel time of the point's trials, in seconds: for `auto`, of the trials after
    /// it settled on a factor (its steady state; [`SwapPoint::exploring_s`] is what finding the
    /// factor cost), or of all trials when it never settled.
    pub fn median_s(&self) -> Option<f64> {
        let run = self.run.as_ref()?;
        if let Some(k) = run.overcommit.as_ref().and_then(|c| c.settled_after) {
            let mut after: Vec<f64> = run.trials[k.min(run.trials.len())..]
                .iter()
                .map(|t| t.kernel_ns as f64)
                .collect();
            if !after.is_empty() {
                after.sort_by(f64::total_cmp);
                let m = after.len() / 2;
                let med = if after.len() % 2 == 1 {
                    after[m]
                } else {
                    (after[m - 1] + after[m]) / 2.0
                };
                return Some(med / 1e9);
            }
        }
        Some(run.kernel_ns.median / 1e9)
    }

    /// For `auto`: seconds of the trials it spent exploring factors before it settled.
    pub fn exploring_s(&self) -> Option<f64> {
        let run = self.run.as_ref()?;
        let k = run.overcommit.as_ref()?.settled_after?;
        Some(
            run.trials[..k.min(run.trials.len())]
                .iter()
                .map(|t| t.kernel_ns as f64 / 1e9)
                .sum(),
        )
    }
}

impl SwapStudy {
    /// The point at `share` and `factor`.
    pub fn point(&self, share: f64, factor: &str) -> Option<&SwapPoint> {
        self.points
            .iter()
            .find(|p| (p.share - share).abs() < 1e-9 && p.factor == factor)
    }

    /// The baseline: the largest share at factor 1.
    pub fn baseline_s(&self) -> Option<f64> {
        let top = self.points.iter().map(|p| p.share).fold(0.0, f64::max);
        self.point(top, "1").and_then(SwapPoint::median_s)
    }
}
