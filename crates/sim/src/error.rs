//! The simulator's errors.

use std::path::PathBuf;

/// What can go wrong while configuring or running a simulation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A TLB configuration that does not describe a buildable TLB; names the key.
    #[error("TLB config{}: {key}: {what}", .source_name.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Config {
        /// The file, when it came from one.
        source_name: Option<PathBuf>,
        /// The offending key, e.g. `l2[0].ways`.
        key: String,
        /// What is wrong with it.
        what: String,
    },
    /// A TOML file that does not parse (unknown keys included).
    #[error("TLB config {}: {message}", .path.display())]
    Toml {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A policy, budget or option that does not parse.
    #[error("{0}")]
    Spec(String),
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] hugewise_trace::Error),
    /// A file could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The run was cancelled (Ctrl-C).
    #[error("cancelled")]
    Cancelled,
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
