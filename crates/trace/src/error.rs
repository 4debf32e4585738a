//! The typed error of the trace crate.

use std::path::PathBuf;

/// What can go wrong writing or reading a trace.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file ends before the structure at `offset` is complete.
    #[error("{path}: truncated at byte {offset}: {what}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Where the missing part starts.
        offset: u64,
        /// What was expected there.
        what: String,
    },
    /// The bytes at `offset` are not what the format allows.
    #[error("{path}: corrupt at byte {offset}: {what}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Where.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// A line of Valgrind lackey output that does not parse.
    #[error("{path}:{line}: not a lackey line: \"{content}\" ({what})")]
    Lackey {
        /// The input.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// The line, as an error shows it (see [`hugewise_sys::read::shown`]).
        content: String,
        /// What is wrong.
        what: String,
    },
    /// A value refused before anything was written.
    #[error("{0}")]
    Invalid(String),
}

/// Result alias of the trace crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
