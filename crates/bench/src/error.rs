//! The typed error of the study crate.

use std::path::PathBuf;

/// What can go wrong in an experiment.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Creating or measuring a region failed.
    #[error(transparent)]
    Mem(#[from] hugewise_mem::Error),
    /// Reading the machine's state failed.
    #[error(transparent)]
    Sys(#[from] hugewise_sys::Error),
    /// Loading a graph or running a kernel failed.
    #[error(transparent)]
    Graph(#[from] hugewise_graph::Error),
    /// A result file could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// An input file could not be opened.
    #[error("opening {}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// Writing or reading a trace failed.
    #[error(transparent)]
    Trace(#[from] hugewise_trace::Error),
    /// Simulating a trace failed.
    #[error(transparent)]
    Sim(#[from] hugewise_sim::Error),
    /// Promoting or demoting memory failed.
    #[error(transparent)]
    Promote(#[from] hugewise_promote::Error),
    /// A configuration value is out of range.
    #[error("{0}")]
    Config(String),
    /// Stopped by a signal; the machine was put back.
    #[error("interrupted; the machine is put back")]
    Interrupted,
    /// Shaping the machine failed.
    #[error(transparent)]
    Env(#[from] hugewise_env::Error),
    /// Running a program under `hugewise exec` failed.
    #[error(transparent)]
    Exec(#[from] hugewise_exec::Error),
    /// A GAP binary could not be run, or printed what is not understood.
    #[error("GAP: {0}")]
    Gap(String),
    /// A page rule could not be read.
    #[error(transparent)]
    Rules(#[from] hugewise_rules::Error),
}

impl Error {
    pub(crate) fn from_graph(e: hugewise_graph::Error) -> Self {
        Error::Graph(e)
    }

    /// A shaping error, a signal's kept as [`Error::Interrupted`] (the machine is put back).
    pub(crate) fn from_env(e: hugewise_env::Error) -> Self {
        match e {
            hugewise_env::Error::Interrupted => Error::Interrupted,
            e => Error::Env(e),
        }
    }
}

/// Result alias of the study crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
