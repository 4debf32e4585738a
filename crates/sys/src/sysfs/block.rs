//! Block devices: the counters of `block/DEV/stat` (or `dev/block/MAJ:MIN/stat`), and which
//! device holds a file.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::SysFs;
use crate::{Error, Result};

/// A block device by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevNum {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl DevNum {
    /// The device that holds the file at `path` (for a block device node, the device itself).
    pub fn of_path(path: &Path) -> Result<DevNum> {
        let m = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        use std::os::unix::fs::FileTypeExt;
        let dev = if m.file_type().is_block_device() {
            m.rdev()
        } else {
            m.dev()
        };
        Ok(DevNum {
            major: libc::major(dev),
            minor: libc::minor(dev),
        })
    }
}

impl std::fmt::Display for DevNum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

/// The counters of a block device's `stat` file since boot (see the kernel's
/// `Documentation/block/stat.rst`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockStat {
    /// Reads completed.
    pub reads: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Writes completed.
    pub writes: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Requests in flight now.
    pub in_flight: u64,
    /// Milliseconds the device had requests in flight.
    pub io_ticks_ms: u64,
    /// Milliseconds spent by all requests in flight, summed (mean queue depth = its growth over
    /// elapsed time).
    pub time_in_queue_ms: u64,
}

impl BlockStat {
    pub(super) fn parse(path: &Path, text: &str) -> Result<BlockStat> {
        let v: Vec<u64> = text
            .split_whitespace()
            .map(|x| x.parse())
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::parse(path, 1, format!("not a number: {e}")))?;
        if v.len() < 11 {
            return Err(Error::parse(
                path,
                1,
                format!("{} fields where at least 11 were expected", v.len()),
            ));
        }
        Ok(BlockStat {
            reads: v[0],
            read_sectors: v[2],
            writes: v[4],
            write_sectors: v[6],
            in_flight: v[8],
            io_ticks_ms: v[9],
            time_in_queue_ms: v[10],
        })
    }
}

impl SysFs {
    /// The counters of block device `dev` (a whole disk or a partition).
    pub fn block_stat(&self, dev: DevNum) -> Result<BlockStat> {
        let rel = format!("dev/block/{dev}/stat");
        let text = self.read(&rel)?;
        BlockStat::parse(&self.path(&rel), &text)
    }

    /// The kernel's name of block device `dev` (`vda`, `nvme0n1p2`), from its `uevent`.
    pub fn block_name(&self, dev: DevNum) -> Result<Option<String>> {
        Ok(self
            .read_opt(&format!("dev/block/{dev}/uevent"))?
            .and_then(|u| {
                u.lines()
                    .find_map(|l| l.strip_prefix("DEVNAME=").map(str::to_string))
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_by_position() {
        let dir = tempfile::tempdir().expect("tmp");
        let d = dir.path().join("dev/block/254:0");
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(
            d.join("stat"),
            "  264303     6716 17468394   204866   594498   476153 33367786  3009547        3   602604  3293713        0        0        0        0    50712    79298\n",
        )
        .expect("write");
        std::fs::write(
            d.join("uevent"),
            "MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n",
        )
        .expect("write");
        let sys = SysFs::new(dir.path());
        let dev = DevNum {
            major: 254,
            minor: 0,
        };
        let s = sys.block_stat(dev).expect("stat");
        assert_eq!(
            (
                s.reads,
                s.read_sectors,
                s.writes,
                s.in_flight,
                s.time_in_queue_ms
            ),
            (264303, 17468394, 594498, 3, 3293713)
        );
        assert_eq!(sys.block_name(dev).expect("uevent").as_deref(), Some("vda"));
        std::fs::write(d.join("stat"), "1 2 3\n").expect("write");
        assert!(sys.block_stat(dev).is_err());
    }

    #[test]
    fn the_device_of_a_file_has_counters() {
        let dev = DevNum::of_path(
            Path::new("/proc/self/exe")
                .canonicalize()
                .as_deref()
                .unwrap_or(Path::new("/")),
        )
        .expect("device");
        // Overlay and virtual filesystems have anonymous devices without counters.
        if let Ok(s) = SysFs::default().block_stat(dev) {
            assert!(s.reads > 0 || s.writes > 0);
        }
    }
}
