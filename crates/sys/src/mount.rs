//! A scoped private debugfs mount, for the kernel's debug knobs (`split_huge_pages`,
//! `extfrag/*`) on machines where debugfs is not mounted.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Where debugfs is reachable: the system's own mount, or one made for this scope and removed
/// on drop.
#[derive(Debug)]
pub struct DebugFs {
    path: PathBuf,
    owned: Option<tempdir::Dir>,
}

mod tempdir {
    use std::path::PathBuf;

    /// A directory removed on drop (after the mount on it is gone).
    #[derive(Debug)]
    pub struct Dir(pub PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
}

impl DebugFs {
    /// The system's debugfs when mounted at `/sys/kernel/debug`, else a private mount (root).
    pub fn open() -> Result<DebugFs> {
        let system = Path::new("/sys/kernel/debug");
        if is_debugfs_mounted(system) {
            return Ok(DebugFs {
                path: system.to_path_buf(),
                owned: None,
            });
        }
        let dir = std::env::temp_dir().join(format!("hugewise-debugfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let guard = tempdir::Dir(dir.clone());
        let target = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| Error::Invalid("temporary path holds a NUL byte".into()))?;
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
            return Err(Error::last_os("mount(debugfs)"));
        }
        Ok(DebugFs {
            path: dir,
            owned: Some(guard),
        })
    }

    /// Write `value` to the debugfs file `rel` (e.g. `split_huge_pages`).
    pub fn write(&self, rel: &str, value: &str) -> Result<()> {
        let p = self.path.join(rel);
        std::fs::write(&p, value).map_err(|e| Error::io(&p, e))
    }

    /// Read the debugfs file `rel`.
    pub fn read(&self, rel: &str) -> Result<String> {
        let p = self.path.join(rel);
        std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))
    }

    /// The directory debugfs is mounted on.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DebugFs {
    fn drop(&mut self) {
        if self.owned.is_some() {
            if let Ok(target) = CString::new(self.path.as_os_str().as_bytes()) {
                // SAFETY: target is a NUL-terminated path this value mounted.
                unsafe {
                    libc::umount2(target.as_ptr(), libc::MNT_DETACH);
                }
            }
        }
    }
}

fn is_debugfs_mounted(at: &Path) -> bool {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return false;
    };
    mounts.lines().any(|l| {
        let mut f = l.split_whitespace();
        let _dev = f.next();
        let mnt = f.next();
        let kind = f.next();
        kind == Some("debugfs") && mnt.map(Path::new) == Some(at)
    })
}
