//! Which CPUs a thread may run on: read the set the process was given, and bind one thread to
//! one CPU of it.
//!
//! A kernel's worker threads that sleep between parallel steps are woken on whatever CPU the
//! scheduler picks, often the waker's own; bound one to a CPU each, they never share one while
//! the other sits idle.

use crate::{Error, Result};

/// The CPUs the calling thread may run on, in increasing order.
pub fn allowed_cpus() -> Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t and its size is passed with it; pid 0 is this thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(Error::last_os("sched_getaffinity"));
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Let the calling thread run on `cpus` only (one CPU to bind it, the allowed set to free it
/// again).
pub fn bind_current_thread(cpus: &[usize]) -> Result<()> {
    if cpus.is_empty() {
        return Err(Error::Invalid("no CPU to run on".into()));
    }
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(Error::Invalid(format!(
                "CPU {cpu} is past the {} a CPU set can name",
                libc::CPU_SETSIZE
            )));
        }
        // SAFETY: `cpu` was checked against the set's capacity just above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a live cpu_set_t and its size is passed with it; pid 0 is this thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(Error::last_os("sched_setaffinity"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_bound_to_one_allowed_cpu_runs_there_and_is_freed_again() {
        let all = allowed_cpus().expect("allowed CPUs");
        assert!(!all.is_empty());
        let last = *all.last().expect("a CPU");
        std::thread::spawn(move || {
            bind_current_thread(&[last]).expect("bind");
            assert_eq!(allowed_cpus().expect("allowed CPUs"), vec![last]);
            // SAFETY: sched_getcpu has no preconditions.
            let on = unsafe { libc::sched_getcpu() };
            assert_eq!(on, last as i32, "a bound thread runs on its CPU");
            bind_current_thread(&all).expect("free");
            assert_eq!(allowed_cpus().expect("allowed CPUs"), all);
        })
        .join()
        .expect("the bound thread ran");
    }

    #[test]
    fn no_cpu_and_a_cpu_past_the_set_are_refused_before_the_kernel() {
        assert!(matches!(bind_current_thread(&[]), Err(Error::Invalid(_))));
        let past = libc::CPU_SETSIZE as usize;
        let e = bind_current_thread(&[past])
            .expect_err("refused")
            .to_string();
        assert!(e.contains(&past.to_string()), "{e}");
    }
}
