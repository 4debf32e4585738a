//! Files of debugfs (`split_huge_pages`, `extfrag/*`), also where the system has not mounted it.
//!
//! Without a system mount, each call mounts debugfs on a fresh private directory, opens the one
//! file it needs, and detaches the mount and removes the directory at once: the open file keeps
//! working, and a crash or Ctrl-C can leave nothing mounted behind for more than the few
//! microseconds between mount and detach.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

const SYSTEM: &str = "/sys/kernel/debug";

fn is_debugfs_mounted(at: &Path) -> bool {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return false;
    };
    mounts.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 2 && f[2] == "debugfs" && Path::new(f[1]) == at
    })
}

fn cstring(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| Error::Invalid(format!("{} holds a NUL byte", p.display())))
}

fn open_in(dir: &Path, rel: &str, write: bool) -> Result<File> {
    let p = dir.join(rel);
    OpenOptions::new()
        .read(!write)
        .write(write)
        .open(&p)
        .map_err(|e| Error::io(SYSTEM.to_string() + "/" + rel, e))
}

/// Where this thread mounts debugfs when the system has not: unique per process and thread, so
/// concurrent calls never share a mount point.
fn private_dir() -> PathBuf {
    std::env::temp_dir().join(format!(
        "hugewise-debugfs-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ))
}

/// Make `dir` (in the shared temporary directory) for this process alone: created afresh, mode
/// 0700, never through a link, or, when a directory of this user's is already there (left by a
/// process that had the same pid), that one. Anything else under the name is refused: mounting
/// through another user's link would lay debugfs over a directory of their choice.
fn make_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(dir).map_err(|e| Error::io(dir, e))?;
            if meta.file_type().is_dir() && meta.uid() == crate::caps::euid() {
                return Ok(());
            }
            Err(Error::Invalid(format!(
                "{} already exists ({}, owned by uid {}): not used as a mount point",
                dir.display(),
                crate::file::type_name(&meta.file_type()),
                meta.uid()
            )))
        }
        r => r.map_err(|e| Error::io(dir, e)),
    }
}

/// Open the debugfs file `rel` for reading or writing.
pub fn open(rel: &str, write: bool) -> Result<File> {
    if is_debugfs_mounted(Path::new(SYSTEM)) {
        return open_in(Path::new(SYSTEM), rel, write);
    }
    let dir = private_dir();
    make_private_dir(&dir)?;
    let target = cstring(&dir)?;
    let fstype = c"debugfs";
    // SAFETY: all pointers are NUL-terminated strings that live across the call; no data
    // argument is passed.
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        let e = Error::last_os("mount(debugfs)");
        let _ = std::fs::remove_dir(&dir);
        return Err(e);
    }
    let file = open_in(&dir, rel, write);
    // SAFETY: target is the NUL-terminated path mounted just above; a lazy detach leaves the
    // open file usable.
    unsafe {
        libc::umount2(target.as_ptr(), libc::MNT_DETACH);
    }
    let _ = std::fs::remove_dir(&dir);
    file
}

/// Read the debugfs file `rel`.
pub fn read(rel: &str) -> Result<String> {
    let mut s = String::new();
    open(rel, false)?
        .read_to_string(&mut s)
        .map_err(|e| Error::io(SYSTEM.to_string() + "/" + rel, e))?;
    Ok(s)
}

/// Write `value` to the debugfs file `rel` (e.g. `split_huge_pages`).
pub fn write(rel: &str, value: &str) -> Result<()> {
    open(rel, true)?
        .write_all(value.as_bytes())
        .map_err(|e| Error::io(SYSTEM.to_string() + "/" + rel, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_leave_no_mount_behind() {
        match read("extfrag/unusable_index") {
            Ok(s) => assert!(s.contains("zone"), "{s}"),
            Err(e) => crate::testing::skip(format!("debugfs not readable here: {e}")),
        }
        // Only this thread's mount point: other tests may be mid-call on theirs.
        let dir = private_dir();
        let mounts = std::fs::read_to_string("/proc/self/mounts").expect("mounts");
        let name = dir.to_string_lossy();
        assert!(!mounts.contains(name.as_ref()), "{name} is still mounted");
        assert!(!dir.exists(), "{name} is left behind");
    }

    #[test]
    fn a_missing_file_names_it() {
        let e = read("no-such-file-here").expect_err("missing");
        assert!(
            e.to_string()
                .contains("/sys/kernel/debug/no-such-file-here"),
            "{e}"
        );
    }

    #[test]
    fn a_link_planted_at_the_mount_point_is_refused() {
        if is_debugfs_mounted(Path::new(SYSTEM)) {
            crate::testing::skip("debugfs is mounted: no private mount point is made");
            return;
        }
        let elsewhere = tempfile::tempdir().expect("tmp");
        let dir = private_dir();
        std::os::unix::fs::symlink(elsewhere.path(), &dir).expect("plant");
        let e = read("extfrag/unusable_index").expect_err("refused");
        let _ = std::fs::remove_file(&dir);
        assert!(e.to_string().contains("a symbolic link"), "{e}");
        let mounts = std::fs::read_to_string("/proc/self/mounts").expect("mounts");
        assert!(!mounts.contains(elsewhere.path().to_string_lossy().as_ref()));
    }
}
