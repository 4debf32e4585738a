//! Collecting the `meta` block every saved result carries: tool, command, machine, kernel, THP
//! state, read through `sys`'s readers.

use std::time::{SystemTime, UNIX_EPOCH};

use hugewise_sys::proc::ProcFs;
use hugewise_sys::sysfs::SysFs;

pub use hugewise_results::meta::Meta;

/// Collect the block now from the live `/proc` and `/sys`, for `tool_version` and `command`.
pub fn collect(tool_version: &str, command: Vec<String>) -> Meta {
    collect_from(&ProcFs::default(), &SysFs::default(), tool_version, command)
}

/// Collect the block from the given trees (recorded copies in tests). What cannot be read is
/// `null`, never a guess.
pub fn collect_from(proc: &ProcFs, sys: &SysFs, tool_version: &str, command: Vec<String>) -> Meta {
    let thp = sys.thp().ok();
    Meta {
        tool_version: tool_version.to_string(),
        command,
        started_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        kernel: proc.kernel_release().ok(),
        cpu_model: proc.cpu_model().ok().flatten(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        mem_total_bytes: proc.meminfo().ok().map(|m| m.total_bytes),
        thp_enabled: thp.as_ref().map(|t| t.enabled.current.clone()),
        thp_defrag: thp.and_then(|t| t.defrag.map(|d| d.current)),
        host: proc.hostname().ok(),
        study: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_recorded_machine_and_leaves_the_missing_null() {
        let d = tempfile::tempdir().expect("tmp");
        let proc = d.path().join("proc");
        std::fs::create_dir_all(proc.join("sys/kernel")).expect("mkdir");
        std::fs::write(proc.join("sys/kernel/osrelease"), "6.1.0-test\n").expect("write");
        std::fs::write(
            proc.join("cpuinfo"),
            "processor\t: 0\nmodel name\t: Test CPU @ 1 GHz\n",
        )
        .expect("write");
        let m = collect_from(
            &ProcFs::new(&proc),
            &SysFs::new(d.path().join("sys")),
            "0.0.0",
            vec!["hugewise".into()],
        );
        assert_eq!(m.kernel.as_deref(), Some("6.1.0-test"));
        assert_eq!(m.cpu_model.as_deref(), Some("Test CPU @ 1 GHz"));
        assert_eq!(m.mem_total_bytes, None);
        assert_eq!(m.thp_enabled, None);
    }
}
