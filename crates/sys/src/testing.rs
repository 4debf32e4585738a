//! How a test that cannot run on this machine says so, in a way the suite's summary counts.
//!
//! The test harness captures what `eprintln!` prints and shows it only for failing tests, so a
//! skipped test would pass unseen. [`skip`] writes straight to the process's stderr instead,
//! one line `SKIPPED: <test>: <reason>`, which CI counts into its closing line.

use std::io::Write;

/// Report that the calling test skips its checks, and why; the caller then returns.
pub fn skip(reason: impl std::fmt::Display) {
    // The harness runs each test on a thread named after it.
    let current = std::thread::current();
    let name = current.name().unwrap_or("a test");
    let line = format!("SKIPPED: {name}: {reason}\n");
    // One write, so that parallel tests' lines do not interleave.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Whether this process runs as root; when not, the calling test is reported skipped (it
/// then returns without checking anything).
pub fn root_or_skip() -> bool {
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false);
    if !root {
        skip("not root");
    }
    root
}

/// Make a FIFO at `path` (mode 0600), for tests of what hugewise does with one where it expects
/// a file.
pub fn mkfifo(path: &std::path::Path) -> std::io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(std::io::Error::other)?;
    // SAFETY: a NUL-terminated path that lives across the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
