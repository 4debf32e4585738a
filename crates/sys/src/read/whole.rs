//! Files read whole (saved results, rules files, configurations), each kind with a bound: a
//! file larger than its kind ever is (`/dev/zero`, a graph named by mistake) is refused after
//! at most bound + 1 bytes, instead of being read until memory runs out.

use std::io::{self, Read};
use std::path::Path;

use hugewise_results::AnyResult;

/// The most a kind of file may hold, and what the kind is called in the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Bytes, at most.
    pub bytes: u64,
    /// The kind, as a refusal names it: "a saved result".
    pub what: &'static str,
}

impl Bound {
    /// A saved result (`--out`, a study's runs, a promotion plan): the largest, with every raw
    /// sample and plan entry, are tens of MiB.
    pub const RESULT: Bound = Bound {
        bytes: 512 << 20,
        what: "a saved result",
    };
    /// A page-rules file (`exec --pages-file`) or a TLB configuration (`sim --config`): a
    /// few lines written by hand or by `hugewise profile`.
    pub const SETTINGS: Bound = Bound {
        bytes: 4 << 20,
        what: "a rules or configuration file",
    };
    /// The metadata sidecar of a trace.
    pub const SIDECAR: Bound = Bound {
        bytes: 16 << 20,
        what: "a trace's metadata sidecar",
    };
}

/// Read `path` whole (see [`super::open`]), refusing it once it holds more than `bound`: a
/// regular file by its size, before reading; anything else after bound + 1 bytes. The error
/// says the bound; the caller names the file. A FIFO whose writer never closes is read until
/// the bound, then refused.
pub fn bounded(path: &Path, bound: Bound) -> io::Result<Vec<u8>> {
    let (file, kind) = super::open(path)?;
    let size = match kind {
        super::Kind::Regular => file.metadata()?.len(),
        _ => 0,
    };
    if size > bound.bytes {
        return Err(too_large(bound, Some(size)));
    }
    let mut out = Vec::with_capacity(size as usize);
    file.take(bound.bytes + 1).read_to_end(&mut out)?;
    if out.len() as u64 > bound.bytes {
        return Err(too_large(bound, None));
    }
    Ok(out)
}

/// [`bounded`], as UTF-8 text; text that is not is refused with the byte offset where it
/// stops being UTF-8.
pub fn bounded_string(path: &Path, bound: Bound) -> io::Result<String> {
    String::from_utf8(bounded(path, bound)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("byte {}: not UTF-8 text", e.utf8_error().valid_up_to()),
        )
    })
}

/// The refusal of a file of `size` bytes (unknown for a stream) over `bound`.
fn too_large(bound: Bound, size: Option<u64>) -> io::Error {
    let size = size.map(|s| format!("{s} bytes: ")).unwrap_or_default();
    let most = match bound.bytes {
        b if b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    };
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "{size}more than the {most} {} may hold: refused (is this the right file?)",
            bound.what
        ),
    )
}

/// Read the saved result at `path` (bounded by [`Bound::RESULT`]), errors naming the file.
pub fn result(path: &Path) -> Result<AnyResult, hugewise_results::Error> {
    let text =
        bounded_string(path, Bound::RESULT).map_err(|source| hugewise_results::Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
    hugewise_results::parse(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const SMALL: Bound = Bound {
        bytes: 8,
        what: "a small thing",
    };

    #[test]
    fn a_file_at_the_bound_is_read_and_one_past_it_is_refused_by_its_size() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("f");
        std::fs::write(&p, b"12345678").expect("write");
        assert_eq!(bounded(&p, SMALL).expect("at the bound"), b"12345678");
        std::fs::write(&p, b"123456789").expect("write");
        let e = bounded(&p, SMALL).expect_err("past it").to_string();
        assert_eq!(
            e,
            "9 bytes: more than the 8 bytes a small thing may hold: refused (is this the right \
             file?)"
        );
    }

    #[test]
    fn an_endless_device_is_refused_after_the_bound() {
        let e = bounded(Path::new("/dev/zero"), SMALL).expect_err("endless");
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
    }

    #[test]
    fn a_fifo_whose_writer_never_closes_stops_at_the_bound() {
        let d = tempfile::tempdir().expect("tmp");
        let p = super::super::tests::fifo(d.path(), "f");
        let w = {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut f = std::fs::File::options()
                    .write(true)
                    .open(&p)
                    .expect("writer");
                // Stays open while the reader gives up; a closed reader ends the loop.
                while f.write_all(b"{\"x\": 1}").is_ok() {}
            })
        };
        let e = bounded(&p, SMALL).expect_err("endless");
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        w.join().expect("writer");
    }

    #[test]
    fn text_that_is_not_utf8_names_the_byte() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("f");
        std::fs::write(&p, b"ab\xffcd").expect("write");
        let e = bounded_string(&p, SMALL).expect_err("latin-1");
        assert_eq!(e.to_string(), "byte 2: not UTF-8 text");
    }

    #[test]
    fn a_result_that_is_too_large_names_the_file_and_the_bound() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("huge.json");
        let f = std::fs::File::create(&p).expect("create");
        f.set_len(Bound::RESULT.bytes + 1).expect("sparse");
        let e = result(&p).expect_err("huge").to_string();
        let want = format!("{}: 536870913 bytes: more than the 512 MiB", p.display());
        assert!(e.starts_with(&want), "{e}");
    }
}
