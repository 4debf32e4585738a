//! The worker threads a kernel runs on: a rayon pool whose threads are bound one per CPU when
//! there are CPUs enough.
//!
//! Why bind: rayon's idle workers sleep after a few tens of microseconds without work, and a
//! graph kernel hands its pool work dozens of times a run (every BFS step, every PageRank
//! iteration). After the process sat idle (another program's run, a quiet check), the
//! scheduler wakes a sleeping worker on the waker's own CPU, so for the first tens of
//! milliseconds both workers share one CPU while the other idles: measured on cnr-2000, CC
//! took 8–9 ms inside `bench gap` against 4.4 ms run back to back, and BFS 15–17 ms against
//! 10 ms. Bound one per CPU, they read as back to back. GAP's OpenMP threads never meet it:
//! they spin at every barrier instead of sleeping.
//!
//! `HUGEWISE_BIND_THREADS=off` leaves the threads to the scheduler (a machine whose CPUs other
//! work holds, where a bound thread could not move away from it).

use crate::{Error, Result};

/// The environment variable that turns binding off (`off`) or leaves it automatic (`auto`).
pub const BIND_ENV: &str = "HUGEWISE_BIND_THREADS";

/// Whether a pool's threads are bound to CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// One CPU per thread when there are at least two threads and CPUs enough for all.
    Auto,
    /// Leave the threads to the scheduler.
    Off,
}

impl Binding {
    /// From [`BIND_ENV`]: `off` (or `0`, `no`) turns binding off; anything else, or nothing,
    /// is `Auto`.
    pub fn from_env() -> Binding {
        match std::env::var(BIND_ENV) {
            Ok(v) if matches!(v.trim(), "off" | "0" | "no" | "false") => Binding::Off,
            _ => Binding::Auto,
        }
    }
}

/// A kernel's pool and the CPUs its threads were bound to.
pub struct KernelPool {
    /// The pool.
    pub pool: rayon::ThreadPool,
    /// The CPU of each thread, by thread index; empty when the threads are left to the
    /// scheduler (one thread, more threads than CPUs, binding off, or refused).
    pub bound_to: Vec<usize>,
}

/// A rayon pool of `threads` workers (at least one), bound as `binding` says.
pub fn kernel_pool(threads: usize, binding: Binding) -> Result<KernelPool> {
    let threads = threads.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Config(format!("thread pool: {e}")))?;
    let bound_to = match binding {
        Binding::Auto if threads > 1 => bind(&pool, threads),
        _ => Vec::new(),
    };
    Ok(KernelPool { pool, bound_to })
}

/// Bind thread i of `pool` to the i-th allowed CPU; nothing bound (and every thread free
/// again) when there are too few CPUs or the kernel refuses one.
fn bind(pool: &rayon::ThreadPool, threads: usize) -> Vec<usize> {
    let Ok(allowed) = hugewise_sys::affinity::allowed_cpus() else {
        return Vec::new();
    };
    if allowed.len() < threads {
        return Vec::new();
    }
    let cpus = &allowed[..threads];
    let done =
        pool.broadcast(|ctx| hugewise_sys::affinity::bind_current_thread(&[cpus[ctx.index()]]));
    if done.iter().all(|r| r.is_ok()) {
        return cpus.to_vec();
    }
    let _ = pool.broadcast(|_| hugewise_sys::affinity::bind_current_thread(&allowed));
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_of_a_bound_pool_runs_on_its_own_cpu() {
        let cpus = hugewise_sys::affinity::allowed_cpus().expect("allowed CPUs");
        if cpus.len() < 2 {
            eprintln!("skipped: one CPU allowed");
            return;
        }
        let p = kernel_pool(2, Binding::Auto).expect("pool");
        assert_eq!(p.bound_to, cpus[..2].to_vec());
        let seen = p.pool.broadcast(|ctx| {
            (
                ctx.index(),
                hugewise_sys::affinity::allowed_cpus().expect("allowed CPUs"),
            )
        });
        for (i, allowed) in seen {
            assert_eq!(allowed, vec![cpus[i]], "thread {i}");
        }
    }

    #[test]
    fn one_thread_too_many_threads_or_binding_off_leave_the_scheduler_free() {
        let cpus = hugewise_sys::affinity::allowed_cpus().expect("allowed CPUs");
        for (threads, binding) in [
            (1, Binding::Auto),
            (cpus.len() + 1, Binding::Auto),
            (2, Binding::Off),
        ] {
            let p = kernel_pool(threads, binding).expect("pool");
            assert!(p.bound_to.is_empty(), "{threads} threads, {binding:?}");
            let seen = p
                .pool
                .broadcast(|_| hugewise_sys::affinity::allowed_cpus().expect("allowed CPUs"));
            assert!(
                seen.iter().all(|a| *a == cpus),
                "{threads} threads, {binding:?}"
            );
        }
    }
}
