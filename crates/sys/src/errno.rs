//! Errno values with their symbolic names, so results say `ENOMEM`, not `12`.

use std::fmt;

/// A raw errno value from the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

/// Invalid argument: what the kernel answers to advice it does not know or will not apply.
pub const EINVAL: Errno = Errno(libc::EINVAL);
/// Try again: a transient failure (MADV_COLLAPSE with pages briefly off the LRU).
pub const EAGAIN: Errno = Errno(libc::EAGAIN);
/// Out of memory: a collapse or hugetlb fault found no free huge page.
pub const ENOMEM: Errno = Errno(libc::ENOMEM);
/// No such process: a target exited.
pub const ESRCH: Errno = Errno(libc::ESRCH);
/// No such file: under /proc, a process that exited.
pub const ENOENT: Errno = Errno(libc::ENOENT);
/// Operation not permitted: a capability is missing.
pub const EPERM: Errno = Errno(libc::EPERM);
/// Inappropriate ioctl: the kernel does not know the request (an older kernel).
pub const ENOTTY: Errno = Errno(libc::ENOTTY);
/// Permission denied: ptrace access to another process refused.
pub const EACCES: Errno = Errno(libc::EACCES);

impl Errno {
    /// The calling thread's current errno.
    pub fn last() -> Self {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    /// The symbolic name (`EINVAL`), or `E<number>` for one this table does not know.
    pub fn name(self) -> String {
        let known = match self.0 {
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::ESRCH => "ESRCH",
            libc::EINTR => "EINTR",
            libc::EIO => "EIO",
            libc::EBADF => "EBADF",
            libc::EAGAIN => "EAGAIN",
            libc::ENOMEM => "ENOMEM",
            libc::EACCES => "EACCES",
            libc::EFAULT => "EFAULT",
            libc::EBUSY => "EBUSY",
            libc::EEXIST => "EEXIST",
            libc::ENODEV => "ENODEV",
            libc::EINVAL => "EINVAL",
            libc::ENOTTY => "ENOTTY",
            libc::ENOSPC => "ENOSPC",
            libc::ERANGE => "ERANGE",
            libc::ENOSYS => "ENOSYS",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::EHWPOISON => "EHWPOISON",
            _ => return format!("E{}", self.0),
        };
        known.to_string()
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({})",
            self.name(),
            std::io::Error::from_raw_os_error(self.0)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_known_and_unknown() {
        assert_eq!(Errno(libc::ENOMEM).name(), "ENOMEM");
        assert_eq!(Errno(libc::EINVAL).name(), "EINVAL");
        assert_eq!(Errno(4095).name(), "E4095");
        assert!(Errno(libc::EAGAIN).to_string().starts_with("EAGAIN ("));
    }
}
