//! Advice to another process's memory: `pidfd_open` + `process_madvise`.

use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::mmap::Advice;
use crate::{Error, Result};

/// A pidfd: a stable handle on a process that cannot be confused with a recycled pid.
#[derive(Debug)]
pub struct PidFd {
    fd: OwnedFd,
    pid: i32,
}

impl PidFd {
    /// Open a pidfd for `pid` (`pidfd_open`, Linux 5.3).
    pub fn open(pid: i32) -> Result<PidFd> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1; no memory is
        // passed.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(Error::last_os("pidfd_open"));
        }
        // SAFETY: the kernel just returned this fd to us and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        Ok(PidFd { fd, pid })
    }

    /// The pid this handle was opened for.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Give `advice` for address ranges of the target process (`process_madvise`, Linux 5.10;
    /// `MADV_COLLAPSE` through it since 6.1). Returns the bytes the kernel advised, which can be
    /// fewer than asked when it stops early.
    pub fn madvise(&self, ranges: &[Range<usize>], advice: Advice) -> Result<usize> {
        if matches!(advice, Advice::PopulateWrite) {
            return Err(Error::Invalid(
                "process_madvise does not accept MADV_POPULATE_WRITE".into(),
            ));
        }
        let iov: Vec<libc::iovec> = ranges
            .iter()
            .map(|r| libc::iovec {
                iov_base: r.start as *mut libc::c_void,
                iov_len: r.end.saturating_sub(r.start),
            })
            .collect();
        // SAFETY: iov points to `iov.len()` valid iovec structs that live across the call; the
        // addresses in them belong to the target process and are validated by the kernel, never
        // dereferenced here; the advice kinds allowed here keep memory contents.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                self.fd.as_raw_fd(),
                iov.as_ptr(),
                iov.len(),
                advice.raw(),
                0u32,
            )
        };
        if rc < 0 {
            return Err(Error::last_os("process_madvise"));
        }
        Ok(rc as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mmap::{MapOptions, Mapping};

    #[test]
    fn self_cold_advice_through_pidfd() {
        let me = PidFd::open(std::process::id() as i32).expect("pidfd_open on self");
        let m = Mapping::anonymous(1 << 20, MapOptions::default()).expect("mmap");
        m.advise(0..m.len(), Advice::PopulateWrite)
            .expect("populate");
        let done = me.madvise(
            std::slice::from_ref(&(m.addr()..m.addr() + m.len())),
            Advice::Cold,
        );
        match done {
            Ok(n) => assert_eq!(n, m.len()),
            Err(e) => eprintln!("skip: process_madvise unavailable here: {e}"),
        }
    }

    #[test]
    fn unknown_pid_is_esrch() {
        let e = PidFd::open(i32::MAX).expect_err("no such pid");
        assert_eq!(e.errno().map(|e| e.name()), Some("ESRCH".to_string()));
    }
}
