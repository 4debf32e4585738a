//! The typed error of the env crate.

use std::path::PathBuf;

/// Everything that can stop a change to the machine, or its undoing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A change needs root and this process is not.
    #[error("{what} needs root: it writes {path}; run hugewise as root (sudo)")]
    NotRoot {
        /// The command or step.
        what: String,
        /// The first file it would write.
        path: String,
    },
    /// A `hugewise env` command that changes the machine, run without root.
    #[error("hugewise env {0} changes the machine and needs root; run it with sudo")]
    CommandNotRoot(String),
    /// Some changes could not be put back; they stay in the journal.
    #[error(
        "some changes could not be put back (listed above); they stay in the journal for \
         `hugewise env restore`"
    )]
    Unrestored,
    /// The command run in a shaped machine could not be started (the machine was put back).
    #[error("{0}")]
    Command(String),
    /// A value refused before anything was written.
    #[error("{0}")]
    Invalid(String),
    /// Taking memory would leave less free than the safety floor.
    #[error(
        "{what} would leave {left_mib} MiB available, below the safety floor of {floor_mib} MiB \
         ({available_mib} MiB are available now); ask for less or lower --floor"
    )]
    Floor {
        /// What asked.
        what: String,
        /// MemAvailable now, MiB.
        available_mib: u64,
        /// What would be left, MiB.
        left_mib: u64,
        /// The floor, MiB.
        floor_mib: u64,
    },
    /// Another hugewise process holds the journal.
    #[error(
        "another hugewise env run holds {path} (pid {pid}); wait for it to end, or stop it \
         (it restores the machine as it exits)"
    )]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// Its holder as written in the lock file, `?` when unknown.
        pid: String,
    },
    /// A run ended without restoring what it changed.
    #[error(
        "a hugewise run that ended without restoring left {} change(s) in {}: {}; \
         run `hugewise env restore` first",
        steps.len(), path.display(), steps.join("; ")
    )]
    Leftover {
        /// The journal.
        path: PathBuf,
        /// What each pending change was.
        steps: Vec<String>,
    },
    /// The journal file is damaged.
    #[error("{path}:{line}: {message}")]
    Journal {
        /// The journal.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file of hugewise's own (journal, swap file) could not be written or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A command run inside a shaped machine could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// SIGINT or SIGTERM arrived; what was changed has been (or is being) put back.
    #[error("interrupted")]
    Interrupted,
    /// A system call or a /proc or /sys file failed.
    #[error(transparent)]
    Sys(#[from] hugewise_sys::Error),
}

/// Result alias of the env crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
