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
    /// it first settled on a factor (its steady state, probes of other factors included;
    /// [`SwapPoint::exploring_s`] is what finding the factor cost), `None` when it settled on
    /// its last trial, or of all trials when it never settled.
    pub fn median_s(&self) -> Option<f64> {
        let run = self.run.as_ref()?;
        let Some(k) = run.overcommit.as_ref().and_then(|c| c.settled_after) else {
            return Some(run.kernel_ns.median / 1e9);
        };
        let after: Vec<f64> = run.trials[k.min(run.trials.len())..]
            .iter()
            .map(|t| t.kernel_ns as f64)
            .collect();
        crate::stats::median(&after).map(|ns| ns / 1e9)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::OvercommitChoice;

    /// A saved run (its envelope's extra keys are ignored), with these trial times and the
    /// controller's record.
    fn point(times_s: &[u64], settled_after: Option<usize>) -> SwapPoint {
        let text = include_str!("../tests/fixtures/run.json");
        let mut run: RunReport = serde_json::from_str(text).expect("fixture");
        let first = run.trials[0].clone();
        run.trials = times_s
            .iter()
            .map(|&s| {
                let mut t = first.clone();
                t.kernel_ns = s * 1_000_000_000;
                t
            })
            .collect();
        run.overcommit = Some(OvercommitChoice {
            factors: vec![1; times_s.len()],
            chosen: 1,
            reasons: Vec::new(),
            settled_after,
        });
        SwapPoint {
            share: 0.5,
            factor: "auto".into(),
            run: Some(run),
            error: None,
        }
    }

    #[test]
    fn auto_is_timed_by_its_trials_after_it_first_settled() {
        // Three exploring trials, then a steady state with one probe (9) among them.
        let p = point(&[10, 7, 8, 5, 9, 4, 6], Some(3));
        assert_eq!(p.median_s(), Some(5.5));
        assert_eq!(p.exploring_s(), Some(25.0));
        // Settled on its last trial: no steady state to time.
        assert_eq!(point(&[10, 7, 8], Some(3)).median_s(), None);
    }
}
