//! How much of a busy CPU a thread gets: its nice value, read and changed for the calling
//! thread alone.
//!
//! Linux keeps a nice value per thread (`setpriority(PRIO_PROCESS, tid, …)` names one thread,
//! not its process), so a daemon thread can give way to the programs beside it while the
//! threads of the process it runs in keep theirs. khugepaged runs at the lowest priority, 19,
//! for that reason. A new thread or child process starts at the value of the thread that made
//! it, so a thread that gave way puts its value back before it goes on with other work
//! ([`GiveWay`] does on drop). The value ranks a thread against the others of its scheduling
//! group only: with autogroup on, the threads of its session.

use std::marker::PhantomData;

use crate::{Error, Result};

/// The lowest priority a thread can ask for: the most it gives way.
pub const LOWEST: i32 = 19;

/// The calling thread's id.
fn tid() -> libc::id_t {
    // SAFETY: the gettid system call has no arguments and no preconditions and cannot fail;
    // called through syscall(2) it needs no C library wrapper.
    (unsafe { libc::syscall(libc::SYS_gettid) }) as libc::id_t
}

/// The calling thread's nice value (-20 to 19; 0 unless something changed it).
pub fn current_thread_nice() -> Result<i32> {
    // getpriority returns the nice value itself, which can be -1: errno tells an error apart.
    // SAFETY: errno is this thread's own; writing 0 to it is what the man page asks.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: getpriority takes a kind and an id and touches no memory of ours.
    let n = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid()) };
    if n == -1 && std::io::Error::last_os_error().raw_os_error() != Some(0) {
        return Err(Error::last_os("getpriority"));
    }
    Ok(n)
}

/// Set the calling thread's nice value (lowering it can need CAP_SYS_NICE).
fn set_current_thread_nice(nice: i32) -> Result<()> {
    // SAFETY: setpriority takes a kind, an id and a value and touches no memory of ours; the id
    // is this thread's, so no other thread or process is changed.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid(), nice) } != 0 {
        return Err(Error::last_os("setpriority"));
    }
    Ok(())
}

/// The calling thread given way (see [`give_way`]); its value put back when dropped. Not
/// `Send`: it must be dropped on the thread it changed.
#[derive(Debug)]
pub struct GiveWay {
    before: i32,
    now: i32,
    _same_thread: PhantomData<*const ()>,
}

impl GiveWay {
    /// The thread's nice value while this lives.
    pub fn nice(&self) -> i32 {
        self.now
    }
}

impl Drop for GiveWay {
    fn drop(&mut self) {
        if self.now != self.before {
            // Going back to a higher priority needs CAP_SYS_NICE, which a process that may
            // collapse another's memory has; without it the thread keeps the lower one.
            let _ = set_current_thread_nice(self.before);
        }
    }
}

/// Give the calling thread no more than the priority of nice value `nice` (0 to
/// [`LOWEST`]) until the returned guard is dropped: its nice value is raised to `nice` where it
/// is lower, and left where it is already that or higher (a user who started hugewise under
/// `nice` asked for less, not more).
pub fn give_way(nice: i32) -> Result<GiveWay> {
    if !(0..=LOWEST).contains(&nice) {
        return Err(Error::Invalid(format!(
            "a nice value to give way with is 0 to {LOWEST}, not {nice}"
        )));
    }
    let before = current_thread_nice()?;
    let mut guard = GiveWay {
        before,
        now: before,
        _same_thread: PhantomData,
    };
    if before < nice {
        set_current_thread_nice(nice)?;
        guard.now = current_thread_nice()?;
    }
    Ok(guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_gives_way_alone_never_takes_priority_and_gets_its_value_back() {
        let before = current_thread_nice().expect("this thread's nice value");
        std::thread::spawn(move || {
            let mine = current_thread_nice().expect("nice");
            // A new thread starts at its creator's value.
            assert_eq!(mine, before);
            {
                let g = give_way(LOWEST).expect("lowest");
                assert_eq!(
                    (g.nice(), current_thread_nice().expect("nice")),
                    (LOWEST, LOWEST)
                );
                // A thread made meanwhile starts at the value given way with.
                let child = std::thread::spawn(|| current_thread_nice().expect("nice"));
                assert_eq!(child.join().expect("joined"), LOWEST);
                // Asking for more priority than it has leaves it as it is.
                let again = give_way(0).expect("kept");
                assert_eq!(again.nice(), LOWEST);
            }
            // Dropped: back where it was, when this process may raise a priority (root may).
            let after = current_thread_nice().expect("nice");
            if may_raise_priority() {
                assert_eq!(after, mine);
            } else {
                assert_eq!(after, LOWEST);
            }
            assert!(matches!(give_way(20), Err(Error::Invalid(_))));
            assert!(matches!(give_way(-1), Err(Error::Invalid(_))));
        })
        .join()
        .expect("the thread ran");
        // The spawning thread kept its own.
        assert_eq!(current_thread_nice().expect("nice"), before);
    }

    /// Whether this process may lower a nice value (root, or CAP_SYS_NICE).
    fn may_raise_priority() -> bool {
        crate::caps::is_root()
    }
}
