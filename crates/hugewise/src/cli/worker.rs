//! `hugewise worker` (hidden): one typed request of hugewise's own, read on stdin and served by
//! the bench library (a study's task by the study library), whose reply goes to stdout.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use hugewise_bench::worker::{self, Request};
use hugewise_console::progress::Mode;
use hugewise_console::study::serve_task;

use crate::cli::args::meta;
use crate::signals::cancel_flag;

/// Serve the request on stdin.
pub fn run(mode: Mode) -> anyhow::Result<()> {
    let mut input = std::io::stdin().lock();
    let request = worker::read_request(&mut input)?;
    // Work that never looks at the flag is ended by the signal itself, as its command was.
    let cancel = match request.polls_cancel() {
        true => cancel_flag()?,
        false => Arc::new(AtomicBool::new(false)),
    };
    let kind = request.kind();
    let mut output = std::io::stdout().lock();
    match request {
        Request::Study(t) => serve_task(mode, &t, &meta, &cancel)
            .and_then(|reply| worker::reply(&mut output, &reply)),
        request => worker::serve(request, &mut input, &mut output, &meta, &cancel),
    }
    .with_context(|| format!("hugewise worker: {kind}"))
}
