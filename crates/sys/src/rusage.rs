//! Fault counters of the calling thread, from `getrusage(RUSAGE_THREAD)`.

/// Page-fault counts of the calling thread since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FaultCount {
    /// Faults served without I/O (anonymous and huge-page faults land here).
    pub minor: u64,
    /// Faults that needed I/O (swap-in, file read).
    pub major: u64,
}

/// The calling thread's fault counters.
pub fn thread_faults() -> FaultCount {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: ru points to writable storage for one rusage; RUSAGE_THREAD cannot fail for the
    // calling thread, and on failure the zeroed value is used.
    let ru = unsafe {
        libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr());
        ru.assume_init()
    };
    FaultCount {
        minor: ru.ru_minflt as u64,
        major: ru.ru_majflt as u64,
    }
}

/// Peak resident set size of this process in bytes: `VmHWM` of `/proc/self/status`, the high
/// water mark of this program's own address space. `getrusage`'s `ru_maxrss` is the fallback
/// only: it also carries the peak of the address space the process had before `exec`, so a
/// program started by a parent holding 20 GiB would report 20 GiB.
pub fn peak_rss_bytes() -> u64 {
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        });
    if let Some(kib) = hwm {
        return kib * 1024;
    }
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: as above, for RUSAGE_SELF.
    let ru = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr());
        ru.assume_init()
    };
    ru.ru_maxrss as u64 * 1024
}

/// CPU time (user + system) of the calling thread, in nanoseconds
/// (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`): what a daemon thread costs, apart from the
/// program it shares a process with.
pub fn thread_cpu_ns() -> u64 {
    cpu_clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time (user + system) of this whole process, in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    cpu_clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn cpu_clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is writable storage for one timespec; these clocks always exist for the
    // calling thread and process, and on failure ts stays zero.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_clocks_move_with_work() {
        let (t0, p0) = (super::thread_cpu_ns(), super::process_cpu_ns());
        let mut x = 1u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (t1, p1) = (super::thread_cpu_ns(), super::process_cpu_ns());
        assert!(t1 > t0 && p1 > p0 && p1 >= t1, "{t0} {t1} {p0} {p1}");
    }

    use super::*;
    use crate::mmap::{MapOptions, Mapping};

    #[test]
    fn touching_fresh_pages_counts_minor_faults() {
        let m = Mapping::anonymous(64 * 4096, MapOptions::default()).expect("mmap");
        m.advise(0..m.len(), crate::mmap::Advice::NoHugePage)
            .expect("nohuge");
        let before = thread_faults();
        for i in 0..64 {
            // SAFETY: i * 4096 lies inside the 64-page mapping owned by this test.
            unsafe { m.as_ptr().add(i * 4096).write_volatile(1) };
        }
        let after = thread_faults();
        assert!(after.minor - before.minor >= 64);
        assert!(peak_rss_bytes() > 0);
    }
}
