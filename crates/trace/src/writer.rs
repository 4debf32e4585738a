//! Writing a trace: accesses are buffered per stream and encoded as deltas; each full block
//! goes to a second thread that compresses and appends it, so that encoding the next block
//! overlaps compressing this one. The file appears under its name only once `finish`
//! succeeds: a crash or an early drop leaves no half trace behind.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

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

/// Up to this many regions, an access's region is found by testing them all.
const SCAN_REGIONS: usize = 16;

/// Blocks in flight to the compressing thread before `push` waits for it.
const IN_FLIGHT: usize = 4;

struct Stream {
    /// Last address seen per slot (one per region, then one for addresses outside them).
    prev: Vec<u64>,
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

/// A full block on its way to the compressing thread.
struct Job {
    stream: u16,
    count: u32,
    raw: Vec<u8>,
}

/// The compressing thread's side: compresses blocks in order and appends them.
struct Sink {
    tmp: PathBuf,
    out: BufWriter<File>,
    compressor: zstd::bulk::Compressor<'static>,
    written: u64,
}

impl Sink {
    fn io(&self, e: std::io::Error) -> Error {
        Error::Io {
            path: self.tmp.clone(),
            source: e,
        }
    }

    fn block(&mut self, job: &Job) -> Result<()> {
        let compressed = self.compressor.compress(&job.raw).map_err(|e| self.io(e))?;
        let mut h = [0u8; 24];
        h[..4].copy_from_slice(BLOCK_TAG);
        h[4..6].copy_from_slice(&job.stream.to_le_bytes());
        h[8..12].copy_from_slice(&job.count.to_le_bytes());
        h[12..16].copy_from_slice(&(job.raw.len() as u32).to_le_bytes());
        h[16..20].copy_from_slice(&(compressed.len() as u32).to_le_bytes());
        let crc = block_crc(&h[4..20], &compressed);
        h[20..24].copy_from_slice(&crc.to_le_bytes());
        self.written += (h.len() + compressed.len()) as u64;
        let r = self
            .out
            .write_all(&h)
            .and_then(|_| self.out.write_all(&compressed));
        r.map_err(|e| self.io(e))
    }

    /// Take blocks until the channel closes, sending each buffer back for reuse; stop at the
    /// first error.
    fn run(mut self, jobs: Receiver<Job>, free: Sender<Vec<u8>>) -> Result<Sink> {
        for mut job in jobs {
            self.block(&job)?;
            job.raw.clear();
            // The writer may be gone (dropped unfinished); the buffer is then just freed.
            let _ = free.send(job.raw);
        }
        Ok(self)
    }
}

/// An open trace being written.
pub struct Writer {
    path: PathBuf,
    /// The temporary name; empty once renamed.
    tmp: PathBuf,
    shift: u8,
    header: Header,
    /// Region bases and sizes, apart, for the scan in [`Writer::push`].
    bases: Vec<u64>,
    sizes: Vec<u64>,
    block_accesses: u32,
    streams: Vec<Stream>,
    accesses: u64,
    blocks: u64,
    jobs: Option<SyncSender<Job>>,
    free: Receiver<Vec<u8>>,
    sink: Option<JoinHandle<Result<Sink>>>,
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
        let io = |e| Error::Io {
            path: tmp.clone(),
            source: e,
        };
        let f = File::create(&tmp).map_err(io)?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        let h = header.encode();
        let started = (|| {
            out.write_all(&h)?;
            let compressor = zstd::bulk::Compressor::new(LEVEL)?;
            let sink = Sink {
                tmp: tmp.clone(),
                out,
                compressor,
                written: h.len() as u64,
            };
            let (jobs, jobs_rx) = sync_channel::<Job>(IN_FLIGHT);
            let (free_tx, free) = channel::<Vec<u8>>();
            let handle = std::thread::Builder::new()
                .name("hwt-compress".into())
                .spawn(move || sink.run(jobs_rx, free_tx))?;
            Ok((jobs, free, handle))
        })();
        let (jobs, free, handle) = started.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })?;
        Ok(Writer {
            path: path.to_path_buf(),
            tmp: tmp.clone(),
            shift: header.addr_shift,
            header: header.clone(),
            bases: header.regions.iter().map(|r| r.base).collect(),
            sizes: header.regions.iter().map(|r| r.size).collect(),
            block_accesses,
            streams: (0..header.streams)
                .map(|_| Stream {
                    prev: vec![0; header.regions.len() + 1],
                    count: 0,
                    raw: Vec::with_capacity(block_accesses as usize * 2),
                })
                .collect(),
            accesses: 0,
            blocks: 0,
            jobs: Some(jobs),
            free,
            sink: Some(handle),
        })
    }

    /// Record one access of `stream`.
    #[inline]
    pub fn push(&mut self, stream: u16, addr: u64, write: bool) -> Result<()> {
        self.push_packed(stream, &[(addr << 1) | u64::from(write)])
    }

    /// Record accesses of `stream`, packed as [`crate::Access::pack`] makes them.
    pub fn push_packed(&mut self, stream: u16, accesses: &[u64]) -> Result<()> {
        let i = stream as usize;
        if i >= self.streams.len() {
            return Err(Error::Invalid(format!(
                "stream {stream} is not in the header"
            )));
        }
        let mut rest = accesses;
        while !rest.is_empty() {
            let s = &mut self.streams[i];
            let room = (self.block_accesses - s.count) as usize;
            let (now, later) = rest.split_at(room.min(rest.len()));
            for &p in now {
                let addr = p >> 1;
                let slot = if self.bases.len() <= SCAN_REGIONS {
                    // Every region tested, no branch per region: a program interleaves its
                    // arrays, so which one an access falls in is as hard to predict as the
                    // access.
                    let mut slot = self.bases.len();
                    for (j, (&b, &z)) in self.bases.iter().zip(&self.sizes).enumerate() {
                        if addr.wrapping_sub(b) < z {
                            slot = j;
                        }
                    }
                    slot
                } else {
                    self.header.region_of(addr).unwrap_or(self.bases.len())
                };
                let a = addr >> self.shift;
                let delta = a.wrapping_sub(s.prev[slot]) as i64;
                s.prev[slot] = a;
                encode_access(&mut s.raw, slot, delta, p & 1 == 1);
            }
            s.count += now.len() as u32;
            if s.count == self.block_accesses {
                self.flush_stream(i)?;
            }
            rest = later;
        }
        Ok(())
    }

    /// Stop the compressing thread and return the error that stopped it, if any.
    fn stop_sink(&mut self) -> Result<Sink> {
        self.jobs = None;
        match self.sink.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            _ => Err(Error::Invalid(
                "the trace's compressing thread stopped".into(),
            )),
        }
    }

    /// Hand stream `i`'s buffered block to the compressing thread.
    fn flush_stream(&mut self, i: usize) -> Result<()> {
        if self.streams[i].count == 0 {
            return Ok(());
        }
        let fresh = self
            .free
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(self.block_accesses as usize * 2));
        let s = &mut self.streams[i];
        let job = Job {
            stream: i as u16,
            count: s.count,
            raw: std::mem::replace(&mut s.raw, fresh),
        };
        self.accesses += u64::from(s.count);
        s.count = 0;
        s.prev.iter_mut().for_each(|p| *p = 0);
        self.blocks += 1;
        let sent = self.jobs.as_ref().is_some_and(|tx| tx.send(job).is_ok());
        if sent {
            return Ok(());
        }
        // The thread is gone: its error says why.
        match self.stop_sink() {
            Err(e) => Err(e),
            Ok(_) => Err(Error::Invalid("trace already finished".into())),
        }
    }

    /// Write what is buffered and the end record, flush to disk, and move the file to its name.
    pub fn finish(mut self) -> Result<Summary> {
        for i in 0..self.streams.len() {
            self.flush_stream(i)?;
        }
        let sink = self.stop_sink()?;
        let mut end = [0u8; 24];
        end[..4].copy_from_slice(END_TAG);
        end[4..12].copy_from_slice(&self.accesses.to_le_bytes());
        end[12..20].copy_from_slice(&self.blocks.to_le_bytes());
        let crc = crc32fast::hash(&end[..20]);
        end[20..24].copy_from_slice(&crc.to_le_bytes());
        let bytes = sink.written + end.len() as u64;
        let mut out = sink.out;
        let synced = (|| {
            out.write_all(&end)?;
            let f = out.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()
        })();
        synced.map_err(|e| Error::Io {
            path: self.tmp.clone(),
            source: e,
        })?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| Error::Io {
            path: self.path.clone(),
            source: e,
        })?;
        self.tmp = PathBuf::new();
        Ok(Summary {
            accesses: self.accesses,
            blocks: self.blocks,
            bytes,
        })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Unfinished or failed: stop the compressing thread and leave no half trace under
        // any name. After a successful `finish` there is nothing to remove.
        let _ = self.stop_sink();
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
