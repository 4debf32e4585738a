//! hugewise-rules owns what `hugewise exec` and its preload library share: [`rules`] (the
//! page-rule language), [`sites`] (call sites that survive a reload), [`protocol`] (the
//! environment that carries the rules into the program, and where each process keeps its
//! allocation log) and [`budget`] (how much `thp` advice a program `hugewise promote` started
//! may get at first fault). It stands apart from hugewise-exec so that the preload library, which runs
//! inside every program `hugewise exec` starts, links none of the launcher's dependencies.
#![forbid(unsafe_code)]

pub mod budget;
pub mod protocol;
pub mod rules;
pub mod sites;

pub use rules::{Placement, Rule, Rules};

/// A page rule that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {why}")]
pub struct Error {
    /// Where: the rule's position and text, or the file and line.
    pub at: String,
    /// What is wrong.
    pub why: String,
}

/// Result alias of the rules crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
