//! A file's pages in the page cache, given back to the kernel once what was read from them has
//! been copied: on a machine with few whole 2 MiB blocks free, the cache's large folios (from
//! readahead) take the blocks that memory allocated next could have had as huge pages.

use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Ask the kernel to drop the cached pages of the regular file at `path`
/// (`POSIX_FADV_DONTNEED`): clean pages go at once, and a later read reads the disk again.
/// Only a regular file is opened, not through a link (resolve a path the user gave first):
/// a FIFO, a device or a link another user put in its place is left alone. On tmpfs the
/// pages are the file and stay.
pub fn drop_cached(path: &Path) -> std::io::Result<()> {
    let Some(f) = open_regular(path)? else {
        return Ok(());
    };
    // SAFETY: a plain call on a descriptor this function owns for its duration; it reads and
    // writes no memory of ours.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// `path` opened for reading if it is a regular file (looked at first without following a
/// link, and again once open), else `None`; opening never waits on a FIFO nor takes a
/// terminal.
fn open_regular(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    if !std::fs::symlink_metadata(path)?.file_type().is_file() {
        return Ok(None);
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)?;
    Ok(f.metadata()?.file_type().is_file().then_some(f))
}

/// Pages of the regular file at `path` in the page cache now, in pages of the machine's size
/// (`mincore` over a read-only mapping of it, made and unmapped here); 0 for anything but a
/// regular file.
pub fn cached(path: &Path) -> std::io::Result<usize> {
    let Some(f) = open_regular(path)? else {
        return Ok(0);
    };
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok(0);
    }
    // SAFETY: sysconf takes and returns plain integers.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|&p| p > 0)
        .unwrap_or(4096);
    // SAFETY: a fresh shared read-only mapping of an open file, unmapped below; nothing reads
    // through it, so a file shrunk meanwhile cannot fault.
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
    let mut v = vec![0u8; len.div_ceil(page)];
    // SAFETY: `v` has one byte per page of the mapping, as mincore writes.
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
        assert!(before > 0, "{before} pages cached after a read");
        drop_cached(&p).expect("drop");
        let after = cached(&p).expect("mincore");
        if crate::testing::on_tmpfs(d.path()) {
            crate::testing::skip("the temporary directory is on tmpfs, whose pages are the file");
            return;
        }
        assert!(after < before / 4, "{after} of {before} pages still cached");
        // A link is not followed.
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).expect("link");
        let _ = std::fs::read(&p).expect("read");
        let again = cached(&p).expect("mincore");
        drop_cached(&link).expect("a link is left alone");
        assert_eq!(cached(&link).expect("not a file"), 0);
        assert!(
            cached(&p).expect("mincore") * 4 > again * 3,
            "dropped through a link"
        );
        let fifo = d.path().join("fifo");
        crate::testing::mkfifo(&fifo).expect("mkfifo");
        drop_cached(&fifo).expect("a FIFO is not waited on");
        assert!(drop_cached(&d.path().join("none")).is_err());
    }
}
