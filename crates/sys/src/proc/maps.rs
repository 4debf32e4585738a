//! `/proc/<pid>/maps`: the mappings of a process, cheap to read (no page-table walk, unlike
//! smaps), so a promotion engine can check a range right before it acts on it.

use std::path::Path;

use crate::{Error, Result};

/// One line of `maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEntry {
    /// First address.
    pub start: usize,
    /// One past the last address.
    pub end: usize,
    /// `r` in the permissions.
    pub read: bool,
    /// `w` in the permissions.
    pub write: bool,
    /// `x` in the permissions.
    pub exec: bool,
    /// `p` (private, copy-on-write) rather than `s` (shared).
    pub private: bool,
    /// Offset in the backing file of the first address (0 for anonymous memory).
    pub offset: u64,
    /// Inode of the backing file; 0 for anonymous memory.
    pub inode: u64,
    /// The path or pseudo-name (`[heap]`, `[stack]`, `/lib/...`); `None` for an unnamed
    /// anonymous mapping.
    pub name: Option<String>,
}

impl MapEntry {
    /// Private anonymous memory (named or not, but not a file): what THP and `MADV_COLLAPSE`
    /// can back with 2 MiB pages without a file system's help.
    pub fn is_private_anon(&self) -> bool {
        self.private
            && self.inode == 0
            && !matches!(self.name.as_deref(), Some(n) if n.starts_with('/'))
            && !matches!(
                self.name.as_deref(),
                Some("[vsyscall]" | "[vdso]" | "[vvar]")
            )
    }
}

fn hex(path: &Path, line: usize, s: &str, what: &str) -> Result<usize> {
    usize::from_str_radix(s, 16)
        .map_err(|_| Error::parse(path, line, format!("{what} {s:?} is not hexadecimal")))
}

pub(super) fn parse(path: &Path, text: &str) -> Result<Vec<MapEntry>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let mut f = line.split_ascii_whitespace();
        let mut next = |what: &str| {
            f.next()
                .ok_or_else(|| Error::parse(path, n, format!("no {what} field")))
        };
        let range = next("address range")?;
        let perms = next("permissions")?;
        let offset = next("offset")?;
        let _dev = next("device")?;
        let inode = next("inode")?;
        let (start, end) = range
            .split_once('-')
            .ok_or_else(|| Error::parse(path, n, format!("address range {range:?} has no '-'")))?;
        let perms = perms.as_bytes();
        if perms.len() != 4 {
            return Err(Error::parse(path, n, "permissions are not 4 characters"));
        }
        // The name is the rest of the line after the inode, spaces included.
        let name = line
            .splitn(6, |c: char| c.is_ascii_whitespace())
            .nth(5)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        out.push(MapEntry {
            start: hex(path, n, start, "start address")?,
            end: hex(path, n, end, "end address")?,
            read: perms[0] == b'r',
            write: perms[1] == b'w',
            exec: perms[2] == b'x',
            private: perms[3] == b'p',
            offset: u64::from_str_radix(offset, 16).map_err(|_| {
                Error::parse(path, n, format!("offset {offset:?} is not hexadecimal"))
            })?,
            inode: inode
                .parse()
                .map_err(|_| Error::parse(path, n, format!("inode {inode:?} is not a number")))?,
            name,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]
7f3a40000000-7f3a80000000 rw-p 00000000 00:00 0 
7f3a80000000-7f3a80200000 rw-s 00000000 00:01 1234                       /dev/zero (deleted)
7f3a90000000-7f3a90028000 r-xp 00028000 fd:01 5678                       /usr/lib/x86_64-linux-gnu/libc.so.6
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";

    #[test]
    fn parses_every_kind_of_line() {
        let m = parse(Path::new("maps"), SAMPLE).expect("sample parses");
        assert_eq!(m.len(), 5);
        assert_eq!(m[0].name.as_deref(), Some("[heap]"));
        assert!(m[0].is_private_anon());
        assert_eq!(
            (m[1].start, m[1].end, m[1].name.as_deref()),
            (0x7f3a40000000, 0x7f3a80000000, None)
        );
        assert!(m[1].read && m[1].write && !m[1].exec && m[1].is_private_anon());
        assert_eq!(m[2].name.as_deref(), Some("/dev/zero (deleted)"));
        assert!(!m[2].private && !m[2].is_private_anon());
        assert!(m[3].exec && !m[3].is_private_anon());
        assert_eq!((m[3].offset, m[0].offset), (0x28000, 0));
        assert!(!m[4].is_private_anon());
    }

    #[test]
    fn a_bad_line_names_its_number_and_field() {
        let e = parse(
            Path::new("maps"),
            "1000-2000 rw-p 0 00:00 0\nzz-2000 rw-p 0 00:00 0\n",
        )
        .expect_err("bad address");
        let s = e.to_string();
        assert!(s.contains("maps:2") && s.contains("start address"), "{s}");
    }

    #[test]
    fn reads_this_process() {
        let m = crate::proc::ProcFs::default()
            .maps(crate::proc::Pid::Current)
            .expect("own maps");
        assert!(m.iter().any(|e| e.name.as_deref() == Some("[stack]")));
    }
}
