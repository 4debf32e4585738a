//! Where a command's result goes: a table or JSON on stdout (stderr when a program hugewise
//! runs owns stdout), and with `--out` the JSON saved atomically in its schema envelope; and
//! how a failure is told.

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

/// `value` as pretty JSON on stdout when `json`, else `text` as it is.
pub fn json_or_text(json: bool, value: &impl serde::Serialize, text: &str) -> Result<()> {
    if json {
        json_stdout(value)
    } else {
        print!("{text}");
        Ok(())
    }
}

/// A command's failure on stderr: `hugewise: ` and the error, then each cause on a line of
/// its own.
pub fn failure(e: &(dyn std::error::Error + 'static)) {
    eprintln!("hugewise: {e}");
    for cause in std::iter::successors(e.source(), |c| c.source()) {
        eprintln!("  caused by: {cause}");
    }
}

/// Whether `e` or one of its causes is a closed pipe: the reader of stdout stopped early,
/// which is not a failure.
pub fn closed_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |c| c.source()).any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn write_all(w: &mut impl Write, bytes: &[u8]) -> Result<()> {
    w.write_all(bytes).map_err(Error::Io)?;
    w.flush().map_err(Error::Io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_found_among_the_causes() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(closed_pipe(&Error::Io(pipe)));
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        assert!(!closed_pipe(&Error::Io(full)));
        assert!(!closed_pipe(&Error::Interrupted));
    }
}
