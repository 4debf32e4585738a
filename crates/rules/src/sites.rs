//! Call sites: where in a program an allocation was made, written `module+0xoffset` (the file's
//! name and the offset in that file of the instruction after the call), so that a site found in
//! one run names the same code in the next, wherever the loader placed the file.
//!
//! The preload library turns a return address into a site with the process's own
//! `/proc/self/maps`, and a site back into an address the same way.

use std::fmt;

use hugewise_sys::proc::MapEntry;
use hugewise_sys::read::shown;

/// Longest module name kept: a site fits the allocation log's 31 bytes.
pub const MODULE_MAX: usize = 18;

/// One call site.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Site {
    /// The file's name (its last path component, cut to [`MODULE_MAX`] bytes).
    pub module: String,
    /// Offset in the file.
    pub offset: u64,
}

impl Site {
    /// Parse `module+0xoffset`; the error says what is wrong.
    pub fn parse(s: &str) -> Result<Site, String> {
        let shown_s = shown(s);
        let (module, off) = s.rsplit_once('+').ok_or_else(|| {
            format!("site '{shown_s}': write MODULE+0xOFFSET, for example app+0x1a2b")
        })?;
        let hex = off
            .strip_prefix("0x")
            .ok_or_else(|| format!("site '{shown_s}': the offset must start with 0x"))?;
        let offset = u64::from_str_radix(hex, 16)
            .map_err(|_| format!("site '{shown_s}': the offset is not hexadecimal"))?;
        if module.is_empty() || module.len() > MODULE_MAX || module.contains(['/', ',', '=']) {
            return Err(format!(
                "site '{shown_s}': the module is a file name of 1 to {MODULE_MAX} bytes, without / , or ="
            ));
        }
        Ok(Site {
            module: module.to_string(),
            offset,
        })
    }
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{:#x}", self.module, self.offset)
    }
}

/// A module's name as sites write it.
fn short(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    let mut end = base.len().min(MODULE_MAX);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    base[..end].to_string()
}

#[derive(Debug, Clone)]
struct Segment {
    start: usize,
    end: usize,
    offset: u64,
    module: String,
}

/// The file-backed mappings of one process, for turning addresses into sites and back.
#[derive(Debug, Clone, Default)]
pub struct Modules(Vec<Segment>);

impl Modules {
    /// From a process's mappings.
    pub fn from_maps(maps: &[MapEntry]) -> Modules {
        let mut v: Vec<Segment> = maps
            .iter()
            .filter(|m| m.inode != 0)
            .filter_map(|m| {
                let name = m.name.as_deref()?;
                name.starts_with('/').then(|| Segment {
                    start: m.start,
                    end: m.end,
                    offset: m.offset,
                    module: short(name),
                })
            })
            .collect();
        v.sort_by_key(|s| s.start);
        Modules(v)
    }

    /// The calling process's modules now.
    pub fn of_self() -> Modules {
        hugewise_sys::proc::ProcFs::default()
            .maps(hugewise_sys::proc::Pid::Current)
            .map(|m| Modules::from_maps(&m))
            .unwrap_or_default()
    }

    /// The site of code address `addr`; None when no file maps it.
    pub fn site(&self, addr: usize) -> Option<Site> {
        let i = self.0.partition_point(|s| s.end <= addr);
        let s = self.0.get(i).filter(|s| s.start <= addr)?;
        Some(Site {
            module: s.module.clone(),
            offset: s.offset + (addr - s.start) as u64,
        })
    }

    /// Where `site` is in this process; None when its module is not loaded (or not there).
    pub fn address(&self, site: &Site) -> Option<usize> {
        self.0
            .iter()
            .find(|s| {
                s.module == site.module
                    && (s.offset..s.offset + (s.end - s.start) as u64).contains(&site.offset)
            })
            .map(|s| s.start + (site.offset - s.offset) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(start: usize, end: usize, offset: u64, name: &str) -> MapEntry {
        MapEntry {
            start,
            end,
            read: true,
            write: false,
            exec: true,
            private: true,
            offset,
            inode: 7,
            name: Some(name.to_string()),
        }
    }

    #[test]
    fn sites_print_and_parse_and_bad_ones_say_why() {
        let s = Site::parse("app+0x1a2b").expect("parse");
        assert_eq!((s.module.as_str(), s.offset), ("app", 0x1a2b));
        assert_eq!(s.to_string(), "app+0x1a2b");
        let lib = Site::parse("libc++.so.1+0x10").expect("a plus in the name");
        assert_eq!(lib.module, "libc++.so.1");
        for (bad, why) in [
            ("app", "write MODULE+0xOFFSET"),
            ("app+1a2b", "must start with 0x"),
            ("app+0xzz", "not hexadecimal"),
            ("+0x10", "1 to 18 bytes"),
            ("a/b+0x10", "without /"),
        ] {
            let err = Site::parse(bad).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn addresses_become_sites_and_sites_addresses_wherever_the_file_is_loaded() {
        let run1 = Modules::from_maps(&[
            seg(0x5000, 0x6000, 0x1000, "/usr/bin/app"),
            seg(
                0x7f00_0000,
                0x7f01_0000,
                0x28000,
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
            ),
        ]);
        let site = run1.site(0x5123).expect("in app");
        assert_eq!(site.to_string(), "app+0x1123");
        assert_eq!(run1.site(0x4fff), None);
        assert_eq!(
            run1.site(0x7f00_0010).expect("in libc").to_string(),
            "libc.so.6+0x28010"
        );
        let run2 = Modules::from_maps(&[seg(0x9000, 0xa000, 0x1000, "/usr/bin/app")]);
        assert_eq!(run2.address(&site), Some(0x9123));
        let elsewhere = Site {
            offset: 0x5000,
            ..site
        };
        assert_eq!(run2.address(&elsewhere), None);
        assert_eq!(
            short("/opt/a-very-long-library-name.so.1"),
            "a-very-long-librar"
        );
    }

    #[test]
    fn this_process_finds_its_own_code() {
        let m = Modules::of_self();
        let here = this_process_finds_its_own_code as *const () as usize;
        let site = m.site(here).expect("the test binary maps its code");
        assert_eq!(m.address(&site), Some(here));
    }
}
