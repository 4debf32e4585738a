//! From a saved promotion plan (`hugewise sim --plan`) to the steps a replay applies: pick one
//! configuration's plan, check the file, and turn its entries into timed 2 MiB steps.

use std::time::Duration;

use hugewise_results::page_size::PageSize;
use hugewise_results::plan::{PlanAction, PromotionPlan, PromotionPlans};

use crate::action::ActionKind;
use crate::replay::Step;

/// Why a plan cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The file breaks the plan contract (the field is named).
    #[error("the plan is not valid: {0}")]
    Invalid(#[from] hugewise_results::Error),
    /// No plan in the file matches the selection.
    #[error("{0}")]
    NoMatch(String),
    /// An entry asks for something the engine cannot do.
    #[error("plans[{plan}].entries[{entry}]: {why}")]
    Unsupported {
        /// Index of the plan.
        plan: usize,
        /// Index of the entry.
        entry: usize,
        /// What.
        why: String,
    },
}

/// The plan of `policy` (a name like `pcc`) at `budget_share` (0..=1) from `plans`; either may
/// be left out when only one plan matches the rest.
pub fn select<'a>(
    plans: &'a PromotionPlans,
    policy: Option<&str>,
    budget_share: Option<f64>,
) -> Result<(usize, &'a PromotionPlan), PlanError> {
    plans.validate()?;
    let matching: Vec<(usize, &PromotionPlan)> = plans
        .plans
        .iter()
        .enumerate()
        .filter(|(_, p)| policy.is_none_or(|n| p.policy == n || p.policy_label == n))
        .filter(|(_, p)| {
            budget_share.is_none_or(|b| p.budget_share.is_some_and(|s| (s - b).abs() < 1e-9))
        })
        .collect();
    let listing = || {
        plans
            .plans
            .iter()
            .map(|p| {
                format!(
                    "{} at {}",
                    p.policy_label,
                    p.budget_share
                        .map(|b| format!("{}%", b * 100.0))
                        .unwrap_or_else(|| "no budget".into())
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match matching.as_slice() {
        [one] => Ok(*one),
        [] => Err(PlanError::NoMatch(format!(
            "no plan matches; the file has: {}",
            listing()
        ))),
        _ => Err(PlanError::NoMatch(format!(
            "{} plans match: name one with --plan-policy and --plan-budget (the file has: {})",
            matching.len(),
            listing()
        ))),
    }
}

/// The steps of plan number `index`: each entry at its time in the traced run, with its address
/// moved by `relocate` (the identity for a program started the way it was traced; a region's
/// new base for hugewise's own runs). 1 GiB entries are refused: `MADV_COLLAPSE` makes 2 MiB
/// pages only.
pub fn steps(
    index: usize,
    plan: &PromotionPlan,
    relocate: &dyn Fn(u64) -> Option<u64>,
) -> Result<Vec<Step>, PlanError> {
    plan.entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let bad = |why: String| PlanError::Unsupported {
                plan: index,
                entry: i,
                why,
            };
            if e.page_size != PageSize::Size2M {
                return Err(bad(format!(
                    "a {} page: MADV_COLLAPSE makes 2 MiB pages only",
                    e.page_size
                )));
            }
            let addr = relocate(e.addr)
                .ok_or_else(|| bad(format!("{:#x} lies in no region of this run", e.addr)))?
                as usize;
            Ok(Step {
                at: Duration::from_secs_f64(e.at_s.max(0.0)),
                range: addr..addr + e.bytes as usize,
                kind: match e.action {
                    PlanAction::Promote => ActionKind::Promote,
                    PlanAction::Demote => ActionKind::Demote,
                },
            })
        })
        .collect()
}
