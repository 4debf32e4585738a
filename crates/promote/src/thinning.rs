//! How many access samples the daemon asks a target for. A software sampler costs the target
//! time on every sample (the PCC's hardware counts page walks for free), and a daemon whose
//! budget sits still has no use for them: after a few looks without an action it asks the
//! target to publish one sample in 4, then 16, 64 of what it would; the first look that acts
//! (a promotion, a demotion, a swap) asks for every sample again. Thinned samples still reach
//! the policy, so a change in what is hot is seen, a few intervals later than at full rate.

use hugewise_sys::shm::MAX_THINNING;

/// Looks without an action before the daemon thins, and between two steps of thinning.
pub const CALM_LOOKS: u32 = 3;

/// Each step of thinning multiplies the factor by this.
pub const STEP: u32 = 4;

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

    /// After a look that acted or not (`acted`: any promotion or demotion tried, succeeded or
    /// not), or that is still warming up (counting samples before the first decision): the
    /// factor to ask for until the next look.
    pub fn after(&mut self, acted: bool, warming_up: bool) -> u32 {
        if acted || warming_up {
            self.factor = 1;
            self.calm = 0;
            return self.factor;
        }
        self.calm += 1;
        if self.calm >= CALM_LOOKS {
            self.calm = 0;
            self.factor = self.factor.saturating_mul(STEP).min(self.max);
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
        let calm = |t: &mut Thinning, n: u32| (0..n).map(|_| t.after(false, false)).last();
        assert_eq!(calm(&mut t, CALM_LOOKS - 1), Some(1));
        assert_eq!(t.after(false, false), 4);
        assert_eq!(calm(&mut t, CALM_LOOKS), Some(16));
        assert_eq!(calm(&mut t, CALM_LOOKS), Some(64));
        assert_eq!(calm(&mut t, 10 * CALM_LOOKS), Some(64), "capped");
        assert_eq!(t.after(true, false), 1, "an action asks for every sample");
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
            assert_eq!(t.after(false, true), 1);
        }
        let mut off = Thinning::new(1);
        for _ in 0..20 {
            assert_eq!(off.after(false, false), 1);
        }
        assert_eq!(Thinning::new(0).after(false, false), 1);
        let mut big = Thinning::new(u32::MAX);
        let top = (0..100).map(|_| big.after(false, false)).max();
        assert_eq!(top, Some(MAX_THINNING), "never past what a ring takes");
    }
}
