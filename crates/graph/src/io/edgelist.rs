//! Text edge lists: `u v` (`.el`) or `u v w` (`.wel`) per line; blank lines and lines starting
//! with `#` or `%` are skipped. A malformed line is an error naming the file, line and content.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use hugewise_sys::read::{shown, NotText, MAX_LINE};

use crate::build::{Edge, EdgeSource};
use crate::{Error, Result};

/// An edge-list file, read once per builder pass.
#[derive(Debug, Clone)]
pub struct EdgeList {
    path: PathBuf,
    weighted: bool,
    passes: usize,
}

impl EdgeList {
    /// A reader for `path`; `weighted` requires a third column.
    pub fn new(path: &Path, weighted: bool) -> EdgeList {
        EdgeList {
            path: path.to_path_buf(),
            weighted,
            passes: 0,
        }
    }
}

/// A field as a whole number, or an error naming `what` it should have been.
fn number(field: Option<&str>, what: &str, path: &Path, line: u64, text: &str) -> Result<u64> {
    let f = field.ok_or_else(|| Error::line(path, line, format!("missing {what}"), text))?;
    if f.starts_with('-') {
        return Err(Error::line(path, line, format!("{what} is negative"), text));
    }
    f.parse().map_err(|_| {
        Error::line(
            path,
            line,
            format!("{what} '{}' is not a whole number", shown(f)),
            text,
        )
    })
}

fn id(field: Option<&str>, what: &str, path: &Path, line: u64, text: &str) -> Result<u32> {
    let v = number(field, what, path, line, text)?;
    if v >= u32::MAX as u64 {
        return Err(Error::line(
            path,
            line,
            format!("{what} {v} does not fit hugewise's 32-bit vertex ids"),
            text,
        ));
    }
    Ok(v as u32)
}

/// Parse one line the slow, thorough way; `None` for a blank or comment line.
fn parse_line(text: &str, path: &Path, no: u64, weighted: bool) -> Result<Option<Edge>> {
    let t = text.trim();
    if t.is_empty() || t.starts_with('#') || t.starts_with('%') {
        return Ok(None);
    }
    let mut fields = t.split_whitespace();
    let u = id(fields.next(), "source id", path, no, text)?;
    let v = id(fields.next(), "target id", path, no, text)?;
    let w = if weighted {
        let w = number(fields.next(), "weight", path, no, text)?;
        super::weight::check(w).map_err(|m| Error::line(path, no, m, text))?
    } else {
        1
    };
    if fields.next().is_some() {
        return Err(Error::line(path, no, "too many fields", text));
    }
    Ok(Some(Edge { u, v, w }))
}

/// The fast path for a plain `u v [w]` line of ASCII digits and blanks: `None` sends the line
/// to [`parse_line`], which also names what is wrong.
#[inline]
fn fast_line(line: &[u8], weighted: bool) -> Option<Edge> {
    let mut i = 0;
    let field = |i: &mut usize| -> Option<u32> {
        while *i < line.len() && (line[*i] == b' ' || line[*i] == b'\t') {
            *i += 1;
        }
        let start = *i;
        let mut v: u64 = 0;
        while *i < line.len() && line[*i].is_ascii_digit() && *i - start < 11 {
            v = v * 10 + (line[*i] - b'0') as u64;
            *i += 1;
        }
        (*i > start && v < u32::MAX as u64).then_some(v as u32)
    };
    let u = field(&mut i)?;
    let v = field(&mut i)?;
    let w = if weighted { field(&mut i)? } else { 1 };
    line[i..]
        .iter()
        .all(|&b| b == b' ' || b == b'\t' || b == b'\r')
        .then_some(Edge { u, v, w })
}

/// A line that [`fast_line`] need not look at: blank or a comment.
#[inline]
fn skipped(line: &[u8]) -> bool {
    match line.iter().position(|b| !b.is_ascii_whitespace()) {
        None => true,
        Some(k) => line[k] == b'#' || line[k] == b'%',
    }
}

/// Parse a block of whole lines, starting at byte `offset` of the text; on a bad line, the
/// 0-based line within the block and the error from [`parse_line`] (whose line number the
/// caller fixes), or [`NotText`].
fn parse_block(
    block: &[u8],
    offset: u64,
    path: &Path,
    weighted: bool,
) -> std::result::Result<(Vec<Edge>, u64), (u64, Error)> {
    let mut edges = Vec::with_capacity(block.len() / 12);
    let mut lines = 0u64;
    let mut at = offset;
    for line in block.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let start = at;
        at += line.len() as u64;
        if body.len() > MAX_LINE {
            let e = NotText::LongLine { offset: start };
            return Err((lines, Error::io(path, e.into())));
        }
        match fast_line(body, weighted) {
            // A line the fast path takes is all digits and blanks.
            Some(e) => edges.push(e),
            None => {
                if let Err(e) = NotText::check(body, start) {
                    return Err((lines, Error::io(path, e.into())));
                }
                if skipped(body) {
                    lines += 1;
                    continue;
                }
                let text = String::from_utf8_lossy(body);
                match parse_line(&text, path, lines + 1, weighted) {
                    Ok(Some(e)) => edges.push(e),
                    Ok(None) => {}
                    Err(e) => return Err((lines, e)),
                }
            }
        }
        lines += 1;
    }
    Ok((edges, lines))
}

/// Bytes of text parsed per round: split at line ends into one piece per thread and parsed
/// in parallel, then handed on in order.
const ROUND: usize = 16 << 20;

/// Parse the lines of `r` (named `path` in errors) into `f`; `weighted` requires a third
/// column. Input that is not text (a NUL byte, a line over [`MAX_LINE`]) is refused at its
/// byte offset, after at most a round of it is read.
pub fn read_edges(
    r: &mut dyn BufRead,
    path: &Path,
    weighted: bool,
    f: &mut dyn FnMut(&[Edge]) -> Result<()>,
) -> Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(ROUND + (1 << 16));
    let mut line_base = 0u64;
    // Where `buf` starts in the text.
    let mut offset = 0u64;
    let mut eof = false;
    let threads = rayon::current_num_threads().max(1);
    while !eof {
        // Fill to ROUND bytes (after what was carried over from the last round).
        while buf.len() < ROUND {
            let got = r.fill_buf().map_err(|e| Error::io(path, e))?;
            if got.is_empty() {
                eof = true;
                break;
            }
            let take = got.len().min(ROUND - buf.len());
            buf.extend_from_slice(&got[..take]);
            r.consume(take);
        }
        // Whole lines only; the tail waits for the next round (or is the last line).
        let end = if eof {
            buf.len()
        } else {
            buf.iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1)
        };
        // The tail is the start of a line: one that is already too long is not text, and is
        // not read on to its end.
        if buf.len() - end > MAX_LINE {
            // A NUL byte in it says more than its length.
            let at = offset + end as u64;
            let e = NotText::check(&buf[end..end + MAX_LINE + 1], at).err();
            let e = e.unwrap_or(NotText::LongLine { offset: at });
            return Err(Error::io(path, e.into()));
        }
        let pieces = split_lines(&buf[..end], threads);
        let parsed: Vec<_> = pieces
            .into_par_iter()
            .map(|(at, p)| parse_block(p, offset + at as u64, path, weighted))
            .collect();
        for p in parsed {
            match p {
                Ok((edges, lines)) => {
                    line_base += lines;
                    if !edges.is_empty() {
                        f(&edges)?;
                    }
                }
                Err((local, e)) => return Err(renumber(e, line_base + local + 1)),
            }
        }
        buf.drain(..end);
        offset += end as u64;
    }
    Ok(())
}

/// About `k` pieces of whole lines, each with where it starts in `text`.
fn split_lines(text: &[u8], k: usize) -> Vec<(usize, &[u8])> {
    let mut pieces = Vec::with_capacity(k);
    let mut rest = text;
    let mut at = 0;
    let size = text.len() / k + 1;
    while !rest.is_empty() {
        let cut = if rest.len() <= size {
            rest.len()
        } else {
            match rest[size..].iter().position(|&b| b == b'\n') {
                Some(k) => size + k + 1,
                None => rest.len(),
            }
        };
        let (a, b) = rest.split_at(cut);
        pieces.push((at, a));
        at += cut;
        rest = b;
    }
    pieces
}

/// A line error from a block, given its line number in the file.
fn renumber(e: Error, line: u64) -> Error {
    match e {
        Error::Line {
            path,
            message,
            content,
            ..
        } => Error::Line {
            path,
            line,
            message,
            content,
        },
        other => other,
    }
}

impl EdgeSource for EdgeList {
    fn each_chunk(&mut self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()> {
        self.passes += 1;
        let r = super::open_pass(&self.path, self.passes)?;
        let mut r = BufReader::with_capacity(1 << 20, r);
        read_edges(&mut r, &self.path, self.weighted, f)
    }

    fn weighted(&self) -> bool {
        self.weighted
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{build, build_default, BuildOptions};
    use crate::Layout;

    fn load(text: &str, weighted: bool) -> Result<crate::Csr> {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("g.el");
        std::fs::write(&p, text).expect("write");
        let mut src = EdgeList::new(&p, weighted);
        build_default(&mut src, true)
    }

    #[test]
    fn comments_and_whitespace() {
        let g = load("# a comment\n% another\n\n0 1\n1\t2\n  2   0  \n", false).expect("load");
        assert_eq!(g.n(), 3);
        assert_eq!(g.edges(), 3);
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, weighted, want) in [
            (
                "0 1\n1 x\n",
                false,
                ":2: target id 'x' is not a whole number: \"1 x\"",
            ),
            ("0 1\n-1 2\n", false, ":2: source id is negative"),
            ("0\n", false, ":1: missing target id"),
            ("0 1 2 3\n", false, "too many fields"),
            ("0 1\n", true, "missing weight"),
            ("0 1 -5\n", true, "weight is negative"),
            ("0 1 2.5\n", true, "weight '2.5' is not a whole number"),
            ("0 99999999999\n", false, "does not fit"),
            (
                "0 1 4294967295\n",
                true,
                "weight 4294967295 is over 4294967294",
            ),
        ] {
            let e = load(text, weighted).expect_err(text).to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let e = load("# only a comment\n", false)
            .expect_err("empty")
            .to_string();
        assert!(e.contains("empty"), "{e}");
    }

    #[test]
    fn a_nul_byte_or_an_overlong_line_is_refused_at_its_offset() {
        let e = load("0 1\n1 \x002\n", false).expect_err("nul").to_string();
        assert!(
            e.ends_with(
                "g.el: byte 6: a NUL byte: binary data, not text (is this the right file?)"
            ),
            "{e}"
        );
        let long = format!("0 1\n{}\n", "1".repeat(MAX_LINE + 1));
        let e = load(&long, false).expect_err("long").to_string();
        assert!(e.contains("g.el: byte 4: a line longer than 1 MiB"), "{e}");
        let e = read_edges(
            &mut BufReader::new(std::io::repeat(b'7')),
            Path::new("sevens.el"),
            false,
            &mut |_| Ok(()),
        )
        .expect_err("endless")
        .to_string();
        assert!(
            e.starts_with("sevens.el: byte 0: a line longer than 1 MiB"),
            "{e}"
        );
    }

    #[test]
    fn endless_zeros_plain_or_compressed_are_refused_not_read() {
        let d = tempfile::tempdir().expect("tmp");
        let z = d.path().join("z.el");
        std::os::unix::fs::symlink("/dev/zero", &z).expect("link");
        let gz = d.path().join("z.el.gz");
        let mut w = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).expect("create"),
            flate2::Compression::fast(),
        );
        for _ in 0..64 {
            std::io::Write::write_all(&mut w, &[0u8; 1 << 20]).expect("write");
        }
        w.finish().expect("finish");
        for p in [z, gz] {
            let e = build_default(&mut EdgeList::new(&p, false), false)
                .expect_err("zeros")
                .to_string();
            let want = format!("{}: byte 0: a NUL byte", p.display());
            assert!(e.starts_with(&want), "{e}");
        }
    }

    #[test]
    fn a_bad_line_is_shown_cut_to_a_few_words() {
        let bad = format!("0 {}\n", "x".repeat(1_000_000));
        let e = load(&bad, false).expect_err("bad").to_string();
        assert!(e.len() < 400, "{} bytes of error", e.len());
        assert!(
            e.contains("… (1000000 bytes)' is not a whole number"),
            "{e}"
        );
        assert!(e.contains("… (1000002 bytes)\""), "{e}");
        let e = load("0 \x1b[2J\n", false).expect_err("escape").to_string();
        assert!(e.contains("target id '\\u{1b}[2J'"), "{e}");
    }

    #[test]
    fn a_fifo_is_read_whole_once_and_a_directory_is_refused() {
        let d = tempfile::tempdir().expect("tmp");
        let p = crate::io::testing::fifo(d.path(), "f.el");
        let w = crate::io::testing::feed(&p, "0 1\n1 2\n");
        let g = build_default(&mut EdgeList::new(&p, false), false).expect("fifo");
        w.join().expect("writer");
        assert_eq!(g.arcs(), 2);
        let dir = d.path().join("d.el");
        std::fs::create_dir(&dir).expect("mkdir");
        let e = build_default(&mut EdgeList::new(&dir, false), false)
            .expect_err("a directory")
            .to_string();
        assert!(e.ends_with("d.el: a directory, not a file"), "{e}");
    }

    #[test]
    fn reads_the_cnr_2000_zstd_kept_in_the_repository() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/cnr-2000.el.zst");
        let mut src = EdgeList::new(&p, false);
        let (g, stats) = build(
            &mut src,
            BuildOptions::default(),
            &Layout::default(),
            &mut |_| Ok(()),
        )
        .expect("cnr-2000");
        assert_eq!(g.n(), 325_557);
        assert!(g.directed());
        // 3 216 152 arcs listed; self-loops and duplicates removed.
        assert_eq!(stats.arcs_placed + stats.self_loops, 3_216_152);
        assert!(g.arcs() <= 3_216_152 && g.arcs() > 3_000_000);
    }
}
