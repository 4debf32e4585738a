//! hugewise-env shapes this machine as real servers are (THP modes, hugetlb pools, khugepaged,
//! memory pressure, fragmentation by unmovable pages, cgroup memory limits, swap) and always
//! puts it back.
//!
//! Every change goes through a [`Session`]: it is written to the [`journal`] (old value, new
//! value, how to undo) and flushed to disk before it is made, and undone when the session ends,
//! also on error, panic or a signal the caller turns into [`Error::Interrupted`]. What a killed
//! run leaves behind, [`restore_all`] puts back. Memory taken to create pressure or
//! fragmentation is held by this process itself, and a command it runs gets SIGKILL from the
//! kernel when it dies, so nothing outlives it, not even `SIGKILL`; what that command started in
//! turn, [`restore_all`] ends.
//!
//! Pieces: [`knob`] (the closed list of settings), [`journal`], [`change`], [`session`],
//! [`kept`] (settings kept until `env restore`), [`actions`] (one-off: compact, drop caches),
//! [`state`] (measured memory state), [`pressure`], [`fragment`], [`probe`] (THP probe),
//! [`cgroup`], [`flush`] (keeps a cgroup's statistics fresh), [`swapfile`], [`group`] (the
//! command's process group), [`scoped`] (apply, run a command, restore), [`show`].
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod actions;
pub mod cgroup;
pub mod change;
mod error;
pub mod flush;
pub mod fragment;
pub mod group;
pub mod host;
pub mod journal;
pub mod kept;
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
