//! Saving a graph in the format its file name asks for: `.hwg` (hugewise's checksummed binary
//! CSR), `.sg` or `.wsg` (the GAP suite's, unweighted and weighted), always atomically.

use std::path::Path;

use crate::io::{gap, hwg};
use crate::{Csr, Error, Result};

/// A format a graph can be saved in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// hugewise's `.hwg`.
    Hwg,
    /// GAP's unweighted `.sg`.
    Sg,
    /// GAP's weighted `.wsg`.
    Wsg,
}

impl Format {
    /// The format `path`'s extension names; checked before any work so that a wrong name
    /// fails at once.
    pub fn of_path(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("hwg") => Ok(Format::Hwg),
            Some("sg") => Ok(Format::Sg),
            Some("wsg") => Ok(Format::Wsg),
            _ => Err(Error::Invalid(format!(
                "{}: write .hwg (hugewise), .sg or .wsg (GAP)",
                path.display()
            ))),
        }
    }

    /// The extension, which is also the format's name in results.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Hwg => "hwg",
            Format::Sg => "sg",
            Format::Wsg => "wsg",
        }
    }

    /// Refuse a graph the format cannot hold as it is: GAP keeps weights in `.wsg` only.
    pub fn check(self, g: &Csr, path: &Path) -> Result<()> {
        let gap_weighted = match self {
            Format::Hwg => return Ok(()),
            Format::Sg => false,
            Format::Wsg => true,
        };
        if gap_weighted != g.weighted() {
            let (kind, ext) = if g.weighted() {
                ("weighted", "wsg")
            } else {
                ("unweighted", "sg")
            };
            return Err(Error::Invalid(format!(
                "{}: a {kind} graph goes to a .{ext} file",
                path.display()
            )));
        }
        Ok(())
    }
}

/// Save `g` to `path` in the format its extension names, atomically (a temporary file renamed
/// over `path`); returns the format and the file's size in bytes.
pub fn save(g: &Csr, path: &Path) -> Result<(Format, u64)> {
    let format = Format::of_path(path)?;
    format.check(g, path)?;
    hugewise_sys::file::write_atomic_with(path, &mut |w| match format {
        Format::Hwg => hwg::write_to(g, w),
        Format::Sg | Format::Wsg => gap::write_to(g, w),
    })
    .map_err(|e| Error::io(path, e))?;
    let bytes = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    Ok((format, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::build_default;
    use crate::gen::{Generator, Spec};
    use crate::load::{load, Input, LoadOptions};
    use crate::Layout;

    fn kron(weighted: bool) -> Csr {
        let mut g = Generator::new("kron:8".parse::<Spec>().expect("spec"), 5, weighted);
        build_default(&mut g, true).expect("build")
    }

    fn reload(path: &Path) -> Csr {
        let input = Input::parse(path.to_str().expect("utf-8")).expect("input");
        let opts = LoadOptions {
            seed: 1,
            weighted: false,
            symmetrize: false,
            fit: Default::default(),
        };
        load(&input, opts, &Layout::default(), &mut |_| Ok(()))
            .expect("reload")
            .0
    }

    #[test]
    fn each_extension_writes_its_format_and_reads_back() {
        let d = tempfile::tempdir().expect("tmp");
        for (g, name, want) in [
            (kron(false), "g.hwg", Format::Hwg),
            (kron(false), "g.sg", Format::Sg),
            (kron(true), "g.wsg", Format::Wsg),
        ] {
            let path = d.path().join(name);
            let (format, bytes) = save(&g, &path).expect("save");
            assert_eq!(format, want);
            assert_eq!(bytes, std::fs::metadata(&path).expect("stat").len());
            let back = reload(&path);
            assert_eq!((back.n(), back.arcs()), (g.n(), g.arcs()), "{name}");
            assert_eq!(back.weighted(), g.weighted(), "{name}");
        }
        assert_eq!(std::fs::read_dir(d.path()).expect("ls").count(), 3);
    }

    #[test]
    fn wrong_names_are_refused_before_writing() {
        let d = tempfile::tempdir().expect("tmp");
        let e = save(&kron(false), &d.path().join("g.txt")).expect_err("txt");
        assert!(e.to_string().contains(".hwg"), "{e}");
        let e = save(&kron(false), &d.path().join("g.wsg")).expect_err("unweighted wsg");
        assert!(
            e.to_string().contains("unweighted graph goes to a .sg"),
            "{e}"
        );
        let e = save(&kron(true), &d.path().join("g.sg")).expect_err("weighted sg");
        assert!(
            e.to_string().contains("weighted graph goes to a .wsg"),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(d.path()).expect("ls").count(), 0);
    }
}
