//! A kernel's settings as a user gives them (a variant name, optional numbers, start
//! vertices), checked against the kernel they are for and turned into its [`Spec`].

use hugewise_results::kernel::{BfsMode, CcAlgo, PrMode, Spec};

use crate::{Error, Result};

/// Settings for one kernel; `None` keeps the GAP suite's benchmark default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelSettings {
    /// Variant: bfs `do`|`top-down`, pr `pull-gs-balanced`|`pull`|`pull-gs`|`push`, cc
    /// `afforest`|`sv`.
    pub mode: Option<String>,
    /// sssp: bucket width of delta-stepping.
    pub delta: Option<u32>,
    /// pr: stop when the scores' total change in an iteration is below this.
    pub tolerance: Option<f64>,
    /// pr: iteration cap.
    pub max_iters: Option<u32>,
    /// bc: sources per trial.
    pub sources: Option<u32>,
    /// Start vertices (bfs, sssp, bc), used in turn across trials.
    pub start: Vec<u32>,
}

impl KernelSettings {
    /// The kernel `name` with these settings. The error names the setting, as the command
    /// line spells it (`--delta`), that does not fit the kernel.
    pub fn spec(&self, name: &str) -> Result<Spec> {
        let only = |flag: &str, set: bool, kernel: &str| {
            if set && name != kernel {
                Err(Error::Invalid(format!(
                    "--{flag} applies to {kernel} only, not {name}"
                )))
            } else {
                Ok(())
            }
        };
        only("delta", self.delta.is_some(), "sssp")?;
        only("tolerance", self.tolerance.is_some(), "pr")?;
        only("max-iters", self.max_iters.is_some(), "pr")?;
        only("sources", self.sources.is_some(), "bc")?;
        let mut spec = Spec::default_for(name)
            .ok_or_else(|| Error::Invalid(format!("unknown kernel {name}")))?;
        let invalid = |m: String| Err(Error::Invalid(m));
        let bad_mode = |m: &str, allowed: &str| {
            invalid(format!(
                "--mode {m} is not a variant of {name} (use {allowed})"
            ))
        };
        match &mut spec {
            Spec::Bfs { mode } => match self.mode.as_deref() {
                None | Some("do") => {}
                Some("top-down") => *mode = BfsMode::TopDown,
                Some(m) => return bad_mode(m, "do or top-down"),
            },
            Spec::Sssp { delta } => *delta = self.delta.or(*delta),
            Spec::Pr {
                mode,
                tolerance,
                max_iters,
            } => {
                match self.mode.as_deref() {
                    None | Some("pull-gs-balanced") => {}
                    Some("pull") => *mode = PrMode::Pull,
                    Some("push") => *mode = PrMode::Push,
                    Some("pull-gs") => *mode = PrMode::PullGs,
                    Some(m) => return bad_mode(m, "pull-gs-balanced, pull, pull-gs or push"),
                }
                *tolerance = self.tolerance.unwrap_or(*tolerance);
                *max_iters = self.max_iters.unwrap_or(*max_iters);
            }
            Spec::Cc { algo } => match self.mode.as_deref() {
                None | Some("afforest") => {}
                Some("sv") => *algo = CcAlgo::ShiloachVishkin,
                Some(m) => return bad_mode(m, "afforest or sv"),
            },
            Spec::Bc { sources } => *sources = self.sources.unwrap_or(*sources),
            Spec::Tc => {}
        }
        if let (Some(m), Spec::Sssp { .. } | Spec::Bc { .. } | Spec::Tc) = (&self.mode, &spec) {
            return invalid(format!("--mode {m}: {name} has no variants"));
        }
        if !self.start.is_empty() && spec.sources_per_trial() == 0 {
            return invalid(format!(
                "--source applies to bfs, sssp and bc, not {name}, which starts from no vertex"
            ));
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, s: KernelSettings) -> std::result::Result<Spec, String> {
        s.spec(name).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_gaps_and_settings_reach_their_kernel() {
        assert_eq!(
            spec("pr", KernelSettings::default()),
            Ok(Spec::default_for("pr").expect("pr"))
        );
        let s = KernelSettings {
            mode: Some("push".into()),
            tolerance: Some(1e-6),
            max_iters: Some(7),
            ..KernelSettings::default()
        };
        assert_eq!(
            spec("pr", s),
            Ok(Spec::Pr {
                mode: PrMode::Push,
                tolerance: 1e-6,
                max_iters: 7
            })
        );
        let s = KernelSettings {
            mode: Some("sv".into()),
            ..KernelSettings::default()
        };
        assert_eq!(
            spec("cc", s),
            Ok(Spec::Cc {
                algo: CcAlgo::ShiloachVishkin
            })
        );
    }

    #[test]
    fn a_setting_for_another_kernel_is_named() {
        let delta = KernelSettings {
            delta: Some(4),
            ..KernelSettings::default()
        };
        assert_eq!(
            spec("bfs", delta),
            Err("--delta applies to sssp only, not bfs".into())
        );
        let mode = KernelSettings {
            mode: Some("push".into()),
            ..KernelSettings::default()
        };
        assert!(spec("bfs", mode.clone())
            .expect_err("bfs has no push")
            .contains("do or top-down"));
        assert!(spec("tc", mode)
            .expect_err("tc")
            .contains("has no variants"));
        let start = KernelSettings {
            start: vec![3],
            ..KernelSettings::default()
        };
        assert!(spec("pr", start.clone())
            .expect_err("pr")
            .contains("--source"));
        assert!(spec("bfs", start).is_ok());
        assert!(spec("dfs", KernelSettings::default()).is_err());
    }
}
