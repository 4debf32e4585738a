//! hugewise-exec runs programs hugewise did not write with its preload library, which takes
//! over their large allocations and gives each the page policy the user's rules choose: [`run`]
//! (starting the program, reading each allocation's backing while it runs, the result),
//! [`placement`] (from a profile to a placement file), [`elf`] (whether a program can be
//! preloaded at all, and a library is one). The rule language, call sites and what `hugewise
//! exec` and the library agree on live in hugewise-rules, which the library shares.
#![forbid(unsafe_code)]

pub mod elf;
pub mod placement;
pub mod run;

/// Why a program could not be run under `hugewise exec`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A page rule could not be read.
    #[error(transparent)]
    Rules(#[from] hugewise_rules::Error),
    /// The preload library was not found.
    #[error("{0}")]
    NoPreload(String),
    /// The program is statically linked: no dynamic loader reads `LD_PRELOAD` for it.
    #[error(
        "{program} is statically linked: the preload library cannot reach it (only the dynamic \
         loader reads LD_PRELOAD); run it under `hugewise promote -- {program} ...`, which \
         gives its memory huge pages from outside, or build it dynamically linked"
    )]
    Static {
        /// The program.
        program: String,
    },
    /// The program could not be started.
    #[error("cannot start '{program}': {source}")]
    Launch {
        /// The program.
        program: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A kernel file or call failed.
    #[error(transparent)]
    Sys(#[from] hugewise_sys::Error),
}

/// Result alias of the exec crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
