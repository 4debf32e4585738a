//! The restore journal: every change is written here, and flushed to disk, before it is made.
//!
//! One JSON record per line in `journal.jsonl` under the state directory. A `change` record
//! carries the old value, the new one and what undoing it means; an `undone` record says it was
//! put back. Whatever has no `undone` record is pending: `hugewise env restore` undoes it, newest
//! first. A torn last line (the process died while writing it) is ignored: its change was never
//! made, because a change is only made once its record is on disk. A lock file keeps two
//! hugewise runs from shaping the machine at once.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub use hugewise_results::env::Lifetime;
use serde::{Deserialize, Serialize};

use crate::change::Change;
use crate::{Error, Result};

/// The process that made a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Its pid.
    pub pid: i32,
    /// Its start time in clock ticks since boot (with the pid, a process identity).
    pub start_time: Option<u64>,
    /// The boot it ran in: after a reboot the kernel has forgotten every setting.
    pub boot_id: String,
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    /// A change about to be made.
    Change {
        /// Sequence number, increasing through the file.
        seq: u64,
        /// Wall-clock time, ms since the Unix epoch.
        at_unix_ms: u64,
        /// Who made it.
        owner: Owner,
        /// How long it is meant to last.
        lifetime: Lifetime,
        /// The change.
        change: Change,
    },
    /// A change put back.
    Undone {
        /// The change's sequence number.
        seq: u64,
        /// Wall-clock time, ms since the Unix epoch.
        at_unix_ms: u64,
        /// What undoing did (e.g. "restored", "skipped: rebooted since").
        outcome: String,
    },
}

/// A change not yet undone.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// Its sequence number.
    pub seq: u64,
    /// Who made it.
    pub owner: Owner,
    /// How long it is meant to last.
    pub lifetime: Lifetime,
    /// The change.
    pub change: Change,
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The journal file, opened and locked.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    _lock: File,
    next_seq: u64,
}

/// Refuse a state directory another user could write to: the journal says what root puts back,
/// and its lock file is truncated when opened, so whoever can put a file or a link there could
/// steer both.
fn trusted_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir).map_err(|e| Error::io(dir, e))?;
    let me = hugewise_sys::caps::euid();
    if !m.file_type().is_dir() || (m.uid() != me && m.uid() != 0) || m.mode() & 0o022 != 0 {
        return Err(Error::io(
            dir,
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "the state directory must be a directory of this user's or root's that no one \
                     else may write to (owned by uid {}, mode {:o}; `chmod go-w` it, or set \
                     HUGEWISE_STATE_DIR to another)",
                    m.uid(),
                    m.mode() & 0o7777
                ),
            ),
        ));
    }
    Ok(())
}

impl Journal {
    /// The journal's file in `dir`.
    pub fn path_in(dir: &Path) -> PathBuf {
        dir.join("journal.jsonl")
    }

    /// Open (creating `dir` if needed) and lock the journal; [`Error::Busy`] when another
    /// process holds it.
    pub fn open(dir: &Path) -> Result<Journal> {
        // 0755 whatever the umask allows more of: a group-writable state directory is refused.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(|e| Error::io(dir, e))?;
        trusted_dir(dir)?;
        let lock_path = dir.join("lock");
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| Error::io(&lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut pid = String::new();
                let _ = lock.read_to_string(&mut pid);
                let pid = pid.trim();
                return Err(Error::Busy {
                    path: lock_path,
                    pid: if pid.is_empty() {
                        "?".into()
                    } else {
                        pid.into()
                    },
                });
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(&lock_path, e)),
        }
        lock.set_len(0).map_err(|e| Error::io(&lock_path, e))?;
        lock.write_all(std::process::id().to_string().as_bytes())
            .map_err(|e| Error::io(&lock_path, e))?;
        let path = Self::path_in(dir);
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o600)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let mut j = Journal {
            path,
            file,
            _lock: lock,
            next_seq: 1,
        };
        j.drop_torn_tail()?;
        let records = j.records()?;
        j.next_seq = records
            .iter()
            .map(|r| match r {
                Record::Change { seq, .. } | Record::Undone { seq, .. } => *seq,
            })
            .max()
            .unwrap_or(0)
            + 1;
        Ok(j)
    }

    /// Cut a torn last line off, so that the next record starts on a line of its own.
    fn drop_torn_tail(&mut self) -> Result<()> {
        let mut text = Vec::new();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.read_to_end(&mut text))
            .map_err(|e| Error::io(&self.path, e))?;
        if text.is_empty() || text.ends_with(b"\n") {
            return Ok(());
        }
        let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        self.file
            .set_len(keep as u64)
            .and_then(|_| self.file.sync_data())
            .map_err(|e| Error::io(&self.path, e))
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every complete record, in file order.
    pub fn records(&mut self) -> Result<Vec<Record>> {
        let mut text = String::new();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.read_to_string(&mut text))
            .map_err(|e| Error::io(&self.path, e))?;
        parse(&self.path, &text)
    }

    /// Changes without an `undone` record, oldest first.
    pub fn pending(&mut self) -> Result<Vec<Pending>> {
        Ok(fold_pending(self.records()?))
    }

    /// Write `change` to disk and return its sequence number; make the change only after.
    pub fn record_change(
        &mut self,
        owner: &Owner,
        lifetime: Lifetime,
        change: &Change,
    ) -> Result<u64> {
        let seq = self.next_seq;
        self.append(&Record::Change {
            seq,
            at_unix_ms: now_ms(),
            owner: owner.clone(),
            lifetime,
            change: change.clone(),
        })?;
        self.next_seq += 1;
        Ok(seq)
    }

    /// Record that change `seq` was put back.
    pub fn record_undone(&mut self, seq: u64, outcome: &str) -> Result<()> {
        self.append(&Record::Undone {
            seq,
            at_unix_ms: now_ms(),
            outcome: outcome.to_string(),
        })
    }

    fn append(&mut self, r: &Record) -> Result<()> {
        let mut line = serde_json::to_vec(r).map_err(|e| Error::Journal {
            path: self.path.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|_| self.file.sync_data())
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Empty the journal once nothing is pending, so that it only ever holds what still needs
    /// undoing.
    pub fn compact_if_done(&mut self) -> Result<bool> {
        if !self.pending()?.is_empty() {
            return Ok(false);
        }
        self.file
            .set_len(0)
            .and_then(|_| self.file.sync_all())
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(true)
    }
}

/// The pending changes in the journal at `path`, read without the lock.
pub fn read_pending(path: &Path) -> Result<Vec<Pending>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    Ok(fold_pending(parse(path, &text)?))
}

fn fold_pending(records: Vec<Record>) -> Vec<Pending> {
    let mut pending: Vec<Pending> = Vec::new();
    for r in records {
        match r {
            Record::Change {
                seq,
                owner,
                lifetime,
                change,
                ..
            } => pending.push(Pending {
                seq,
                owner,
                lifetime,
                change,
            }),
            Record::Undone { seq, .. } => pending.retain(|p| p.seq != seq),
        }
    }
    pending
}

fn parse(path: &Path, text: &str) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(line) {
            Ok(r) => out.push(r),
            // The process died while writing this line: its change was never made.
            Err(_) if i + 1 == lines.len() && !complete => {}
            Err(e) => {
                return Err(Error::Journal {
                    path: path.to_path_buf(),
                    line: i + 1,
                    message: format!("not a journal record ({e}); fix or remove the line"),
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knob::Knob;

    fn owner() -> Owner {
        Owner {
            pid: 1,
            start_time: Some(2),
            boot_id: "b".into(),
        }
    }

    fn knob(old: &str, new: &str) -> Change {
        Change::Knob {
            knob: Knob::ThpEnabled,
            old: old.into(),
            new: new.into(),
        }
    }

    #[test]
    fn pending_is_what_has_no_undone_record() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut j = Journal::open(dir.path()).expect("open");
        let a = j
            .record_change(&owner(), Lifetime::Run, &knob("madvise", "always"))
            .expect("a");
        let b = j
            .record_change(&owner(), Lifetime::Kept, &knob("always", "never"))
            .expect("b");
        assert_eq!((a, b), (1, 2));
        j.record_undone(b, "restored").expect("undone");
        let p = j.pending().expect("pending");
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].seq, 1);
        assert!(!j.compact_if_done().expect("compact"));
        j.record_undone(a, "restored").expect("undone");
        assert!(j.compact_if_done().expect("compact"));
        assert_eq!(std::fs::read(j.path()).expect("read").len(), 0);
        drop(j);
        // Sequence numbers go on after a reopen only while records remain.
        let mut j = Journal::open(dir.path()).expect("reopen");
        assert_eq!(
            j.record_change(&owner(), Lifetime::Run, &knob("a", "b"))
                .expect("c"),
            1
        );
    }

    #[test]
    fn a_second_opener_is_told_who_holds_it() {
        let dir = tempfile::tempdir().expect("tmp");
        let _j = Journal::open(dir.path()).expect("open");
        let e = Journal::open(dir.path()).expect_err("busy");
        assert!(
            e.to_string()
                .contains(&format!("pid {}", std::process::id())),
            "{e}"
        );
    }

    #[test]
    fn torn_last_line_is_ignored_but_damage_elsewhere_is_named() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = Journal::path_in(dir.path());
        let good = serde_json::to_string(&Record::Change {
            seq: 1,
            at_unix_ms: 0,
            owner: owner(),
            lifetime: Lifetime::Run,
            change: knob("madvise", "always"),
        })
        .expect("json");
        std::fs::write(&path, format!("{good}\n{{\"record\":\"cha")).expect("write");
        let mut j = Journal::open(dir.path()).expect("open");
        assert_eq!(j.pending().expect("pending").len(), 1);
        j.record_undone(1, "restored")
            .expect("append after a torn line");
        assert!(j.pending().expect("pending").is_empty());
        drop(j);
        std::fs::write(&path, format!("{{oops}}\n{good}\n")).expect("write");
        let e = Journal::open(dir.path()).expect_err("damaged");
        assert!(e.to_string().contains("journal.jsonl:1:"), "{e}");
    }

    #[test]
    fn a_state_directory_others_may_write_or_a_planted_link_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().expect("tmp");
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = match Journal::open(d.path()) {
            Ok(_) => panic!("a state directory others may write to was taken"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("no one else may write to"), "{e}");
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").expect("write");
        std::os::unix::fs::symlink(&victim, d.path().join("lock")).expect("plant");
        assert!(Journal::open(d.path()).is_err());
        assert_eq!(std::fs::read(&victim).expect("read"), b"keep");
    }
}
