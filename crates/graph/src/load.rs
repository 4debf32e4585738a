//! One entry point from a graph spec (`kron:22`, `urand:20:8`, or a file) to a CSR.

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use hugewise_results::graph::LoadStats;

use crate::build::{build, BuildOptions};
use crate::gen::{Generator, Spec};
use crate::io::{edgelist::EdgeList, gap, hwg, mtx::MatrixMarket};
use crate::{Csr, Error, Layout, Result};

/// Where a graph comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A generator (always symmetric, as the GAP suite's).
    Gen(Spec),
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
    /// `kron:…` and `urand:…` are generators; anything else is a path whose name must say a
    /// kind hugewise reads.
    pub fn parse(s: &str) -> Result<Input> {
        if s.starts_with("kron:") || s.starts_with("urand:") {
            Ok(Input::Gen(s.parse()?))
        } else {
            let p = PathBuf::from(s);
            file_kind(&p)?;
            Ok(Input::File(p))
        }
    }
}

impl std::fmt::Display for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Input::Gen(s) => s.fmt(f),
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
                 .zst), .sg or .wsg (GAP), .hwg (hugewise), or a generator such as kron:22",
                p.display()
            )))
        }
    })
}

/// Options of a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// Seed for generators.
    pub seed: u64,
    /// Make a weighted graph: generators draw weights, unweighted files get hashed weights in
    /// [1, 255] (see [`Csr::add_weights`]); `.wel` and `.wsg` carry their own.
    pub weighted: bool,
    /// Symmetrize a text edge list (generators always are; GAP files say themselves).
    pub symmetrize: bool,
}

/// Load `input` into regions laid out by `layout`; `before_alloc(n)` runs before the graph's
/// arrays are created.
pub fn load(
    input: &Input,
    opts: LoadOptions,
    layout: &Layout,
    before_alloc: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<(Csr, LoadStats)> {
    let t = Instant::now();
    let (mut g, build) = match input {
        Input::Gen(spec) => {
            let mut g = Generator::new(*spec, opts.seed, opts.weighted);
            build(
                &mut g,
                BuildOptions { symmetrize: true },
                layout,
                before_alloc,
            )?
        }
        Input::File(p) => match file_kind(p)? {
            k @ (FileKind::EdgeList | FileKind::WeightedEdgeList) => {
                let mut src = EdgeList::new(p, k == FileKind::WeightedEdgeList);
                build(
                    &mut src,
                    BuildOptions {
                        symmetrize: opts.symmetrize,
                    },
                    layout,
                    before_alloc,
                )?
            }
            FileKind::MatrixMarket => {
                let mut src = MatrixMarket::open(p)?;
                let symmetrize = opts.symmetrize || src.header().symmetric;
                build(&mut src, BuildOptions { symmetrize }, layout, before_alloc)?
            }
            FileKind::Hugewise => hwg::read(p, layout, before_alloc)?,
            FileKind::Gap => gap::read(p, false, layout, before_alloc)?,
            FileKind::WeightedGap => gap::read(p, true, layout, before_alloc)?,
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(Input::parse("graph.txt").is_err());
    }
}
