//! `linux`: transparent huge pages at fault time, greedily, to whatever touches a frame first,
//! until the budget (the free 2 MiB blocks) is gone. What Linux does with THP `always` on a
//! machine whose contiguous memory is scarce.

use hugewise_sys::PageSize;

use crate::policy::{Ctx, Policy, Walk};

/// Huge page at first touch while the budget lasts.
#[derive(Debug, Clone, Copy)]
pub struct FirstTouch;

impl Policy for FirstTouch {
    fn label(&self) -> String {
        "linux".into()
    }

    fn on_walk(&mut self, cx: &mut Ctx<'_>, w: &Walk) {
        if !w.frame_seen {
            cx.promote(w.frame, PageSize::Size2M);
        }
    }
}
