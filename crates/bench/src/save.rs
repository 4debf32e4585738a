//! Atomic result files: a crash or Ctrl-C leaves the old file or the new one, never half.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::{Error, Result};

/// Write `value` as pretty JSON to `path` through a temporary file in the same directory,
/// flushed to disk, then renamed over `path`.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_vec_pretty(value).map_err(|e| Error::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    write_atomic(path, &text)
}

/// Write `bytes` (and a final newline) to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, &mut |w| {
        w.write_all(bytes)?;
        w.write_all(b"\n")
    })
}

/// Stream whatever `fill` writes into `path` atomically: a temporary file in the same
/// directory, synced, then renamed; on any error the temporary file is removed.
pub fn write_atomic_with(
    path: &Path,
    fill: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    hugewise_sys::file::write_atomic_with(path, fill).map_err(|source| Error::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_replaces_without_leftovers() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("r.json");
        write_json(&p, &serde_json::json!({"a": 1})).expect("write");
        write_json(&p, &serde_json::json!({"a": 2})).expect("rewrite");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).expect("read")).expect("json");
        assert_eq!(v["a"], 2);
        assert_eq!(std::fs::read_dir(d.path()).expect("ls").count(), 1);
    }

    #[test]
    fn unwritable_directory_names_the_file() {
        let e = write_json(Path::new("/nonexistent-dir/r.json"), &1).expect_err("no dir");
        assert!(e.to_string().contains("/nonexistent-dir/r.json"), "{e}");
    }
}
