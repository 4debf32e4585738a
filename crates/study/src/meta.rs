//! The `meta` block every result carries: schema, tool, command, machine, kernel, THP state.

use std::time::{SystemTime, UNIX_EPOCH};

use hugewise_sys::sysfs::SysFs;
use serde::Serialize;

/// Version of the JSON result schema; bumped when a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// What a result records about how and where it was made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Meta {
    /// Result schema version.
    pub schema_version: u32,
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
}

impl Meta {
    /// Collect the block now, for `tool_version` and `command`.
    pub fn collect(tool_version: &str, command: Vec<String>) -> Meta {
        let sys = SysFs::default();
        let thp = sys.thp().ok();
        Meta {
            schema_version: SCHEMA_VERSION,
            tool_version: tool_version.to_string(),
            command,
            started_unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string()),
            cpu_model: std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            }),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            mem_total_bytes: hugewise_sys::proc::ProcFs::default()
                .meminfo()
                .ok()
                .map(|m| m.total_bytes),
            thp_enabled: thp.as_ref().map(|t| t.enabled.current.clone()),
            thp_defrag: thp.and_then(|t| t.defrag.map(|d| d.current)),
        }
    }
}

/// Any result from a lower crate (which cannot know [`Meta`]) with the meta block added; the
/// result's own fields stay at the top level of the JSON.
#[derive(Debug, Clone, Serialize)]
pub struct WithMeta<'a, T: Serialize> {
    /// Run and machine.
    pub meta: Meta,
    /// The result.
    #[serde(flatten)]
    pub result: &'a T,
}
