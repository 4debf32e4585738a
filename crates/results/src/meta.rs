//! The `meta` block every saved result carries: tool, command, machine, kernel, THP state.

use serde::{Deserialize, Serialize};

/// What a result records about how and where it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// hugewise version.
    pub tool_version: String,
    /// The command line, as given.
    pub command: Vec<String>,
    /// Seconds since the epoch at the start.
    pub started_unix_s: u64,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Logical CPUs online.
    pub cpus: usize,
    /// Memory size.
    pub mem_total_bytes: Option<u64>,
    /// THP `enabled` at the start.
    pub thp_enabled: Option<String>,
    /// THP `defrag` at the start.
    pub thp_defrag: Option<String>,
    /// The machine's host name (tells machines apart when studies are merged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The study and run this result belongs to, and the machine shape it ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<Box<crate::study::StudyTag>>,
}
