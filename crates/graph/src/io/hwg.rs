//! hugewise's own binary CSR (`.hwg`), made to load fast and to refuse a damaged file before
//! it is used.
//!
//! Layout, little-endian (hugewise builds for little-endian targets only):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `HWGRAPH\0` |
//! | 8 | 4 | version, 1 |
//! | 12 | 4 | flags: bit 0 directed, bit 1 weighted; others zero |
//! | 16 | 8 | vertices n (< 2^32 − 1) |
//! | 24 | 8 | arcs m per side |
//! | 32 | 24 | CRC-32 of each section below, 0 for an absent one |
//! | 56 | 4 | CRC-32 of bytes 0..56 |
//! | 60 | 4 | zero |
//!
//! Then the sections, back to back: out-offsets ((n + 1) × u64), out-edges (m × u32),
//! out-weights (m × u32, when weighted), and for a directed graph the same three for the
//! incoming side. The lists are already sorted and free of duplicates and self-loops, so the
//! file is read straight into the page-policy regions, each array in pieces by all threads (not
//! mapped: a file mapping would be page-cache pages, which no page policy can give huge pages);
//! then the checksums are compared and the structure checked (offsets rise from 0 to m, ids
//! below n, weights within [`weight::MAX_WEIGHT`], an undirected graph's lists symmetric),
//! so that no kernel ever indexes out of bounds or runs on a graph that is not what it says.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

use super::weight::{self, MAX_WEIGHT};
use super::{first_bad, symmetry, Array};
use crate::build::BuildStats;
use crate::csr::{Adjacency, Csr};
use crate::fits::{count, Fit, Shape};
use crate::{Error, Layout, Result};

#[cfg(target_endian = "big")]
compile_error!("hugewise's .hwg files are little-endian and read in place");

/// File magic.
pub const MAGIC: &[u8; 8] = b"HWGRAPH\0";
/// Format version written and read.
pub const VERSION: u32 = 1;
const HEADER: usize = 64;
const DIRECTED: u32 = 1;
const WEIGHTED: u32 = 2;

/// What a file declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Directed: the incoming side follows.
    pub directed: bool,
    /// Weights stored.
    pub weighted: bool,
    /// Vertices.
    pub vertices: u64,
    /// Arcs per side.
    pub arcs: u64,
    crcs: [u32; 6],
}

impl Header {
    /// Byte sizes of the six sections (0 for absent ones).
    fn sections(&self) -> [u128; 6] {
        let (n, m) = (self.vertices as u128, self.arcs as u128);
        let side = [(n + 1) * 8, m * 4, if self.weighted { m * 4 } else { 0 }];
        let inc = if self.directed { side } else { [0; 3] };
        [side[0], side[1], side[2], inc[0], inc[1], inc[2]]
    }

    fn encode(&self) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        let flags =
            if self.directed { DIRECTED } else { 0 } | if self.weighted { WEIGHTED } else { 0 };
        h[12..16].copy_from_slice(&flags.to_le_bytes());
        h[16..24].copy_from_slice(&self.vertices.to_le_bytes());
        h[24..32].copy_from_slice(&self.arcs.to_le_bytes());
        for (i, c) in self.crcs.iter().enumerate() {
            h[32 + 4 * i..36 + 4 * i].copy_from_slice(&c.to_le_bytes());
        }
        let crc = crc32fast::hash(&h[..56]);
        h[56..60].copy_from_slice(&crc.to_le_bytes());
        h
    }
}

fn format_error(path: &Path, message: String) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        message,
    }
}

fn u32_at(h: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&h[at..at + 4]);
    u32::from_le_bytes(b)
}

fn u64_at(h: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The header of an undirected, unweighted file of `n` vertices and `m` arcs with zero
/// checksums, for tests that need a file's declared sizes only.
#[cfg(test)]
pub(crate) fn test_header(n: u64, m: u64) -> [u8; HEADER] {
    Header {
        directed: false,
        weighted: false,
        vertices: n,
        arcs: m,
        crcs: [0; 6],
    }
    .encode()
}

/// The checksum a file's header carries of itself: as the header holds every section's
/// checksum too, two files with the same one hold the same graph (once [`read`] has checked
/// them). For tying a file to a record made when it was written.
pub fn header_checksum(path: &Path) -> Result<u32> {
    let mut f = super::open_file(path, "hugewise .hwg")?;
    let mut h = [0u8; HEADER];
    f.read_exact(&mut h)
        .map_err(|_| format_error(path, format!("shorter than the {HEADER}-byte header")))?;
    Ok(u32_at(&h, 56))
}

/// Read and check the header of `path` against the file's length.
pub fn header(path: &Path) -> Result<Header> {
    let mut f = super::open_file(path, "hugewise .hwg")?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut h = [0u8; HEADER];
    f.read_exact(&mut h).map_err(|_| {
        format_error(
            path,
            format!("only {len} bytes: shorter than the {HEADER}-byte header"),
        )
    })?;
    if &h[..8] != MAGIC {
        return Err(format_error(
            path,
            "bytes 0-7: not a hugewise graph (no HWGRAPH magic)".into(),
        ));
    }
    let version = u32_at(&h, 8);
    if version != VERSION {
        return Err(format_error(
            path,
            format!("bytes 8-11: format version {version}; this hugewise reads version {VERSION}"),
        ));
    }
    if u32_at(&h, 56) != crc32fast::hash(&h[..56]) {
        return Err(format_error(
            path,
            "bytes 56-59: header checksum does not match: the header is damaged".into(),
        ));
    }
    let flags = u32_at(&h, 12);
    if flags & !(DIRECTED | WEIGHTED) != 0 {
        return Err(format_error(
            path,
            format!("bytes 12-15: unknown flags {flags:#x}"),
        ));
    }
    let mut crcs = [0u32; 6];
    for (i, c) in crcs.iter_mut().enumerate() {
        *c = u32_at(&h, 32 + 4 * i);
    }
    let hd = Header {
        directed: flags & DIRECTED != 0,
        weighted: flags & WEIGHTED != 0,
        vertices: u64_at(&h, 16),
        arcs: u64_at(&h, 24),
        crcs,
    };
    if hd.vertices == 0 || hd.vertices >= u32::MAX as u64 {
        return Err(format_error(
            path,
            format!(
                "bytes 16-23: {} vertices (1 to 2^32 − 2 are possible)",
                hd.vertices
            ),
        ));
    }
    let want = HEADER as u128 + hd.sections().iter().sum::<u128>();
    if want != len as u128 {
        return Err(format_error(
            path,
            format!(
                "declares {} vertices and {} arcs, which take {want} bytes, but the file has \
                 {len}{}",
                hd.vertices,
                hd.arcs,
                if (len as u128) < want {
                    " (truncated?)"
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(hd)
}

const SECTION_NAMES: [&str; 6] = [
    "offsets",
    "edges",
    "weights",
    "in-offsets",
    "in-edges",
    "in-weights",
];

/// Load `path` into regions laid out by `layout`, refusing (per `fit`) a graph that would not
/// fit before anything is allocated; `before_alloc(n)` runs before the first array is created.
pub fn read(
    path: &Path,
    fit: Fit,
    layout: &Layout,
    before_alloc: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<(Csr, BuildStats)> {
    let t = Instant::now();
    let h = header(path)?;
    let (n, m) = (h.vertices as usize, h.arcs as usize);
    let shape = Shape {
        vertices: h.vertices,
        arcs: h.arcs,
        directed: h.directed,
        weighted: h.weighted,
    };
    let implies = format!(
        "the header declares {} vertices and {} arcs{}",
        count(h.vertices),
        count(h.arcs),
        if h.directed { " per side" } else { "" }
    );
    fit.check(&path.display().to_string(), &implies, shape, 0)?;
    let count_ns = t.elapsed().as_nanos() as u64;
    before_alloc(n)?;

    let t = Instant::now();
    let (mut sides_read, order) = super::create_sides(layout, n, m, h.directed, h.weighted)?;
    let alloc_ns = t.elapsed().as_nanos() as u64;

    let t = Instant::now();
    let f = super::open_file(path, "hugewise .hwg")?;
    super::progress::begin(f.metadata().map(|m| m.len()).unwrap_or(0));
    let sizes = h.sections();
    for (side, array) in order {
        let a = &mut sides_read[side];
        let k = 3 * side
            + match array {
                Array::Offsets => 0,
                Array::Edges => 1,
                Array::Weights => 2,
            };
        let at = HEADER as u64 + sizes[..k].iter().sum::<u128>() as u64;
        let bytes: &mut [u8] = match array {
            Array::Offsets => bytemuck::cast_slice_mut(&mut a.offsets[..]),
            Array::Edges => bytemuck::cast_slice_mut(&mut a.edges[..]),
            Array::Weights => match a.weights.as_mut() {
                Some(w) => bytemuck::cast_slice_mut(&mut w[..]),
                None => continue,
            },
        };
        super::read_exact_at_par(&f, bytes, at).map_err(|e| {
            format_error(
                path,
                format!("byte {at}: reading {}: {e}", SECTION_NAMES[k]),
            )
        })?;
    }
    let place_ns = t.elapsed().as_nanos() as u64;

    let t = Instant::now();
    let mut start = HEADER as u128;
    let sizes = h.sections();
    for (side, a) in sides_read.iter().enumerate() {
        let parts: [Option<&[u8]>; 3] = [
            Some(bytemuck::cast_slice(&a.offsets[..])),
            Some(bytemuck::cast_slice(&a.edges[..])),
            a.weights.as_ref().map(|w| bytemuck::cast_slice(&w[..])),
        ];
        for (k, part) in parts.into_iter().enumerate() {
            let s = 3 * side + k;
            if let Some(bytes) = part {
                if checksum(bytes) != h.crcs[s] {
                    return Err(format_error(
                        path,
                        format!(
                            "bytes {start}-{}: the {} section's checksum does not match: the \
                             file is damaged",
                            start + sizes[s] - 1,
                            SECTION_NAMES[s]
                        ),
                    ));
                }
            }
            start += sizes[s];
        }
        let print = (!h.directed).then(symmetry::Fingerprint::new);
        let sum = check_structure(a, n, m, print.as_ref()).map_err(|m| {
            format_error(
                path,
                format!("{} side: {m}", if side == 0 { "out" } else { "in" }),
            )
        })?;
        if let Some(w) = &a.weights {
            let w: &[u32] = w;
            if let Some(k) = first_bad(w.len(), |k| w[k] > MAX_WEIGHT) {
                let at = start - sizes[3 * side + 2] + k as u128 * 4;
                let why = weight::too_heavy(w[k].into());
                return Err(format_error(path, format!("byte {at}: {why}")));
            }
        }
        if !h.directed {
            symmetry::require(a, sum, path, "bytes 12-15 say")?;
        }
    }
    let normalize_ns = t.elapsed().as_nanos() as u64;
    let mut it = sides_read.into_iter();
    let out = it
        .next()
        .ok_or_else(|| Error::Invalid("internal: no outgoing side".into()))?;
    let g = Csr::new(h.directed, out, it.next());
    let stats = BuildStats {
        vertices: n as u64,
        arcs_placed: m as u64,
        arcs: m as u64,
        self_loops: 0,
        count_ns,
        alloc_ns,
        place_ns,
        normalize_ns,
    };
    Ok((g, stats))
}

/// CRC-32 of a section, computed in 64 MiB pieces in parallel and combined in order.
fn checksum(bytes: &[u8]) -> u32 {
    const PIECE: usize = 64 << 20;
    let parts: Vec<(u32, u64)> = bytes
        .par_chunks(PIECE)
        .map(|c| (crc32fast::hash(c), c.len() as u64))
        .collect();
    let mut all = crc32fast::Hasher::new();
    for (crc, len) in parts {
        all.combine(&crc32fast::Hasher::new_with_initial_len(crc, len));
    }
    all.finalize()
}

/// Offsets rise from 0 to m, every id is below n, every list is sorted without repeats or
/// self-loops. With `print`, the lists' symmetry fingerprint, taken in the same pass while each
/// list is in cache (a pass of its own cost a kron:22 load a third more).
fn check_structure(
    a: &Adjacency,
    n: usize,
    m: usize,
    print: Option<&symmetry::Fingerprint>,
) -> std::result::Result<u64, String> {
    let o: &[u64] = &a.offsets;
    if o[0] != 0 || o[n] != m as u64 {
        return Err(format!(
            "offsets run from {} to {}, not from 0 to {m}",
            o[0], o[n]
        ));
    }
    let bad_list = |v: usize| {
        if o[v] > o[v + 1] || o[v + 1] > m as u64 {
            return true;
        }
        let list = &a.edges[o[v] as usize..o[v + 1] as usize];
        list.iter().any(|&x| x as usize >= n || x as usize == v)
            || list.windows(2).any(|w| w[0] >= w[1])
    };
    // Pieces of about equal arcs, not vertices: a reordered graph has its hubs first, and a
    // piece of 4096 vertices could hold a quarter of the arcs.
    let (bad, sum) = super::check_pieces(o, m)
        .into_par_iter()
        .map(|r| {
            let mut sum = 0u64;
            for v in r {
                if bad_list(v) {
                    return (Some(v), sum);
                }
                if let Some(p) = print {
                    sum = sum.wrapping_add(p.list(v, &a.edges[o[v] as usize..o[v + 1] as usize]));
                }
            }
            (None, sum)
        })
        .reduce(
            || (None, 0),
            |x, y| (x.0.into_iter().chain(y.0).min(), x.1.wrapping_add(y.1)),
        );
    match bad {
        None => Ok(sum),
        Some(v) => Err(format!(
            "vertex {v}: offsets fall or pass {m}, or its list has an id ≥ {n}, itself, or is \
             not sorted and distinct"
        )),
    }
}

/// Write `g` as `.hwg` to `w`. Callers that write a file should write it atomically.
pub fn write_to(g: &Csr, w: &mut dyn Write) -> std::io::Result<()> {
    let sides: Vec<&Adjacency> = std::iter::once(g.out_adjacency())
        .chain(g.in_adjacency())
        .collect();
    let mut crcs = [0u32; 6];
    for (side, a) in sides.iter().enumerate() {
        crcs[3 * side] = checksum(bytemuck::cast_slice(&a.offsets[..]));
        crcs[3 * side + 1] = checksum(bytemuck::cast_slice(&a.edges[..]));
        if let Some(ws) = &a.weights {
            crcs[3 * side + 2] = checksum(bytemuck::cast_slice(&ws[..]));
        }
    }
    let h = Header {
        directed: g.directed(),
        weighted: g.weighted(),
        vertices: g.n() as u64,
        arcs: g.arcs(),
        crcs,
    };
    w.write_all(&h.encode())?;
    for a in sides {
        w.write_all(bytemuck::cast_slice(&a.offsets[..]))?;
        w.write_all(bytemuck::cast_slice(&a.edges[..]))?;
        if let Some(ws) = &a.weights {
            w.write_all(bytemuck::cast_slice(&ws[..]))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::generated;

    fn write(g: &Csr, p: &Path) {
        let mut buf = Vec::new();
        write_to(g, &mut buf).expect("write");
        std::fs::write(p, buf).expect("save");
    }

    fn same(a: &Csr, b: &Csr) {
        assert_eq!(
            (a.n(), a.arcs(), a.directed(), a.weighted()),
            (b.n(), b.arcs(), b.directed(), b.weighted())
        );
        for v in 0..a.n() as u32 {
            assert_eq!(a.out_neighbors(v), b.out_neighbors(v));
            assert_eq!(a.out_weights(v), b.out_weights(v));
            assert_eq!(a.in_neighbors(v), b.in_neighbors(v));
        }
    }

    #[test]
    fn round_trips_symmetric_directed_and_weighted_graphs() {
        let d = tempfile::tempdir().expect("tmp");
        for (sym, weighted) in [(true, false), (false, true), (true, true)] {
            let g = generated("kron:10", sym, weighted);
            let p = d.path().join("g.hwg");
            write(&g, &p);
            let (h, stats) =
                read(&p, Fit::default(), &Layout::default(), &mut |_| Ok(())).expect("read");
            same(&g, &h);
            assert_eq!(stats.arcs, g.arcs());
            if !sym {
                let names: Vec<String> = h
                    .regions()
                    .expect("regions")
                    .into_iter()
                    .map(|r| r.name)
                    .collect();
                assert!(names.contains(&"in-weights".to_string()), "{names:?}");
            }
        }
    }

    /// Rewrite the checksums after a deliberate change, so only the structure check can see it.
    fn reseal(bytes: &mut [u8]) {
        let h = header_from(bytes);
        let mut start = HEADER;
        let mut crcs = [0u32; 6];
        for (i, size) in h.sections().iter().enumerate() {
            let end = start + *size as usize;
            if *size > 0 {
                crcs[i] = crc32fast::hash(&bytes[start..end]);
            }
            start = end;
        }
        let sealed = Header { crcs, ..h }.encode();
        bytes[..HEADER].copy_from_slice(&sealed);
    }

    fn header_from(bytes: &[u8]) -> Header {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("h.hwg");
        std::fs::write(&p, bytes).expect("save");
        header(&p).expect("header")
    }

    #[test]
    fn damaged_files_are_refused_with_the_place() {
        let d = tempfile::tempdir().expect("tmp");
        let g = generated("kron:8", true, false);
        let mut good = Vec::new();
        write_to(&g, &mut good).expect("write");
        let n = g.n();
        let edges_at = HEADER + (n + 1) * 8;
        let try_read = |bytes: &[u8]| -> String {
            let p = d.path().join("bad.hwg");
            std::fs::write(&p, bytes).expect("save");
            read(&p, Fit::default(), &Layout::default(), &mut |_| Ok(()))
                .map(|_| String::new())
                .expect_err("damaged")
                .to_string()
        };
        let mut cases: Vec<(Vec<u8>, String)> = Vec::new();
        cases.push((
            good[..40].to_vec(),
            "shorter than the 64-byte header".into(),
        ));
        cases.push((good[..good.len() - 3].to_vec(), "(truncated?)".into()));
        let mut b = good.clone();
        b[0] = b'X';
        cases.push((b, "no HWGRAPH magic".into()));
        let mut b = good.clone();
        b[8] = 9;
        cases.push((b, "format version 9".into()));
        let mut b = good.clone();
        b[20] ^= 1;
        cases.push((b, "header checksum does not match".into()));
        let mut b = good.clone();
        b[edges_at + 5] ^= 0x40;
        cases.push((b, format!("bytes {edges_at}-")));
        let mut b = good.clone();
        b[edges_at..edges_at + 4].copy_from_slice(&(n as u32 + 7).to_le_bytes());
        reseal(&mut b);
        cases.push((b, "out side: vertex 0".into()));
        let mut b = good.clone();
        b[HEADER + 8..HEADER + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        reseal(&mut b);
        cases.push((b, "offsets fall".into()));
        for (bytes, want) in cases {
            let e = try_read(&bytes);
            assert!(e.contains(&want), "{want:?} not in {e:?}");
        }
        assert!(try_read(&[]).contains("shorter than"));
    }

    #[test]
    fn an_undirected_file_whose_lists_are_not_symmetric_is_refused() {
        let d = tempfile::tempdir().expect("tmp");
        let mut b = Header {
            directed: false,
            weighted: false,
            vertices: 3,
            arcs: 3,
            crcs: [0; 6],
        }
        .encode()
        .to_vec();
        for o in [0u64, 1, 3, 3] {
            b.extend_from_slice(&o.to_le_bytes());
        }
        for v in [1u32, 0, 2] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        reseal(&mut b);
        let p = d.path().join("lopsided.hwg");
        std::fs::write(&p, &b).expect("save");
        let e = read(&p, Fit::default(), &Layout::default(), &mut |_| Ok(()))
            .map(|_| ())
            .expect_err("lone arc 1 → 2")
            .to_string();
        assert!(
            e.contains(
                "bytes 12-15 say the graph is undirected, but vertex 1 lists 2 but 2 does not \
                 list 1"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_weight_the_text_readers_refuse_is_refused_here_too() {
        let d = tempfile::tempdir().expect("tmp");
        let g = generated("kron:6", true, true);
        let mut b = Vec::new();
        write_to(&g, &mut b).expect("write");
        let weights_at = HEADER + (g.n() + 1) * 8 + g.arcs() as usize * 4;
        let at = weights_at + 4 * 3;
        b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        reseal(&mut b);
        let p = d.path().join("heavy.hwg");
        std::fs::write(&p, &b).expect("save");
        let e = read(&p, Fit::default(), &Layout::default(), &mut |_| Ok(()))
            .map(|_| ())
            .expect_err("too heavy")
            .to_string();
        assert!(
            e.contains(&format!("byte {at}: weight 4294967295 is over 4294967294")),
            "{e}"
        );
    }
}
