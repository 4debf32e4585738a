//! The on-disk layout: header, region table, block and end records. All integers are
//! little-endian.

use std::path::Path;

use crate::{Error, Result};

/// First bytes of every trace.
pub const MAGIC: &[u8; 8] = b"HWTRACE\0";
/// Format version this crate writes and reads.
pub const VERSION: u16 = 1;
/// Tag of a block of accesses.
pub const BLOCK_TAG: &[u8; 4] = b"HWB1";
/// Tag of the end record.
pub const END_TAG: &[u8; 4] = b"HWE1";
/// Bytes of a block's header.
pub const BLOCK_HEADER: usize = 24;
/// Bytes of the end record.
pub const END_RECORD: usize = 24;
/// Most accesses in one block (bounds the reader's memory).
pub const MAX_BLOCK_ACCESSES: u32 = 1 << 22;

/// One memory access: a virtual address and whether it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Virtual address (with the trace's low `addr_shift` bits zero).
    pub addr: u64,
    /// A store (or read-modify-write) rather than a load.
    pub write: bool,
}

impl Access {
    /// Packed as `addr << 1 | write`, the form blocks decode to.
    #[inline]
    pub fn pack(self) -> u64 {
        (self.addr << 1) | u64::from(self.write)
    }

    /// Inverse of [`Access::pack`].
    #[inline]
    pub fn unpack(p: u64) -> Access {
        Access {
            addr: p >> 1,
            write: p & 1 == 1,
        }
    }
}

/// A named address range of the traced program (an array, or a mapping from the importer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Name, e.g. `property`.
    pub name: String,
    /// First address.
    pub base: u64,
    /// Bytes.
    pub size: u64,
}

/// What the header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Addresses are stored shifted right by this many bits (2 for arrays of 4-byte elements,
    /// 0 for byte addresses).
    pub addr_shift: u8,
    /// Access streams (one per thread).
    pub streams: u16,
    /// The program's regions, sorted by base.
    pub regions: Vec<Region>,
}

impl Header {
    /// The region holding `addr`, if any.
    pub fn region_of(&self, addr: u64) -> Option<usize> {
        let i = self.regions.partition_point(|r| r.base <= addr);
        let r = self.regions.get(i.checked_sub(1)?)?;
        (addr - r.base < r.size).then_some(i - 1)
    }

    /// Check the header before writing it.
    pub fn validate(&self) -> Result<()> {
        if self.addr_shift > 12 {
            return Err(Error::Invalid(format!(
                "addr_shift {} is above 12 (one 4 KiB page)",
                self.addr_shift
            )));
        }
        if self.streams == 0 {
            return Err(Error::Invalid("a trace needs at least one stream".into()));
        }
        for w in self.regions.windows(2) {
            if w[1].base < w[0].base.saturating_add(w[0].size) {
                return Err(Error::Invalid(format!(
                    "regions {} and {} overlap or are not sorted by base",
                    w[0].name, w[1].name
                )));
            }
        }
        if let Some(r) = self
            .regions
            .iter()
            .find(|r| r.name.len() > u16::MAX as usize)
        {
            return Err(Error::Invalid(format!(
                "region name too long: {}...",
                &r.name[..32]
            )));
        }
        Ok(())
    }

    /// The header's bytes, CRC included.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.push(self.addr_shift);
        b.extend_from_slice(&[0; 3]);
        b.extend_from_slice(&0u32.to_le_bytes()); // header length, patched below
        b.extend_from_slice(&(self.regions.len() as u32).to_le_bytes());
        b.extend_from_slice(&u32::from(self.streams).to_le_bytes());
        for r in &self.regions {
            b.extend_from_slice(&(r.name.len() as u16).to_le_bytes());
            b.extend_from_slice(r.name.as_bytes());
            b.extend_from_slice(&r.base.to_le_bytes());
            b.extend_from_slice(&r.size.to_le_bytes());
        }
        let len = (b.len() + 4) as u32;
        b[16..20].copy_from_slice(&len.to_le_bytes());
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parse a header from the first bytes of `path` (`bytes` holds at least the whole header,
    /// or all of a shorter file). Returns the header and its length.
    pub fn decode(path: &Path, bytes: &[u8]) -> Result<(Header, usize)> {
        let trunc = |off: usize, what: &str| Error::Truncated {
            path: path.to_path_buf(),
            offset: off as u64,
            what: what.to_string(),
        };
        let bad = |off: usize, what: String| Error::Corrupt {
            path: path.to_path_buf(),
            offset: off as u64,
            what,
        };
        if bytes.len() < 28 {
            return Err(trunc(bytes.len(), "the 28-byte header"));
        }
        if &bytes[..8] != MAGIC {
            return Err(bad(0, "not a hugewise trace (no HWTRACE magic)".into()));
        }
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        if version != VERSION {
            return Err(bad(
                8,
                format!("format version {version}; this hugewise reads version {VERSION}"),
            ));
        }
        let u32_at =
            |o: usize| u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
        let len = u32_at(16) as usize;
        if len < 32 {
            return Err(bad(16, format!("header length {len} is too small")));
        }
        if bytes.len() < len {
            return Err(trunc(bytes.len(), "the region table"));
        }
        let crc = u32_at(len - 4);
        if crc32fast::hash(&bytes[..len - 4]) != crc {
            return Err(bad(len - 4, "header checksum mismatch".into()));
        }
        let addr_shift = bytes[12];
        let count = u32_at(20) as usize;
        let streams = u32_at(24);
        let streams = u16::try_from(streams)
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| bad(24, format!("{streams} streams")))?;
        let mut at = 28;
        let mut regions = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            if at + 2 > len - 4 {
                return Err(bad(at, "region table runs past the header".into()));
            }
            let n = u16::from_le_bytes([bytes[at], bytes[at + 1]]) as usize;
            if at + 2 + n + 16 > len - 4 {
                return Err(bad(at, "region entry runs past the header".into()));
            }
            let name = std::str::from_utf8(&bytes[at + 2..at + 2 + n])
                .map_err(|_| bad(at + 2, "region name is not UTF-8".into()))?
                .to_string();
            let o = at + 2 + n;
            let u64_at = |o: usize| {
                let mut a = [0u8; 8];
                a.copy_from_slice(&bytes[o..o + 8]);
                u64::from_le_bytes(a)
            };
            regions.push(Region {
                name,
                base: u64_at(o),
                size: u64_at(o + 8),
            });
            at = o + 16;
        }
        let h = Header {
            addr_shift,
            streams,
            regions,
        };
        h.validate().map_err(|e| bad(28, e.to_string()))?;
        Ok((h, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            addr_shift: 2,
            streams: 2,
            regions: vec![
                Region {
                    name: "offsets".into(),
                    base: 0x1000,
                    size: 0x1000,
                },
                Region {
                    name: "property".into(),
                    base: 0x4000,
                    size: 0x100,
                },
            ],
        }
    }

    #[test]
    fn header_roundtrip_and_region_lookup() {
        let h = header();
        let b = h.encode();
        let (back, len) = Header::decode(Path::new("t"), &b).expect("decode");
        assert_eq!(back, h);
        assert_eq!(len, b.len());
        assert_eq!(h.region_of(0x1000), Some(0));
        assert_eq!(h.region_of(0x1fff), Some(0));
        assert_eq!(h.region_of(0x2000), None);
        assert_eq!(h.region_of(0x40ff), Some(1));
        assert_eq!(h.region_of(0x10), None);
    }

    #[test]
    fn damage_is_named_by_offset() {
        let b = header().encode();
        for cut in 0..b.len() {
            let e = Header::decode(Path::new("t"), &b[..cut]).expect_err("short");
            assert!(e.to_string().contains("truncated at byte"), "{cut}: {e}");
        }
        let mut bad = b.clone();
        bad[30] ^= 1;
        let e = Header::decode(Path::new("t"), &bad).expect_err("crc");
        assert!(e.to_string().contains("checksum"), "{e}");
        let mut v2 = b.clone();
        v2[8] = 2;
        assert!(Header::decode(Path::new("t"), &v2)
            .expect_err("version")
            .to_string()
            .contains("version 2"));
    }

    #[test]
    fn overlapping_regions_are_refused() {
        let mut h = header();
        h.regions[1].base = 0x1800;
        assert!(h.validate().is_err());
    }
}
