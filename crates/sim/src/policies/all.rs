//! `all`: every frame huge from the start, whatever the budget (the ideal end of every
//! utility curve).

use hugewise_sys::PageSize;

use crate::pagemap::FrameId;
use crate::policy::{Ctx, Policy, Walk};

/// Promotes everything.
#[derive(Debug, Clone, Copy)]
pub struct Everything;

impl Policy for Everything {
    fn label(&self) -> String {
        "all".into()
    }

    fn start(&mut self, cx: &mut Ctx<'_>) {
        for id in 0..cx.map.len() as FrameId {
            cx.promote(id, PageSize::Size2M);
        }
    }

    fn on_walk(&mut self, cx: &mut Ctx<'_>, w: &Walk) {
        // Frames outside the trace's regions appear as they are touched.
        if w.size == PageSize::Size4K {
            cx.promote(w.frame, PageSize::Size2M);
        }
    }
}
