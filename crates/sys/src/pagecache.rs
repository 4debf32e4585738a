//! A file's pages in the page cache, given back to the kernel once what was read from them has
//! been copied: on a machine with few whole 2 MiB blocks free, the cache's large folios (from
//! readahead) take the blocks that memory allocated next could have had as huge pages.

use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Ask the kernel to drop the cached pages of the regular file at `path`
/// (`POSIX_FADV_DONTNEED`): clean pages go at once, and a later read reads the disk again.
/// Anything but a regular file (a FIFO, a device) is left alone, and opening never waits on
/// one.
pub fn drop_cached(path: &Path) -> std::io::Result<()> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let t = f.metadata()?.file_type();
    if !t.is_file() || t.is_fifo() {
        return Ok(());
    }
    // SAFETY: a plain call on a descriptor this function owns for its duration; it reads and
    // writes no memory of ours.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Pages of the regular file at `path` in the page cache now (`mincore` over a read-only
/// mapping of it, made and unmapped here).
pub fn cached(path: &Path) -> std::io::Result<usize> {
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok(0);
    }
    // SAFETY: a fresh shared read-only mapping of an open file, unmapped below; nothing reads
    // through it.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let mut v = vec![0u8; len.div_ceil(4096)];
    // SAFETY: `v` has one byte per 4 KiB page of the mapping, as mincore writes.
    let rc = unsafe { libc::mincore(addr, len, v.as_mut_ptr()) };
    let err = std::io::Error::last_os_error();
    // SAFETY: the mapping made above, of `len` bytes, not used after this.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        return Err(err);
    }
    Ok(v.iter().filter(|&&b| b & 1 != 0).count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_files_cached_pages_are_given_back_and_a_fifo_is_left_alone() {
        let d = tempfile::tempdir().expect("dir");
        let p = d.path().join("f");
        std::fs::write(&p, vec![7u8; 4 << 20]).expect("write");
        // Written pages are dirty: written back first, then read, they are cached and clean.
        std::fs::File::open(&p)
            .expect("open")
            .sync_all()
            .expect("sync");
        let _ = std::fs::read(&p).expect("read");
        let before = cached(&p).expect("mincore");
        assert!(before > 512, "{before} pages cached after a read");
        drop_cached(&p).expect("drop");
        let after = cached(&p).expect("mincore");
        assert!(after < before / 4, "{after} of {before} pages still cached");
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        drop_cached(&fifo).expect("a FIFO is not waited on");
        assert!(drop_cached(&d.path().join("none")).is_err());
    }
}
