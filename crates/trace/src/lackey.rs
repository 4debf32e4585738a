//! Importing Valgrind lackey output (`valgrind --tool=lackey --trace-mem=yes`), streaming.
//!
//! Lines ` L addr,size` (load), ` S addr,size` (store) and ` M addr,size` (modify: one access
//! that writes) become accesses; instruction fetches (`I`) and Valgrind's own `==pid==` lines
//! are skipped. The regions are found from the first window of accesses: the 2 MiB frames
//! they touch, grouped into at most 14 address clusters (so each region's deltas ride in one
//! byte of slot); later accesses outside them are kept as outside accesses. Memory is the
//! window, never the trace.

use std::io::BufRead;

use hugewise_sys::read::{shown, Lines};
use std::path::Path;

use crate::writer::Summary;
use crate::{Error, Header, Region, Result, Writer};

/// Accesses read before the regions are fixed.
pub const WINDOW: usize = 4 << 20;
/// Most regions made (slots 0..14 cost no extra byte).
const MAX_REGIONS: usize = 14;
const FRAME: u64 = 2 << 20;

/// What an import did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    /// The trace written.
    pub summary: Summary,
    /// Lines read.
    pub lines: u64,
    /// Instruction fetches skipped.
    pub instructions: u64,
}

fn parse(line: &str) -> std::result::Result<Option<(u64, bool)>, String> {
    let t = line.trim_end();
    if t.is_empty() || t.starts_with("==") || t.starts_with("--") {
        return Ok(None);
    }
    let (kind, rest) = if let Some(r) = t.strip_prefix("I ") {
        ('I', r)
    } else {
        let b = t.trim_start();
        let mut c = b.chars();
        let k = c.next().ok_or("empty")?;
        (k, c.as_str())
    };
    let (addr, size) = rest
        .trim()
        .split_once(',')
        .ok_or("expected ADDRESS,SIZE after the access kind")?;
    let a = u64::from_str_radix(addr.trim(), 16)
        .map_err(|_| format!("'{}' is not a hex address", shown(addr)))?;
    size.trim()
        .parse::<u32>()
        .map_err(|_| format!("'{}' is not a size", shown(size)))?;
    match kind {
        'I' => Ok(Some((u64::MAX, false))),
        'L' => Ok(Some((a, false))),
        'S' | 'M' => Ok(Some((a, true))),
        k => Err(format!(
            "unknown access kind '{}' (lackey writes I, L, S, M)",
            shown(k.encode_utf8(&mut [0; 4]))
        )),
    }
}

/// Regions covering the frames in `addrs`: clusters whose gaps are under a threshold that
/// doubles until at most [`MAX_REGIONS`] remain.
fn regions_of(addrs: &[u64]) -> Vec<Region> {
    let mut frames: Vec<u64> = addrs.iter().map(|a| a / FRAME).collect();
    frames.sort_unstable();
    frames.dedup();
    let mut gap = 1u64;
    loop {
        let mut clusters: Vec<(u64, u64)> = Vec::new();
        for &f in &frames {
            match clusters.last_mut() {
                Some(c) if f - c.1 <= gap => c.1 = f,
                _ => clusters.push((f, f)),
            }
        }
        if clusters.len() <= MAX_REGIONS {
            return clusters
                .into_iter()
                .map(|(a, b)| Region {
                    name: format!("{:#x}", a * FRAME),
                    base: a * FRAME,
                    size: (b - a + 1) * FRAME,
                })
                .collect();
        }
        gap *= 2;
    }
}

/// Import lackey output from `input` (named `name` in errors) into a trace at `out`. Input that
/// is not text (a NUL byte, a line over [`hugewise_sys::read::MAX_LINE`]) is refused at its
/// byte offset.
pub fn import(input: impl BufRead, name: &Path, out: &Path, window: usize) -> Result<Imported> {
    let mut lines = 0u64;
    let mut instructions = 0u64;
    let mut pending: Vec<u64> = Vec::new();
    let mut writer: Option<Writer> = None;
    let mut input = Lines::new(input);
    while let Some(line) = input.next_line().map_err(|e| Error::Io {
        path: name.to_path_buf(),
        source: e,
    })? {
        lines += 1;
        let parsed = parse(line).map_err(|what| Error::Lackey {
            path: name.to_path_buf(),
            line: lines,
            content: shown(line.trim_end()),
            what,
        })?;
        let Some((addr, write)) = parsed else {
            continue;
        };
        if addr == u64::MAX {
            instructions += 1;
            continue;
        }
        match &mut writer {
            Some(w) => w.push(0, addr, write)?,
            None => {
                pending.push((addr << 1) | u64::from(write));
                if pending.len() >= window.max(1) {
                    writer = Some(start(out, &pending)?);
                    pending = Vec::new();
                }
            }
        }
    }
    let w = match writer {
        Some(w) => w,
        None => start(out, &pending)?,
    };
    Ok(Imported {
        summary: w.finish()?,
        lines,
        instructions,
    })
}

fn start(out: &Path, pending: &[u64]) -> Result<Writer> {
    let addrs: Vec<u64> = pending.iter().map(|p| p >> 1).collect();
    let header = Header {
        addr_shift: 0,
        streams: 1,
        regions: regions_of(&addrs),
    };
    let mut w = Writer::create(out, &header, 1 << 20)?;
    w.push_packed(0, pending)?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_or_say_why() {
        assert_eq!(parse(" L 04222cac,4"), Ok(Some((0x0422_2cac, false))));
        assert_eq!(parse(" S 7ff000398,8"), Ok(Some((0x7_ff00_0398, true))));
        assert_eq!(parse(" M 0421d0a0,4\n"), Ok(Some((0x0421_d0a0, true))));
        assert_eq!(parse("I  04016b0,3"), Ok(Some((u64::MAX, false))));
        assert_eq!(
            parse("==12345== Lackey, an example Valgrind tool"),
            Ok(None)
        );
        assert_eq!(parse(""), Ok(None));
        assert!(parse(" X 0400,4")
            .expect_err("kind")
            .contains("unknown access kind"));
        assert!(parse(" L zz,4")
            .expect_err("hex")
            .contains("not a hex address"));
        assert!(parse(" L 0400").expect_err("size").contains("ADDRESS,SIZE"));
    }

    #[test]
    fn binary_or_endless_input_is_refused_and_a_bad_line_shown_cut() {
        let d = tempfile::tempdir().expect("tmp");
        let out = d.path().join("t.hwt");
        let name = Path::new("lackey.txt");
        let e = import(&b" L 0400,4\n L \x00\n"[..], name, &out, 4)
            .expect_err("nul")
            .to_string();
        assert!(e.starts_with("lackey.txt: byte 13: a NUL byte"), "{e}");
        let endless = std::io::BufReader::new(std::io::repeat(b'L'));
        let e = import(endless, name, &out, 4)
            .expect_err("endless")
            .to_string();
        assert!(
            e.starts_with("lackey.txt: byte 0: a line longer than 1 MiB"),
            "{e}"
        );
        let long = format!(" L \x1b{},4\n", "f".repeat(100_000));
        let e = import(long.as_bytes(), name, &out, 4)
            .expect_err("long")
            .to_string();
        assert!(e.len() < 500 && e.contains("(100006 bytes)"), "{e}");
        assert!(!e.contains('\x1b'), "{e}");
    }

    #[test]
    fn clusters_stay_few() {
        let addrs: Vec<u64> = (0..100).map(|i| i * (1 << 30)).chain([5 << 20]).collect();
        let r = regions_of(&addrs);
        assert!(r.len() <= MAX_REGIONS && !r.is_empty());
        assert!(addrs
            .iter()
            .all(|&a| r.iter().any(|x| a >= x.base && a < x.base + x.size)));
    }
}
