//! The record of one promotion or demotion: when, where, what the kernel answered, how long it
//! took, and what backs the range afterwards, read back from the kernel.

use serde::{Deserialize, Serialize};

/// What was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    /// Collapse into 2 MiB pages (`MADV_COLLAPSE`).
    Promote,
    /// Split back into 4 KiB pages.
    Demote,
}

/// One action on one range of one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// Milliseconds since the engine started.
    pub t_ms: f64,
    /// The target.
    pub pid: i32,
    /// First address of the range.
    pub start: usize,
    /// Length of the range.
    pub len_bytes: u64,
    /// What was asked.
    pub kind: ActionKind,
    /// `ok`, `gone` (the target exited), or the errno's name (`EAGAIN`, `ENOMEM`, ...).
    pub outcome: String,
    /// How long the kernel call took.
    pub latency_ns: u64,
    /// Bytes of the range in 2 MiB pages afterwards, read back from the kernel; `null` when
    /// they could not be read (target gone, frames hidden).
    pub huge_bytes_after: Option<u64>,
}

impl Action {
    /// The call did what was asked: the kernel said yes and the backing read back agrees.
    pub fn succeeded(&self) -> bool {
        self.outcome == "ok"
            && match (self.kind, self.huge_bytes_after) {
                (ActionKind::Promote, Some(h)) => h == self.len_bytes,
                (ActionKind::Demote, Some(h)) => h == 0,
                (_, None) => true,
            }
    }
}
