//! How many access samples the daemon asks a target for. A software sampler costs the target
//! time on every sample (the PCC's hardware counts page walks for free), and a daemon whose
//! budget sits still has no use for them: after a few looks without an action it asks the
//! target to publish one sample in 4, then 16, 64 of what it would; a look that fills or
//! empties the budget (a promotion into room, a demotion), or whose call failed, asks for
//! every sample again, and a look that only swaps chunks within a full budget steps back one
//! step: a swap changes one chunk, not what the program does, and asking for every sample
//! after each of them kept a daemon that swapped a chunk every few seconds at the full rate. Thinned samples still reach
//! the policy, so a change in what is hot is seen, a few intervals later than at full rate.

use hugewise_sys::shm::MAX_THINNING;

/// Looks without an action before the daemon thins, and between two steps of thinning.
pub const CALM_LOOKS: u32 = 3;

/// Each step of thinning multiplies the factor by this.
pub const STEP: u32 = 4;

/// What a look did, as far as thinning goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// Still counting samples before the first decision.
    WarmingUp,
    /// No promotion or demotion tried (releases of huge pages a program broke do not count:
    /// they follow the program, not the policy).
    Calm,
    /// Promotions into a full budget only, each in the place of a chunk it split.
    Swapped,
    /// Anything else tried: promotions into room, demotions, failures.
    Changed,
}

impl Look {
    /// What a look did, from its counts: promotions, demotions and failed calls, and how many
    /// of the demotions were made (and succeeded) to take a huge chunk's place.
    pub fn of(warming_up: bool, promoted: u32, demoted: u32, failed: u32, swaps: u32) -> Look {
        if warming_up {
            Look::WarmingUp
        } else if promoted + demoted + failed == 0 {
            Look::Calm
        } else if failed == 0 && swaps > 0 && demoted == swaps && promoted == swaps {
            Look::Swapped
        } else {
            Look::Changed
        }
    }
}

/// The thinning the daemon asks for, from how its looks went.
#[derive(Debug, Clone)]
pub struct Thinning {
    factor: u32,
    calm: u32,
    max: u32,
}

impl Thinning {
    /// Start at every sample; never thin past `max` (1: never thin; at most what a ring
    /// takes, [`MAX_THINNING`]).
    pub fn new(max: u32) -> Thinning {
        Thinning {
            factor: 1,
            calm: 0,
            max: max.clamp(1, MAX_THINNING),
        }
    }

    /// The factor asked for now.
    pub fn factor(&self) -> u32 {
        self.factor
    }

    /// After a look that did `look`: the factor to ask for until the next look.
    pub fn after(&mut self, look: Look) -> u32 {
        match look {
            Look::WarmingUp | Look::Changed => {
                self.factor = 1;
                self.calm = 0;
            }
            Look::Swapped => {
                self.factor = (self.factor / STEP).max(1);
                self.calm = 0;
            }
            Look::Calm => {
                self.calm += 1;
                if self.calm >= CALM_LOOKS {
                    self.calm = 0;
                    self.factor = self.factor.saturating_mul(STEP).min(self.max);
                }
            }
        }
        self.factor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calm_looks_thin_step_by_step_up_to_the_cap_and_an_action_restores_every_sample() {
        let mut t = Thinning::new(64);
        let calm = |t: &mut Thinning, n: u32| (0..n).map(|_| t.after(Look::Calm)).last();
        assert_eq!(calm(&mut t, CALM_LOOKS - 1), Some(1));
        assert_eq!(t.after(Look::Calm), 4);
        assert_eq!(calm(&mut t, CALM_LOOKS), Some(16));
        assert_eq!(calm(&mut t, CALM_LOOKS), Some(64));
        assert_eq!(calm(&mut t, 10 * CALM_LOOKS), Some(64), "capped");
        assert_eq!(t.after(Look::Changed), 1, "an action asks for every sample");
        assert_eq!(
            calm(&mut t, CALM_LOOKS - 1),
            Some(1),
            "and the count starts again"
        );
    }

    #[test]
    fn warming_up_never_thins_and_a_cap_of_one_never_thins() {
        let mut t = Thinning::new(64);
        for _ in 0..20 {
            assert_eq!(t.after(Look::WarmingUp), 1);
        }
        let mut off = Thinning::new(1);
        for _ in 0..20 {
            assert_eq!(off.after(Look::Calm), 1);
        }
        assert_eq!(Thinning::new(0).after(Look::Calm), 1);
    }

    #[test]
    fn only_a_look_that_swapped_one_for_one_and_nothing_else_is_a_swap() {
        // (warming up, promoted, demoted, failed, swaps)
        assert_eq!(Look::of(true, 0, 0, 0, 0), Look::WarmingUp);
        assert_eq!(Look::of(false, 0, 0, 0, 0), Look::Calm);
        assert_eq!(Look::of(false, 3, 3, 0, 3), Look::Swapped);
        assert_eq!(Look::of(false, 1, 0, 0, 0), Look::Changed, "into room");
        assert_eq!(Look::of(false, 0, 2, 0, 0), Look::Changed, "a trim");
        assert_eq!(
            Look::of(false, 2, 3, 0, 2),
            Look::Changed,
            "swaps and a trim"
        );
        assert_eq!(
            Look::of(false, 1, 2, 0, 2),
            Look::Changed,
            "a swap that only split"
        );
        assert_eq!(Look::of(false, 3, 2, 0, 2), Look::Changed, "swaps and room");
        assert_eq!(Look::of(false, 1, 1, 1, 1), Look::Changed, "a call failed");
    }

    #[test]
    fn a_swap_steps_back_one_step_and_the_calm_count_starts_again() {
        let mut t = Thinning::new(64);
        for _ in 0..3 * CALM_LOOKS {
            t.after(Look::Calm);
        }
        assert_eq!(t.factor(), 64);
        assert_eq!(t.after(Look::Swapped), 16);
        assert_eq!(t.after(Look::Swapped), 4);
        for _ in 0..CALM_LOOKS - 1 {
            assert_eq!(t.after(Look::Calm), 4);
        }
        assert_eq!(t.after(Look::Calm), 16);
        assert_eq!(t.after(Look::Swapped), 4);
        assert_eq!(t.after(Look::Swapped), 1);
        assert_eq!(t.after(Look::Swapped), 1, "never below every sample");
        let mut big = Thinning::new(u32::MAX);
        let top = (0..100).map(|_| big.after(Look::Calm)).max();
        assert_eq!(top, Some(MAX_THINNING), "never past what a ring takes");
    }
}
