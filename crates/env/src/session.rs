//! A session: the changes one hugewise process makes, journaled before each is made, and put
//! back when the session ends (for [`Lifetime::Run`]) or by `hugewise env restore`.

use std::path::Path;

pub use hugewise_results::env::{KnobSet, RestoreReport};

use crate::cgroup::{self, Hierarchy, MemoryCgroup};
use crate::change::{Change, Undone};
use crate::host::Host;
use crate::journal::{Journal, Lifetime, Owner, Pending};
use crate::knob::Knob;
use crate::{group, swapfile, Error, Result};

/// Changes made by this process, journaled before each is made.
#[derive(Debug)]
pub struct Session {
    host: Host,
    journal: Journal,
    owner: Owner,
    lifetime: Lifetime,
    mine: Vec<(u64, Change)>,
    finished: bool,
}

fn owner(host: &Host) -> Result<Owner> {
    let pid = std::process::id() as i32;
    Ok(Owner {
        pid,
        start_time: host.proc.start_time(pid).ok().flatten(),
        boot_id: host.proc.boot_id()?,
    })
}

impl Session {
    /// Lock the journal and start a session. Refuses while another hugewise run holds the
    /// journal, and while a run that ended without restoring left changes behind.
    pub fn open(host: &Host, lifetime: Lifetime) -> Result<Session> {
        let mut journal = Journal::open(&host.state_dir)?;
        let left: Vec<String> = journal
            .pending()?
            .iter()
            .filter(|p| p.lifetime == Lifetime::Run)
            .map(|p| p.change.to_string())
            .collect();
        if !left.is_empty() {
            return Err(Error::Leftover {
                path: journal.path().to_path_buf(),
                steps: left,
            });
        }
        Ok(Session {
            owner: owner(host)?,
            host: host.clone(),
            journal,
            lifetime,
            mine: Vec::new(),
            finished: false,
        })
    }

    /// The machine.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Set `knob` to `value`: validate, journal, write, read back. Setting a knob to the value
    /// it already holds changes nothing and journals nothing.
    pub fn set(&mut self, knob: Knob, value: &str) -> Result<KnobSet> {
        self.host
            .require_root(&format!("setting {knob}"), &knob.display_path())?;
        let new = knob.validate(&self.host, value)?;
        let old = knob.read(&self.host)?;
        if old != new {
            let change = Change::Knob {
                knob,
                old: old.clone(),
                new: new.clone(),
            };
            let host = self.host.clone();
            self.attempt(change, || knob.write(&host, &new))?;
        }
        Ok(KnobSet {
            knob: knob.to_string(),
            path: knob.display_path(),
            now: knob.read(&self.host)?,
            old,
            asked: new,
        })
    }

    fn journaled(&mut self, change: Change) -> Result<()> {
        let seq = self
            .journal
            .record_change(&self.owner, self.lifetime, &change)?;
        self.mine.push((seq, change));
        Ok(())
    }

    /// Journal `change`, then make it with `make`. If making it fails, whatever part of it took
    /// effect is undone at once and the journal says so, so that nothing half-made stays
    /// pending.
    fn attempt(&mut self, change: Change, make: impl FnOnce() -> Result<()>) -> Result<()> {
        self.journaled(change)?;
        let Err(e) = make() else { return Ok(()) };
        if let Some((seq, change)) = self.mine.pop() {
            let outcome = match change.undo(&self.host, true) {
                Ok(o) => format!("not made ({e}); {o}"),
                Err(u) => format!("not made ({e}); undo failed: {u}"),
            };
            let _ = self.journal.record_undone(seq, &outcome);
        }
        Err(e)
    }

    /// Create a memory cgroup limited to `limit_bytes`, removed when the session ends.
    pub fn create_cgroup(&mut self, limit_bytes: u64) -> Result<MemoryCgroup> {
        self.host.require_real("a memory cgroup")?;
        let h = Hierarchy::find(&self.host)?;
        let path = cgroup::fresh_path(&h);
        self.host
            .require_root("creating a cgroup", &path.display().to_string())?;
        let mut made = None;
        self.attempt(Change::Cgroup { path: path.clone() }, || {
            made = Some(MemoryCgroup::create(&h, &path, limit_bytes)?);
            Ok(())
        })?;
        made.ok_or_else(|| Error::Invalid("cgroup creation reported no cgroup".into()))
    }

    /// Create a swap file of `bytes` at `path` (which must not exist) and enable it.
    pub fn add_swap(&mut self, path: &Path, bytes: u64) -> Result<()> {
        self.host.require_real("a swap file")?;
        self.host
            .require_root("enabling swap", &path.display().to_string())?;
        if path.exists() {
            return Err(crate::swapfile::exists(path, "choose another path"));
        }
        // Journaled as an absolute path: /proc/swaps lists it so, and a restore run from
        // another directory must find it.
        let path = &std::path::absolute(path).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        self.attempt(
            Change::SwapFile {
                path: path.to_path_buf(),
            },
            || {
                swapfile::create(path, bytes)?;
                hugewise_sys::swap::swapon(path, None)?;
                Ok(())
            },
        )
    }

    /// Journal a command just started as the leader of its own process group: if this process
    /// is killed, `hugewise env restore` ends what the command left running. Returns the
    /// change's sequence number for [`Session::end_command`].
    pub fn record_command(&mut self, pid: i32, argv: &[String]) -> Result<u64> {
        let change = Change::Command {
            pid,
            start_time: self.host.proc.start_time(pid)?,
            argv: argv.to_vec(),
        };
        self.journaled(change)?;
        Ok(self.mine.last().map_or(0, |(seq, _)| *seq))
    }

    /// The command journaled as `seq` has ended: end whatever it left running in its group and
    /// mark the change undone. What cannot be ended stays pending, for restore to retry.
    pub fn end_command(&mut self, seq: u64) -> Result<group::Ended> {
        let found = self
            .mine
            .iter()
            .enumerate()
            .find_map(|(i, (s, c))| match c {
                Change::Command {
                    pid, start_time, ..
                } if *s == seq => Some((i, *pid, *start_time)),
                _ => None,
            });
        let Some((i, pid, start_time)) = found else {
            return Err(Error::Invalid(format!("no command journaled as {seq}")));
        };
        let ended = group::end(&self.host, pid, start_time)?;
        self.mine.remove(i);
        self.journal.record_undone(seq, &ended.outcome)?;
        Ok(ended)
    }

    /// Undo this session's changes, newest first. Also runs on drop for [`Lifetime::Run`].
    pub fn restore(&mut self) -> RestoreReport {
        self.finished = true;
        let boot = self.owner.boot_id.clone();
        let mut report = RestoreReport::default();
        let mine = std::mem::take(&mut self.mine);
        for (seq, change) in mine.into_iter().rev() {
            undo_one(
                &self.host,
                &mut self.journal,
                seq,
                &change,
                &boot,
                &mut report,
            );
        }
        let _ = self.journal.compact_if_done();
        report
    }

    /// End the session as a crash would: nothing is put back and the journal keeps every
    /// change. Tests use it to check that `restore_all` recovers.
    #[doc(hidden)]
    pub fn abandon(mut self) {
        self.finished = true;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.finished && self.lifetime == Lifetime::Run {
            let r = self.restore();
            for f in &r.failed {
                eprintln!("hugewise: could not restore {}: {}", f.change, f.outcome);
            }
        }
    }
}

fn undo_one(
    host: &Host,
    journal: &mut Journal,
    seq: u64,
    change: &Change,
    boot: &str,
    report: &mut RestoreReport,
) {
    let current_boot = host.proc.boot_id().unwrap_or_default();
    match change.undo(host, boot == current_boot) {
        Ok(outcome) => {
            let _ = journal.record_undone(seq, &outcome);
            report.undone.push(Undone {
                change: change.to_string(),
                outcome,
            });
        }
        Err(e) => report.failed.push(Undone {
            change: change.to_string(),
            outcome: e.to_string(),
        }),
    }
}

/// Run `work` with `knob` set to `value` in a session of its own, and put it back when `work`
/// returns. While `work` runs, a watcher polls `cancelled` every 50 ms: when it says so, the
/// knob is put back at once and `on_cancel` is called, which should end the process (`work`
/// cannot be stopped from outside, and would run on with the machine put back).
pub fn with_setting<T>(
    host: &Host,
    knob: Knob,
    value: &str,
    cancelled: &(dyn Fn() -> bool + Sync),
    on_cancel: &(dyn Fn() + Sync),
    work: impl FnOnce() -> T,
) -> Result<T> {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::sync::Mutex;
    let mut session = Session::open(host, Lifetime::Run)?;
    session.set(knob, value)?;
    let session = Mutex::new(session);
    let done = AtomicBool::new(false);
    let out = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Relaxed) {
                if cancelled() {
                    // A panic elsewhere leaves the session whole: restore it all the same.
                    session.lock().unwrap_or_else(|p| p.into_inner()).restore();
                    on_cancel();
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
        let out = work();
        done.store(true, Relaxed);
        out
    });
    session
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .restore();
    Ok(out)
}

/// Undo every pending change in the journal, newest first, whoever made it: what a crashed or
/// killed run left behind, and settings kept on purpose.
pub fn restore_all(host: &Host) -> Result<RestoreReport> {
    let mut journal = Journal::open(&host.state_dir)?;
    let pending = journal.pending()?;
    let mut report = RestoreReport::default();
    for p in pending.iter().rev() {
        undo_one(
            host,
            &mut journal,
            p.seq,
            &p.change,
            &p.owner.boot_id,
            &mut report,
        );
    }
    journal.compact_if_done()?;
    Ok(report)
}

/// The pending changes, oldest first, read without taking the lock or creating anything (for
/// `env show`, which needs no root and may run beside a live run).
pub fn pending(host: &Host) -> Result<Vec<Pending>> {
    let path = Journal::path_in(&host.state_dir);
    // A state directory this user may not search is not an absent journal.
    if !path.try_exists().map_err(|e| Error::io(&path, e))? {
        return Ok(Vec::new());
    }
    crate::journal::read_pending(&path)
}
