//! What tests need of the machine beyond hugewise's own calls: how a test that cannot run
//! here says so, in a way the suite's summary counts; a FIFO; a page the kernel cannot take.
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

/// One 4 KiB page of this process's memory referenced by a pipe (`vmsplice`), as a page being
/// migrated or under I/O is: `MADV_COLLAPSE` refuses its 2 MiB chunk with `EAGAIN` until the
/// pipe lets go ([`PageHold::release`], or drop), for tests of what hugewise does with a
/// collapse the kernel could not take that moment.
pub struct PageHold {
    read: std::io::PipeReader,
    /// The pipe's writing end, until the page is let go.
    write: Option<std::io::PipeWriter>,
}

impl PageHold {
    /// Hold the page at `addr` (page-aligned, mapped and faulted in this process).
    pub fn new(addr: usize) -> std::io::Result<PageHold> {
        use std::os::fd::AsRawFd;
        if !addr.is_multiple_of(4096) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{addr:#x} is not the start of a 4 KiB page"),
            ));
        }
        let (read, write) = std::io::pipe()?;
        let iov = libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: 4096,
        };
        // SAFETY: one iovec that lives across the call, on a pipe this function owns; the
        // kernel only takes a reference to the page (no gift), and a page not mapped is an
        // error it returns, not a fault.
        let n = unsafe { libc::vmsplice(write.as_raw_fd(), &iov, 1, 0) };
        if n != 4096 {
            return Err(if n < 0 {
                std::io::Error::last_os_error()
            } else {
                std::io::Error::other(format!("vmsplice took {n} bytes of 4096"))
            });
        }
        Ok(PageHold {
            read,
            write: Some(write),
        })
    }

    /// Let go of the page: the pipe's reference is dropped once its buffer is read.
    pub fn release(&mut self) -> std::io::Result<()> {
        use std::io::Read;
        if self.write.take().is_some() {
            let mut buf = vec![0u8; 4096];
            self.read.read_exact(&mut buf)?;
        }
        Ok(())
    }
}

/// Whether `dir` is on tmpfs, whose files live in the page cache and cannot leave it.
pub fn on_tmpfs(dir: &std::path::Path) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: an all-zero statfs is a valid value to be overwritten.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a statfs of ours, both live across the call.
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    rc == 0 && st.f_type as i64 == TMPFS_MAGIC
}
