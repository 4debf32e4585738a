//! hugewise-console owns what a command writes to the terminal: progress while the work runs
//! (named steps with bars or plain lines, a study's runs, the stages of a shaped machine, a
//! program's live backing, a promotion session's actions and status line) and its result when
//! it ends (text or JSON, saved if asked).
//!
//! It is a crate of its own, just below the binary, because neither end should hold it:
//! `hugewise-report` renders saved results and depends on the result model alone, while
//! progress needs a terminal, indicatif and the libraries' hooks ([`hugewise_sim::Progress`],
//! [`hugewise_study::runner::Observer`], [`hugewise_env::scoped::Stage`], the graph reader's
//! counts); and the binary only turns arguments into calls. What it prints of a result is
//! always a report view; what it computes is how far the work has gone.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod emit;
pub mod env;
mod error;
pub mod exec;
pub mod progress;
pub mod promote;
pub mod study;

pub use error::{Error, Result};
