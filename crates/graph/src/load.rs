//! One entry point from a graph spec (`kron:22`, `urand:20:8`, `grid:1000x1000`, or a file) to
//! a CSR.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use hugewise_results::graph::LoadStats;

use crate::build::{build, BuildOptions};
use crate::fits::{count, Fit, Shape};
use crate::gen::{Generator, Spec};
use crate::io::{edgelist::EdgeList, gap, hwg, mtx::MatrixMarket};
use crate::shapes::{self, Shaped};
use crate::{Csr, Error, Layout, Result};

/// Where a graph comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A generator (always symmetric, as the GAP suite's).
    Gen(Spec),
    /// A shaped graph: grid, road, chain or star (symmetric).
    Shape(shapes::Spec),
    /// A file; its kind comes from its name (`.el`, `.wel`, `.mtx`, optionally with `.gz` or
    /// `.zst`; `.sg`, `.wsg`, `.hwg`).
    File(PathBuf),
}

/// The file kinds hugewise reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Text edge list.
    EdgeList,
    /// Text edge list with weights.
    WeightedEdgeList,
    /// GAP serialized graph.
    Gap,
    /// GAP serialized weighted graph.
    WeightedGap,
    /// Matrix Market coordinate file.
    MatrixMarket,
    /// hugewise's own binary CSR.
    Hugewise,
}

impl Input {
    /// `kron:…` and `urand:…` are generators, `grid:…`, `road:…`, `chain:…` and `star:…`
    /// shapes; anything else is a path whose name must say a kind hugewise reads.
    pub fn parse(s: &str) -> Result<Input> {
        if s.starts_with("kron:") || s.starts_with("urand:") {
            Ok(Input::Gen(s.parse()?))
        } else if shapes::is_shape(s) {
            Ok(Input::Shape(s.parse()?))
        } else {
            let p = PathBuf::from(s);
            file_kind(&p)?;
            Ok(Input::File(p))
        }
    }
}

impl Serialize for Input {
    /// As the user writes it (`kron:22`, a path), so that a request to a worker reads as the
    /// command line did and is parsed back by [`Input::parse`].
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Input, D::Error> {
        let s = String::deserialize(d)?;
        Input::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Input::Gen(s) => s.fmt(f),
            Input::Shape(s) => s.fmt(f),
            Input::File(p) => p.display().fmt(f),
        }
    }
}

/// The kind of a graph file, from its name.
pub fn file_kind(p: &Path) -> Result<FileKind> {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let base = name.trim_end_matches(".gz").trim_end_matches(".zst");
    Ok(match base.rsplit('.').next() {
        Some("el") => FileKind::EdgeList,
        Some("wel") => FileKind::WeightedEdgeList,
        Some("sg") => FileKind::Gap,
        Some("wsg") => FileKind::WeightedGap,
        Some("mtx") => FileKind::MatrixMarket,
        Some("hwg") => FileKind::Hugewise,
        _ => {
            return Err(Error::Invalid(format!(
                "{}: unknown graph file kind; use .el, .wel, .mtx (text, optionally .gz or \
                 .zst), .sg or .wsg (GAP), .hwg (hugewise), or a generator such as kron:22 \
                 or grid:1000x1000",
                p.display()
            )))
        }
    })
}

/// Options of a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadOptions {
    /// Seed for generators.
    pub seed: u64,
    /// Make a weighted graph: generators draw weights (see [`crate::shapes`] for the shapes'),
    /// unweighted files get hashed weights in [1, 255] (see [`Csr::add_weights`]); `.wel` and
    /// `.wsg` carry their own.
    pub weighted: bool,
    /// Symmetrize a text edge list (generators always are; GAP files say themselves).
    pub symmetrize: bool,
    /// The size check made before the graph's arrays are allocated.
    pub fit: Fit,
}

impl LoadOptions {
    /// What a kernel run loads with unless told otherwise: generators seeded with `seed`, no
    /// weights added, no symmetrizing, and the size check counting the kernel's per-vertex
    /// arrays beside the graph.
    pub fn for_kernel(seed: u64) -> LoadOptions {
        LoadOptions {
            seed,
            weighted: false,
            symmetrize: false,
            fit: Fit {
                vertex_extra_bytes: crate::fits::KERNEL_VERTEX_BYTES,
                ..Fit::default()
            },
        }
    }
}

/// Load `input` into regions laid out by `layout`; `before_alloc(n)` runs before the graph's
/// arrays are created. Every path checks what the input implies against the memory available
/// (see [`crate::fits`]) before it allocates anything per vertex or per edge.
pub fn load(
    input: &Input,
    opts: LoadOptions,
    layout: &Layout,
    before_alloc: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<(Csr, LoadStats)> {
    let t = Instant::now();
    let fit = Fit {
        arc_extra_bytes: if opts.weighted { 4 } else { 0 },
        ..opts.fit
    };
    let build_opts = |symmetrize: bool| BuildOptions { symmetrize, fit };
    let (mut g, build) = match input {
        Input::Gen(spec) => {
            check_generator(spec, opts)?;
            let mut g = Generator::new(*spec, opts.seed, opts.weighted);
            build(&mut g, build_opts(true), layout, before_alloc)?
        }
        // The builder checks the declared vertex and edge counts before it allocates.
        Input::Shape(spec) => {
            let mut g = Shaped::new(*spec, opts.seed, opts.weighted);
            build(&mut g, build_opts(true), layout, before_alloc)?
        }
        Input::File(p) => match file_kind(p)? {
            k @ (FileKind::EdgeList | FileKind::WeightedEdgeList) => {
                let mut src = EdgeList::new(p, k == FileKind::WeightedEdgeList);
                build(&mut src, build_opts(opts.symmetrize), layout, before_alloc)?
            }
            FileKind::MatrixMarket => {
                let mut src = MatrixMarket::open(p)?;
                let symmetrize = opts.symmetrize || src.header().symmetric;
                build(&mut src, build_opts(symmetrize), layout, before_alloc)?
            }
            FileKind::Hugewise => hwg::read(p, fit, layout, before_alloc)?,
            FileKind::Gap => gap::read(p, false, fit, layout, before_alloc)?,
            FileKind::WeightedGap => gap::read(p, true, fit, layout, before_alloc)?,
        },
    };
    if opts.weighted {
        g.add_weights(opts.seed, layout)?;
    }
    Ok((
        g,
        LoadStats {
            load_ns: t.elapsed().as_nanos() as u64,
            build,
        },
    ))
}

/// A generator's size is known from its spec: refuse before its permutation is drawn.
fn check_generator(spec: &Spec, opts: LoadOptions) -> Result<()> {
    let n = 1u64 << spec.scale;
    let edges = n.saturating_mul(spec.edge_factor as u64);
    let shape = Shape {
        vertices: n,
        arcs: edges.saturating_mul(2),
        directed: false,
        weighted: opts.weighted,
    };
    // The builder's cursors, and the relabelling permutation (a u32 per vertex).
    let temp = shape.builder_bytes().saturating_add(n.saturating_mul(4));
    let implies = format!(
        "scale {} implies {} vertices and {} edges",
        spec.scale,
        count(n),
        count(edges)
    );
    opts.fit.check(&spec.to_string(), &implies, shape, temp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Load `name` holding `bytes` with `room` bytes counted as available.
    fn load_capped(name: &str, bytes: &[u8], room: u64) -> Result<Csr> {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join(name);
        std::fs::write(&p, bytes).expect("write");
        load_path(&Input::File(p), room)
    }

    fn load_path(input: &Input, room: u64) -> Result<Csr> {
        let opts = LoadOptions {
            seed: 1,
            weighted: false,
            symmetrize: false,
            fit: Fit {
                cap_bytes: Some(room),
                ..Fit::default()
            },
        };
        let mut allocated = false;
        let r = load(input, opts, &Layout::default(), &mut |_| {
            allocated = true;
            Ok(())
        });
        if matches!(r, Err(Error::TooLarge { .. })) {
            assert!(!allocated, "refused only after allocating");
        }
        r.map(|(g, _)| g)
    }

    fn refused(r: Result<Csr>, wants: &[&str]) {
        match r {
            Err(e @ Error::TooLarge { .. }) => {
                let msg = e.to_string();
                for w in wants.iter().chain(&["--force", "available"]) {
                    assert!(msg.contains(w), "{w:?} not in {msg}");
                }
            }
            Err(e) => panic!("refused for another reason: {e}"),
            Ok(g) => panic!("loaded {} vertices", g.n()),
        }
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn an_edge_list_naming_a_far_vertex_is_refused_from_its_largest_id() {
        refused(
            load_capped("far.el", b"0 2000000000\n", 4 * GIB),
            &[
                "far.el",
                "vertex id 2000000000 implies 2 000 000 001 vertices",
                "4GiB",
            ],
        );
        refused(
            load_capped("far.el", b"0 1\n4000000000 1\n", 4 * GIB),
            &["vertex id 4000000000 implies 4 000 000 001 vertices"],
        );
        // Past the u32 range: an error with the line, never a wrapped id or a panic.
        let e = load_capped("far.el", b"0 1\n1 4294967295\n", 4 * GIB)
            .map(|g| g.n())
            .expect_err("u32 range")
            .to_string();
        assert!(
            e.contains("far.el:2: target id 4294967295 does not fit"),
            "{e}"
        );
        // The same small file loads when there is room.
        assert_eq!(
            load_capped("near.el", b"0 5\n", 4 * GIB).expect("fits").n(),
            6
        );
    }

    #[test]
    fn a_matrix_market_header_is_checked_before_reading_on() {
        refused(
            load_capped(
                "big.mtx",
                b"%%MatrixMarket matrix coordinate pattern general\n3000000000 3000000000 1\n1 2\n",
                4 * GIB,
            ),
            &["big.mtx", "declares 3 000 000 000 vertices and 1 edges"],
        );
    }

    #[test]
    fn generators_past_the_room_or_the_id_range_are_refused() {
        refused(
            load_path(&Input::parse("kron:31").expect("spec"), 16 * GIB),
            &[
                "kron:31:16",
                "scale 31 implies 2 147 483 648 vertices and 34 359 738 368 edges",
            ],
        );
        let e = Input::parse("kron:32").expect_err("u32").to_string();
        assert!(e.contains("1 to 31"), "{e}");
    }

    /// A file of `len` bytes that takes no disk: its header says what the test needs.
    fn sparse(name: &str, header: &[u8], len: u64) -> (tempfile::TempDir, Input) {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join(name);
        std::fs::write(&p, header).expect("write");
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .and_then(|f| f.set_len(len))
            .expect("extend");
        (d, Input::File(p))
    }

    #[test]
    fn gap_and_hwg_headers_are_checked_before_their_arrays() {
        let n = 1u64 << 30;
        let mut h = vec![0u8];
        h.extend_from_slice(&0i64.to_le_bytes());
        h.extend_from_slice(&(n as i64).to_le_bytes());
        let (_d, input) = sparse("big.sg", &h, 17 + (n + 1) * 8);
        refused(
            load_path(&input, GIB),
            &[
                "big.sg",
                "the header declares 1 073 741 824 vertices and 0 arcs",
            ],
        );
        let h = crate::io::hwg::test_header(n, 1 << 32);
        let (_d, input) = sparse("big.hwg", &h, 64 + (n + 1) * 8 + (1 << 34));
        refused(
            load_path(&input, GIB),
            &[
                "big.hwg",
                "the header declares 1 073 741 824 vertices and 4 294 967 296 arcs",
            ],
        );
    }

    #[test]
    fn kinds_by_name() {
        assert_eq!(
            file_kind(Path::new("a/g.el.zst")).expect("el"),
            FileKind::EdgeList
        );
        assert_eq!(
            file_kind(Path::new("g.WSG")).expect("wsg"),
            FileKind::WeightedGap
        );
        assert_eq!(
            file_kind(Path::new("g.wel.gz")).expect("wel"),
            FileKind::WeightedEdgeList
        );
        let e = file_kind(Path::new("g.txt")).expect_err("txt").to_string();
        assert!(e.contains("unknown graph file kind"), "{e}");
        assert!(matches!(
            Input::parse("kron:10").expect("gen"),
            Input::Gen(_)
        ));
        assert!(Input::parse("kron:x").is_err());
        assert_eq!(
            Input::parse("grid:3×4").expect("grid").to_string(),
            "grid:3x4"
        );
        assert!(Input::parse("grid:3").is_err());
        assert!(Input::parse("graph.txt").is_err());
    }
}
