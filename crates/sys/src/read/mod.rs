//! Reading the files a user names: opened without hanging on a FIFO that has no writer and
//! refused when they are directories ([`open`]); read whole only up to a bound ([`whole`]);
//! read as text a bounded line at a time ([`lines`]); and quoted in an error without flooding
//! a terminal ([`quote`]).
//!
//! Errors are [`std::io::Error`]s that say where (a byte offset, a limit) but not the file:
//! every caller already wraps an I/O error with the path it opened.

pub mod lines;
pub mod quote;
pub mod whole;

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

pub use lines::{Lines, NotText, MAX_LINE};
pub use quote::shown;
pub use whole::{bounded, bounded_string, result, Bound};

/// What a user-named path is, as far as reading it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file: its size is known and it can be read at any offset.
    Regular,
    /// A FIFO (named pipe) or a pipe (`<(zcat g.el.gz)`): read once, in order.
    Fifo,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A socket.
    Socket,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Regular => "a regular file",
            Kind::Fifo => "a FIFO",
            Kind::CharDevice => "a character device",
            Kind::BlockDevice => "a block device",
            Kind::Socket => "a socket",
        })
    }
}

/// How long [`open`] gives a FIFO's writer to open it and start writing before reading it
/// anyway: a FIFO that no process writes to then reads as empty instead of hanging forever.
pub const WRITER_WAIT: Duration = Duration::from_secs(5);

/// Open `path` for reading, following links. A directory is refused as one. A FIFO is opened
/// without blocking (`open(2)` would wait for a writer forever), then given
/// [`WRITER_WAIT`] for one to start; what is read from it after that is its stream, once.
pub fn open(path: &Path) -> io::Result<(File, Kind)> {
    open_within(path, WRITER_WAIT)
}

/// [`open`] for formats read by offset, that need the size up front: anything but a regular
/// file is refused, naming its kind and `why` (e.g. "GAP files are read by offset").
pub fn open_regular(path: &Path, why: &str) -> io::Result<File> {
    // No writer is waited for: a FIFO is refused anyway.
    let (file, kind) = open_within(path, Duration::ZERO)?;
    if kind != Kind::Regular {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{kind}, not a regular file: {why}; copy it to a file first"),
        ));
    }
    Ok(file)
}

fn open_within(path: &Path, wait: Duration) -> io::Result<(File, Kind)> {
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let t = file.metadata()?.file_type();
    let kind = if t.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "a directory, not a file",
        ));
    } else if t.is_fifo() {
        Kind::Fifo
    } else if t.is_char_device() {
        Kind::CharDevice
    } else if t.is_block_device() {
        Kind::BlockDevice
    } else if t.is_socket() {
        Kind::Socket
    } else {
        Kind::Regular
    };
    if kind == Kind::Fifo {
        wait_readable(&file, wait)?;
    }
    set_blocking(&file)?;
    Ok((file, kind))
}

/// Wait up to `wait` for `file` to have data or for its writer to hang up; a wait cut short by
/// a signal counts as over.
fn wait_readable(file: &File, wait: Duration) -> io::Result<()> {
    let mut p = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: `p` is one valid pollfd that outlives the call, and nfds is 1.
    let rc = unsafe { libc::poll(&mut p, 1, ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Clear the `O_NONBLOCK` [`open`] set: reads wait for a live writer from now on.
fn set_blocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor this function's caller owns reads its flags only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETFL changes the file status flags of the same descriptor, nothing in memory.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Instant;

    /// A FIFO at `dir/name`.
    pub(crate) fn fifo(dir: &Path, name: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        p
    }

    #[test]
    fn a_directory_is_refused_as_one() {
        let d = tempfile::tempdir().expect("tmp");
        let e = open(d.path()).expect_err("a directory");
        assert_eq!(e.to_string(), "a directory, not a file");
        let e = open_regular(d.path(), "x").expect_err("a directory");
        assert!(e.to_string().contains("a directory"), "{e}");
    }

    #[test]
    fn a_fifo_with_no_writer_reads_empty_after_the_wait_instead_of_hanging() {
        let d = tempfile::tempdir().expect("tmp");
        let p = fifo(d.path(), "f");
        let t = Instant::now();
        let (mut f, kind) = open_within(&p, Duration::from_millis(100)).expect("open");
        assert_eq!(kind, Kind::Fifo);
        let mut s = Vec::new();
        f.read_to_end(&mut s).expect("read");
        assert!(s.is_empty());
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        let e = open_regular(&p, "GAP files are read by offset").expect_err("fifo");
        assert!(
            e.to_string().starts_with("a FIFO, not a regular file: GAP"),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_is_read_once_whole_even_from_a_slow_writer() {
        let d = tempfile::tempdir().expect("tmp");
        let p = fifo(d.path(), "f");
        let w = {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut f = File::options().write(true).open(&p).expect("writer");
                f.write_all(b"0 1\n").expect("write");
                std::thread::sleep(Duration::from_millis(300));
                f.write_all(b"1 2\n").expect("write");
            })
        };
        let (mut f, _) = open(&p).expect("open");
        let mut s = String::new();
        f.read_to_string(&mut s).expect("read");
        w.join().expect("writer");
        assert_eq!(s, "0 1\n1 2\n");
    }
}
