//! The typed error of the console: what went wrong while printing or saving a result.

/// Printing or saving a result failed, or the work it watched was stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing to stdout or stderr failed (a closed pipe is one: the binary treats it as
    /// success, so the `io::Error` stays the source).
    #[error("writing the result")]
    Io(#[source] std::io::Error),
    /// The result could not be serialised.
    #[error("serialising the result")]
    Json(#[source] serde_json::Error),
    /// Saving the result to its file failed.
    #[error(transparent)]
    Save(#[from] hugewise_bench::Error),
    /// Shaping the machine failed or was stopped.
    #[error(transparent)]
    Env(#[from] hugewise_env::Error),
    /// A study's results could not be read.
    #[error("reading the results in {}", dir.display())]
    Results {
        /// The study directory.
        dir: std::path::PathBuf,
        /// Cause.
        #[source]
        source: hugewise_results::Error,
    },
    /// A signal stopped shaping; what was done is undone.
    #[error("interrupted while shaping; everything done so far was put back")]
    Interrupted,
}

/// The console's result.
pub type Result<T> = std::result::Result<T, Error>;
