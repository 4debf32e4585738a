//! `hugewise worker` (hidden): one typed request of hugewise's own, read on stdin and served by
//! the bench library, whose reply goes to stdout.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use hugewise_bench::worker;

use crate::cli::args::meta;
use crate::signals::cancel_flag;

/// Serve the request on stdin.
pub fn run() -> anyhow::Result<()> {
    let mut input = std::io::stdin().lock();
    let request = worker::read_request(&mut input)?;
    // Work that never looks at the flag is ended by the signal itself, as its command was.
    let cancel = match request.polls_cancel() {
        true => cancel_flag()?,
        false => Arc::new(AtomicBool::new(false)),
    };
    let kind = request.kind();
    worker::serve(
        request,
        &mut input,
        &mut std::io::stdout().lock(),
        &meta,
        &cancel,
    )
    .with_context(|| format!("hugewise worker: {kind}"))
}
