//! The TLB hierarchy's shape, given at run time: L1 structures per page size, shared L2
//! structures, and an optional page-walk cache. Presets carry published organisations; a TOML
//! file can describe any other. Every check names the key it refuses.

use std::path::Path;

use hugewise_sys::read::{self, Bound};
use hugewise_sys::PageSize;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// One set-associative TLB structure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbSpec {
    /// Entries in all.
    pub entries: u32,
    /// Ways per set (`entries` for a fully associative structure).
    pub ways: u32,
    /// Page sizes it holds: `4k`, `2m`, `1g`.
    pub sizes: Vec<SizeName>,
}

impl TlbSpec {
    /// Sets (`entries / ways`).
    pub fn sets(&self) -> u32 {
        self.entries / self.ways.max(1)
    }
}

/// A page size as written in configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SizeName {
    /// 4 KiB.
    #[serde(rename = "4k")]
    K4,
    /// 2 MiB.
    #[serde(rename = "2m")]
    M2,
    /// 1 GiB.
    #[serde(rename = "1g")]
    G1,
}

impl SizeName {
    /// The page size.
    pub fn size(self) -> PageSize {
        match self {
            SizeName::K4 => PageSize::Size4K,
            SizeName::M2 => PageSize::Size2M,
            SizeName::G1 => PageSize::Size1G,
        }
    }
}

/// Entries of the page-walk caches, one fully associative LRU cache per upper level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PwcSpec {
    /// Cached PML4 entries (each maps 512 GiB).
    pub pml4: u32,
    /// Cached PDPT entries (each maps 1 GiB).
    pub pdpt: u32,
    /// Cached page-directory entries (each maps 2 MiB of 4 KiB pages).
    pub pd: u32,
}

/// The whole hierarchy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbConfig {
    /// A name for results (`haswell`, or the file's).
    #[serde(default)]
    pub name: String,
    /// First-level structures; each page size is held by exactly one.
    pub l1: Vec<TlbSpec>,
    /// Second-level structures, looked up on an L1 miss; a size none holds walks at once.
    #[serde(default)]
    pub l2: Vec<TlbSpec>,
    /// Page-walk caches; without them a walk reads 4, 3 or 2 entries for 4 KiB, 2 MiB and
    /// 1 GiB pages.
    #[serde(default)]
    pub pwc: Option<PwcSpec>,
}

/// Built-in organisations.
pub const PRESETS: &[&str] = &["haswell", "golden-cove", "zen4"];

fn spec(entries: u32, ways: u32, sizes: &[SizeName]) -> TlbSpec {
    TlbSpec {
        entries,
        ways,
        sizes: sizes.to_vec(),
    }
}

impl TlbConfig {
    /// The organisation as a result records it.
    pub fn record(&self) -> hugewise_results::sim::TlbRecord {
        use hugewise_results::sim::{PwcRecord, TlbLevel};
        let level = |specs: &[TlbSpec]| {
            specs
                .iter()
                .map(|s| TlbLevel {
                    entries: s.entries,
                    ways: s.ways,
                    sizes: s
                        .sizes
                        .iter()
                        .map(|z| {
                            match z {
                                SizeName::K4 => "4k",
                                SizeName::M2 => "2m",
                                SizeName::G1 => "1g",
                            }
                            .to_string()
                        })
                        .collect(),
                })
                .collect()
        };
        hugewise_results::sim::TlbRecord {
            name: self.name.clone(),
            l1: level(&self.l1),
            l2: level(&self.l2),
            pwc: self.pwc.map(|p| PwcRecord {
                pml4: p.pml4,
                pdpt: p.pdpt,
                pd: p.pd,
            }),
        }
    }

    /// A built-in organisation by name (see [`PRESETS`]).
    pub fn preset(name: &str) -> Result<TlbConfig> {
        use SizeName::*;
        let c = match name {
            // The seeds' evaluation machine (Haswell E5-2667 v3).
            "haswell" => TlbConfig {
                name: name.into(),
                l1: vec![spec(64, 4, &[K4]), spec(32, 4, &[M2]), spec(4, 4, &[G1])],
                l2: vec![spec(1024, 8, &[K4, M2])],
                pwc: None,
            },
            // Golden Cove / Raptor Cove cores (Sapphire and Emerald Rapids Xeons, family 6
            // models 143 and 207), from Intel's published description: the VM they were first
            // simulated for hid CPUID leaf 0x18, so they could not be read there.
            "golden-cove" => TlbConfig {
                name: name.into(),
                l1: vec![spec(96, 6, &[K4]), spec(32, 4, &[M2]), spec(8, 8, &[G1])],
                l2: vec![spec(2048, 16, &[K4, M2]), spec(1024, 8, &[G1])],
                pwc: None,
            },
            // AMD Zen 4: one fully associative L1 for all sizes, a 24-way L2.
            "zen4" => TlbConfig {
                name: name.into(),
                l1: vec![spec(72, 72, &[K4, M2, G1])],
                l2: vec![spec(3072, 24, &[K4, M2, G1])],
                pwc: None,
            },
            other => {
                return Err(Error::Config {
                    source_name: None,
                    key: "preset".into(),
                    what: format!("unknown preset '{other}' (known: {})", PRESETS.join(", ")),
                })
            }
        };
        c.validate(None)?;
        Ok(c)
    }

    /// Read a TOML file (at most [`Bound::SETTINGS`]); unknown keys are refused with their
    /// line.
    pub fn load(path: &Path) -> Result<TlbConfig> {
        let text = read::bounded_string(path, Bound::SETTINGS).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        let mut c: TlbConfig = toml::from_str(&text).map_err(|e| Error::Toml {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        if c.name.is_empty() {
            c.name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        c.validate(Some(path))?;
        Ok(c)
    }

    /// A preset name or a TOML file's path.
    pub fn resolve(name_or_path: &str) -> Result<TlbConfig> {
        if PRESETS.contains(&name_or_path) {
            TlbConfig::preset(name_or_path)
        } else {
            TlbConfig::load(Path::new(name_or_path))
        }
    }

    /// Check that the hierarchy can be built, naming the first key that cannot.
    pub fn validate(&self, file: Option<&Path>) -> Result<()> {
        let err = |key: String, what: String| Error::Config {
            source_name: file.map(Path::to_path_buf),
            key,
            what,
        };
        if self.l1.is_empty() {
            return Err(err(
                "l1".into(),
                "at least one L1 structure is needed".into(),
            ));
        }
        for (level, specs) in [("l1", &self.l1), ("l2", &self.l2)] {
            for (i, s) in specs.iter().enumerate() {
                let key = |k: &str| format!("{level}[{i}].{k}");
                if s.entries == 0 {
                    return Err(err(key("entries"), "must be at least 1".into()));
                }
                if s.ways == 0 {
                    return Err(err(key("ways"), "must be at least 1".into()));
                }
                if s.entries % s.ways != 0 {
                    return Err(err(
                        key("ways"),
                        format!(
                            "{} entries over {} ways is not a whole number of sets",
                            s.entries, s.ways
                        ),
                    ));
                }
                if !s.sets().is_power_of_two() {
                    return Err(err(
                        key("entries"),
                        format!(
                            "{} entries / {} ways = {} sets, not a power of two",
                            s.entries,
                            s.ways,
                            s.sets()
                        ),
                    ));
                }
                if s.ways > 1024 {
                    return Err(err(key("ways"), format!("{} ways is above 1024", s.ways)));
                }
                if s.sizes.is_empty() {
                    return Err(err(key("sizes"), "names no page size".into()));
                }
                for (j, a) in s.sizes.iter().enumerate() {
                    if s.sizes[..j].contains(a) {
                        return Err(err(key("sizes"), format!("{a:?} is listed twice")));
                    }
                }
            }
            for size in [SizeName::K4, SizeName::M2, SizeName::G1] {
                let holders = specs.iter().filter(|s| s.sizes.contains(&size)).count();
                let name = size.size();
                if level == "l1" && holders != 1 {
                    return Err(err(
                        "l1".into(),
                        format!(
                            "{name} pages are held by {holders} L1 structures, not exactly one"
                        ),
                    ));
                }
                if level == "l2" && holders > 1 {
                    return Err(err(
                        "l2".into(),
                        format!("{name} pages are held by {holders} L2 structures, at most one"),
                    ));
                }
            }
        }
        if let Some(p) = &self.pwc {
            for (k, v) in [("pwc.pml4", p.pml4), ("pwc.pdpt", p.pdpt), ("pwc.pd", p.pd)] {
                if v > 4096 {
                    return Err(err(k.into(), format!("{v} entries is above 4096")));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("tlb.toml");
        std::fs::write(&p, text).expect("write");
        (d, p)
    }

    #[test]
    fn presets_validate() {
        for p in PRESETS {
            let c = TlbConfig::preset(p).expect("preset");
            assert_eq!(c.name, *p);
        }
        assert!(TlbConfig::preset("k6")
            .expect_err("unknown")
            .to_string()
            .contains("haswell"));
    }

    #[test]
    fn a_file_round_trips_and_bad_keys_are_named() {
        let (_d, p) = write(
            "l1 = [{ entries = 64, ways = 4, sizes = [\"4k\"] },\n\
             { entries = 32, ways = 4, sizes = [\"2m\", \"1g\"] }]\n\
             l2 = [{ entries = 1024, ways = 8, sizes = [\"4k\", \"2m\"] }]\n\
             pwc = { pml4 = 2, pdpt = 4, pd = 32 }\n",
        );
        let c = TlbConfig::load(&p).expect("load");
        assert_eq!(c.name, "tlb");
        assert_eq!(c.l2[0].sets(), 128);

        let (_d, p) = write(
            "l1 = [{ entries = 64, ways = 4, sizes = [\"4k\", \"2m\", \"1g\"] }]\n\
             l2 = [{ entries = 1024, ways = 12, sizes = [\"4k\"] }]\n",
        );
        let e = TlbConfig::load(&p).expect_err("ways").to_string();
        assert!(
            e.contains("l2[0].ways") && e.contains("whole number"),
            "{e}"
        );

        let (_d, p) =
            write("l1 = [{ entries = 96, ways = 8, sizes = [\"4k\", \"2m\", \"1g\"] }]\n");
        let e = TlbConfig::load(&p).expect_err("sets").to_string();
        assert!(e.contains("l1[0].entries") && e.contains("12 sets"), "{e}");

        let (_d, p) = write(
            "l1 = [{ entries = 64, ways = 4, sizes = [\"4k\", \"2m\", \"1g\"], colour = 3 }]\n",
        );
        let e = TlbConfig::load(&p).expect_err("unknown key").to_string();
        assert!(e.contains("colour") && e.contains("line 1"), "{e}");

        let (_d, p) = write("l1 = [{ entries = 64, ways = 4, sizes = [\"4k\"] }]\n");
        let e = TlbConfig::load(&p).expect_err("2m uncovered").to_string();
        assert!(e.contains("2MiB pages are held by 0"), "{e}");
    }
}
