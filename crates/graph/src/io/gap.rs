//! The GAP benchmark suite's serialized graphs, byte for byte: `.sg` (unweighted) and `.wsg`.
//!
//! Layout (little-endian, no header magic): 1 byte `directed`, i64 arc count m, i64 vertex
//! count n, n + 1 i64 offsets, then m neighbours (i32 id; for `.wsg` an i32 id followed by an
//! i32 weight). A directed graph then repeats offsets and neighbours for its incoming side.
//! A symmetric graph stores both directions of every edge, so m counts arcs.
//!
//! Reading checks the declared sizes against the file length before allocating anything, then
//! streams the arcs through the CSR builder, which validates ids and offsets as it goes.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use crate::build::{build, BuildOptions, BuildStats, Chunker, Edge, EdgeSource};
use crate::{Csr, Error, Layout, Result};

const HEADER: u64 = 17;

/// What a GAP file declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Directed (in-edges follow).
    pub directed: bool,
    /// Arcs per side.
    pub arcs: u64,
    /// Vertices.
    pub vertices: u64,
}

fn format_error(path: &Path, message: String) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        message,
    }
}

/// Read and check the header of `path`: the declared sizes must account for the file length
/// exactly (`weighted` for `.wsg`).
pub fn header(path: &Path, weighted: bool) -> Result<Header> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut h = [0u8; HEADER as usize];
    f.read_exact(&mut h).map_err(|_| {
        format_error(
            path,
            format!("only {len} bytes: shorter than the 17-byte header"),
        )
    })?;
    let directed = match h[0] {
        0 => false,
        1 => true,
        b => {
            return Err(format_error(
                path,
                format!("byte 0: directed flag is {b}, not 0 or 1"),
            ))
        }
    };
    let arcs = i64::from_le_bytes(h[1..9].try_into().unwrap_or_default());
    let vertices = i64::from_le_bytes(h[9..17].try_into().unwrap_or_default());
    if arcs < 0 || vertices < 0 {
        return Err(format_error(
            path,
            format!("bytes 1-16: negative sizes (arcs {arcs}, vertices {vertices})"),
        ));
    }
    if vertices as u64 >= u32::MAX as u64 {
        return Err(format_error(
            path,
            format!("declares {vertices} vertices: more than 32-bit ids hold"),
        ));
    }
    let dsize: u128 = if weighted { 8 } else { 4 };
    let side = (vertices as u128 + 1) * 8 + arcs as u128 * dsize;
    let want = HEADER as u128 + side * if directed { 2 } else { 1 };
    if want != len as u128 {
        return Err(format_error(
            path,
            format!(
                "declares {} vertices and {arcs} arcs{}, which take {want} bytes, but the file has {len}{}",
                vertices,
                if directed { " per side" } else { "" },
                if (len as u128) < want { " (truncated?)" } else { "" }
            ),
        ));
    }
    Ok(Header {
        directed,
        arcs: arcs as u64,
        vertices: vertices as u64,
    })
}

/// The outgoing arcs of a GAP file as a replayable edge source.
#[derive(Debug)]
pub struct GapSource {
    path: PathBuf,
    header: Header,
    weighted: bool,
}

impl GapSource {
    /// Open and check `path`.
    pub fn open(path: &Path, weighted: bool) -> Result<GapSource> {
        Ok(GapSource {
            header: header(path, weighted)?,
            path: path.to_path_buf(),
            weighted,
        })
    }

    /// The checked header.
    pub fn header(&self) -> Header {
        self.header
    }
}

impl EdgeSource for GapSource {
    fn each_chunk(&mut self, f: &mut dyn FnMut(&[Edge]) -> Result<()>) -> Result<()> {
        let path = &self.path;
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut r = BufReader::with_capacity(1 << 20, file);
        let mut skip = [0u8; HEADER as usize];
        r.read_exact(&mut skip).map_err(|e| Error::io(path, e))?;
        let n = self.header.vertices as usize;
        let m = self.header.arcs;
        let mut offsets = vec![0u64; n + 1];
        let mut b8 = [0u8; 8];
        for (i, o) in offsets.iter_mut().enumerate() {
            r.read_exact(&mut b8).map_err(|e| Error::io(path, e))?;
            let v = i64::from_le_bytes(b8);
            let at = HEADER + i as u64 * 8;
            if v < 0 || v as u64 > m {
                return Err(format_error(
                    path,
                    format!("byte {at}: offset {v} outside 0..={m}"),
                ));
            }
            *o = v as u64;
        }
        if offsets[0] != 0 || offsets[n] != m {
            return Err(format_error(
                path,
                format!(
                    "offsets run from {} to {}, not 0 to {m}",
                    offsets[0], offsets[n]
                ),
            ));
        }
        let base = HEADER + (n as u64 + 1) * 8;
        let dsize = if self.weighted { 8 } else { 4 };
        let mut chunk = Chunker::new(f);
        let mut u = 0usize;
        let mut rec = [0u8; 8];
        for k in 0..m {
            while offsets[u + 1] <= k {
                if offsets[u + 1] < offsets[u] {
                    return Err(format_error(
                        path,
                        format!(
                            "byte {}: offsets decrease at vertex {}",
                            HEADER + (u as u64 + 1) * 8,
                            u + 1
                        ),
                    ));
                }
                u += 1;
            }
            r.read_exact(&mut rec[..dsize])
                .map_err(|e| Error::io(path, e))?;
            let v = i32::from_le_bytes(rec[..4].try_into().unwrap_or_default());
            let at = base + k * dsize as u64;
            if v < 0 || v as usize >= n {
                return Err(format_error(
                    path,
                    format!("byte {at}: neighbour id {v} outside 0..{n}"),
                ));
            }
            let w = if self.weighted {
                let w = i32::from_le_bytes(rec[4..8].try_into().unwrap_or_default());
                if w < 0 {
                    return Err(format_error(
                        path,
                        format!("byte {}: negative weight {w}", at + 4),
                    ));
                }
                w as u32
            } else {
                1
            };
            chunk.push(Edge {
                u: u as u32,
                v: v as u32,
                w,
            })?;
        }
        chunk.finish()
    }

    fn weighted(&self) -> bool {
        self.weighted
    }

    fn vertices(&self) -> Option<usize> {
        Some(self.header.vertices as usize)
    }
}

/// Load a GAP file into a CSR laid out by `layout`.
pub fn read(
    path: &Path,
    weighted: bool,
    layout: &Layout,
    before_alloc: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<(Csr, BuildStats)> {
    let mut src = GapSource::open(path, weighted)?;
    let symmetrize = !src.header().directed;
    build(&mut src, BuildOptions { symmetrize }, layout, before_alloc)
}

/// Write `g` in the GAP layout (`.wsg` when `g` is weighted) to `w`. Callers that write a file
/// should write it atomically (hugewise's `study::save` does).
pub fn write_to(g: &Csr, w: &mut dyn Write) -> std::io::Result<()> {
    w.write_all(&[g.directed() as u8])?;
    w.write_all(&(g.arcs() as i64).to_le_bytes())?;
    w.write_all(&(g.n() as i64).to_le_bytes())?;
    for a in std::iter::once(g.out_adjacency()).chain(g.in_adjacency()) {
        for &o in a.offsets.iter() {
            w.write_all(&(o as i64).to_le_bytes())?;
        }
        match &a.weights {
            None => {
                for &v in a.edges.iter() {
                    w.write_all(&(v as i32).to_le_bytes())?;
                }
            }
            Some(ws) => {
                for (&v, &x) in a.edges.iter().zip(ws.iter()) {
                    w.write_all(&(v as i32).to_le_bytes())?;
                    w.write_all(&(x as i32).to_le_bytes())?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{build_default, VecSource};

    fn small(weighted: bool, symmetrize: bool) -> Csr {
        let edges = vec![
            Edge { u: 0, v: 1, w: 5 },
            Edge { u: 1, v: 2, w: 7 },
            Edge { u: 3, v: 0, w: 9 },
        ];
        let mut src = VecSource {
            edges,
            weighted,
            vertices: Some(5),
        };
        build_default(&mut src, symmetrize).expect("build")
    }

    fn same(a: &Csr, b: &Csr) {
        assert_eq!(
            (a.n(), a.arcs(), a.directed()),
            (b.n(), b.arcs(), b.directed())
        );
        for v in 0..a.n() as u32 {
            assert_eq!(a.out_neighbors(v), b.out_neighbors(v));
            assert_eq!(a.out_weights(v), b.out_weights(v));
            assert_eq!(a.in_neighbors(v), b.in_neighbors(v));
        }
    }

    fn write(g: &Csr, p: &Path) -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(File::create(p)?);
        write_to(g, &mut w)?;
        w.flush()
    }

    #[test]
    fn round_trips_every_kind() {
        let d = tempfile::tempdir().expect("tmp");
        for (weighted, symmetrize) in [(false, true), (false, false), (true, true), (true, false)] {
            let g = small(weighted, symmetrize);
            let p = d.path().join(if weighted { "g.wsg" } else { "g.sg" });
            write(&g, &p).expect("write");
            let len = std::fs::metadata(&p).expect("meta").len();
            let side = 6 * 8 + g.arcs() * if weighted { 8 } else { 4 };
            assert_eq!(len, 17 + side * if symmetrize { 1 } else { 2 });
            let (h, _) = read(&p, weighted, &Layout::default(), &mut |_| Ok(())).expect("read");
            same(&g, &h);
        }
    }

    #[test]
    fn truncated_and_corrupt_files_are_caught_before_allocating() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("g.sg");
        write(&small(false, true), &p).expect("write");
        let bytes = std::fs::read(&p).expect("read");
        let cut = d.path().join("cut.sg");
        std::fs::write(&cut, &bytes[..bytes.len() - 3]).expect("write");
        let e = header(&cut, false).expect_err("truncated").to_string();
        assert!(e.contains("truncated"), "{e}");
        let mut huge = bytes.clone();
        huge[9..17].copy_from_slice(&(1i64 << 40).to_le_bytes());
        std::fs::write(&cut, &huge).expect("write");
        let e = header(&cut, false).expect_err("absurd").to_string();
        assert!(e.contains("more than 32-bit ids"), "{e}");
        let mut flag = bytes.clone();
        flag[0] = 7;
        std::fs::write(&cut, &flag).expect("write");
        assert!(header(&cut, false)
            .expect_err("flag")
            .to_string()
            .contains("directed flag is 7"));
        let mut bad_id = bytes.clone();
        let at = bad_id.len() - 4;
        bad_id[at..].copy_from_slice(&99i32.to_le_bytes());
        std::fs::write(&cut, &bad_id).expect("write");
        let e = read(&cut, false, &Layout::default(), &mut |_| Ok(()))
            .expect_err("id")
            .to_string();
        assert!(e.contains(&format!("byte {at}: neighbour id 99")), "{e}");
        std::fs::write(&cut, b"\x00\x01").expect("write");
        assert!(header(&cut, false)
            .expect_err("short")
            .to_string()
            .contains("17-byte header"));
    }
}
