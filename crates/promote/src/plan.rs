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

/// Where a plan's regions lie in another run of the same program: each traced region moved to
/// the base of the region of the same name here, which must be as large. A plan is made from
/// one run and replayed on another, whose arrays the allocator placed elsewhere.
#[derive(Debug, Clone, PartialEq)]
pub struct Relocation {
    /// (traced base, bytes, base here), by traced base.
    moves: Vec<(u64, u64, u64)>,
}

impl Relocation {
    /// Match the plan's regions to `here` (name, base, bytes) by name. A region of the plan
    /// missing here, or of another size, is refused with its name and both sizes.
    pub fn by_name(
        plans: &PromotionPlans,
        here: &[(String, u64, u64)],
    ) -> Result<Relocation, PlanError> {
        let mut moves = Vec::new();
        for r in &plans.regions {
            let Some((_, base, bytes)) = here.iter().find(|(n, _, _)| *n == r.name) else {
                return Err(PlanError::NoMatch(format!(
                    "the plan's region '{}' is not in this run (its regions: {})",
                    r.name,
                    here.iter()
                        .map(|(n, _, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            if *bytes != r.bytes {
                return Err(PlanError::NoMatch(format!(
                    "the plan's region '{}' held {} bytes, this run's holds {}: the plan was \
                     made on another graph or kernel",
                    r.name, r.bytes, bytes
                )));
            }
            if (r.base ^ base) % (2 << 20) != 0 {
                return Err(PlanError::NoMatch(format!(
                    "region '{}' lies at another offset within its 2 MiB page here ({:#x} \
                     traced, {base:#x} here): its chunks would not line up",
                    r.name, r.base
                )));
            }
            moves.push((r.base, r.bytes, *base));
        }
        moves.sort_unstable();
        Ok(Relocation { moves })
    }

    /// Where `addr` of the traced run lies here (a 2 MiB chunk may start before its region's
    /// first byte when the region is not 2 MiB aligned: it is moved with the region it starts
    /// in or overlaps).
    pub fn apply(&self, addr: u64) -> Option<u64> {
        const HUGE: u64 = 2 << 20;
        self.moves
            .iter()
            .find(|(b, n, _)| addr < b + n && addr + HUGE > *b)
            .map(|(b, _, here)| here + addr - b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_results::sim::RegionInfo;
    use std::path::PathBuf;

    const M2: u64 = 2 << 20;

    fn plans(regions: &[(&str, u64, u64)]) -> PromotionPlans {
        PromotionPlans {
            trace: PathBuf::from("t.hwt"),
            regions: regions
                .iter()
                .map(|(n, b, s)| RegionInfo {
                    name: n.to_string(),
                    base: *b,
                    bytes: *s,
                })
                .collect(),
            footprint_bytes: regions.iter().map(|r| r.2).sum(),
            accesses_per_s: 1e8,
            plans: Vec::new(),
        }
    }

    #[test]
    fn regions_move_by_name_and_chunks_keep_their_offset() {
        let p = plans(&[("edges", 100 * M2, 8 * M2), ("property", 200 * M2, 4 * M2)]);
        let here = [
            ("property".to_string(), 7 * M2, 4 * M2),
            ("edges".to_string(), 50 * M2, 8 * M2),
        ];
        let r = Relocation::by_name(&p, &here).expect("same arrays");
        assert_eq!(r.apply(200 * M2 + M2), Some(7 * M2 + M2));
        assert_eq!(r.apply(107 * M2), Some(57 * M2));
        assert_eq!(r.apply(108 * M2), None, "past the end of edges");
        assert_eq!(r.apply(3 * M2), None);
    }

    #[test]
    fn another_graph_or_kernel_is_refused_with_the_region() {
        let p = plans(&[("property", 200 * M2, 4 * M2)]);
        let e = Relocation::by_name(&p, &[("property".into(), 0, 2 * M2)]).expect_err("size");
        assert!(e.to_string().contains("'property'"), "{e}");
        let e = Relocation::by_name(&p, &[("edges".into(), 0, 4 * M2)]).expect_err("name");
        assert!(e.to_string().contains("not in this run"), "{e}");
        let e = Relocation::by_name(&p, &[("property".into(), 4096, 4 * M2)]).expect_err("offset");
        assert!(e.to_string().contains("offset"), "{e}");
    }
}
