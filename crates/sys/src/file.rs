//! Files hugewise writes: results replaced atomically (a crash, Ctrl-C or error leaves the old
//! file or the new one, never half of one), streamed to a device, a FIFO or standard output,
//! and never written through anything else.
//!
//! A destination is looked at before anything is written: a new path or a
//! regular file is replaced through a temporary file beside it, created with
//! `O_CREAT|O_EXCL|O_NOFOLLOW` (so another user's link or file under that name is never
//! written through) and renamed over the path; a character device, a FIFO or `-` is written as a
//! stream; a symbolic link, a directory, a block device or a socket is refused with its type.
//! In a directory every user may write to (`/tmp`, `/dev/shm`, `/var/tmp`) the file is made
//! mode 0600.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a path names, for writing a result to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Destination {
    /// Nothing yet: the file is created (atomically).
    New,
    /// A regular file: replaced atomically.
    Regular,
    /// `-`: standard output, written as a stream.
    Stdout,
    /// A character device or a FIFO: written as a stream, never replaced.
    Stream,
}

impl Destination {
    /// Look at `path` without following a link; an error (kind `InvalidInput`, saying the
    /// type) for anything hugewise does not write to.
    fn of(path: &Path) -> std::io::Result<Destination> {
        if path.as_os_str() == "-" {
            return Ok(Destination::Stdout);
        }
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Destination::New),
            Err(e) => return Err(e),
        };
        let t = meta.file_type();
        if t.is_file() {
            Ok(Destination::Regular)
        } else if t.is_char_device() || t.is_fifo() {
            Ok(Destination::Stream)
        } else {
            Err(refused(type_name(&t)))
        }
    }
}

/// The name of a file type, as a message says it.
pub fn type_name(t: &std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_fifo() {
        "a FIFO"
    } else {
        "a regular file"
    }
}

fn refused(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "it is {what}: hugewise writes a result only to a new path or a regular file \
             (replaced atomically), or as a stream to a character device, a FIFO or - \
             (standard output)"
        ),
    )
}

/// A result being written to its destination (see the module's doc): nothing reaches a replaced path until
/// [`commit`](Self::commit); dropped uncommitted, the temporary file goes.
#[derive(Debug)]
pub struct Output {
    out: std::io::BufWriter<File>,
    /// The temporary file and the path it is renamed to; `None` for a stream.
    replace: Option<(PathBuf, PathBuf)>,
}

impl Output {
    /// Start writing to `path` (see the module's doc for what it may be).
    pub fn create(path: &Path) -> std::io::Result<Output> {
        let (file, replace) = match Destination::of(path)? {
            Destination::New | Destination::Regular => {
                let (tmp, file) = create_temporary(path)?;
                (file, Some((tmp, path.to_path_buf())))
            }
            Destination::Stdout => (
                File::from(std::io::stdout().as_fd().try_clone_to_owned()?),
                None,
            ),
            Destination::Stream => {
                // Looked at before the open as well: opening another user's FIFO would wait
                // for a reader of theirs.
                shared_stream_check(path, &std::fs::symlink_metadata(path)?)?;
                // No O_CREAT, no O_TRUNC, no link: what was looked at, or an error.
                let file = OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC)
                    .open(path)?;
                let m = file.metadata()?;
                let t = m.file_type();
                if !(t.is_char_device() || t.is_fifo()) {
                    return Err(refused(type_name(&t)));
                }
                shared_stream_check(path, &m)?;
                (file, None)
            }
        };
        Ok(Output {
            out: std::io::BufWriter::with_capacity(1 << 20, file),
            replace,
        })
    }

    /// Flush; for a file, sync it to disk and rename it over its path.
    pub fn commit(mut self) -> std::io::Result<()> {
        self.out.flush()?;
        if let Some((tmp, path)) = self.replace.take() {
            let r = self
                .out
                .get_ref()
                .sync_all()
                .and_then(|_| std::fs::rename(&tmp, &path));
            if r.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            r?;
        }
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.out.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.replace.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Stream whatever `fill` writes into `path`: atomically for a file (a temporary file in the
/// same directory, synced, then renamed over `path`; on any error the temporary file is
/// removed), as it comes for a stream (see the module's doc).
pub fn write_atomic_with(
    path: &Path,
    fill: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut out = Output::create(path)?;
    fill(&mut out)?;
    out.commit()
}

/// Create a file that must not exist yet: `O_CREAT|O_EXCL|O_NOFOLLOW`, so that a link or a file
/// someone else put under that name is never opened. Mode 0600 in a directory every user may
/// write to, else 0666 less the umask.
fn create_exclusive(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(if in_shared_dir(path) { 0o600 } else { 0o666 })
        .open(path)
}

/// In a directory every user may write to, a stream someone else made is theirs to read from
/// (and a FIFO of theirs would make the open wait for them): the result is not handed to them.
fn shared_stream_check(path: &Path, m: &std::fs::Metadata) -> std::io::Result<()> {
    if in_shared_dir(path) && m.uid() != crate::caps::euid() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "it is {} of uid {} in a directory every user may write to: hugewise streams a \
                 result only to one of its own user there",
                type_name(&m.file_type()),
                m.uid()
            ),
        ));
    }
    Ok(())
}

/// Whether `path` (not followed if a link) belongs to this process's user: a sweep of stale
/// files in a shared directory removes only its own user's, never another's that merely looks
/// stale from here (another pid namespace, another machine's view of `/dev/shm`).
pub fn is_own(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.uid() == crate::caps::euid())
}

/// Whether `path`'s directory is writable by every user (as `/tmp` is).
fn in_shared_dir(path: &Path) -> bool {
    std::fs::metadata(parent(path)).is_ok_and(|m| m.mode() & 0o002 != 0)
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A fresh temporary file beside `path` (`.NAME.PID.tmp`, or `.NAME.N.PID.tmp` when that
/// name is taken), created with [`create_exclusive`], so the rename stays on one file system.
fn create_temporary(path: &Path) -> std::io::Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("no file name"))?
        .to_string_lossy();
    let pid = std::process::id();
    let mut last = None;
    for n in 0..64u32 {
        let tmp = parent(path).join(if n == 0 {
            format!(".{name}.{pid}.tmp")
        } else {
            format!(".{name}.{n}.{pid}.tmp")
        });
        match create_exclusive(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// Remove from `dir` the temporary files [`write_atomic_with`] left behind in a process that
/// was killed before it could (`.NAME.PID.tmp` whose process is gone): one of a large file is
/// as large as the file. Best effort: what cannot be read or removed stays.
pub fn remove_dead_temporaries(dir: &Path) {
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    for f in list.flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(|n| n.rsplit_once('.'))
            .and_then(|(_, pid)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_file(f.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn only_a_dead_process_temporaries_are_removed() {
        let d = tempfile::tempdir().expect("tmp");
        let dead = d.path().join(format!(".g.hwg.{}.tmp", u32::MAX - 1));
        let (mine, _) = create_temporary(&d.path().join("g.hwg")).expect("name");
        let other = d.path().join("g.hwg");
        for p in [&dead, &mine, &other] {
            std::fs::write(p, b"x").expect("write");
        }
        remove_dead_temporaries(d.path());
        assert!(!dead.exists());
        assert!(mine.exists(), "this process's own");
        assert!(other.exists());
    }

    #[test]
    fn a_failed_fill_keeps_the_old_file_and_leaves_nothing_behind() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("f");
        write_atomic_with(&p, &mut |w| w.write_all(b"old")).expect("write");
        let e = write_atomic_with(&p, &mut |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk on fire"))
        })
        .expect_err("fill failed");
        assert!(e.to_string().contains("disk on fire"));
        assert_eq!(std::fs::read(&p).expect("read"), b"old");
        assert_eq!(std::fs::read_dir(d.path()).expect("ls").count(), 1);
    }

    #[test]
    fn a_link_or_a_directory_is_refused_and_left_alone() {
        let d = tempfile::tempdir().expect("tmp");
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").expect("write");
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&victim, &link).expect("link");
        for (p, what) in [
            (link.clone(), "a symbolic link"),
            (d.path().to_path_buf(), "a directory"),
        ] {
            let e = write_atomic_with(&p, &mut |w| w.write_all(b"new")).expect_err("refused");
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
            assert!(e.to_string().contains(what), "{e}");
        }
        assert_eq!(std::fs::read(&victim).expect("read"), b"keep");
        assert!(std::fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_character_device_is_written_through_not_replaced() {
        let before = std::fs::symlink_metadata("/dev/null").expect("lstat");
        // As root this would have replaced /dev/null with a regular file.
        write_atomic_with(Path::new("/dev/null"), &mut |w| w.write_all(b"{}")).expect("stream");
        let after = std::fs::symlink_metadata("/dev/null").expect("lstat");
        assert!(after.file_type().is_char_device());
        assert_eq!(before.ino(), after.ino());
        let e = write_atomic_with(Path::new("/dev/full"), &mut |w| w.write_all(&[0; 4096]))
            .expect_err("a full device says so");
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
        assert!(std::fs::symlink_metadata("/dev/full")
            .expect("lstat")
            .file_type()
            .is_char_device());
    }

    #[test]
    fn a_fifo_gets_the_result_as_a_stream() {
        let d = tempfile::tempdir().expect("tmp");
        let fifo = d.path().join("fifo");
        crate::testing::mkfifo(&fifo).expect("mkfifo");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).expect("read"))
        };
        write_atomic_with(&fifo, &mut |w| w.write_all(b"streamed")).expect("write");
        assert_eq!(reader.join().expect("reader"), b"streamed");
        assert!(std::fs::symlink_metadata(&fifo)
            .expect("lstat")
            .file_type()
            .is_fifo());
    }

    #[test]
    fn a_link_planted_at_the_temporary_name_is_never_written_through() {
        let d = tempfile::tempdir().expect("tmp");
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").expect("write");
        let out = d.path().join("r.json");
        let planted = d.path().join(format!(".r.json.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).expect("plant");
        write_atomic_with(&out, &mut |w| w.write_all(b"result")).expect("write");
        assert_eq!(std::fs::read(&out).expect("read"), b"result");
        assert_eq!(std::fs::read(&victim).expect("read"), b"keep");
        assert!(std::fs::symlink_metadata(&planted)
            .expect("lstat")
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_file_in_a_shared_directory_is_private() {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        let p = d.path().join("r.json");
        write_atomic_with(&p, &mut |w| w.write_all(b"x")).expect("write");
        assert_eq!(std::fs::metadata(&p).expect("stat").mode() & 0o777, 0o600);
    }

    #[test]
    fn another_users_fifo_in_a_shared_directory_gets_nothing() {
        if !crate::testing::root_or_skip() {
            return;
        }
        let d = tempfile::tempdir().expect("tmp");
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        let fifo = d.path().join("r.json");
        crate::testing::mkfifo(&fifo).expect("mkfifo");
        std::os::unix::fs::lchown(&fifo, Some(65534), None).expect("chown");
        // Refused before the open, which would wait for a reader of theirs.
        let e = write_atomic_with(&fifo, &mut |w| w.write_all(b"secret")).expect_err("refused");
        assert!(e.to_string().contains("of uid 65534"), "{e}");
    }
}
