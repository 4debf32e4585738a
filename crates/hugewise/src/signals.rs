//! SIGINT, SIGTERM and SIGHUP stop long work cleanly instead of killing hugewise: they raise a
//! flag the work polls (simulations, shaping, a program run), and the signal is kept, so that
//! hugewise exits with 128 + the signal it received, whatever the work it stopped reports.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::Context;
use hugewise_results::exit::shell_code;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// The last signal that raised a cancel flag, 0 before any: one per process, whichever
/// flags its command installed.
fn received_cell() -> &'static Arc<AtomicUsize> {
    static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    RECEIVED.get_or_init(|| Arc::new(AtomicUsize::new(0)))
}

/// A flag that SIGINT, SIGTERM and SIGHUP raise instead of killing hugewise.
pub(crate) fn cancel_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        // Registered first, so it runs first: whoever sees the flag raised finds the signal.
        signal_hook::flag::register_usize(sig, Arc::clone(received_cell()), sig as usize)
            .context("installing signal handlers")?;
        signal_hook::flag::register(sig, Arc::clone(&flag))
            .context("installing signal handlers")?;
    }
    Ok(flag)
}

/// The signal that raised a cancel flag, if one did.
fn received() -> Option<i32> {
    match received_cell().load(Ordering::SeqCst) {
        0 => None,
        s => i32::try_from(s).ok(),
    }
}

/// The exit code of a command that would end with `code`: 128 + the signal that stopped it,
/// when a signal did (the program it ran, ended with SIGTERM on a SIGINT, does not decide).
pub(crate) fn exit_code(code: u8) -> u8 {
    match received() {
        Some(s) => shell_code(None, Some(s)),
        None => code,
    }
}
