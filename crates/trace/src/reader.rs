//! Reading a trace block by block. Memory is one compressed and one decoded block, whatever
//! the trace's length.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::format::{Header, BLOCK_HEADER, BLOCK_TAG, END_RECORD, END_TAG, MAX_BLOCK_ACCESSES};
use crate::varint::{get, unzigzag};
use crate::writer::SLOT_ESCAPE;
use crate::{Error, Result};

/// A block as stored: which stream, where, and its compressed bytes.
#[derive(Debug, Clone, Default)]
pub struct RawBlock {
    /// Stream (thread) it belongs to.
    pub stream: u16,
    /// Byte offset of its header in the file.
    pub offset: u64,
    /// Accesses in it.
    pub accesses: u32,
    /// Bytes once decompressed.
    pub raw_len: u32,
    /// The zstd frame.
    pub compressed: Vec<u8>,
}

/// A decoded block's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Stream.
    pub stream: u16,
    /// Byte offset of its header in the file.
    pub offset: u64,
}

/// An open trace.
pub struct Reader {
    path: PathBuf,
    input: BufReader<File>,
    header: Header,
    at: u64,
    done: bool,
    accesses: u64,
    blocks: u64,
    raw: RawBlock,
    decoded: Vec<u8>,
    decompressor: zstd::bulk::Decompressor<'static>,
}

/// Read exactly `buf.len()` bytes, or say how many came.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl Reader {
    /// Open `path` and read its header.
    pub fn open(path: &Path) -> Result<Reader> {
        let io = |e| Error::Io {
            path: path.to_path_buf(),
            source: e,
        };
        let f = File::open(path).map_err(io)?;
        let mut input = BufReader::with_capacity(1 << 20, f);
        let mut head = vec![0u8; 28];
        let n = read_full(&mut input, &mut head).map_err(io)?;
        head.truncate(n);
        if n == 28 {
            let len = u32::from_le_bytes([head[16], head[17], head[18], head[19]]) as usize;
            if len > 28 && len < (64 << 20) {
                head.resize(len, 0);
                let k = read_full(&mut input, &mut head[28..]).map_err(io)?;
                head.truncate(28 + k);
            }
        }
        let (header, len) = Header::decode(path, &head)?;
        let decompressor = zstd::bulk::Decompressor::new().map_err(io)?;
        Ok(Reader {
            path: path.to_path_buf(),
            input,
            header,
            at: len as u64,
            done: false,
            accesses: 0,
            blocks: 0,
            raw: RawBlock::default(),
            decoded: Vec::new(),
            decompressor,
        })
    }

    /// The totals the end record claims (accesses, blocks), read from the file's last bytes
    /// without reading the blocks: for progress and time scales before a full pass, which
    /// still checks them. `None` when the file has no valid end record.
    pub fn claimed_totals(&self) -> Option<(u64, u64)> {
        use std::io::{Seek, SeekFrom};
        let mut f = File::open(&self.path).ok()?;
        let len = f.seek(SeekFrom::End(0)).ok()?;
        if len < self.at + END_RECORD as u64 {
            return None;
        }
        f.seek(SeekFrom::Start(len - END_RECORD as u64)).ok()?;
        let mut e = [0u8; END_RECORD];
        f.read_exact(&mut e).ok()?;
        if &e[..4] != END_TAG || crc32fast::hash(&e[..20]).to_le_bytes() != e[20..24] {
            return None;
        }
        let mut a = [0u8; 8];
        a.copy_from_slice(&e[4..12]);
        let accesses = u64::from_le_bytes(a);
        a.copy_from_slice(&e[12..20]);
        Some((accesses, u64::from_le_bytes(a)))
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    fn truncated(&self, offset: u64, what: &str) -> Error {
        Error::Truncated {
            path: self.path.clone(),
            offset,
            what: what.to_string(),
        }
    }

    fn corrupt(&self, offset: u64, what: String) -> Error {
        Error::Corrupt {
            path: self.path.clone(),
            offset,
            what,
        }
    }

    fn read_exact_at(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        let n = read_full(&mut self.input, buf).map_err(|e| Error::Io {
            path: self.path.clone(),
            source: e,
        })?;
        if n < buf.len() {
            return Err(self.truncated(self.at + n as u64, what));
        }
        self.at += n as u64;
        Ok(())
    }

    /// The next block as stored, or `None` after the end record. The block is valid until the
    /// next call.
    pub fn next_raw(&mut self) -> Result<Option<&RawBlock>> {
        if self.done {
            return Ok(None);
        }
        let start = self.at;
        let mut tag = [0u8; 4];
        self.read_exact_at(
            &mut tag,
            "a block or the end record (the trace was not finished)",
        )?;
        if &tag == END_TAG {
            let mut rest = [0u8; END_RECORD - 4];
            self.read_exact_at(&mut rest, "the end record")?;
            let mut all = [0u8; END_RECORD];
            all[..4].copy_from_slice(&tag);
            all[4..].copy_from_slice(&rest);
            let crc = u32::from_le_bytes([all[20], all[21], all[22], all[23]]);
            if crc32fast::hash(&all[..20]) != crc {
                return Err(self.corrupt(start, "end record checksum mismatch".into()));
            }
            let mut a = [0u8; 8];
            a.copy_from_slice(&all[4..12]);
            let accesses = u64::from_le_bytes(a);
            a.copy_from_slice(&all[12..20]);
            let blocks = u64::from_le_bytes(a);
            if accesses != self.accesses || blocks != self.blocks {
                return Err(self.corrupt(
                    start,
                    format!(
                        "end record counts {accesses} accesses in {blocks} blocks, the file \
                         holds {} in {}",
                        self.accesses, self.blocks
                    ),
                ));
            }
            self.done = true;
            return Ok(None);
        }
        if &tag != BLOCK_TAG {
            return Err(self.corrupt(start, format!("expected a block, found bytes {tag:02x?}")));
        }
        let mut h = [0u8; BLOCK_HEADER - 4];
        self.read_exact_at(&mut h, "a block header")?;
        let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
        let stream = u16::from_le_bytes([h[0], h[1]]);
        let accesses = u32_at(4);
        let raw_len = u32_at(8);
        let comp_len = u32_at(12);
        let crc = u32_at(16);
        if h[2] != 0 || h[3] != 0 {
            return Err(self.corrupt(start + 6, "reserved bytes are not zero".into()));
        }
        if stream >= self.header.streams {
            return Err(self.corrupt(start + 4, format!("stream {stream} is not in the header")));
        }
        if accesses == 0 || accesses > MAX_BLOCK_ACCESSES {
            return Err(self.corrupt(start + 8, format!("{accesses} accesses in one block")));
        }
        if raw_len < accesses || raw_len as u64 > accesses as u64 * 10 {
            return Err(self.corrupt(
                start + 12,
                format!("{raw_len} bytes for {accesses} accesses"),
            ));
        }
        if comp_len as u64 > zstd::zstd_safe::compress_bound(raw_len as usize) as u64 {
            return Err(self.corrupt(start + 16, format!("{comp_len} compressed bytes")));
        }
        let mut buf = std::mem::take(&mut self.raw.compressed);
        buf.resize(comp_len as usize, 0);
        let r = self.read_exact_at(&mut buf, "a block's data");
        self.raw = RawBlock {
            stream,
            offset: start,
            accesses,
            raw_len,
            compressed: buf,
        };
        r?;
        if crate::writer::block_crc(&h[..16], &self.raw.compressed) != crc {
            return Err(self.corrupt(
                start + BLOCK_HEADER as u64,
                "block checksum mismatch".into(),
            ));
        }
        self.accesses += u64::from(accesses);
        self.blocks += 1;
        Ok(Some(&self.raw))
    }

    /// Decode the next block into `out` (cleared first) as packed accesses
    /// ([`crate::Access::pack`]); `None` after the end record.
    pub fn next_block(&mut self, out: &mut Vec<u64>) -> Result<Option<Block>> {
        if self.next_raw()?.is_none() {
            return Ok(None);
        }
        let raw = std::mem::take(&mut self.raw);
        let r = decode(
            &mut self.decompressor,
            &raw,
            &self.header,
            &mut self.decoded,
            out,
        )
        .map_err(|what| self.corrupt(raw.offset, what));
        let b = Block {
            stream: raw.stream,
            offset: raw.offset,
        };
        self.raw = raw;
        r.map(|()| Some(b))
    }
}

/// Decode `raw` into packed accesses; the error says what is wrong (the caller adds where).
pub fn decode(
    dec: &mut zstd::bulk::Decompressor<'_>,
    raw: &RawBlock,
    header: &Header,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u64>,
) -> std::result::Result<(), String> {
    let shift = header.addr_shift;
    scratch.clear();
    scratch.reserve(raw.raw_len as usize);
    let n = dec
        .decompress_to_buffer(&raw.compressed, scratch)
        .map_err(|e| format!("block data does not decompress: {e}"))?;
    if n != raw.raw_len as usize {
        return Err(format!(
            "block decompresses to {n} bytes, not {}",
            raw.raw_len
        ));
    }
    out.clear();
    out.reserve(raw.accesses as usize);
    let mut at = 0usize;
    let mut prev = vec![0u64; header.regions.len() + 1];
    for i in 0..raw.accesses {
        let short = || format!("access {i} of the block is cut short");
        let v = get(scratch, &mut at).ok_or_else(short)?;
        let mut slot = ((v >> 1) & 0xf) as usize;
        if slot == SLOT_ESCAPE {
            slot += get(scratch, &mut at).ok_or_else(short)? as usize;
        }
        let p = prev
            .get_mut(slot)
            .ok_or_else(|| format!("access {i} names region slot {slot}, beyond the header's"))?;
        let a = p.wrapping_add(unzigzag(v >> 5) as u64);
        *p = a;
        out.push(((a << shift) << 1) | (v & 1));
    }
    if at != scratch.len() {
        return Err(format!(
            "{} bytes left after the block's {} accesses",
            scratch.len() - at,
            raw.accesses
        ));
    }
    Ok(())
}
