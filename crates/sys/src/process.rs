//! Other processes: advice to their memory (`pidfd_open` + `process_madvise`), signals, and the
//! ties that make a command hugewise starts end with it.

use std::ffi::CString;
use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;

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
    /// fewer than asked when it stops early. More ranges than one call takes (`IOV_MAX`,
    /// 1024) go in several calls, in order; a short call ends them, and so does an error
    /// after some bytes were advised (the count is then returned, as the kernel does).
    pub fn madvise(&self, ranges: &[Range<usize>], advice: Advice) -> Result<usize> {
        if matches!(advice, Advice::PopulateWrite) {
            return Err(Error::Invalid(
                "process_madvise does not accept MADV_POPULATE_WRITE".into(),
            ));
        }
        let mut done = 0;
        for batch in ranges.chunks(IOV_MAX) {
            let asked: usize = batch.iter().map(|r| r.end.saturating_sub(r.start)).sum();
            // Like the kernel within one call: once some bytes were advised, an error ends
            // the count rather than hiding it.
            let n = match self.madvise_batch(batch, advice) {
                Ok(n) => n,
                Err(_) if done > 0 => break,
                Err(e) => return Err(e),
            };
            done += n;
            if n < asked {
                break;
            }
        }
        Ok(done)
    }

    fn madvise_batch(&self, ranges: &[Range<usize>], advice: Advice) -> Result<usize> {
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

/// The most ranges one `process_madvise` call takes (the kernel's `UIO_MAXIOV`); more give
/// `EINVAL`.
const IOV_MAX: usize = 1024;

/// A signal hugewise sends to processes it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM: ask to exit.
    Term,
    /// SIGKILL: end now.
    Kill,
}

impl Signal {
    fn raw(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

impl PidFd {
    /// Send `signal` to the process (`pidfd_send_signal`, Linux 5.1): it cannot reach another
    /// process that reused the pid.
    pub fn signal(&self, signal: Signal) -> Result<()> {
        // SAFETY: the fd is a live pidfd we own; a null siginfo asks the kernel to fill it in.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.fd.as_raw_fd(),
                signal.raw(),
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            )
        };
        if rc < 0 {
            return Err(Error::last_os("pidfd_send_signal"));
        }
        Ok(())
    }

    /// Whether the process has exited (its pidfd polls readable). Until it has, and until its
    /// parent reaps it, its pid cannot be given to another process: what was read from
    /// `/proc/PID` before this says `false` was read from this process.
    pub fn exited(&self) -> bool {
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd that lives across the call; a zero timeout never blocks.
        let rc = unsafe { libc::poll(&mut p, 1, 0) };
        rc > 0 && p.revents & (libc::POLLIN | libc::POLLHUP) != 0
    }
}

/// Wait up to `wait` for one of the processes of `fds` to exit, asleep: one wakeup where
/// naps to check would take one each. Whether one has exited (a wait cut short by a signal
/// says `false`, as if it had run out).
pub fn wait_exit(fds: &[&PidFd], wait: std::time::Duration) -> bool {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // Rounded up: rounded down, the last fraction of a millisecond of a wait became a timeout
    // of 0, and a caller waiting out an interval spun on it.
    let ms = i32::try_from(wait.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX);
    // SAFETY: `p` holds `p.len()` valid pollfds (one per borrowed pidfd, far fewer than
    // `nfds_t` counts) and outlives the call; the fds are live pidfds borrowed for its length.
    let rc = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
    rc > 0
        && p.iter()
            .any(|p| p.revents & (libc::POLLIN | libc::POLLHUP) != 0)
}

/// Make the child that `cmd` spawns join a cgroup before it executes its program, by writing
/// `0` (the writer itself) to `procs_file` (the cgroup's `cgroup.procs`). Everything the program
/// allocates is then charged to that cgroup from its first instruction.
pub fn join_cgroup_at_exec(cmd: &mut std::process::Command, procs_file: &Path) -> Result<()> {
    let path = CString::new(procs_file.as_os_str().as_bytes()).map_err(|_| {
        Error::Invalid(format!(
            "{}: path contains a NUL byte",
            procs_file.display()
        ))
    })?;
    let hook = move || -> std::io::Result<()> {
        // SAFETY: between fork and exec only async-signal-safe calls are allowed: open, write
        // and close are; `path` was allocated before the fork and is only read here.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let n = libc::write(fd, b"0".as_ptr().cast(), 1);
            let err = std::io::Error::last_os_error();
            libc::close(fd);
            if n != 1 {
                return Err(err);
            }
        }
        Ok(())
    };
    // SAFETY: the hook above only makes async-signal-safe calls and allocates nothing.
    unsafe { cmd.pre_exec(hook) };
    Ok(())
}

/// Make the child that `cmd` spawns the leader of a process group of its own (so that it and
/// everything it starts can be signalled at once), and have the kernel send it SIGKILL when the
/// thread that spawned it ends, even by SIGKILL, where nothing of hugewise could act.
///
/// The death signal fires when the spawning *thread* exits: spawn from the thread that lives as
/// long as the command should.
pub fn tie_to_parent(cmd: &mut std::process::Command) {
    cmd.process_group(0);
    let parent = std::process::id() as libc::pid_t;
    let hook = move || -> std::io::Result<()> {
        // SAFETY: prctl and getppid are async-signal-safe and touch no memory of ours; the
        // arguments are plain integers.
        unsafe {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then no signal will come, and
            // the child must not run on its own.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        Ok(())
    };
    // SAFETY: the hook above only makes async-signal-safe calls and allocates nothing.
    unsafe { cmd.pre_exec(hook) };
}

/// Send `signal` to every process of group `pgid`; `false` when the group has no process left.
pub fn signal_group(pgid: i32, signal: Signal) -> Result<bool> {
    if pgid <= 1 {
        return Err(Error::Invalid(format!(
            "{pgid} is not a process group hugewise started"
        )));
    }
    // SAFETY: kill takes plain integers; a negative pid addresses the group.
    let rc = unsafe { libc::kill(-pgid, signal.raw()) };
    if rc == 0 {
        return Ok(true);
    }
    let errno = crate::errno::Errno::last();
    if errno.0 == libc::ESRCH {
        return Ok(false);
    }
    Err(Error::Syscall {
        call: "kill(process group)",
        errno,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mmap::{MapOptions, Mapping};

    #[test]
    fn waiting_for_an_exit_sleeps_until_one_of_the_processes_ends() {
        use std::time::{Duration, Instant};
        let mut long = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let mut short = std::process::Command::new("sleep")
            .arg("0.3")
            .spawn()
            .expect("spawn sleep");
        let l = PidFd::open(long.id() as i32).expect("pidfd of the long sleep");
        let s = PidFd::open(short.id() as i32).expect("pidfd of the short sleep");
        // Neither ends within 50 ms: the wait runs out.
        assert!(!wait_exit(&[&l], Duration::from_millis(50)));
        // The short one ends first: the wait ends with it, well before its 10 s.
        let t0 = Instant::now();
        assert!(wait_exit(&[&l, &s], Duration::from_secs(10)));
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        assert!(s.exited() && !l.exited());
        let _ = long.kill();
        let _ = long.wait();
        let _ = short.wait();
    }

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
            Err(e) => crate::testing::skip(format!("process_madvise unavailable here: {e}")),
        }
    }

    #[test]
    fn more_ranges_than_one_call_takes_are_all_advised() {
        let me = PidFd::open(std::process::id() as i32).expect("pidfd_open on self");
        let pages = 2 * IOV_MAX + 5;
        let m = Mapping::anonymous(pages * 4096, MapOptions::default()).expect("mmap");
        m.advise(0..m.len(), Advice::PopulateWrite)
            .expect("populate");
        // Every other page: ranges the kernel cannot merge into fewer.
        let ranges: Vec<Range<usize>> = (0..pages)
            .step_by(2)
            .map(|p| m.addr() + p * 4096..m.addr() + p * 4096 + 4096)
            .collect();
        assert!(ranges.len() > IOV_MAX);
        if let Err(e) = me.madvise(&ranges[..1], Advice::Cold) {
            return crate::testing::skip(format!("process_madvise unavailable here: {e}"));
        }
        // In one call the kernel would refuse them all (EINVAL).
        let n = me.madvise(&ranges, Advice::Cold).expect("batched advice");
        assert_eq!(n, ranges.len() * 4096);
    }

    #[test]
    fn signal_reaches_a_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let fd = PidFd::open(child.id() as i32).expect("pidfd");
        fd.signal(Signal::Kill).expect("kill");
        let status = child.wait().expect("wait");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn exec_hook_failure_is_the_spawn_error() {
        let mut cmd = std::process::Command::new("true");
        join_cgroup_at_exec(&mut cmd, Path::new("/nonexistent/cgroup.procs")).expect("hook");
        let e = cmd.spawn().expect_err("cannot join a missing cgroup");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn a_tied_child_leads_its_own_group_and_the_group_can_be_signalled() {
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        tie_to_parent(&mut cmd);
        let mut child = cmd.spawn().expect("spawn sleep");
        let pid = child.id() as i32;
        let stat = crate::proc::ProcFs::default()
            .stat(pid)
            .expect("stat")
            .expect("running");
        assert_eq!(stat.pgrp, pid);
        assert!(signal_group(pid, Signal::Kill).expect("kill group"));
        let status = child.wait().expect("wait");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert!(!signal_group(pid, Signal::Term).expect("empty group"));
        assert!(signal_group(1, Signal::Term).is_err());
    }

    #[test]
    fn unknown_pid_is_esrch() {
        let e = PidFd::open(i32::MAX).expect_err("no such pid");
        assert_eq!(e.errno().map(|e| e.name()), Some("ESRCH".to_string()));
    }

    #[test]
    fn a_pidfd_tells_when_its_process_has_exited() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let fd = PidFd::open(child.id() as i32).expect("pidfd");
        assert!(!fd.exited());
        child.kill().expect("kill");
        // Exited but not reaped yet: the pid is still its own, and the pidfd says it is gone.
        let t = std::time::Instant::now();
        while !fd.exited() && t.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(fd.exited());
        child.wait().expect("reap");
        assert!(fd.exited());
    }
}
