//! `/proc/swaps`: the active swap areas.

use std::path::{Path, PathBuf};

pub use hugewise_results::machine::SwapArea;

use crate::{Error, Result};

/// Undo the kernel's octal escapes of white space in paths (`\040` for a space).
pub(super) fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.len() - i >= 4 && field.is_char_boundary(i + 4) {
            let oct = &field[i + 1..i + 4];
            if let Ok(v) = u8::from_str_radix(oct, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn parse(path: &Path, text: &str) -> Result<Vec<SwapArea>> {
    let mut areas = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |m: &str| Error::parse(path, i + 1, format!("{m}: {line:?}"));
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 {
            return Err(bad("expected 5 fields"));
        }
        let kib = |s: &str| s.parse::<u64>().map_err(|_| bad("bad size"));
        areas.push(SwapArea {
            path: PathBuf::from(unescape(f[0])),
            kind: f[1].to_string(),
            size_bytes: kib(f[2])? * 1024,
            used_bytes: kib(f[3])? * 1024,
            priority: f[4].parse().map_err(|_| bad("bad priority"))?,
        });
    }
    Ok(areas)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_areas_and_escaped_paths() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /tmp/sw.test                            file\t\t65532\t\t0\t\t-2\n\
                    /var/my\\040swap file 1024 4 5\n";
        let a = parse(Path::new("swaps"), text).expect("parse");
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].path, PathBuf::from("/tmp/sw.test"));
        assert_eq!(a[0].size_bytes, 65532 * 1024);
        assert_eq!(a[0].priority, -2);
        assert_eq!(a[1].path, PathBuf::from("/var/my swap"));
        let e = parse(Path::new("swaps"), "h\n/x file 1\n").expect_err("short");
        assert!(e.to_string().contains("swaps:2"), "{e}");
    }
}
