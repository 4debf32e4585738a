//! The typed error of the graph crate.

use std::path::{Path, PathBuf};

/// What can go wrong loading, building or running on a graph.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A region could not be created or measured.
    #[error(transparent)]
    Mem(#[from] hugewise_mem::Error),
    /// A file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A text line did not parse.
    #[error("{path}:{line}: {message}: \"{content}\"")]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What was wrong.
        message: String,
        /// The line as read, as an error shows it (see [`hugewise_sys::read::shown`]).
        content: String,
    },
    /// A binary file is malformed or truncated.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What was wrong, with the byte offset where it applies.
        message: String,
    },
    /// An input implies more memory than this process has room for; nothing of it was
    /// allocated.
    #[error("{input}: {message}")]
    TooLarge {
        /// The input (a file or a generator spec).
        input: String,
        /// What was read, what it implies, what is available, and the way around.
        message: String,
        /// The estimate, kernel arrays included.
        need_bytes: u64,
        /// What was available.
        available_bytes: u64,
    },
    /// A graph or argument is outside what hugewise handles.
    #[error("{0}")]
    Invalid(String),
}

/// Result alias of the graph crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Line `line` of `path`, `content`, did not parse: `message` says why.
    pub(crate) fn line(path: &Path, line: u64, message: impl Into<String>, content: &str) -> Self {
        Error::Line {
            path: path.to_path_buf(),
            line,
            message: message.into(),
            content: hugewise_sys::read::shown(content),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
