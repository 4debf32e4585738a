//! A C ABI through which any program publishes access samples or hot ranges to the hugewise
//! promotion daemon (`include/hugewise.h`). It is the channel of [`hugewise_promote::channel`]
//! behind four functions that never fail the program: when the channel cannot be opened, the
//! calls do nothing.
//!
//! This crate holds no `unsafe` block. Exporting a symbol under a fixed C name (`no_mangle`)
//! counts as unsafe code to the compiler because two crates could export the same name; the
//! `hugewise_` prefix avoids that, and these four functions are the only exports, so the lint
//! is allowed on them alone.
#![deny(unsafe_code)]

use std::sync::Mutex;

use hugewise_promote::channel::Publisher;

static CHANNEL: Mutex<Option<Publisher>> = Mutex::new(None);

/// Default ring size: 1 Mi samples (8 MiB of shared memory).
const DEFAULT_SLOTS: usize = 1 << 20;

fn with_channel(f: impl FnOnce(&Publisher)) {
    if let Ok(guard) = CHANNEL.lock() {
        if let Some(p) = guard.as_ref() {
            f(p);
        }
    }
}

/// Open this process's sample channel with room for `slots` samples (0: the default).
/// Returns 0, or -1 when it could not be created.
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn hugewise_open(slots: usize) -> i32 {
    let slots = if slots == 0 { DEFAULT_SLOTS } else { slots };
    match (CHANNEL.lock(), Publisher::create(slots)) {
        (Ok(mut g), Ok(p)) => {
            *g = Some(p);
            0
        }
        _ => -1,
    }
}

/// Record one access at `addr` (a store when `write` is non-zero). The address is only
/// recorded, never read.
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn hugewise_sample(addr: *const std::ffi::c_void, write: i32) {
    // The daemon may ask for fewer samples while nothing changes: one call in `thinning` is
    // published, standing for that many, counted down per thread.
    thread_local! {
        static LEFT: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
    }
    with_channel(|p| {
        let thin = p.thinning();
        let left = LEFT.with(|l| {
            let v = l.get().min(thin);
            let v = if v <= 1 { thin } else { v - 1 };
            l.set(v);
            v
        });
        if left == thin {
            p.sample_weighted(addr as usize, write != 0, thin);
        }
    });
}

/// Record `weight` accesses spread evenly over `[start, start + len)`.
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn hugewise_hot(start: *const std::ffi::c_void, len: usize, weight: u32) {
    if len == 0 || weight == 0 {
        return;
    }
    let start = start as usize;
    let step = (len / weight as usize).max(1);
    with_channel(|p| {
        for k in 0..weight as usize {
            p.sample(start + (k * step) % len, false);
        }
    });
}

/// Close the channel and remove its file.
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn hugewise_close() {
    if let Ok(mut g) = CHANNEL.lock() {
        *g = None;
    }
}
