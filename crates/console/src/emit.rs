//! Where a command's result goes: a table or JSON on stdout (stderr when a program hugewise
//! runs owns stdout), and with `--out` the JSON saved atomically in its schema envelope.

use std::io::Write;
use std::path::Path;

use hugewise_bench::save;
use hugewise_results::{Kind, Saved};

use crate::{Error, Result};

/// Where a command prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// hugewise owns stdout.
    Stdout,
    /// A program hugewise runs owns stdout.
    Stderr,
}

/// Save `value` if asked and print it to `stream`: as JSON when `json`, else as `text`
/// renders its result (`None`: the text was already shown as the work went).
pub fn emit<T: Kind>(
    stream: Stream,
    json: bool,
    path: Option<&Path>,
    value: Saved<T>,
    text: Option<impl FnOnce(&T) -> String>,
) -> Result<()> {
    if let Some(path) = path {
        save::write_json(path, &value)?;
    }
    let bytes = if json {
        // Serialise first: serde_json would wrap a closed pipe's io::Error and hide it.
        let mut v = serde_json::to_vec_pretty(&value).map_err(Error::Json)?;
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
        Stream::Stdout => write_all(&mut std::io::stdout().lock(), &bytes),
        Stream::Stderr => write_all(&mut std::io::stderr().lock(), &bytes),
    }
}

/// `value` as pretty JSON on stdout, for results that are not saved (a plan, headlines).
pub fn json_stdout(value: &impl serde::Serialize) -> Result<()> {
    let mut v = serde_json::to_vec_pretty(value).map_err(Error::Json)?;
    v.push(b'\n');
    write_all(&mut std::io::stdout().lock(), &v)
}

fn write_all(w: &mut impl Write, bytes: &[u8]) -> Result<()> {
    w.write_all(bytes).map_err(Error::Io)?;
    w.flush().map_err(Error::Io)
}
