//! Files written atomically: a crash, Ctrl-C or error leaves the old file or the new one,
//! never half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Stream whatever `fill` writes into `path` atomically: a temporary file in the same
/// directory, synced, then renamed over `path`; on any error the temporary file is removed.
pub fn write_atomic_with(
    path: &Path,
    fill: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let tmp = temporary(path)?;
    let result = (|| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        fill(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A hidden name beside `path`, unique to this process, so the rename stays on one file
/// system.
fn temporary(path: &Path) -> std::io::Result<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("no file name"))?;
    Ok(dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// Remove from `dir` the temporary files [`write_atomic_with`] left behind in a process that
/// was killed before it could (`.NAME.PID.tmp` whose process is gone): one of a large file is
/// as large as the file. Best effort: what cannot be read or removed stays.
pub fn remove_dead_temporaries(dir: &Path) {
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    for f in list.flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(|n| n.rsplit_once('.'))
            .and_then(|(_, pid)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_file(f.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_dead_process_temporaries_are_removed() {
        let d = tempfile::tempdir().expect("tmp");
        let dead = d.path().join(format!(".g.hwg.{}.tmp", u32::MAX - 1));
        let mine = temporary(&d.path().join("g.hwg")).expect("name");
        let other = d.path().join("g.hwg");
        for p in [&dead, &mine, &other] {
            std::fs::write(p, b"x").expect("write");
        }
        remove_dead_temporaries(d.path());
        assert!(!dead.exists());
        assert!(mine.exists(), "this process's own");
        assert!(other.exists());
    }

    #[test]
    fn a_failed_fill_keeps_the_old_file_and_leaves_nothing_behind() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("f");
        write_atomic_with(&p, &mut |w| w.write_all(b"old")).expect("write");
        let e = write_atomic_with(&p, &mut |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk on fire"))
        })
        .expect_err("fill failed");
        assert!(e.to_string().contains("disk on fire"));
        assert_eq!(std::fs::read(&p).expect("read"), b"old");
        assert_eq!(std::fs::read_dir(d.path()).expect("ls").count(), 1);
    }
}
