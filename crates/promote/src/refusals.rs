//! A look stops collapsing once the kernel has refused a few collapses in a row for want of
//! memory.
//!
//! `MADV_COLLAPSE` that finds no free 2 MiB block compacts for one (synchronously, in the
//! daemon's thread) and returns `ENOMEM` when that found none either (`EAGAIN` says pages were
//! busy for a moment, not that memory is short). On free memory broken by pages compaction
//! cannot move, every later collapse of the look fails the same way and pays the same failed
//! compaction: measured here, under `env with --pressure-leave 12GiB --fragment 90%` with a
//! 25 % budget of an 8 GiB program, the `mega` daemon tried 11,000–13,000 refused collapses in
//! 30 s (370 a look), the kernel's compaction failed 22,000–27,000 times, and the daemon used
//! 54 % of a core. So after [`IN_A_ROW`] refusals with no success between, the look's remaining
//! candidates are held back, within what the budget has room for beside the refused ones: they
//! count as waiting for room, as refused ones do, so the compaction controller weighs them all
//! (see [`crate::compact`]), and the next look tries again.

/// Refusals for want of memory (`ENOMEM`), with no success between, after which a look holds
/// back its other collapses. A lone refusal can be a race (a block taken by another CPU between
/// compaction and allocation); several in a row are the free memory's state.
pub const IN_A_ROW: u32 = 4;

/// One look's count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refusals {
    in_a_row: u32,
    refused: u32,
    held_back: u32,
}

impl Refusals {
    /// A collapse was made (`refused` false) or refused for want of memory (true). Other
    /// outcomes (pages busy, a chunk gone, a mapping that says no) are not recorded: they
    /// neither count nor reset.
    pub fn record(&mut self, refused: bool) {
        if refused {
            self.in_a_row += 1;
            self.refused += 1;
        } else {
            self.in_a_row = 0;
        }
    }

    /// Whether the look's next collapse is held back.
    pub fn holding(&self) -> bool {
        self.in_a_row >= IN_A_ROW
    }

    /// A candidate was held back.
    pub fn hold_one(&mut self) {
        self.held_back += 1;
    }

    /// Candidates held back so far this look.
    pub fn held_back(&self) -> u32 {
        self.held_back
    }

    /// Candidates of this look waiting for a free block: refused for want of memory, or held
    /// back. A candidate is held back only while the budget has room for it beside these.
    pub fn waiting(&self) -> u32 {
        self.refused + self.held_back
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_refusals_in_a_row_hold_the_rest_back_and_a_success_between_resets_the_count() {
        let mut r = Refusals::default();
        // refused, refused, refused, made: the count starts again.
        for refused in [true, true, true, false] {
            r.record(refused);
            assert!(!r.holding());
        }
        for _ in 0..3 {
            r.record(true);
            assert!(!r.holding());
        }
        r.record(true);
        assert!(
            r.holding(),
            "the fourth refusal in a row holds the look back"
        );
        r.hold_one();
        r.hold_one();
        assert_eq!(r.held_back(), 2);
        // Seven refused in all, two held back: nine wait for a block.
        assert_eq!(r.waiting(), 9);
    }
}
