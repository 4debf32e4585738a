//! hugewise-env shapes this machine as real servers are (THP modes, hugetlb pools, khugepaged,
//! memory pressure, fragmentation by unmovable pages, cgroup memory limits, swap) and always
//! puts it back.
//!
//! Every change goes through a [`Session`]: it is written to the [`journal`] (old value, new
//! value, how to undo) and flushed to disk before it is made, and undone when the session ends,
//! also on error, panic or a signal the caller turns into [`Error::Interrupted`]. What a killed
//! run leaves behind, [`restore_all`] puts back. Memory taken to create pressure or
//! fragmentation is held by this process itself, so nothing outlives it, not even `SIGKILL`.
//!
//! Pieces: [`knob`] (the closed list of settings), [`journal`], [`change`], [`session`],
//! [`state`] (measured memory state), [`pressure`], [`fragment`], [`probe`] (THP probe),
//! [`cgroup`], [`swapfile`], [`scoped`] (apply, run a command, restore), [`show`].
#![deny(missing_docs)]

pub mod actions;
pub mod cgroup;
pub mod change;
mod error;
pub mod fragment;
pub mod host;
pub mod journal;
pub mod knob;
pub mod pressure;
pub mod probe;
pub mod scoped;
pub mod session;
pub mod show;
pub mod state;
pub mod swapfile;
#[doc(hidden)]
pub mod testing;

pub use error::{Error, Result};
pub use host::Host;
pub use journal::Lifetime;
pub use knob::{KhugepagedSetting, Knob};
pub use session::{restore_all, RestoreReport, Session};
