//! The GAP benchmark suite's serialized graphs, byte for byte: `.sg` (unweighted) and `.wsg`.
//!
//! Layout (little-endian, no header magic): 1 byte `directed`, i64 arc count m, i64 vertex
//! count n, n + 1 i64 offsets, then m neighbours (i32 id; for `.wsg` an i32 id followed by an
//! i32 weight). A directed graph then repeats offsets and neighbours for its incoming side.
//! A symmetric graph stores both directions of every edge, so m counts arcs.
//!
//! Reading checks the declared sizes against the file length and the memory available before
//! allocating anything, then reads the arrays as they are stored, straight into the CSR's
//! regions, and checks them there.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

use super::{first_bad, symmetry, Array};
use crate::build::BuildStats;
use crate::csr::Adjacency;
use crate::fits::{count, Fit, Shape};
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
    let mut f = super::open_file(path, "GAP .sg")?;
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
    // GAP's ids are i32: n ≤ 2^31 keeps every id, and every negative one, decidable as u32.
    if vertices as u64 > 1 << 31 {
        return Err(format_error(
            path,
            format!("bytes 9-16: declares {vertices} vertices: more than GAP's 32-bit ids hold"),
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

/// Load a GAP file into a CSR laid out by `layout`, refusing (per `fit`) one that would not
/// fit before anything is allocated.
///
/// The arrays are read as they are stored: offsets straight into the offsets region, ids
/// straight into the edges region (a `.wsg`'s interleaved id–weight pairs are split on the
/// way), by all threads at once. Then they are checked: offsets rise from 0 to m, ids are
/// below n, weights are not negative. Lists that GAP's own builder wrote are sorted and free of
/// duplicates and self-loops; a file from elsewhere whose lists are not is normalized as the
/// text readers' graphs are. An undirected graph's lists must then be symmetric.
pub fn read(
    path: &Path,
    weighted: bool,
    fit: Fit,
    layout: &Layout,
    before_alloc: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<(Csr, BuildStats)> {
    let t = Instant::now();
    let h = header(path, weighted)?;
    let (n, m) = (h.vertices as usize, h.arcs as usize);
    if n == 0 {
        return Err(format_error(
            path,
            "the header declares 0 vertices: the graph is empty".into(),
        ));
    }
    let shape = Shape {
        vertices: h.vertices,
        arcs: h.arcs,
        directed: h.directed,
        weighted,
    };
    let implies = format!(
        "the header declares {} vertices and {} arcs{}",
        count(h.vertices),
        count(h.arcs),
        if h.directed { " per side" } else { "" }
    );
    // Normalizing a file whose lists are not sorted takes a new degree per vertex.
    fit.check(&path.display().to_string(), &implies, shape, h.vertices * 4)?;
    let count_ns = t.elapsed().as_nanos() as u64;
    before_alloc(n)?;

    let t = Instant::now();
    let (mut sides, order) = super::create_sides(layout, n, m, h.directed, weighted)?;
    let alloc_ns = t.elapsed().as_nanos() as u64;

    let t = Instant::now();
    let file = super::open_file(path, "GAP .sg")?;
    super::progress::begin(file.metadata().map(|m| m.len()).unwrap_or(0));
    let dsize = if weighted { 8 } else { 4 };
    let side_bytes = (n as u64 + 1) * 8 + m as u64 * dsize;
    for (side, array) in order {
        let a = &mut sides[side];
        let base = HEADER + side as u64 * side_bytes;
        let at = base + (n as u64 + 1) * 8;
        let read_err = |what: &str, e: std::io::Error| {
            format_error(path, format!("byte {base}: reading the {what}: {e}"))
        };
        match (array, a.weights.as_mut()) {
            (Array::Offsets, _) => {
                super::read_exact_at_par(&file, bytemuck::cast_slice_mut(&mut a.offsets[..]), base)
                    .map_err(|e| read_err("offsets", e))?
            }
            (Array::Edges, None) => {
                super::read_exact_at_par(&file, bytemuck::cast_slice_mut(&mut a.edges[..]), at)
                    .map_err(|e| read_err("neighbours", e))?
            }
            // A .wsg's ids and weights are interleaved: both arrays fill together.
            (Array::Edges, Some(w)) => {
                read_pairs(&file, &mut a.edges, w, at).map_err(|e| read_err("neighbours", e))?
            }
            (Array::Weights, _) => {}
        }
    }
    let place_ns = t.elapsed().as_nanos() as u64;

    let t = Instant::now();
    let mut arcs_kept = m as u64;
    for (side, a) in sides.iter_mut().enumerate() {
        let base = HEADER + side as u64 * side_bytes;
        check_arrays(a, n, m, base, dsize).map_err(|msg| format_error(path, msg))?;
        if !lists_are_clean(a) {
            crate::build::normalize(a)?;
        }
        arcs_kept = arcs_kept.min(a.edges.len() as u64);
    }
    if !h.directed {
        symmetry::require(
            &sides[0],
            symmetry::fingerprint(&sides[0]),
            path,
            "byte 0 says",
        )?;
    }
    let normalize_ns = t.elapsed().as_nanos() as u64;
    let mut it = sides.into_iter();
    let out = it
        .next()
        .ok_or_else(|| Error::Invalid("internal: no outgoing side".into()))?;
    let g = Csr::new(h.directed, out, it.next());
    let stats = BuildStats {
        vertices: n as u64,
        arcs_placed: m as u64,
        arcs: g.arcs(),
        self_loops: 0,
        count_ns,
        alloc_ns,
        place_ns,
        normalize_ns,
    };
    Ok((g, stats))
}

/// Pairs per piece of a `.wsg` read: 8 MiB of file per task.
const PAIRS: usize = 1 << 20;

/// Split the `.wsg` pairs (i32 id, i32 weight) at byte `at` into `edges` and `weights`.
fn read_pairs(file: &File, edges: &mut [u32], weights: &mut [u32], at: u64) -> std::io::Result<()> {
    edges
        .par_chunks_mut(PAIRS)
        .zip(weights.par_chunks_mut(PAIRS))
        .enumerate()
        .try_for_each_init(
            || vec![0u8; PAIRS * 8],
            |buf, (i, (e, w))| {
                let bytes = &mut buf[..e.len() * 8];
                file.read_exact_at(bytes, at + (i * PAIRS * 8) as u64)?;
                super::progress::add(bytes.len() as u64);
                for ((pair, e), w) in bytes.chunks_exact(8).zip(e).zip(w) {
                    *e = u32::from_le_bytes([pair[0], pair[1], pair[2], pair[3]]);
                    *w = u32::from_le_bytes([pair[4], pair[5], pair[6], pair[7]]);
                }
                Ok(())
            },
        )
}

/// Offsets rise from 0 to m; every id is below n (a negative i32 read as u32 is at least 2^31,
/// above any n a GAP file can hold); no weight is negative. The error names the byte.
fn check_arrays(
    a: &Adjacency,
    n: usize,
    m: usize,
    base: u64,
    dsize: u64,
) -> std::result::Result<(), String> {
    let o: &[u64] = &a.offsets;
    if o[0] != 0 {
        return Err(format!(
            "byte {base}: the first offset is {}, not 0",
            o[0] as i64
        ));
    }
    let rising = first_bad(n, |v| o[v] > o[v + 1] || o[v + 1] > m as u64);
    if let Some(v) = rising {
        return Err(format!(
            "byte {}: offset {} of vertex {} falls below the one before it or passes the {m} arcs",
            base + (v as u64 + 1) * 8,
            o[v + 1] as i64,
            v + 1
        ));
    }
    if o[n] != m as u64 {
        return Err(format!(
            "byte {}: the last offset is {}, not the {m} arcs declared",
            base + n as u64 * 8,
            o[n]
        ));
    }
    let at = base + (n as u64 + 1) * 8;
    let edges: &[u32] = &a.edges;
    if let Some(k) = first_bad(edges.len(), |k| edges[k] as usize >= n) {
        return Err(format!(
            "byte {}: neighbour id {} outside 0..{n}",
            at + k as u64 * dsize,
            edges[k] as i32
        ));
    }
    if let Some(w) = &a.weights {
        let w: &[u32] = w;
        if let Some(k) = first_bad(w.len(), |k| (w[k] as i32) < 0) {
            return Err(format!(
                "byte {}: negative weight {}",
                at + k as u64 * dsize + 4,
                w[k] as i32
            ));
        }
    }
    Ok(())
}

/// Every list sorted, without repeats or self-loops, as GAP's builder writes them.
fn lists_are_clean(a: &Adjacency) -> bool {
    let o: &[u64] = &a.offsets;
    let e: &[u32] = &a.edges;
    let n = o.len() - 1;
    first_bad(n, |v| {
        let list = &e[o[v] as usize..o[v + 1] as usize];
        list.first().is_some_and(|&x| x as usize == v)
            || list.windows(2).any(|w| w[0] >= w[1] || w[1] as usize == v)
    })
    .is_none()
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
    use crate::build::{build_default, Edge, VecSource};

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
    fn a_fifo_or_a_directory_is_refused_by_its_kind() {
        let d = tempfile::tempdir().expect("tmp");
        let p = crate::io::testing::fifo(d.path(), "g.sg");
        let e = header(&p, false).expect_err("fifo").to_string();
        assert!(
            e.ends_with("g.sg: a FIFO, not a regular file: GAP .sg files are read by offset; copy it to a file first"),
            "{e}"
        );
        let e = header(d.path(), false).expect_err("dir").to_string();
        assert!(e.ends_with(": a directory, not a file"), "{e}");
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
            let (h, _) = read(
                &p,
                weighted,
                Fit::default(),
                &Layout::default(),
                &mut |_| Ok(()),
            )
            .expect("read");
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
        assert!(e.contains("more than GAP's 32-bit ids"), "{e}");
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
        let e = read(&cut, false, Fit::default(), &Layout::default(), &mut |_| {
            Ok(())
        })
        .expect_err("id")
        .to_string();
        assert!(e.contains(&format!("byte {at}: neighbour id 99")), "{e}");
        std::fs::write(&cut, b"\x00\x01").expect("write");
        assert!(header(&cut, false)
            .expect_err("short")
            .to_string()
            .contains("17-byte header"));
    }

    #[test]
    fn an_undirected_file_whose_lists_are_not_symmetric_is_refused() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("lopsided.sg");
        let mut b = vec![0u8];
        b.extend_from_slice(&3i64.to_le_bytes());
        b.extend_from_slice(&3i64.to_le_bytes());
        for o in [0i64, 1, 3, 3] {
            b.extend_from_slice(&o.to_le_bytes());
        }
        for v in [1i32, 0, 2] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        std::fs::write(&p, &b).expect("write");
        let load = || {
            read(&p, false, Fit::default(), &Layout::default(), &mut |_| {
                Ok(())
            })
        };
        let e = load().map(|_| ()).expect_err("lone arc 1 → 2").to_string();
        assert!(
            e.contains(
                "byte 0 says the graph is undirected, but vertex 1 lists 2 but 2 does not list 1"
            ),
            "{e}"
        );
        // Directed, the same lists are a graph (its incoming side given as the reverse).
        b[0] = 1;
        for o in [0i64, 1, 2, 3] {
            b.extend_from_slice(&o.to_le_bytes());
        }
        for v in [1i32, 0, 1] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        std::fs::write(&p, &b).expect("write");
        load().expect("directed");
    }

    #[test]
    fn lists_from_elsewhere_are_sorted_and_cleaned() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("messy.wsg");
        let mut b = vec![0u8];
        b.extend_from_slice(&6i64.to_le_bytes());
        b.extend_from_slice(&3i64.to_le_bytes());
        for o in [0i64, 3, 5, 6] {
            b.extend_from_slice(&o.to_le_bytes());
        }
        for (v, w) in [(2i32, 9i32), (1, 4), (2, 3), (1, 1), (0, 4), (0, 3)] {
            b.extend_from_slice(&v.to_le_bytes());
            b.extend_from_slice(&w.to_le_bytes());
        }
        std::fs::write(&p, &b).expect("write");
        let (g, stats) = read(
            &p,
            true,
            Fit::default(),
            &Layout::default(),
            &mut |_| Ok(()),
        )
        .expect("read");
        assert_eq!(g.out_neighbors(0), [1, 2]);
        assert_eq!(g.out_weights(0), [4, 3]);
        assert_eq!(g.out_neighbors(1), [0]);
        assert_eq!(g.out_neighbors(2), [0]);
        assert_eq!((stats.arcs_placed, stats.arcs), (6, 4));
        let at = b.len() - 4;
        b[at..].copy_from_slice(&(-2i32).to_le_bytes());
        std::fs::write(&p, &b).expect("write");
        let e = read(
            &p,
            true,
            Fit::default(),
            &Layout::default(),
            &mut |_| Ok(()),
        )
        .map(|_| ())
        .expect_err("negative weight")
        .to_string();
        assert!(e.contains(&format!("byte {at}: negative weight -2")), "{e}");
        b[17 + 8..17 + 16].copy_from_slice(&(-1i64).to_le_bytes());
        std::fs::write(&p, &b).expect("write");
        let e = read(
            &p,
            true,
            Fit::default(),
            &Layout::default(),
            &mut |_| Ok(()),
        )
        .map(|_| ())
        .expect_err("offsets")
        .to_string();
        assert!(e.contains("byte 25: offset -1 of vertex 1"), "{e}");
    }
}
