//! Text edge lists: `u v` (`.el`) or `u v w` (`.wel`) per line; blank lines and lines starting
//! with `#` or `%` are skipped. A malformed line is an error naming the file, line and content.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::build::{Chunker, Edge, EdgeSource};
use crate::{Error, Result};

/// An edge-list file, read once per builder pass.
#[derive(Debug, Clone)]
pub struct EdgeList {
    path: PathBuf,
    weighted: bool,
}

impl EdgeList {
    /// A reader for `path`; `weighted` requires a third column.
    pub fn new(path: &Path, weighted: bool) -> EdgeList {
        EdgeList {
            path: path.to_path_buf(),
            weighted,
        }
    }
}

fn line_error(path: &Path, line: u64, message: &str, content: &str) -> Error {
    Error::Line {
        path: path.to_path_buf(),
        line,
        message: message.to_string(),
        content: content.chars().take(200).collect(),
    }
}

fn id(field: Option<&str>, what: &str, path: &Path, line: u64, text: &str) -> Result<u32> {
    let f = field.ok_or_else(|| line_error(path, line, &format!("missing {what}"), text))?;
    if f.starts_with('-') {
        return Err(line_error(path, line, &format!("{what} is negative"), text));
    }
    let v: u64 = f.parse().map_err(|_| {
        line_error(
            path,
            line,
            &format!("{what} '{f}' is not a whole number"),
            text,
        )
    })?;
    if v >= u32::MAX as u64 {
        return Err(line_error(
            path,
            line,
            &format!("{what} {v} does not fit hugewise's 32-bit vertex ids"),
            text,
        ));
    }
    Ok(v as u32)
}

/// Parse the lines of `r` (named `path` in errors) into `f`; `weighted` requires a third
/// column.
pub fn read_edges(
    r: &mut dyn BufRead,
    path: &Path,
    weighted: bool,
    f: &mut dyn FnMut(&[Edge]) -> Result<()>,
) -> Result<()> {
    let mut chunk = Chunker::new(f);
    for (i, line) in r.lines().enumerate() {
        let no = i as u64 + 1;
        let text = line.map_err(|e| Error::io(path, e))?;
        let t = text.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with('%') {
            continue;
        }
        let mut fields = t.split_whitespace();
        let u = id(fields.next(), "source id", path, no, &text)?;
        let v = id(fields.next(), "target id", path, no, &text)?;
        let w = if weighted {
            let w = fields.next();
            match w {
                Some(x) if x.starts_with('-') => {
                    return Err(line_error(path, no, "weight is negative", &text))
                }
                _ => {}
            }
            id(w, "weight", path, no, &text)?
        } else {
            1
        };
        if fields.next().is_some() {
            return Err(line_error(path, no, "too many fields", &text));
        }
        chunk.push(Edge { u, v, w })?;
    }
    chunk.finish()
}

impl EdgeSource for EdgeList {
    fn each_chunk(&mut self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()> {
        let mut r = BufReader::with_capacity(1 << 20, super::open(&self.path)?);
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
