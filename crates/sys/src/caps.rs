//! What this machine lets hugewise do, found by trying each feature on a small scratch mapping.

pub use hugewise_results::machine::{Capabilities, Probe};

use crate::debugfs;
use crate::mmap::{Advice, MapOptions, Mapping};
use crate::proc::{Pid, ProcFs};
use crate::process::PidFd;

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    euid() == 0
}

/// This process's effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Run every probe. Each uses at most 4 MiB and leaves nothing behind.
pub fn probe(proc: &ProcFs) -> Capabilities {
    let root = is_root();
    Capabilities {
        root,
        madv_collapse: probe_collapse(proc),
        process_madvise: probe_process_madvise(),
        pagemap_frames: probe_pagemap(proc),
        kpageflags: match proc.kpageflags().and_then(|k| k.read(0, 1)) {
            Ok(_) => Probe::yes("readable"),
            Err(e) => Probe::no(e.to_string()),
        },
        split_huge_pages: probe_split(),
    }
}

fn probe_collapse(proc: &ProcFs) -> Probe {
    let two_m = crate::PageSize::Size2M.bytes();
    let m = match Mapping::anonymous(two_m, MapOptions::default()) {
        Ok(m) => m,
        Err(e) => return Probe::no(e.to_string()),
    };
    let steps = m
        .advise(0..two_m, Advice::NoHugePage)
        .and_then(|_| m.advise(0..two_m, Advice::PopulateWrite))
        .and_then(|_| m.advise(0..two_m, Advice::HugePage));
    if let Err(e) = steps {
        return Probe::no(e.to_string());
    }
    match m.collapse(0..two_m) {
        Ok((t, None)) => {
            let huge = proc
                .smaps(Pid::Current)
                .ok()
                .and_then(|v| v.into_iter().find(|v| v.start == m.addr()))
                .map(|v| v.totals.anon_huge_bytes);
            match huge {
                Some(h) if h >= two_m as u64 => {
                    Probe::yes(format!("collapsed 2 MiB in {} µs", t.as_micros()))
                }
                Some(_) => Probe::no("MADV_COLLAPSE returned 0 but smaps shows no huge page"),
                None => Probe::yes("MADV_COLLAPSE returned 0 (smaps unreadable to confirm)"),
            }
        }
        Ok((_, Some(errno))) => Probe::no(format!("MADV_COLLAPSE failed: {errno}")),
        Err(e) => Probe::no(e.to_string()),
    }
}

fn probe_split() -> Probe {
    // A request for an empty range of this process: splits nothing, tells whether writes pass.
    match debugfs::write("split_huge_pages", &format!("{},0x0,0x1000", std::process::id())) {
        Ok(()) => Probe::yes("debugfs split_huge_pages writable"),
        Err(e) => match e.errno().map(|e| e.0) {
            Some(libc::EPERM) => Probe::no(
                "debugfs writes refused (kernel lockdown); hugewise splits by copy and remap instead",
            ),
            Some(libc::ENOENT) => {
                Probe::no("debugfs has no split_huge_pages (kernel built without it)")
            }
            _ => Probe::no(format!("debugfs not usable: {e}")),
        },
    }
}

fn probe_process_madvise() -> Probe {
    let pidfd = match PidFd::open(std::process::id() as i32) {
        Ok(p) => p,
        Err(e) => return Probe::no(e.to_string()),
    };
    let m = match Mapping::anonymous(64 << 10, MapOptions::default()) {
        Ok(m) => m,
        Err(e) => return Probe::no(e.to_string()),
    };
    match pidfd.madvise(
        std::slice::from_ref(&(m.addr()..m.addr() + m.len())),
        Advice::Cold,
    ) {
        Ok(_) => Probe::yes("MADV_COLD through a pidfd on this process"),
        Err(e) => Probe::no(e.to_string()),
    }
}

fn probe_pagemap(proc: &ProcFs) -> Probe {
    let m = match Mapping::anonymous(4096, MapOptions::default()) {
        Ok(m) => m,
        Err(e) => return Probe::no(e.to_string()),
    };
    if let Err(e) = m.advise(0..4096, Advice::PopulateWrite) {
        return Probe::no(e.to_string());
    }
    match proc.pagemap(Pid::Current).and_then(|p| p.read(m.addr(), 1)) {
        Ok(e) if e[0].pfn().is_some() => Probe::yes("frames visible"),
        Ok(_) => Probe::no("frames hidden (needs CAP_SYS_ADMIN)"),
        Err(e) => Probe::no(e.to_string()),
    }
}
