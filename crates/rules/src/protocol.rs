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
/// The huge-page budget `thp` advice is held to, as [`crate::budget::Budget`] prints it
/// (`hugewise promote` sets it; without it `thp` means every allocation it matches).
pub const ENV_BUDGET: &str = "HUGEWISE_EXEC_BUDGET";
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

use crate::budget::Budget;
use crate::Rules;

/// How a program is started under the preload library: what `hugewise exec` and `hugewise
/// promote` both put in its environment.
#[derive(Debug, Clone)]
pub struct Preload {
    /// The library.
    pub library: PathBuf,
    /// The page rules.
    pub rules: Rules,
    /// Allocations below this stay with the program's allocator.
    pub min_size: u64,
    /// The run's session (see [`session_name`]), which names its processes' logs.
    pub session: String,
    /// Most bytes of the hot arena.
    pub hot_arena: u64,
    /// A profile run (every call site's small allocations in an arena of their own).
    pub profile: bool,
    /// The budget `thp` advice is held to (None: no limit).
    pub budget: Option<Budget>,
}

impl Preload {
    /// `library` with `rules`, a fresh session and the defaults: allocations from 2 MiB, the
    /// default hot arena, no profile, no budget.
    pub fn new(library: PathBuf, rules: Rules) -> Preload {
        Preload {
            library,
            rules,
            min_size: DEFAULT_MIN_SIZE,
            session: session_name(),
            hot_arena: DEFAULT_HOT_ARENA,
            profile: false,
            budget: None,
        }
    }

    /// Put the library and its settings in `cmd`'s environment. A `LD_PRELOAD` the user set
    /// stays, after ours: our `malloc` must be the one found first.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        let mut preload = self.library.as_os_str().to_owned();
        if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
            preload.push(":");
            preload.push(old);
        }
        cmd.env("LD_PRELOAD", &preload)
            .env(ENV_RULES, self.rules.to_string())
            .env(ENV_MIN_SIZE, self.min_size.to_string())
            .env(ENV_SESSION, &self.session)
            .env(ENV_HOT_ARENA, self.hot_arena.to_string());
        if self.profile {
            cmd.env(ENV_PROFILE, "1");
        }
        match self.budget {
            Some(b) => cmd.env(ENV_BUDGET, b.to_string()),
            // Not inherited from whoever started hugewise.
            None => cmd.env_remove(ENV_BUDGET),
        };
    }

    /// Remove the logs the session's processes left (they are read by now).
    pub fn remove_logs(&self) {
        for (_, path) in logs(&self.session) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A session name no other run on the machine uses at the same time. It starts with this
/// process's pid, which is how [`sweep_orphans`] knows whether its run is still there.
pub fn session_name() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        hugewise_sys::interpose::monotonic_ns() % 1_000_000_000
    )
}

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
