//! Where a command's result goes: a table or JSON on stdout (stderr when a command run by
//! hugewise owns stdout), and with `--out` the JSON saved atomically in its schema envelope.

use std::io::Write;
use std::path::Path;

use hugewise_bench::save;
use hugewise_results::{Kind, Meta, Saved};

/// Where a command prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// hugewise owns stdout.
    Stdout,
    /// A command hugewise runs owns stdout.
    Stderr,
}

/// The `meta` block of this run.
pub fn meta() -> Meta {
    hugewise_bench::meta::collect(env!("CARGO_PKG_VERSION"), std::env::args().collect())
}

/// Save `result` if asked and print it to `stream`: as JSON when `json`, else as `text`
/// renders it (`None`: the text was already shown as the work went).
pub fn emit_to<T: Kind>(
    stream: Stream,
    json: bool,
    path: Option<&Path>,
    result: T,
    text: Option<impl FnOnce(&T) -> String>,
) -> anyhow::Result<()> {
    let value = Saved::new(meta(), result);
    if let Some(path) = path {
        save::write_json(path, &value)?;
    }
    let bytes = if json {
        // Serialise first: serde_json would wrap a closed pipe's io::Error and hide it.
        let mut v = serde_json::to_vec_pretty(&value)?;
        v.push(b'\n');
        v
    } else {
        match text {
            // A string of the result (a path, a program's argument) may hold terminal escapes.
            Some(t) => hugewise_report::escape::controls(&t(&value.result))
                .into_owned()
                .into_bytes(),
            None => return Ok(()),
        }
    };
    match stream {
        Stream::Stdout => {
            let mut w = std::io::stdout().lock();
            w.write_all(&bytes)?;
            w.flush()?;
        }
        Stream::Stderr => {
            let mut w = std::io::stderr().lock();
            w.write_all(&bytes)?;
            w.flush()?;
        }
    }
    Ok(())
}
