//! Readers and writers of graph files.
//!
//! - [`edgelist`]: `.el` / `.wel` text (any whitespace, `#` and `%` comments);
//! - [`mtx`]: Matrix Market coordinate files;
//! - [`gap`]: the GAP benchmark suite's serialized `.sg` / `.wsg`, byte-compatible;
//! - [`hwg`]: hugewise's own binary CSR, versioned and checksummed, read straight into regions;
//! - [`symmetry`]: the check that a file's undirected graph is;
//! - [`weight`]: the weights every reader accepts.
//!
//! Compressed input (`gzip`, `zstd`) is detected by magic bytes, not by name.

pub mod edgelist;
pub mod gap;
pub mod hwg;
pub mod mtx;
pub mod progress;
pub mod symmetry;
pub mod weight;

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use rayon::prelude::*;

use hugewise_mem::Region;
use hugewise_sys::read::Kind;

use crate::csr::Adjacency;
use crate::layout::GRAPH_REGIONS;
use crate::{Error, Layout, Result};

/// Open `path` for reading, decompressing gzip or zstd transparently. The stream is read
/// once, from one handle (the magic is read from it, then put back in front), so a FIFO or
/// `<(zcat g.el.gz)` loads whole; see [`hugewise_sys::read::open`] for a FIFO without a writer
/// and for directories.
pub fn open(path: &Path) -> Result<Box<dyn Read + Send>> {
    let (mut f, kind) = hugewise_sys::read::open(path).map_err(|e| Error::io(path, e))?;
    let mut magic = [0u8; 4];
    let got = read_up_to(&mut f, &mut magic).map_err(|e| Error::io(path, e))?;
    if got == 0 && kind == Kind::Fifo {
        return Err(Error::Format {
            path: path.to_path_buf(),
            message: format!(
                "a FIFO that gave nothing: no writer opened it within {} s, or it wrote nothing",
                hugewise_sys::read::WRITER_WAIT.as_secs()
            ),
        });
    }
    let size = match kind {
        Kind::Regular => f.metadata().map(|m| m.len()).unwrap_or(0),
        _ => 0,
    };
    progress::begin(size);
    progress::add(got as u64);
    let stream = std::io::Cursor::new(magic)
        .take(got as u64)
        .chain(progress::Counting(f));
    let buf = BufReader::with_capacity(1 << 20, stream);
    Ok(match &magic[..got] {
        [0x1f, 0x8b, ..] => Box::new(flate2::read::MultiGzDecoder::new(buf)),
        // libzstd's decoder (every frame of the file, in turn): the pure-Rust one decoded
        // k20.el.zst at a third of plain text's read speed.
        [0x28, 0xb5, 0x2f, 0xfd] => Box::new(
            zstd::stream::read::Decoder::with_buffer(buf).map_err(|e| Error::Format {
                path: path.to_path_buf(),
                message: format!("zstd: {e}"),
            })?,
        ),
        _ => Box::new(buf),
    })
}

/// Open `path` for pass `pass` (from 1) of a text reader over it. A stream (a FIFO, a pipe, a
/// device) gives its bytes once: a second pass over one is refused, saying why, instead of
/// reading what is left of it (nothing) or waiting for a writer that has gone.
pub(crate) fn open_pass(path: &Path, pass: usize) -> Result<Box<dyn Read + Send>> {
    if pass > 1 && !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Err(Error::Format {
            path: path.to_path_buf(),
            message: "not a regular file, so it can be read only once, and its edges were too \
                      many to hold in memory for the builder's second pass: save it to a file \
                      first"
                .into(),
        });
    }
    open(path)
}

/// Open `path`, a file of a binary format read by offset (`what`, e.g. "GAP .sg"): anything
/// but a regular file is refused, naming its kind.
pub(crate) fn open_file(path: &Path, what: &str) -> Result<File> {
    let why = format!("{what} files are read by offset");
    hugewise_sys::read::open_regular(path, &why).map_err(|e| Error::io(path, e))
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Pieces of a bulk read: large enough that a read costs little per byte, small enough that
/// two threads share even a 64 MiB array.
const PIECE: usize = 8 << 20;

/// Fill `buf` from `file` at byte `at`, in pieces read by every thread at once: with the file
/// in the page cache a read is a copy into fresh pages, and both the copy and the page faults
/// cost CPU, so they scale with threads.
pub(crate) fn read_exact_at_par(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    buf.par_chunks_mut(PIECE)
        .enumerate()
        .try_for_each(|(i, c)| {
            file.read_exact_at(c, at + (i * PIECE) as u64)?;
            progress::add(c.len() as u64);
            Ok(())
        })
}

/// One array of a CSR side, as a reader fills it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Array {
    Offsets,
    Edges,
    Weights,
}

/// Which array of which side (0 out, 1 in), in the order a reader fills them.
pub(crate) type FillOrder = Vec<(usize, Array)>;

/// Create the arrays of a CSR with `n` vertices and `m` arcs per side (the outgoing side, then
/// the incoming one when `directed`), to be filled by a reader. Returns the sides and the
/// order the layout wants them allocated in: pages are faulted as they are filled, so a reader
/// fills them in that order.
pub(crate) fn create_sides(
    layout: &Layout,
    n: usize,
    m: usize,
    directed: bool,
    weighted: bool,
) -> Result<(Vec<Adjacency>, FillOrder)> {
    let mut offsets: [Option<Region<u64>>; 2] = [None, None];
    let mut edges: [Option<Region<u32>>; 2] = [None, None];
    let mut weights: [Option<Region<u32>>; 2] = [None, None];
    let mut order = Vec::with_capacity(6);
    for name in layout.order.arrange(GRAPH_REGIONS) {
        match name {
            "offsets" => {
                offsets[0] = Some(layout.filled_region(name, name, n + 1)?);
                order.push((0, Array::Offsets));
            }
            "edges" => {
                edges[0] = Some(layout.filled_region(name, name, m)?);
                order.push((0, Array::Edges));
            }
            "weights" if weighted => {
                weights[0] = Some(layout.filled_region(name, "weights", m)?);
                order.push((0, Array::Weights));
                if directed {
                    weights[1] = Some(layout.filled_region(name, "in-weights", m)?);
                    order.push((1, Array::Weights));
                }
            }
            "in-offsets" if directed => {
                offsets[1] = Some(layout.filled_region(name, name, n + 1)?);
                order.push((1, Array::Offsets));
            }
            "in-edges" if directed => {
                edges[1] = Some(layout.filled_region(name, name, m)?);
                order.push((1, Array::Edges));
            }
            _ => {}
        }
    }
    let mut sides = Vec::with_capacity(2);
    for side in 0..if directed { 2 } else { 1 } {
        let missing = || Error::Invalid("internal: a graph array was not created".into());
        sides.push(Adjacency {
            offsets: offsets[side].take().ok_or_else(missing)?,
            edges: edges[side].take().ok_or_else(missing)?,
            weights: weights[side].take(),
        });
    }
    Ok((sides, order))
}

/// Items per task of a parallel scan: enough that each task is one tight loop.
const SCAN: usize = 1 << 16;

/// The first `i` in `0..len` for which `bad(i)` holds, scanned by every thread in blocks.
pub(crate) fn first_bad(len: usize, bad: impl Fn(usize) -> bool + Sync) -> Option<usize> {
    (0..len.div_ceil(SCAN))
        .into_par_iter()
        .filter_map(|b| (b * SCAN..((b + 1) * SCAN).min(len)).find(|&i| bad(i)))
        .min()
}

#[cfg(test)]
pub(crate) mod testing {
    //! FIFOs for the readers' tests.

    use std::path::{Path, PathBuf};

    /// A FIFO named `name` in `dir`.
    pub(crate) fn fifo(dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        let made = std::process::Command::new("mkfifo").arg(&p).status();
        assert!(made.expect("mkfifo").success());
        p
    }

    /// Write `text` into the FIFO `p` from another thread, as a writer process would.
    pub(crate) fn feed(p: &Path, text: &'static str) -> std::thread::JoinHandle<()> {
        let p = p.to_path_buf();
        std::thread::spawn(move || std::fs::write(&p, text).expect("write"))
    }
}

/// Vertex ranges covering `0..n` once each, for checks that walk every list: each range
/// reaches about `m / 256` arcs (more when one list is longer), so at most 257 of them. The
/// offsets are not yet checked: out of order, they make the ranges uneven, never wrong.
pub(crate) fn check_pieces(o: &[u64], m: usize) -> Vec<std::ops::Range<usize>> {
    let n = o.len() - 1;
    let arcs = (m as u64 / 256).max(1);
    let mut pieces = Vec::new();
    let mut v = 0;
    while v < n {
        let target = o[v].saturating_add(arcs);
        // The first vertex whose list starts at or past the target (offsets out of order
        // make this a guess, which the check itself then refuses).
        let next = v + o[v..n].partition_point(|&x| x < target);
        let end = next.max(v + 1).min(n);
        pieces.push(v..end);
        v = end;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_pieces_cover_every_vertex_once_whatever_the_offsets() {
        let covers = |o: &[u64], m: usize| {
            let pieces = check_pieces(o, m);
            let flat: Vec<usize> = pieces.iter().flat_map(|r| r.clone()).collect();
            assert_eq!(flat, (0..o.len() - 1).collect::<Vec<_>>(), "{o:?}");
            pieces.len()
        };
        // A hub of most arcs first, then 10 000 vertices of one arc, then isolated ones.
        let mut o = vec![0u64, 1_000_000];
        o.extend((1..=10_000).map(|i| 1_000_000 + i));
        o.extend(std::iter::repeat_n(1_010_000, 5_000));
        let pieces = covers(&o, 1_010_000);
        assert!(pieces <= 257, "{pieces}");
        assert_eq!(check_pieces(&o, 1_010_000)[0], 0..1, "the hub alone");
        // Falling offsets, offsets past m, and no arcs at all.
        covers(&[0, 9, 3, 7, 1, 12, 2], 5);
        covers(&[0, u64::MAX, 0], 4);
        covers(&[0; 100], 0);
    }

    #[test]
    fn a_directory_named_like_a_graph_file_is_called_a_directory() {
        let d = tempfile::tempdir().expect("tmp");
        for name in ["x.sg", "x.wsg", "x.hwg"] {
            let p = d.path().join(name);
            std::fs::create_dir(&p).expect("mkdir");
            let e = match name {
                "x.hwg" => hwg::header(&p).map(|_| ()),
                _ => gap::header(&p, name == "x.wsg").map(|_| ()),
            }
            .expect_err("a directory")
            .to_string();
            assert!(
                e.ends_with(&format!("{name}: a directory, not a file")),
                "{e}"
            );
        }
    }
}
