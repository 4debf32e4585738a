//! The typed error of the promote crate.

/// What can stop a promotion engine from acting on a target.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The process is gone (it exited, or never existed).
    #[error("process {pid} does not exist (it may have exited: {seen})")]
    Gone {
        /// Its pid.
        pid: i32,
        /// What said so: a session that drops a target names it.
        seen: &'static str,
    },
    /// The process is a kernel thread: it has no user address space.
    #[error("process {pid} ({name}) is a kernel thread: it has no user memory to promote")]
    KernelThread {
        /// Its pid.
        pid: i32,
        /// Its name.
        name: String,
    },
    /// The kernel refused access to the process.
    #[error("process {pid}: {call} refused: {reason}")]
    Denied {
        /// Its pid.
        pid: i32,
        /// What was refused.
        call: &'static str,
        /// The kernel's reason, and what would grant access.
        reason: String,
    },
    /// A range is not one hugewise may act on.
    #[error("range {start:#x}..{end:#x} of process {pid}: {why}")]
    BadRange {
        /// The target's pid.
        pid: i32,
        /// First address.
        start: usize,
        /// One past the last address.
        end: usize,
        /// Why it was refused.
        why: String,
    },
    /// A program to promote could not be started.
    #[error("could not start {program}: {source}")]
    Launch {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A plan file could not be read.
    #[error("reading the plan: {0}")]
    PlanFile(#[source] hugewise_results::Error),
    /// A plan cannot be replayed.
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
    /// A session was asked for something that does not fit together.
    #[error("{0}")]
    Usage(String),
    /// A system call or kernel file failed.
    #[error(transparent)]
    Sys(#[from] hugewise_sys::Error),
}

/// Result alias of the promote crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
