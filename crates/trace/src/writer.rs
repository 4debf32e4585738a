//! Writing a trace: accesses are buffered per stream, encoded as deltas, and each full block is
//! compressed and appended. The file appears under its name only once `finish` succeeds: a
//! crash or an early drop leaves no half trace behind.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::format::{Header, BLOCK_TAG, END_TAG, MAX_BLOCK_ACCESSES};
use crate::varint::{put, zigzag};

/// Slots 0 to 14 ride in the access's varint; 15 says the slot follows as its own varint.
pub(crate) const SLOT_ESCAPE: usize = 15;

/// One access: `zigzag(delta) << 5 | slot << 1 | write`, the delta taken from the previous
/// address of the same slot (region), so that an array read in order costs a byte or two
/// however the program interleaves its arrays.
#[inline]
fn encode_access(out: &mut Vec<u8>, slot: usize, delta: i64, write: bool) {
    let small = slot.min(SLOT_ESCAPE) as u64;
    put(out, (zigzag(delta) << 5) | (small << 1) | u64::from(write));
    if slot >= SLOT_ESCAPE {
        put(out, (slot - SLOT_ESCAPE) as u64);
    }
}
use crate::{Error, Result};

/// zstd level: the fastest, since capture speed matters more than the last bytes.
const LEVEL: i32 = 1;

/// A block's checksum covers its header fields and its data.
pub(crate) fn block_crc(fields: &[u8], data: &[u8]) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(fields);
    c.update(data);
    c.finalize()
}

struct Stream {
    /// Last address seen per slot (one per region, then one for addresses outside them).
    prev: Vec<u64>,
    last_slot: usize,
    count: u32,
    raw: Vec<u8>,
}

/// What a finished trace holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Accesses written.
    pub accesses: u64,
    /// Blocks written.
    pub blocks: u64,
    /// File size.
    pub bytes: u64,
}

/// An open trace being written.
pub struct Writer {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
    shift: u8,
    header: Header,
    block_accesses: u32,
    streams: Vec<Stream>,
    written: u64,
    accesses: u64,
    blocks: u64,
    compressor: zstd::bulk::Compressor<'static>,
}

impl Writer {
    /// Start a trace at `path` with blocks of `block_accesses` accesses (at most 4 Mi).
    pub fn create(path: &Path, header: &Header, block_accesses: u32) -> Result<Writer> {
        header.validate()?;
        if block_accesses == 0 || block_accesses > MAX_BLOCK_ACCESSES {
            return Err(Error::Invalid(format!(
                "block size {block_accesses} is outside 1..={MAX_BLOCK_ACCESSES} accesses"
            )));
        }
        let name = path
            .file_name()
            .ok_or_else(|| Error::Invalid(format!("{} is not a file name", path.display())))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        let f = File::create(&tmp).map_err(|e| Error::Io {
            path: tmp.clone(),
            source: e,
        })?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        let h = header.encode();
        out.write_all(&h).map_err(|e| Error::Io {
            path: tmp.clone(),
            source: e,
        })?;
        let compressor = zstd::bulk::Compressor::new(LEVEL).map_err(|e| Error::Io {
            path: tmp.clone(),
            source: e,
        })?;
        Ok(Writer {
            path: path.to_path_buf(),
            tmp,
            out: Some(out),
            shift: header.addr_shift,
            header: header.clone(),
            block_accesses,
            streams: (0..header.streams)
                .map(|_| Stream {
                    prev: vec![0; header.regions.len() + 1],
                    last_slot: 0,
                    count: 0,
                    raw: Vec::with_capacity(block_accesses as usize * 2),
                })
                .collect(),
            written: h.len() as u64,
            accesses: 0,
            blocks: 0,
            compressor,
        })
    }

    /// Record one access of `stream`.
    #[inline]
    pub fn push(&mut self, stream: u16, addr: u64, write: bool) -> Result<()> {
        let block = self.block_accesses;
        let shift = self.shift;
        let s = self
            .streams
            .get_mut(stream as usize)
            .ok_or_else(|| Error::Invalid(format!("stream {stream} is not in the header")))?;
        let regions = &self.header.regions;
        let in_last = regions
            .get(s.last_slot)
            .is_some_and(|r| addr.wrapping_sub(r.base) < r.size);
        let slot = if in_last {
            s.last_slot
        } else {
            self.header.region_of(addr).unwrap_or(regions.len())
        };
        s.last_slot = slot;
        let a = addr >> shift;
        let delta = a.wrapping_sub(s.prev[slot]) as i64;
        s.prev[slot] = a;
        encode_access(&mut s.raw, slot, delta, write);
        s.count += 1;
        if s.count == block {
            self.flush_stream(stream as usize)?;
        }
        Ok(())
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::Io {
            path: self.tmp.clone(),
            source: e,
        }
    }

    fn flush_stream(&mut self, i: usize) -> Result<()> {
        let s = &mut self.streams[i];
        if s.count == 0 {
            return Ok(());
        }
        let compressed = self.compressor.compress(&s.raw).map_err(|e| Error::Io {
            path: self.tmp.clone(),
            source: e,
        })?;
        let mut h = [0u8; 24];
        h[..4].copy_from_slice(BLOCK_TAG);
        h[4..6].copy_from_slice(&(i as u16).to_le_bytes());
        h[8..12].copy_from_slice(&s.count.to_le_bytes());
        h[12..16].copy_from_slice(&(s.raw.len() as u32).to_le_bytes());
        h[16..20].copy_from_slice(&(compressed.len() as u32).to_le_bytes());
        let crc = block_crc(&h[4..20], &compressed);
        h[20..24].copy_from_slice(&crc.to_le_bytes());
        self.accesses += u64::from(s.count);
        s.count = 0;
        s.prev.iter_mut().for_each(|p| *p = 0);
        s.raw.clear();
        self.blocks += 1;
        self.written += (h.len() + compressed.len()) as u64;
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::Invalid("trace already finished".into()))?;
        let r = out.write_all(&h).and_then(|_| out.write_all(&compressed));
        r.map_err(|e| self.io(e))
    }

    /// Write what is buffered and the end record, flush to disk, and move the file to its name.
    pub fn finish(mut self) -> Result<Summary> {
        for i in 0..self.streams.len() {
            self.flush_stream(i)?;
        }
        let mut end = [0u8; 24];
        end[..4].copy_from_slice(END_TAG);
        end[4..12].copy_from_slice(&self.accesses.to_le_bytes());
        end[12..20].copy_from_slice(&self.blocks.to_le_bytes());
        let crc = crc32fast::hash(&end[..20]);
        end[20..24].copy_from_slice(&crc.to_le_bytes());
        let out = self
            .out
            .take()
            .ok_or_else(|| Error::Invalid("trace already finished".into()))?;
        let f = (|| {
            let mut out = out;
            out.write_all(&end)?;
            let f = out.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
            Ok(f)
        })()
        .map_err(|e| {
            let _ = std::fs::remove_file(&self.tmp);
            self.io(e)
        })?;
        drop(f);
        std::fs::rename(&self.tmp, &self.path).map_err(|e| {
            let _ = std::fs::remove_file(&self.tmp);
            Error::Io {
                path: self.path.clone(),
                source: e,
            }
        })?;
        Ok(Summary {
            accesses: self.accesses,
            blocks: self.blocks,
            bytes: self.written + end.len() as u64,
        })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Not finished: no half trace under any name.
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
