//! Swap files hugewise creates, enables, and removes again.
//!
//! The file is preallocated (the kernel refuses a swap file with holes) and given a version-1
//! swap header written here, labelled `hugewise`, so that restore only ever deletes a file that
//! carries that label.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::{Error, Result};

const PAGE: usize = 4096;
const LABEL: &[u8; 8] = b"hugewise";
const MAGIC: &[u8; 10] = b"SWAPSPACE2";
const LABEL_AT: usize = 1052;

/// The refusal to overwrite `path`, which exists; `hint` says what to do instead.
pub fn exists(path: &Path, hint: &str) -> Error {
    Error::Invalid(format!(
        "{} already exists; hugewise never overwrites a file ({hint})",
        path.display()
    ))
}

/// Smallest swap area the kernel takes (10 pages) and a sensible minimum above it.
pub const MIN_BYTES: u64 = 1 << 20;

/// The first page of a swap area of `bytes` bytes.
pub fn header(bytes: u64, uuid: [u8; 16]) -> Vec<u8> {
    let pages = bytes / PAGE as u64;
    let mut h = vec![0u8; PAGE];
    h[1024..1028].copy_from_slice(&1u32.to_le_bytes());
    let last = u32::try_from(pages.saturating_sub(1)).unwrap_or(u32::MAX);
    h[1028..1032].copy_from_slice(&last.to_le_bytes());
    h[1036..1052].copy_from_slice(&uuid);
    h[LABEL_AT..LABEL_AT + LABEL.len()].copy_from_slice(LABEL);
    h[PAGE - MAGIC.len()..].copy_from_slice(MAGIC);
    h
}

fn uuid() -> [u8; 16] {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut x = t ^ (u128::from(std::process::id()) << 64);
    let mut out = [0u8; 16];
    for b in out.iter_mut() {
        // splitmix-style scramble; uniqueness, not secrecy, is what a swap uuid needs.
        x = x
            .wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)
            .wrapping_add(1);
        *b = (x >> 64) as u8;
    }
    out
}

/// Create `path` (it must not exist) as a swap file of `bytes` bytes (rounded down to 4 KiB).
/// A failure removes the partial file.
pub fn create(path: &Path, bytes: u64) -> Result<()> {
    if bytes < MIN_BYTES {
        return Err(Error::Invalid(format!(
            "a swap file must be at least {} MiB",
            MIN_BYTES >> 20
        )));
    }
    let bytes = bytes / PAGE as u64 * PAGE as u64;
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => exists(path, "choose another --file"),
            _ => Error::io(path, e),
        })?;
    let filled = hugewise_sys::swap::preallocate(&f, path, bytes)
        .map_err(Error::from)
        .and_then(|()| {
            f.write_all(&header(bytes, uuid()))
                .and_then(|()| f.sync_all())
                .map_err(|e| Error::io(path, e))
        });
    if let Err(e) = filled {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(())
}

/// File systems the kernel cannot swap to a file on.
const NO_SWAP_FILES: &[&str] = &[
    "tmpfs", "ramfs", "overlay", "nfs", "nfs4", "cifs", "fuse", "squashfs", "proc", "sysfs",
];

/// Check, before anything is made, that a swap file of `bytes` can go at `path`: its
/// directory exists, its file system can hold a swap file (not tmpfs or overlay; on btrfs only
/// in a directory marked no-copy-on-write, `chattr +C`), and it has room for the file with
/// `spare` bytes left over.
pub fn check_location(host: &crate::Host, path: &Path, bytes: u64, spare: u64) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = dir.canonicalize().map_err(|e| {
        Error::Invalid(format!(
            "the swap file's directory {} cannot be used: {e}",
            dir.display()
        ))
    })?;
    let mounts = host.proc.mounts()?;
    let m = mounts
        .iter()
        .filter(|m| dir.starts_with(&m.target))
        .max_by_key(|m| m.target.as_os_str().len());
    if let Some(m) = m {
        let fs = m.fstype.as_str();
        if NO_SWAP_FILES.contains(&fs) || fs.starts_with("fuse.") {
            return Err(Error::Invalid(format!(
                "{} is on {fs} ({}), which cannot hold a swap file: give a path on a local disk \
                 (ext4, xfs, or btrfs with chattr +C)",
                path.display(),
                m.target.display()
            )));
        }
        if fs == "btrfs" {
            let nocow = hugewise_sys::swap::inode_flags(&dir)?
                .is_some_and(|f| f & hugewise_sys::swap::NOCOW_FLAG != 0);
            if !nocow {
                return Err(Error::Invalid(format!(
                    "{} is on btrfs in a directory without no-copy-on-write: the kernel refuses \
                     such a swap file (make a directory with `chattr +C DIR` and put it there)",
                    path.display()
                )));
            }
        }
    }
    let free = hugewise_sys::swap::free_bytes(&dir)?;
    if free < bytes.saturating_add(spare) {
        return Err(Error::Invalid(format!(
            "{} has {} MiB free: a swap file of {} MiB would leave less than {} MiB",
            dir.display(),
            free >> 20,
            bytes >> 20,
            spare >> 20
        )));
    }
    Ok(())
}

/// Whether `path` is a swap file that hugewise made (its header carries the label).
pub fn is_ours(path: &Path) -> bool {
    let mut page = vec![0u8; PAGE];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut page));
    read.is_ok()
        && &page[LABEL_AT..LABEL_AT + LABEL.len()] == LABEL
        && &page[PAGE - MAGIC.len()..] == MAGIC
}

/// Whether `path` is an active swap area now.
pub fn is_active(host: &crate::Host, path: &Path) -> Result<bool> {
    Ok(host.proc.swaps()?.iter().any(|a| a.path == path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_that_cannot_hold_a_swap_file() {
        let host = crate::Host::real();
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("swap");
        let huge = u64::MAX / 4;
        let e = check_location(&host, &p, huge, 0).expect_err("no room");
        assert!(e.to_string().contains("MiB free"), "{e}");
        let e =
            check_location(&host, Path::new("/no/such/dir/swap"), 1 << 20, 0).expect_err("no dir");
        assert!(e.to_string().contains("cannot be used"), "{e}");
        if let Ok(m) = host.proc.mounts() {
            if let Some(t) = m.iter().find(|m| m.fstype == "tmpfs" && m.target.is_dir()) {
                let e =
                    check_location(&host, &t.target.join("swap"), 1 << 20, 0).expect_err("tmpfs");
                assert!(e.to_string().contains("cannot hold a swap file"), "{e}");
            }
        }
    }

    #[test]
    fn header_fields() {
        let h = header(64 << 20, [7; 16]);
        assert_eq!(h.len(), 4096);
        assert_eq!(&h[1024..1028], &1u32.to_le_bytes());
        assert_eq!(&h[1028..1032], &((16384u32 - 1).to_le_bytes()));
        assert_eq!(&h[4086..], b"SWAPSPACE2");
        assert_eq!(&h[1052..1060], b"hugewise");
    }

    #[test]
    fn create_refuses_to_overwrite_and_labels_its_files() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("swap");
        create(&p, 2 << 20).expect("create");
        assert!(is_ours(&p));
        assert_eq!(std::fs::metadata(&p).expect("meta").len(), 2 << 20);
        let e = create(&p, 2 << 20).expect_err("exists");
        assert!(e.to_string().contains("never overwrites"), "{e}");
        let other = dir.path().join("other");
        std::fs::write(&other, vec![0u8; 8192]).expect("write");
        assert!(!is_ours(&other));
        assert!(create(&dir.path().join("tiny"), 4096).is_err());
    }
}
