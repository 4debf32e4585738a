//! `/proc/self/mounts`: where each file system is mounted.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::swaps::unescape;
use crate::{Error, Result};

/// One mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mount {
    /// What is mounted (device or a name such as `cgroup`).
    pub source: String,
    /// Where.
    pub target: PathBuf,
    /// File system type (`ext4`, `cgroup`, `cgroup2`, `tmpfs`).
    pub fstype: String,
    /// Mount options, split at commas.
    pub options: Vec<String>,
}

pub(super) fn parse(path: &Path, text: &str) -> Result<Vec<Mount>> {
    let mut mounts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            return Err(Error::parse(
                path,
                i + 1,
                format!("expected at least 4 fields: {line:?}"),
            ));
        }
        mounts.push(Mount {
            source: unescape(f[0]),
            target: PathBuf::from(unescape(f[1])),
            fstype: f[2].to_string(),
            options: f[3].split(',').map(str::to_string).collect(),
        });
    }
    Ok(mounts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cgroup_mounts() {
        let text = "/dev/vda / ext4 rw,relatime 0 0\n\
                    cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
                    cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let m = parse(Path::new("mounts"), text).expect("parse");
        assert_eq!(m.len(), 3);
        assert_eq!(m[1].fstype, "cgroup");
        assert!(m[1].options.iter().any(|o| o == "memory"));
        assert_eq!(m[2].target, PathBuf::from("/sys/fs/cgroup/unified"));
        assert!(parse(Path::new("mounts"), "x y\n").is_err());
    }
}
