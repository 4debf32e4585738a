//! The typed error of the sys crate.

use std::path::PathBuf;

use crate::errno::Errno;

/// Everything that can go wrong in a syscall or while reading the kernel's files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file under /proc or /sys could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file was read but its content is not what the parser expects.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number, 0 when not line-oriented.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// A system call failed.
    #[error("{call} failed: {errno}")]
    Syscall {
        /// The call, e.g. `mmap` or `madvise(MADV_COLLAPSE)`.
        call: &'static str,
        /// The errno it returned.
        errno: Errno,
    },
    /// An argument was refused before reaching the kernel.
    #[error("{0}")]
    Invalid(String),
}

/// Result alias of the sys crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn parse(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn last_os(call: &'static str) -> Self {
        Error::Syscall {
            call,
            errno: Errno::last(),
        }
    }

    /// The errno of a failed syscall, if this is one.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Error::Syscall { errno, .. } => Some(*errno),
            Error::Io { source, .. } => source.raw_os_error().map(Errno),
            _ => None,
        }
    }
}
