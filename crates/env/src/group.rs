//! The process group of a command a run starts: ended with the command, or by restore when a
//! killed run left it behind.
//!
//! The command leads a group of its own and gets SIGKILL from the kernel when hugewise dies, but
//! what it started in turn does not: those processes stay in its group, which is how restore
//! finds them. A process group id cannot be handed to another process while any member lives,
//! so a group with members is still the command's, unless a new process now leads it (the
//! leader's start time tells).

use std::time::{Duration, Instant};

use hugewise_sys::proc::ProcStat;
use hugewise_sys::process::{signal_group, Signal};

use crate::host::Host;
use crate::{Error, Result};

/// How long a group gets between SIGTERM and SIGKILL, whether a restore ends it or its run
/// is asked to stop.
pub const GRACE: Duration = Duration::from_secs(5);

/// What ending a group did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// How many processes were still running and were ended.
    pub processes: usize,
    /// What was found and done, for people.
    pub outcome: String,
}

impl Ended {
    fn nothing(outcome: impl Into<String>) -> Ended {
        Ended {
            processes: 0,
            outcome: outcome.into(),
        }
    }
}

/// End whatever still runs in process group `pgid`, whose leader started at `start_time` (clock
/// ticks since boot), and say what was done.
pub fn end(host: &Host, pgid: i32, start_time: Option<u64>) -> Result<Ended> {
    host.require_real("ending a process group")?;
    let members = host.proc.group_members(pgid)?;
    if let (Some(leader), Some(t)) = (members.iter().find(|m| m.pid == pgid), start_time) {
        if leader.start_time != t {
            return Ok(Ended::nothing(format!(
                "already ended; group {pgid} now belongs to another process ({}), left alone",
                leader.comm
            )));
        }
    }
    if members.is_empty() {
        return Ok(Ended::nothing("already ended"));
    }
    let processes = members.len();
    let what = describe(&members);
    for (signal, wait) in [
        (Signal::Term, GRACE),
        (Signal::Kill, Duration::from_secs(2)),
    ] {
        let outcome = match signal {
            Signal::Term => format!("ended {what} (SIGTERM)"),
            Signal::Kill => format!(
                "ended {what} (SIGKILL, after SIGTERM left them running for {} s)",
                GRACE.as_secs()
            ),
        };
        if !signal_group(pgid, signal)? || gone(host, pgid, wait)? {
            return Ok(Ended { processes, outcome });
        }
    }
    Err(Error::Invalid(format!(
        "process group {pgid} ({what}) still runs after SIGKILL"
    )))
}

fn describe(members: &[ProcStat]) -> String {
    let list: Vec<String> = members
        .iter()
        .map(|m| format!("{} {}", m.pid, m.comm))
        .collect();
    format!(
        "{} process{} still running ({})",
        members.len(),
        if members.len() == 1 { "" } else { "es" },
        list.join(", ")
    )
}

fn gone(host: &Host, pgid: i32, wait: Duration) -> Result<bool> {
    let t0 = Instant::now();
    loop {
        if host.proc.group_members(pgid)?.is_empty() {
            return Ok(true);
        }
        if t0.elapsed() >= wait {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait for `child` (the leader of process group `pgid`) to exit. Once `stop` says so, the
/// group gets SIGTERM, and SIGKILL after [`GRACE`]. Returns the exit status, or the error of
/// `try_wait`.
pub fn wait_or_end(
    child: &mut std::process::Child,
    pgid: i32,
    stop: &dyn Fn() -> bool,
) -> std::io::Result<std::process::ExitStatus> {
    let mut term_sent: Option<Instant> = None;
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok(s);
        }
        if stop() {
            match term_sent {
                None => {
                    let _ = signal_group(pgid, Signal::Term);
                    term_sent = Some(Instant::now());
                }
                Some(t) if t.elapsed() > GRACE => {
                    let _ = signal_group(pgid, Signal::Kill);
                }
                Some(_) => {}
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
