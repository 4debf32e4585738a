//! What `hugewise exec` and its preload library agree on: the environment that carries the
//! rules into the program, and where each process of the program keeps its allocation log.

use std::path::PathBuf;

/// The page rules, as [`crate::rules::Rules`] prints them.
pub const ENV_RULES: &str = "HUGEWISE_EXEC_RULES";
/// Allocations below this many bytes stay with the program's allocator.
pub const ENV_MIN_SIZE: &str = "HUGEWISE_EXEC_MIN_SIZE";
/// The run's session name, which names the logs of all its processes.
pub const ENV_SESSION: &str = "HUGEWISE_EXEC_SESSION";
/// Set (to 1) for a profile run: every small allocation goes to an arena of its call site.
pub const ENV_PROFILE: &str = "HUGEWISE_EXEC_PROFILE";
/// Most bytes the hot arena (rules with policy `arena`) may hold.
pub const ENV_HOT_ARENA: &str = "HUGEWISE_EXEC_HOT_ARENA";
/// The hot arena's size unless the user says otherwise.
pub const DEFAULT_HOT_ARENA: u64 = 256 << 20;
/// The shared library's file name.
pub const LIBRARY: &str = "libhugewise_preload.so";
/// Entries per allocation log (128 bytes each, in a sparse file: only entries written take memory).
pub const LOG_CAPACITY: usize = 1 << 18;
/// Allocations below this stay with the program's allocator unless the user says otherwise:
/// smaller ones cannot hold a huge page of their own.
pub const DEFAULT_MIN_SIZE: u64 = 2 << 20;

use hugewise_sys::alloclog::{LOG_DIR as DIR, LOG_PREFIX};

/// The prefix of every log file of `session`.
pub fn log_prefix(session: &str) -> String {
    format!("{LOG_PREFIX}{session}.")
}

/// Where process `pid` of `session` keeps its allocation log.
pub fn log_path(session: &str, pid: u32) -> PathBuf {
    PathBuf::from(DIR).join(format!("{}{pid}", log_prefix(session)))
}

/// The logs of `session` that exist now, with their processes' pids.
pub fn logs(session: &str) -> Vec<(i32, PathBuf)> {
    let prefix = log_prefix(session);
    let Ok(dir) = std::fs::read_dir(DIR) else {
        return Vec::new();
    };
    let mut out: Vec<(i32, PathBuf)> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let pid = name.to_str()?.strip_prefix(&prefix)?.parse().ok()?;
            Some((pid, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Remove the logs of runs whose `hugewise exec` is gone (killed before it could clean up):
/// a session's name starts with its pid. Returns how many were removed.
pub fn sweep_orphans() -> usize {
    let Ok(dir) = std::fs::read_dir(DIR) else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix(LOG_PREFIX))
                .and_then(|rest| rest.split('-').next())
                .is_some_and(|pid| !std::path::Path::new("/proc").join(pid).exists())
        })
        .filter(|e| hugewise_sys::file::is_own(&e.path()))
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}
