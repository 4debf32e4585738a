//! Swap areas: `swapon`, `swapoff`, and preallocating the file behind one.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::{Error, Result};

/// `SWAP_FLAG_PREFER`: the priority bits are set.
const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
/// `SWAP_FLAG_PRIO_MASK`.
const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;

fn c_path(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::Invalid(format!("{}: path contains a NUL byte", path.display())))
}

/// Give `file` `len` bytes of real blocks (`fallocate`), so that it has no holes: the kernel
/// refuses a swap file with holes.
pub fn preallocate(file: &File, path: &Path, len: u64) -> Result<()> {
    let len = libc::off_t::try_from(len)
        .map_err(|_| Error::Invalid(format!("{}: {len} bytes is too large", path.display())))?;
    // SAFETY: fallocate takes a file descriptor we own for the duration of the call and plain
    // integers; no memory is passed.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    if rc != 0 {
        return Err(Error::last_os("fallocate"));
    }
    Ok(())
}

/// Bytes free for an unprivileged user of the file system holding `path` (`statvfs`).
pub fn free_bytes(path: &Path) -> Result<u64> {
    let c = c_path(path)?;
    // SAFETY: an all-zero statvfs is a valid value of this plain C struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a struct the call fills; both live across
    // the call.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if rc != 0 {
        return Err(Error::io(path, std::io::Error::last_os_error()));
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// `FS_NOCOW_FL`: the file (or, on a directory, files made in it) is not copy-on-write.
pub const NOCOW_FLAG: u32 = 0x0080_0000;

/// The inode flags of `path` (`FS_IOC_GETFLAGS`, what `lsattr` shows); `None` where the file
/// system has none.
pub fn inode_flags(path: &Path) -> Result<Option<u32>> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut flags: libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one long through the pointer, which points at `flags`
    // and lives across the call; the descriptor is ours.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_GETFLAGS, &mut flags) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOTTY | libc::EOPNOTSUPP | libc::EINVAL) => Ok(None),
            _ => Err(Error::io(path, e)),
        };
    }
    Ok(Some(flags as u32))
}

/// `_IOR('f', 1, long)`.
const FS_IOC_GETFLAGS: libc::Ioctl =
    (2 << 30 | (std::mem::size_of::<libc::c_long>() << 16) | (b'f' as usize) << 8 | 1)
        as libc::Ioctl;

/// Enable the swap area at `path` (`swapon(2)`), optionally with a priority.
pub fn swapon(path: &Path, priority: Option<u16>) -> Result<()> {
    let c = c_path(path)?;
    let flags = match priority {
        Some(p) => SWAP_FLAG_PREFER | (libc::c_int::from(p) & SWAP_FLAG_PRIO_MASK),
        None => 0,
    };
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    let rc = unsafe { libc::swapon(c.as_ptr(), flags) };
    if rc != 0 {
        return Err(Error::last_os("swapon"));
    }
    Ok(())
}

/// Disable the swap area at `path` (`swapoff(2)`); its pages are read back into memory first.
pub fn swapoff(path: &Path) -> Result<()> {
    let c = c_path(path)?;
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    let rc = unsafe { libc::swapoff(c.as_ptr()) };
    if rc != 0 {
        return Err(Error::last_os("swapoff"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_room_and_flags_of_a_directory() {
        let dir = tempfile::tempdir().expect("tmp");
        assert!(free_bytes(dir.path()).expect("statvfs") > 0);
        assert!(free_bytes(&dir.path().join("absent")).is_err());
        let flags = inode_flags(dir.path()).expect("flags");
        assert!(flags.is_none_or(|f| f & NOCOW_FLAG == 0));
    }

    #[test]
    fn preallocate_gives_blocks() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("f");
        let f = File::create(&p).expect("create");
        preallocate(&f, &p, 1 << 20).expect("fallocate");
        let meta = std::fs::metadata(&p).expect("meta");
        assert_eq!(meta.len(), 1 << 20);
        use std::os::unix::fs::MetadataExt;
        assert!(meta.blocks() * 512 >= 1 << 20, "file has holes");
    }

    #[test]
    fn swapoff_of_a_non_swap_file_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("f");
        std::fs::write(&p, b"x").expect("write");
        assert!(swapoff(&p).is_err());
        assert!(c_path(Path::new("a\0b")).is_err());
    }
}
