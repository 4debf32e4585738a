//! Matrix Market coordinate files (`.mtx`): the banner `%%MatrixMarket matrix coordinate
//! FIELD SYMMETRY`, `%` comments, a size line `rows cols entries`, then one `i j [value]` line
//! per entry with 1-based indices. Entry (i, j) is the arc i − 1 → j − 1.
//!
//! FIELD is `pattern` (unweighted), `integer` or `real` (weights: non-negative, reals rounded
//! to the nearest integer, at most [`super::weight::MAX_WEIGHT`]); SYMMETRY is `general`
//! (directed) or `symmetric` (undirected, only one triangle stored). Dense `array` files, `complex` values and skew or Hermitian matrices
//! are refused by name. Every malformed line is an error naming the file, line and content,
//! and the entry count must match the size line.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use hugewise_sys::read::{shown, Lines};

use crate::build::{Chunker, Edge, EdgeSource};
use crate::{Error, Result};

/// What the banner and size line declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Values present (integer or real).
    pub weighted: bool,
    /// Only one triangle stored: the graph is undirected.
    pub symmetric: bool,
    /// Vertices: the larger of rows and columns.
    pub vertices: u64,
    /// Entries declared.
    pub entries: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Pattern,
    Integer,
    Real,
}

/// A Matrix Market file as an edge source: the first pass reads on from the header
/// [`MatrixMarket::open`] read (so a FIFO is read once, whole); a later pass opens the file
/// again.
pub struct MatrixMarket {
    path: PathBuf,
    header: Header,
    field: Field,
    /// The input after its header, for the first pass.
    first: Option<Lines<Input>>,
    passes: usize,
}

type Input = std::io::BufReader<Box<dyn std::io::Read + Send>>;

impl MatrixMarket {
    /// Open `path` and read its banner and size line.
    pub fn open(path: &Path) -> Result<MatrixMarket> {
        let mut lines = Lines::new(std::io::BufReader::with_capacity(
            1 << 20,
            super::open(path)?,
        ));
        let (header, field) = read_header(&mut lines, path)?;
        Ok(MatrixMarket {
            path: path.to_path_buf(),
            header,
            field,
            first: Some(lines),
            passes: 0,
        })
    }

    /// The declared header.
    pub fn header(&self) -> Header {
        self.header
    }
}

/// Read the banner, comments and size line; returns the header and the field.
fn read_header(r: &mut Lines<impl BufRead>, path: &Path) -> Result<(Header, Field)> {
    let Some(line) = r.next_line().map_err(|e| Error::io(path, e))? else {
        return Err(Error::line(
            path,
            1,
            "empty file: no MatrixMarket banner",
            "",
        ));
    };
    let banner: Vec<String> = line.split_whitespace().map(str::to_lowercase).collect();
    let words: Vec<&str> = banner.iter().map(String::as_str).collect();
    let (field, symmetric) = match words[..] {
        ["%%matrixmarket", "matrix", "coordinate", field, symmetry] => {
            let field = match field {
                "pattern" => Field::Pattern,
                "integer" => Field::Integer,
                "real" | "double" => Field::Real,
                other => {
                    return Err(Error::line(
                        path,
                        1,
                        format!(
                            "field '{}' is not supported (pattern, integer or real)",
                            shown(other)
                        ),
                        line,
                    ))
                }
            };
            let symmetric = match symmetry {
                "general" => false,
                "symmetric" => true,
                other => {
                    return Err(Error::line(
                        path,
                        1,
                        format!(
                            "symmetry '{}' is not supported (general or symmetric)",
                            shown(other)
                        ),
                        line,
                    ))
                }
            };
            (field, symmetric)
        }
        ["%%matrixmarket", "matrix", "array", ..] => {
            return Err(Error::line(
                path,
                1,
                "dense 'array' matrices are not graphs hugewise reads; use 'coordinate'",
                line,
            ))
        }
        _ => {
            return Err(Error::line(
                path,
                1,
                "not a MatrixMarket banner ('%%MatrixMarket matrix coordinate FIELD SYMMETRY')",
                line,
            ))
        }
    };
    let (no, line) = loop {
        let no = r.number() + 1;
        let Some(line) = r.next_line().map_err(|e| Error::io(path, e))? else {
            return Err(Error::line(path, no, "no size line before the end", ""));
        };
        let t = line.trim();
        if !(t.is_empty() || t.starts_with('%')) {
            break (no, line);
        }
    };
    let sizes: Vec<u64> = line
        .split_whitespace()
        .map(|f| f.parse::<u64>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            Error::line(
                path,
                no,
                "size line must be three whole numbers: rows cols entries",
                line,
            )
        })?;
    let [rows, cols, entries] = sizes[..] else {
        return Err(Error::line(
            path,
            no,
            "size line must be three whole numbers: rows cols entries",
            line,
        ));
    };
    let vertices = rows.max(cols);
    if vertices >= u32::MAX as u64 {
        return Err(Error::line(
            path,
            no,
            format!("{vertices} vertices do not fit hugewise's 32-bit ids"),
            line,
        ));
    }
    if symmetric && rows != cols {
        return Err(Error::line(
            path,
            no,
            format!("a symmetric matrix must be square, not {rows} × {cols}"),
            line,
        ));
    }
    Ok((
        Header {
            weighted: field != Field::Pattern,
            symmetric,
            vertices,
            entries,
        },
        field,
    ))
}

/// Parse the header and entries of `r` (named `path` in errors) into `f`.
pub fn read_entries(
    r: &mut dyn BufRead,
    path: &Path,
    f: &mut dyn FnMut(&[Edge]) -> Result<()>,
) -> Result<Header> {
    let mut lines = Lines::new(r);
    let (header, field) = read_header(&mut lines, path)?;
    read_body(&mut lines, path, header, field, f)?;
    Ok(header)
}

/// Parse the entries after the header into `f`.
fn read_body(
    r: &mut Lines<impl BufRead>,
    path: &Path,
    header: Header,
    field: Field,
    f: &mut dyn FnMut(&[Edge]) -> Result<()>,
) -> Result<()> {
    let mut chunk = Chunker::new(f);
    let mut seen = 0u64;
    loop {
        let no = r.number() + 1;
        let Some(line) = r.next_line().map_err(|e| Error::io(path, e))? else {
            break;
        };
        let t = line.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        seen += 1;
        if seen > header.entries {
            return Err(Error::line(
                path,
                no,
                format!("more entries than the {} declared", header.entries),
                line,
            ));
        }
        let mut fields = t.split_whitespace();
        let mut index = |what: &str, bound: u64| -> Result<u32> {
            let x = fields
                .next()
                .ok_or_else(|| Error::line(path, no, format!("missing {what}"), line))?;
            let v: u64 = x.parse().map_err(|_| {
                Error::line(
                    path,
                    no,
                    format!("{what} '{}' is not a whole number", shown(x)),
                    line,
                )
            })?;
            if v == 0 || v > bound {
                return Err(Error::line(
                    path,
                    no,
                    format!("{what} {v} is outside 1..={bound}"),
                    line,
                ));
            }
            Ok((v - 1) as u32)
        };
        let u = index("row index", header.vertices)?;
        let v = index("column index", header.vertices)?;
        let w = match field {
            Field::Pattern => 1,
            Field::Integer | Field::Real => {
                let x = fields
                    .next()
                    .ok_or_else(|| Error::line(path, no, "missing value", line))?;
                weight(x, field).map_err(|m| Error::line(path, no, m, line))?
            }
        };
        if fields.next().is_some() {
            return Err(Error::line(path, no, "too many fields", line));
        }
        chunk.push(Edge { u, v, w })?;
    }
    if seen < header.entries {
        return Err(Error::line(
            path,
            r.number(),
            format!(
                "the size line declares {} entries but the file ends after {seen} (truncated?)",
                header.entries
            ),
            "",
        ));
    }
    chunk.finish()
}

fn weight(x: &str, field: Field) -> std::result::Result<u32, String> {
    let bad = || format!("value '{}' is not a non-negative number", shown(x));
    let v = match field {
        Field::Integer => {
            let v: i64 = x.parse().map_err(|_| bad())?;
            u64::try_from(v).map_err(|_| bad())?
        }
        _ => {
            let v: f64 = x.parse().map_err(|_| bad())?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad());
            }
            // Saturates past u64: too heavy either way.
            v.round() as u64
        }
    };
    super::weight::check(v)
}

impl EdgeSource for MatrixMarket {
    fn each_chunk(&mut self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()> {
        self.passes += 1;
        if let Some(mut lines) = self.first.take() {
            return read_body(&mut lines, &self.path, self.header, self.field, f);
        }
        let r = super::open_pass(&self.path, self.passes)?;
        let mut r = std::io::BufReader::with_capacity(1 << 20, r);
        read_entries(&mut r, &self.path, f).map(|_| ())
    }

    fn weighted(&self) -> bool {
        self.header.weighted
    }

    fn vertices(&self) -> Option<usize> {
        Some(self.header.vertices as usize)
    }

    fn declared_edges(&self) -> Option<u64> {
        Some(self.header.entries)
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::build_default;

    fn parse(text: &str) -> Result<(Header, Vec<Edge>)> {
        let mut edges = Vec::new();
        let h = read_entries(&mut text.as_bytes(), Path::new("m.mtx"), &mut |c| {
            edges.extend_from_slice(c);
            Ok(())
        })?;
        Ok((h, edges))
    }

    #[test]
    fn pattern_general_and_symmetric_real() {
        let (h, e) = parse(
            "%%MatrixMarket matrix coordinate pattern general\n% a comment\n\n3 3 2\n1 2\n3 1\n",
        )
        .expect("pattern");
        assert!(!h.weighted && !h.symmetric);
        assert_eq!((h.vertices, h.entries), (3, 2));
        assert_eq!(e[1], Edge { u: 2, v: 0, w: 1 });
        let (h, e) = parse("%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n2 1 3.6\n")
            .expect("real");
        assert!(h.weighted && h.symmetric);
        assert_eq!(e, [Edge { u: 1, v: 0, w: 4 }]);
    }

    #[test]
    fn a_symmetric_file_builds_an_undirected_graph() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("g.mtx");
        std::fs::write(
            &p,
            "%%MatrixMarket matrix coordinate integer symmetric\n4 4 3\n2 1 5\n3 2 7\n4 1 9\n",
        )
        .expect("write");
        let mut m = MatrixMarket::open(&p).expect("open");
        assert!(m.header().symmetric);
        let g = build_default(&mut m, true).expect("build");
        assert_eq!((g.n(), g.arcs()), (4, 6));
        assert_eq!(g.out_neighbors(0), [1, 3]);
        assert_eq!(g.out_weights(0), [5, 9]);
    }

    #[test]
    fn binary_input_is_refused_at_its_offset_and_a_fifo_is_read_once() {
        let e = parse("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1\x00 2\n")
            .expect_err("nul")
            .to_string();
        assert!(e.contains("m.mtx: byte 56: a NUL byte"), "{e}");
        let e = read_entries(
            &mut std::io::BufReader::new(std::io::repeat(b'%')),
            Path::new("m.mtx"),
            &mut |_| Ok(()),
        )
        .expect_err("endless")
        .to_string();
        assert!(e.contains("m.mtx: byte 0: a line longer than 1 MiB"), "{e}");
        let d = tempfile::tempdir().expect("tmp");
        let p = crate::io::testing::fifo(d.path(), "f.mtx");
        let text = "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 3\n";
        let w = crate::io::testing::feed(&p, text);
        let g = build_default(&mut MatrixMarket::open(&p).expect("open"), false).expect("fifo");
        w.join().expect("writer");
        assert_eq!(g.arcs(), 2);
    }

    #[test]
    fn bad_files_name_the_line_and_what_is_wrong() {
        let cases = [
            ("", "empty file"),
            (
                "%%MatrixMarket matrix array real general\n2 2\n",
                "dense 'array'",
            ),
            (
                "%%MatrixMarket matrix coordinate complex general\n",
                "field 'complex'",
            ),
            (
                "%%MatrixMarket matrix coordinate real hermitian\n",
                "symmetry 'hermitian'",
            ),
            ("hello\n", "not a MatrixMarket banner"),
            (
                "%%MatrixMarket matrix coordinate pattern general\n",
                "no size line",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n3 3\n",
                "three whole numbers",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern symmetric\n3 4 1\n",
                "must be square",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n",
                "declares 2 entries but the file ends after 1",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n2 3\n",
                "m.mtx:4: more entries than the 1 declared",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n0 2\n",
                "m.mtx:3: row index 0 is outside 1..=3",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 x\n",
                "column index 'x' is not a whole number",
            ),
            (
                "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 -4\n",
                "value '-4' is not a non-negative number",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 nan\n",
                "value 'nan'",
            ),
            (
                "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 4294967295\n",
                "weight 4294967295 is over 4294967294",
            ),
            (
                "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2\n",
                "missing value",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2 3\n",
                "too many fields",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text).expect_err(want).to_string();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
    }
}
