//! The promotion plan: what a simulator (or, later, a detector) decided to promote or demote,
//! when, and where, in a form a promotion engine can apply. It is a versioned contract: the
//! engine checks [`PromotionPlans::validate`] before it touches a process.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::page_size::PageSize;
use crate::sim::RegionInfo;
use crate::Error;

/// Every configuration's plan over one trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromotionPlans {
    /// The trace the plans were made from.
    pub trace: PathBuf,
    /// The trace's regions (the program's arrays), whose addresses the entries use.
    pub regions: Vec<RegionInfo>,
    /// Bytes of the footprint (the regions' 2 MiB frames).
    pub footprint_bytes: u64,
    /// Accesses per second of the real run, which turned access indices into `at_s`.
    pub accesses_per_s: f64,
    /// One plan per policy and budget.
    pub plans: Vec<PromotionPlan>,
}

/// One policy's plan at one budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromotionPlan {
    /// Policy name (`pcc`, `hawkeye`, ...).
    pub policy: String,
    /// Policy with its settings, as given.
    pub policy_label: String,
    /// Budget as a share of the footprint (`null`: unlimited).
    pub budget_share: Option<f64>,
    /// Steps, in time order.
    pub entries: Vec<PlanEntry>,
}

/// Promote or demote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanAction {
    /// Map the range with one page of `page_size`.
    Promote,
    /// Split it back into base pages.
    Demote,
}

/// One step: at an access index (and the time it stands for), map a range with a page size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlanEntry {
    /// Index of the access (over all streams) at which the step happens.
    pub at_access: u64,
    /// Seconds into the real run (`at_access` / accesses per second).
    pub at_s: f64,
    /// First address of the range.
    pub addr: u64,
    /// Length of the range in bytes.
    pub bytes: u64,
    /// Page size the range is mapped with.
    pub page_size: PageSize,
    /// Promote or demote.
    pub action: PlanAction,
}

impl PromotionPlans {
    /// Refuse a plan a promotion engine could not apply safely: ranges not aligned to their page
    /// size or not one page long, outside every region, steps out of time order, a promotion of
    /// a range that overlaps another range promoted and not yet demoted, or a budget that is not
    /// a share. The error names the field (`plans[2].entries[7].addr`).
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |field: String, what: String| Err(Error::Invalid { field, what });
        if !(self.accesses_per_s.is_finite() && self.accesses_per_s > 0.0) {
            return bad(
                "accesses_per_s".into(),
                format!("{} is not a positive rate", self.accesses_per_s),
            );
        }
        for (p, plan) in self.plans.iter().enumerate() {
            if let Some(b) = plan.budget_share {
                if !(0.0..=1.0).contains(&b) {
                    return bad(
                        format!("plans[{p}].budget_share"),
                        format!("{b} is not a share between 0 and 1"),
                    );
                }
            }
            // Promoted ranges still mapped huge, as (start, end), kept sorted by start.
            let mut live: Vec<(u64, u64)> = Vec::new();
            let mut last = 0;
            for (i, e) in plan.entries.iter().enumerate() {
                let at = |f: &str| format!("plans[{p}].entries[{i}].{f}");
                let page = e.page_size.bytes() as u64;
                if e.at_access < last {
                    return bad(
                        at("at_access"),
                        format!("{} comes before the step above ({last})", e.at_access),
                    );
                }
                last = e.at_access;
                if e.addr % page != 0 {
                    return bad(
                        at("addr"),
                        format!("{:#x} is not aligned to {}", e.addr, e.page_size),
                    );
                }
                if e.bytes != page {
                    return bad(
                        at("bytes"),
                        format!("{} is not one {} page", e.bytes, e.page_size),
                    );
                }
                let end = e.addr.saturating_add(e.bytes);
                if !self
                    .regions
                    .iter()
                    .any(|r| e.addr < r.base.saturating_add(r.bytes) && end > r.base)
                {
                    return bad(
                        at("addr"),
                        format!("{:#x}..{end:#x} lies in no region of the trace", e.addr),
                    );
                }
                let pos = live.partition_point(|&(s, _)| s < e.addr);
                match e.action {
                    PlanAction::Promote => {
                        let before = pos.checked_sub(1).map(|j| live[j]);
                        let after = live.get(pos).copied();
                        let overlaps = before.is_some_and(|(_, b_end)| b_end > e.addr)
                            || after.is_some_and(|(a_start, _)| a_start < end);
                        if overlaps {
                            return bad(
                                at("addr"),
                                format!(
                                    "{:#x}..{end:#x} overlaps a range promoted before and not \
                                     demoted",
                                    e.addr
                                ),
                            );
                        }
                        live.insert(pos, (e.addr, end));
                    }
                    PlanAction::Demote => {
                        if live.get(pos) == Some(&(e.addr, end)) {
                            live.remove(pos);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M2: u64 = 2 << 20;

    fn plans(entries: Vec<PlanEntry>) -> PromotionPlans {
        PromotionPlans {
            trace: "t.hwt".into(),
            regions: vec![RegionInfo {
                name: "property".into(),
                base: 0x4000_0000,
                bytes: 8 * M2,
            }],
            footprint_bytes: 8 * M2,
            accesses_per_s: 1e8,
            plans: vec![PromotionPlan {
                policy: "pcc".into(),
                policy_label: "pcc".into(),
                budget_share: Some(0.5),
                entries,
            }],
        }
    }

    fn step(at: u64, addr: u64, action: PlanAction) -> PlanEntry {
        PlanEntry {
            at_access: at,
            at_s: at as f64 / 1e8,
            addr,
            bytes: M2,
            page_size: PageSize::Size2M,
            action,
        }
    }

    fn refused(p: &PromotionPlans) -> (String, String) {
        match p.validate() {
            Err(Error::Invalid { field, what }) => (field, what),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_plan_that_promotes_demotes_and_promotes_again_is_valid() {
        let base = 0x4000_0000;
        let p = plans(vec![
            step(10, base, PlanAction::Promote),
            step(20, base + M2, PlanAction::Promote),
            step(30, base, PlanAction::Demote),
            step(40, base, PlanAction::Promote),
        ]);
        p.validate().expect("valid");
    }

    #[test]
    fn overlapping_unaligned_outside_and_unordered_steps_are_named() {
        let base = 0x4000_0000;
        let (f, w) = refused(&plans(vec![
            step(10, base, PlanAction::Promote),
            step(20, base, PlanAction::Promote),
        ]));
        assert_eq!(f, "plans[0].entries[1].addr");
        assert!(w.contains("overlaps"), "{w}");
        let (f, w) = refused(&plans(vec![step(10, base + 4096, PlanAction::Promote)]));
        assert_eq!(f, "plans[0].entries[0].addr");
        assert!(w.contains("not aligned"), "{w}");
        let (f, _) = refused(&plans(vec![step(10, 0x1000_0000, PlanAction::Promote)]));
        assert_eq!(f, "plans[0].entries[0].addr");
        let (f, _) = refused(&plans(vec![
            step(20, base, PlanAction::Promote),
            step(10, base + M2, PlanAction::Promote),
        ]));
        assert_eq!(f, "plans[0].entries[1].at_access");
        let mut short = step(10, base, PlanAction::Promote);
        short.bytes = 4096;
        assert_eq!(refused(&plans(vec![short])).0, "plans[0].entries[0].bytes");
        let mut p = plans(vec![]);
        p.plans[0].budget_share = Some(2.0);
        assert_eq!(refused(&p).0, "plans[0].budget_share");
    }
}
