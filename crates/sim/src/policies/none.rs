//! `none`: 4 KiB pages only, the baseline every speedup is measured against.

use crate::policy::Policy;

/// Never promotes.
#[derive(Debug, Clone, Copy)]
pub struct NoPromotion;

impl Policy for NoPromotion {
    fn label(&self) -> String {
        "none".into()
    }

    fn promotes(&self) -> bool {
        false
    }
}
