//! How a long simulation reports how far it has got: the one hook that the curve run and the
//! reuse-distance pass share, kept apart so that neither depends on the other.

/// Progress of a run.
pub trait Progress: Sync {
    /// `done` of `total` accesses simulated (`total` 0 if unknown).
    fn update(&self, done: u64, total: u64);
}

impl Progress for () {
    fn update(&self, _: u64, _: u64) {}
}
