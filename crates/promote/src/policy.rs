//! What an online promotion policy sees each interval and what it answers. Policies live one
//! per file in `policies/`, under the simulator's names; [`by_name`] builds one.

use serde::{Deserialize, Serialize};

use crate::policies;

/// One 2 MiB chunk of one target, as the daemon read it this interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChunkInfo {
    /// The target's pid.
    pub pid: i32,
    /// First address (2 MiB aligned).
    pub addr: usize,
    /// Base pages present (pagemap), 0..=512.
    pub mapped_pages: u16,
    /// One 2 MiB page now, read back from the kernel.
    pub huge: bool,
    /// Access samples that fell in the chunk this interval (0 when the target publishes none).
    pub samples: u32,
    /// Distinct base pages among those samples, 0..=512.
    pub sampled_pages: u16,
    /// Samples on another base page than the chunk's sample before: an estimate of the TLB
    /// misses (page walks) the accesses cause. A stream through the chunk lands many samples
    /// in a row on one page and costs one walk a page; random reads over a large array land
    /// each on a new page and cost a walk each. The PCC counts walks, not accesses.
    pub walks: u32,
    /// Whether the target publishes access samples at all: without them a policy has only
    /// the mapped pages to go on, and says so.
    pub sampled: bool,
}

/// A policy's answer for one interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    /// Chunks (indices into the interval's chunks) worth a huge page, best first, with a score
    /// (higher is better; comparable across targets for the budget's share rule).
    pub promote: Vec<(usize, f64)>,
    /// Huge chunks that no longer pay and should be split.
    pub demote: Vec<usize>,
    /// Score of every huge chunk the policy still values (index, score): the budget demotes
    /// the lowest first when it must make room.
    pub keep: Vec<(usize, f64)>,
    /// For chunks of `promote`, the score that has lasted (index, score): what the daemon
    /// weighs against a huge chunk's when a candidate would take its place. A candidate not
    /// listed is weighed at its `promote` score.
    pub lasting: Vec<(usize, f64)>,
}

/// An online promotion policy.
pub trait Policy: Send {
    /// Its name, as on the command line.
    fn name(&self) -> &'static str;
    /// Look at every chunk of every target (ordered by pid, then address) and decide.
    /// `interval_s` is the time since the last call.
    fn decide(&mut self, chunks: &[ChunkInfo], interval_s: f64) -> Decision;
    /// How many 2 MiB chunks the budget holds this interval, told before each decision: a
    /// policy that keeps a fixed number of candidates can keep enough to fill it.
    fn budget_chunks(&mut self, _chunks: usize) {}
    /// How far apart the daemon's looks are (its interval, in seconds), told before the first
    /// decision: a policy that averages over time turns it into a share kept per look.
    fn looks_every(&mut self, _interval_s: f64) {}
    /// Whether it ranks chunks by access samples alone, so that a decision on a handful of
    /// them is noise: the daemon then counts samples without acting until it has enough.
    fn ranks_by_samples(&self) -> bool {
        false
    }
    /// Whether it scores chunks by estimated walks alone. Such scores keep their scale when the
    /// daemon asks the program for fewer samples (a walk read then stands for as many as the
    /// thinning), so the daemon may thin for it; coverage and utilization of the samples would
    /// read lower at every step of thinning, so for other policies it never does.
    fn weighs_walks(&self) -> bool {
        false
    }
    /// What it acts on for a target that does (`sampled`) or does not publish access samples,
    /// said once per target at the first interval, and again if that changes: a policy that
    /// can do nothing without samples says so, and what to use instead.
    fn signal(&self, sampled: bool) -> String;
}

/// Names accepted by [`by_name`].
pub const NAMES: [&str; 5] = ["auto", "pcc", "mega", "hawkeye", "linux"];

/// The policy named `name`, with the defaults of its paper, or `None` for an unknown name.
pub fn by_name(name: &str) -> Option<Box<dyn Policy>> {
    Some(match name {
        "auto" => Box::new(policies::auto::Auto::default()),
        "pcc" => Box::new(policies::pcc::Pcc::default()),
        "mega" => Box::new(policies::mega::Mega::default()),
        "hawkeye" => Box::new(policies::hawkeye::HawkEye),
        "linux" => Box::new(policies::linux::Linux::default()),
        _ => return None,
    })
}
