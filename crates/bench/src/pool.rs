//! The worker threads a kernel runs on: a rayon pool whose threads are bound one per CPU when
//! there are CPUs enough, and kept awake while a trial runs.
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
//! Why keep awake: even bound, a sleeping worker's vCPU halts, and waking it costs a trip
//! through the host. A kernel that hands its pool work round after round pays it each round:
//! SSSP's delta-stepping, two broadcasts a bucket, ran on cnr-2000 at 0.91–0.92x GAP's speed
//! inside `bench gap` with the workers polling between rounds ([`awake`]), against 0.88–0.89x
//! without (alternated, AMD EPYC). An earlier reading, 0.93–0.99x against 0.80–0.82x, was
//! taken while bound workers were never kept awake (the CPUs were counted on a bound worker).
//!
//! `HUGEWISE_BIND_THREADS=off` leaves the threads to the scheduler (a machine whose CPUs other
//! work holds, where a bound thread could not move away from it); `HUGEWISE_AWAKE_THREADS=off`
//! lets idle workers sleep as rayon's do.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::{Error, Result};

/// How long a worker kept awake by [`awake`] spins without finding work before it lets other
/// threads have its CPU between polls (a `sched_yield` each, which returns at once when
/// nothing else is runnable there).
const AWAKE_SPIN: std::time::Duration = std::time::Duration::from_millis(1);

/// How long it polls without finding work before it goes back to rayon's own sleep: longer
/// than a kernel's serial stretches between two parallel steps, short enough that a long
/// serial phase does not hold a CPU for nothing. It was 1 ms, and SSSP on the road mesh has
/// stretches longer than that (four in twelve trials of `bench gap`, each seen after 22,000
/// polls in a row without work): a poller gone for the rest of a trial left its worker to be
/// woken for each of SSSP's tens of thousands of broadcasts, and such a trial took up to 2.7
/// times as long (0.64x to 1.05x GAP's speed in seven runs; 1.31–1.42x with 100 ms). The cost:
/// through such a stretch the poller's CPU does not look idle, so a thread that wakes then
/// (a telemetry sampler) may be placed beside the trial's thread instead; the yield lets one
/// placed beside the poller run at once.
const AWAKE_IDLE: std::time::Duration = std::time::Duration::from_millis(100);

/// Idle polls between two looks at the clock while spinning (yielding, it looks at every poll).
const POLLS_PER_LOOK: u32 = 64;

/// The environment variable that turns binding off (`off`) or leaves it automatic (`auto`).
pub const BIND_ENV: &str = "HUGEWISE_BIND_THREADS";

/// The environment variable that lets [`awake`]'s workers sleep as rayon's do (`off`).
pub const AWAKE_ENV: &str = "HUGEWISE_AWAKE_THREADS";

/// Whether the switch `var` is on: unset, `auto` or `on` (also `1`, `yes`, `true`) is on;
/// `off` (also `0`, `no`, `false`) is off; anything else is refused, naming the variable, so
/// that a misspelt `of` does not leave the switch on without a word.
fn switch(var: &str) -> Result<bool> {
    match std::env::var(var) {
        Err(std::env::VarError::NotPresent) => Ok(true),
        Ok(v) => match v.trim() {
            "" | "auto" | "on" | "1" | "yes" | "true" => Ok(true),
            "off" | "0" | "no" | "false" => Ok(false),
            other => Err(Error::Config(format!(
                "{var}={other:?}: expected auto, on or off"
            ))),
        },
        Err(std::env::VarError::NotUnicode(v)) => Err(Error::Config(format!(
            "{var}={v:?}: expected auto, on or off"
        ))),
    }
}

/// Whether [`awake`] keeps the workers polling ([`AWAKE_ENV`] not `off`; a bad value was
/// refused when the pool was made).
fn awake_on() -> bool {
    switch(AWAKE_ENV).unwrap_or(true)
}

/// Whether a pool's threads are bound to CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// One CPU per thread when there are at least two threads and CPUs enough for all.
    Auto,
    /// Leave the threads to the scheduler.
    Off,
}

impl Binding {
    /// From [`BIND_ENV`]: `off` turns binding off; unset, `auto` or `on` is `Auto`; any other
    /// value is an error naming the variable.
    pub fn from_env() -> Result<Binding> {
        Ok(if switch(BIND_ENV)? {
            Binding::Auto
        } else {
            Binding::Off
        })
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
    // Checked here, where every kernel's pool is made, so that a bad value stops the run
    // before it starts rather than being read as `on` at each trial.
    switch(AWAKE_ENV)?;
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

/// Run `f` in `pool` with its other workers kept awake meanwhile: each polls for work instead of
/// sleeping, until `f` returns or it has found nothing for 100 ms (yielding its CPU between
/// polls after the first millisecond). A pool with more workers than CPUs is not kept awake.
///
/// A kernel that hands its pool work round after round (SSSP's delta-stepping hands it two
/// broadcasts a round whose frontier is more than one claim, hundreds a run on cnr-2000)
/// otherwise wakes a sleeping worker each time, and on a VM a worker's vCPU halts while it
/// sleeps: the wake-up costs a trip through the host, each round. GAP's OpenMP threads spin at each barrier and do not pay it. The polling holds the
/// other CPUs while `f` runs, as that spinning does.
pub fn awake<R: Send>(pool: &rayon::ThreadPool, f: impl FnOnce() -> R + Send) -> R {
    // The CPUs are counted here, on the calling thread: inside the pool a worker bound to one
    // CPU counts one, and a pool of two bound workers was never kept awake.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    pool.install(|| {
        let stop = Arc::new(AtomicBool::new(false));
        let owner = rayon::current_thread_index();
        // More workers than CPUs (an overcommitted run, threads that wait on swap-ins):
        // pollers would take the CPUs from the workers with work, so they sleep as rayon's do.
        let workers = rayon::current_num_threads();
        if keeps_awake(workers, cpus) {
            let stop = Arc::clone(&stop);
            rayon::spawn_broadcast(move |ctx| {
                if Some(ctx.index()) != owner {
                    poll_until(&stop);
                }
            });
        }
        // Set on the way out, also when f panics, so that no poller outlives the trial.
        let _stop = StopOnDrop(&stop);
        f()
    })
}

/// Whether [`awake`] keeps a pool of `workers` awake on a machine of `cpus`.
fn keeps_awake(workers: usize, cpus: usize) -> bool {
    workers > 1 && workers <= cpus && awake_on()
}

/// Sets its flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

thread_local! {
    /// Whether this worker is inside [`poll_until`]: what a test asks of the work it runs.
    static POLLING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run the pool's work as it comes until `stop` is set, or until nothing came for
/// [`AWAKE_IDLE`]; after [`AWAKE_SPIN`] without work, yield the CPU between polls.
fn poll_until(stop: &AtomicBool) {
    let outer = POLLING.with(|p| p.replace(true));
    poll(stop);
    POLLING.with(|p| p.set(outer));
}

/// [`poll_until`]'s loop.
fn poll(stop: &AtomicBool) {
    let mut idle = 0u32;
    let mut idle_since = std::time::Instant::now();
    let mut yielding = false;
    while !stop.load(Ordering::Relaxed) {
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => (idle, yielding) = (0, false),
            Some(rayon::Yield::Idle) => {
                if idle == 0 {
                    idle_since = std::time::Instant::now();
                }
                idle = idle.wrapping_add(1);
                // Yielding, a look at the clock is cheap beside the system call.
                if yielding || idle.is_multiple_of(POLLS_PER_LOOK) {
                    let quiet = idle_since.elapsed();
                    if quiet >= AWAKE_IDLE {
                        return;
                    }
                    yielding = quiet >= AWAKE_SPIN;
                }
                if yielding {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            None => return,
        }
    }
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
    fn work_handed_round_after_round_to_an_awake_pool_runs_in_the_other_workers_poll() {
        if !two_kept_awake() {
            return;
        }
        for binding in [Binding::Off, Binding::Auto] {
            rounds_run_in_a_poll(binding);
        }
    }

    /// What [`work_handed_round_after_round_to_an_awake_pool_runs_in_the_other_workers_poll`]
    /// asks, of a pool of two bound as `binding` says (`Auto` binds them one per CPU where the
    /// machine has two).
    fn rounds_run_in_a_poll(binding: Binding) {
        let p = kernel_pool(2, binding).expect("pool");
        let round = || rayon::broadcast(|ctx| (ctx.index(), POLLING.with(|x| x.get())));
        // Rounds until one runs inside the other worker's poll: at once on a quiet machine. On a
        // busy one (other tests' pools on two CPUs) this thread may lose its CPU for longer than
        // the poll's bound, after which the poller has given up and the worker sleeps until the
        // next awake trial; so each trial gets 50 ms of rounds, and a fresh trial follows, for
        // ten seconds in all. With `HUGEWISE_AWAKE_THREADS=off` no trial ever polls.
        let start = std::time::Instant::now();
        let mut polled = false;
        while !polled && start.elapsed() < std::time::Duration::from_secs(10) {
            let trial = std::time::Instant::now();
            polled = awake(&p.pool, || {
                // The worker running this closure (either) is the one not kept awake.
                let owner = rayon::current_thread_index();
                while trial.elapsed() < std::time::Duration::from_millis(50) {
                    let r = round();
                    assert_eq!(r.len(), 2, "each round runs on both workers");
                    if r.iter().any(|&(i, inside)| Some(i) != owner && inside) {
                        return true;
                    }
                }
                false
            });
        }
        assert!(
            polled,
            "no round ran inside the other worker's poll ({binding:?}, bound to {:?})",
            p.bound_to
        );
        // Without `awake`, nothing polls (once the poll has seen its stop).
        std::thread::sleep(std::time::Duration::from_millis(20));
        let asleep: Vec<(usize, bool)> = p.pool.install(round);
        assert!(asleep.iter().all(|&(_, x)| !x));
        // Once f has returned, the pool's workers are free again: a plain install runs.
        assert_eq!(p.pool.install(|| 7), 7);
    }

    #[test]
    fn a_poller_with_nothing_to_run_gives_up_and_one_outside_a_pool_returns_at_once() {
        let p = kernel_pool(1, Binding::Off).expect("pool");
        // Nothing else is queued: the poll gives up after its bound instead of spinning on.
        let t = std::time::Instant::now();
        p.pool.install(|| poll_until(&AtomicBool::new(false)));
        assert!(t.elapsed() >= AWAKE_IDLE, "gave up after {:?}", t.elapsed());
        poll_until(&AtomicBool::new(false));
    }

    #[test]
    fn a_poller_outlasts_a_serial_stretch_longer_than_its_spin() {
        if !two_kept_awake() {
            return;
        }
        // The trial's thread works alone for 20 ms (past the spin, well within the bound), then
        // hands the pool a round: the other worker, yielding its CPU meanwhile, still runs it
        // inside its poll. With the 1 ms bound it had gone to sleep. On a busy machine a trial
        // may lose its CPU past the bound, so a fresh one follows, for ten seconds in all.
        let p = kernel_pool(2, Binding::Auto).expect("pool");
        let stretch = std::time::Duration::from_millis(20);
        assert!(AWAKE_SPIN < stretch && stretch * 4 < AWAKE_IDLE);
        let start = std::time::Instant::now();
        let mut polled = false;
        while !polled && start.elapsed() < std::time::Duration::from_secs(10) {
            polled = awake(&p.pool, || {
                let owner = rayon::current_thread_index();
                // Let the other worker reach its poll first, then work alone.
                rayon::broadcast(|_| ());
                let alone = std::time::Instant::now();
                while alone.elapsed() < stretch {
                    std::hint::spin_loop();
                }
                rayon::broadcast(|ctx| (ctx.index(), POLLING.with(|x| x.get())))
                    .iter()
                    .any(|&(i, inside)| Some(i) != owner && inside)
            });
        }
        assert!(polled, "no round after a 20 ms stretch ran inside a poll");
    }

    #[test]
    fn a_trial_that_panics_leaves_no_poller_behind() {
        if !two_kept_awake() {
            return;
        }
        let p = kernel_pool(2, Binding::Auto).expect("pool");
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            awake(&p.pool, || {
                // Let the other worker reach its poll first.
                rayon::broadcast(|_| ());
                panic!("a kernel's panic");
            })
        }));
        assert!(r.is_err());
        // Well within the poll's bound: a poller never told to stop would still be polling.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let seen: Vec<bool> = p.pool.broadcast(|_| POLLING.with(|x| x.get()));
        assert!(seen.iter().all(|&x| !x), "a poller outlived the trial");
    }

    /// Whether [`awake`] keeps a pool of two awake here; a test of the polling says so and
    /// passes when it does not (one CPU, `HUGEWISE_AWAKE_THREADS=off`).
    fn two_kept_awake() -> bool {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let on = keeps_awake(2, cpus);
        if !on {
            eprintln!("skipped: a pool of two is not kept awake here ({cpus} CPUs)");
        }
        on
    }

    #[test]
    fn a_switch_reads_on_and_off_and_refuses_anything_else_by_name() {
        let var = "HUGEWISE_TEST_POOL_SWITCH";
        std::env::remove_var(var);
        assert!(switch(var).expect("unset"));
        for (v, want) in [("auto", true), ("on", true), (" off ", false), ("0", false)] {
            std::env::set_var(var, v);
            assert_eq!(switch(var).expect(v), want, "{v:?}");
        }
        std::env::set_var(var, "of");
        let e = switch(var).expect_err("misspelt").to_string();
        assert!(e.contains(var) && e.contains("\"of\""), "{e}");
        std::env::remove_var(var);
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
