//! Pinning memory (mlock) and process personality flags.

use crate::mmap::Mapping;
use crate::{Error, Result};

/// Lock all pages of `m` in memory (they are faulted in if needed).
pub fn mlock(m: &Mapping) -> Result<()> {
    // SAFETY: the range is exactly the live mapping `m` owns.
    let rc = unsafe { libc::mlock(m.as_ptr().cast(), m.len()) };
    if rc != 0 {
        return Err(Error::last_os("mlock"));
    }
    Ok(())
}

/// Unlock the pages of `m`.
pub fn munlock(m: &Mapping) -> Result<()> {
    // SAFETY: the range is exactly the live mapping `m` owns.
    let rc = unsafe { libc::munlock(m.as_ptr().cast(), m.len()) };
    if rc != 0 {
        return Err(Error::last_os("munlock"));
    }
    Ok(())
}

/// Lock the pages of `range` (offsets into `m`, 4 KiB aligned) in memory. Locking a part of a
/// mapping splits its kernel VMA in up to three.
pub fn mlock_range(m: &Mapping, range: std::ops::Range<usize>) -> Result<()> {
    lock_call(m, range, Call::Lock)
}

/// Unlock the pages of `range` (offsets into `m`).
pub fn munlock_range(m: &Mapping, range: std::ops::Range<usize>) -> Result<()> {
    lock_call(m, range, Call::Unlock)
}

/// Lock the pages of `range` (offsets into `m`, 4 KiB aligned) as they are faulted in
/// (`mlock2(MLOCK_ONFAULT)`): pages present now are locked, the rest when first touched, so a
/// mapping filled by several threads is not faulted in by this call first.
pub fn mlock_on_fault_range(m: &Mapping, range: std::ops::Range<usize>) -> Result<()> {
    lock_call(m, range, Call::LockOnFault)
}

#[derive(Clone, Copy)]
enum Call {
    Lock,
    LockOnFault,
    Unlock,
}

fn lock_call(m: &Mapping, range: std::ops::Range<usize>, call: Call) -> Result<()> {
    m.check_range(&range)?;
    // SAFETY: the range lies inside the live mapping `m` owns (checked above); mlock, mlock2
    // and munlock change residency, never contents.
    let (rc, name) = unsafe {
        let p = m.as_ptr().add(range.start).cast();
        match call {
            Call::Lock => (libc::mlock(p, range.len()), "mlock"),
            Call::LockOnFault => (libc::mlock2(p, range.len(), libc::MLOCK_ONFAULT), "mlock2"),
            Call::Unlock => (libc::munlock(p, range.len()), "munlock"),
        }
    };
    if rc != 0 {
        return Err(Error::last_os(name));
    }
    Ok(())
}

/// Turn off address-space randomisation for this process and the programs it executes
/// (`personality(ADDR_NO_RANDOMIZE)`), so traces of repeated runs share addresses. Returns the
/// previous persona.
pub fn disable_aslr() -> Result<u32> {
    // SAFETY: personality(0xffffffff) only queries the current persona.
    let old = unsafe { libc::personality(0xffff_ffff) };
    if old < 0 {
        return Err(Error::last_os("personality"));
    }
    let new = old as libc::c_ulong | libc::ADDR_NO_RANDOMIZE as libc::c_ulong;
    // SAFETY: setting a persona flag changes no memory of this process.
    let rc = unsafe { libc::personality(new) };
    if rc < 0 {
        return Err(Error::last_os("personality"));
    }
    Ok(old as u32)
}

/// Make the program that `cmd` spawns run without address-space randomisation, leaving this
/// process's own persona alone: its mappings then land where they landed in a traced run of
/// the same program, so a promotion plan's addresses match.
pub fn exec_without_aslr(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and calls only personality,
    // which is async-signal-safe, allocates nothing and touches no lock.
    unsafe {
        cmd.pre_exec(|| {
            let old = libc::personality(0xffff_ffff);
            if old < 0
                || libc::personality(
                    old as libc::c_ulong | libc::ADDR_NO_RANDOMIZE as libc::c_ulong,
                ) < 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mmap::MapOptions;

    #[test]
    fn a_child_runs_without_aslr() {
        let mut cmd = std::process::Command::new("cat");
        cmd.arg("/proc/self/personality");
        exec_without_aslr(&mut cmd);
        let out = cmd.output().expect("run cat");
        let persona = u32::from_str_radix(String::from_utf8_lossy(&out.stdout).trim(), 16)
            .expect("hex persona");
        assert_ne!(persona & libc::ADDR_NO_RANDOMIZE as u32, 0, "{persona:#x}");
    }

    #[test]
    fn lock_and_unlock_small_mapping() {
        let m = Mapping::anonymous(64 << 10, MapOptions::default()).expect("mmap");
        match mlock(&m) {
            Ok(()) => munlock(&m).expect("munlock"),
            Err(e) => crate::testing::skip(format!("mlock refused here: {e}")),
        }
    }

    #[test]
    fn lock_on_fault_locks_only_what_is_touched() {
        let mut m = Mapping::anonymous(64 << 10, MapOptions::default()).expect("mmap");
        assert!(mlock_on_fault_range(&m, 0..(128 << 10)).is_err());
        if let Err(e) = mlock_on_fault_range(&m, 0..(64 << 10)) {
            crate::testing::skip(format!("mlock2 refused here: {e}"));
            return;
        }
        m.touch_pages(4096);
        munlock(&m).expect("munlock");
    }

    #[test]
    fn lock_one_page_of_a_mapping() {
        let m = Mapping::anonymous(64 << 10, MapOptions::default()).expect("mmap");
        assert!(mlock_range(&m, 4096..8192 + 4096 * 100).is_err());
        match mlock_range(&m, 4096..8192) {
            Ok(()) => munlock_range(&m, 4096..8192).expect("munlock"),
            Err(e) => crate::testing::skip(format!("mlock refused here: {e}")),
        }
    }
}
