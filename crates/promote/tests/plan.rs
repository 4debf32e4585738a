//! Choosing a plan from a saved file and turning it into timed steps.

use std::time::Duration;

use hugewise_promote::action::ActionKind;
use hugewise_promote::plan::{select, steps, PlanError};
use hugewise_results::page_size::PageSize;
use hugewise_results::plan::{PlanAction, PlanEntry, PromotionPlan, PromotionPlans};
use hugewise_results::sim::RegionInfo;

const M2: u64 = 2 << 20;

fn entry(at_s: f64, addr: u64, page_size: PageSize, action: PlanAction) -> PlanEntry {
    PlanEntry {
        at_access: (at_s * 1e8) as u64,
        at_s,
        addr,
        bytes: page_size.bytes() as u64,
        page_size,
        action,
    }
}

fn file(plans: Vec<PromotionPlan>) -> PromotionPlans {
    PromotionPlans {
        trace: "t.hwt".into(),
        regions: vec![RegionInfo {
            name: "property".into(),
            base: 0x4000_0000,
            bytes: 1 << 30,
        }],
        footprint_bytes: 1 << 30,
        accesses_per_s: 1e8,
        plans,
    }
}

fn plan(policy: &str, budget: f64, entries: Vec<PlanEntry>) -> PromotionPlan {
    PromotionPlan {
        policy: policy.into(),
        policy_label: policy.into(),
        budget_share: Some(budget),
        entries,
    }
}

#[test]
fn picks_one_plan_and_times_its_steps() {
    let f = file(vec![
        plan(
            "pcc",
            0.02,
            vec![
                entry(0.5, 0x4000_0000, PageSize::Size2M, PlanAction::Promote),
                entry(1.25, 0x4000_0000, PageSize::Size2M, PlanAction::Demote),
            ],
        ),
        plan("pcc", 0.04, vec![]),
        plan("hawkeye", 0.02, vec![]),
    ]);
    // Two pcc plans: the budget must be named.
    assert!(
        matches!(select(&f, Some("pcc"), None), Err(PlanError::NoMatch(m)) if m.contains("2 plans match"))
    );
    let (i, p) = select(&f, Some("pcc"), Some(0.02)).expect("one plan");
    assert_eq!(i, 0);
    // Relocated by 1 GiB, as a run whose region sits elsewhere.
    let s = steps(i, p, &|a| Some(a + (1 << 30))).expect("steps");
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].at, Duration::from_millis(500));
    assert_eq!(s[0].range, 0x8000_0000..0x8000_0000 + M2 as usize);
    assert_eq!(
        (s[0].kind, s[1].kind),
        (ActionKind::Promote, ActionKind::Demote)
    );
    assert!(
        matches!(select(&f, Some("mega"), None), Err(PlanError::NoMatch(m)) if m.contains("hawkeye at 2%"))
    );
}

#[test]
fn refuses_what_it_cannot_replay() {
    let gig = file(vec![plan(
        "pcc",
        1.0,
        vec![entry(
            0.0,
            0x4000_0000,
            PageSize::Size1G,
            PlanAction::Promote,
        )],
    )]);
    let (i, p) = select(&gig, None, None).expect("one plan");
    match steps(i, p, &|a| Some(a)) {
        Err(PlanError::Unsupported { entry: 0, why, .. }) => {
            assert!(why.contains("2 MiB pages only"))
        }
        other => panic!("{other:?}"),
    }
    let one = file(vec![plan(
        "pcc",
        0.5,
        vec![entry(
            0.0,
            0x4000_0000,
            PageSize::Size2M,
            PlanAction::Promote,
        )],
    )]);
    let (i, p) = select(&one, None, None).expect("plan");
    assert!(matches!(
        steps(i, p, &|_| None),
        Err(PlanError::Unsupported { .. })
    ));
    // An unaligned entry breaks the contract: the field is named.
    let bad = file(vec![plan(
        "pcc",
        0.5,
        vec![entry(
            0.0,
            0x4000_1000,
            PageSize::Size2M,
            PlanAction::Promote,
        )],
    )]);
    match select(&bad, None, None) {
        Err(e @ PlanError::Invalid(_)) => {
            assert!(e.to_string().contains("plans[0].entries[0].addr"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}
