//! Writing a trace: accesses are buffered per stream; each full block goes to a pool of
//! threads that encode it (deltas and varints) and compress it, and a last thread appends the
//! blocks in the order they were handed over. Blocks encode on their own (deltas restart at
//! every block), so the file is the same whatever the number of threads. The file appears
//! under its name only once `finish` succeeds: a crash or an early drop leaves no half trace
//! behind.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use hugewise_sys::file::Output;

use crate::format::{Header, BLOCK_TAG, END_TAG, MAX_BLOCK_ACCESSES};
use crate::varint::{put, put_at, zigzag};

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

/// Blocks waiting for an encoding thread before `push` waits.
const IN_FLIGHT: usize = 4;

/// Encoding threads at most (the machine's cores bound them too).
const MAX_WORKERS: usize = 4;

/// What every encoding thread needs of the header.
struct Encoding {
    shift: u8,
    /// Region bases and sizes, apart, for the scan in [`Encoding::block`].
    bases: Vec<u64>,
    sizes: Vec<u64>,
    header: Header,
}

/// Accesses encoded into a buffer on the stack before it is appended to the block.
const CHUNK: usize = 512;
/// An access takes at most two varints of 10 bytes.
const MAX_ACCESS_BYTES: usize = 20;

impl Encoding {
    /// Encode one block's accesses into `raw`; deltas start from zero.
    fn block(&self, accesses: &[u64], prev: &mut Vec<u64>, raw: &mut Vec<u8>) {
        raw.clear();
        match self.bases.len() {
            0..=4 => self.block_scan::<4>(accesses, raw),
            5..=8 => self.block_scan::<8>(accesses, raw),
            9..=SCAN_REGIONS => self.block_scan::<SCAN_REGIONS>(accesses, raw),
            _ => self.block_search(accesses, prev, raw),
        }
    }

    /// Up to `N` regions: every region tested, no branch per region (a program interleaves
    /// its arrays, so which one an access falls in is as hard to predict as the access), and
    /// the whole state (regions, last addresses, output position) in registers or on the
    /// stack.
    fn block_scan<const N: usize>(&self, accesses: &[u64], raw: &mut Vec<u8>) {
        let outside = self.bases.len();
        // Regions beyond the real ones have size 0 and never match.
        let (mut bases, mut sizes) = ([0u64; N], [0u64; N]);
        bases[..outside].copy_from_slice(&self.bases);
        sizes[..outside].copy_from_slice(&self.sizes);
        let mut prev = [0u64; SCAN_REGIONS + 1];
        let shift = self.shift;
        let mut buf = [0u8; CHUNK * MAX_ACCESS_BYTES];
        for chunk in accesses.chunks(CHUNK) {
            let mut at = 0;
            for &p in chunk {
                let addr = p >> 1;
                let mut slot = outside;
                for j in 0..N {
                    if addr.wrapping_sub(bases[j]) < sizes[j] {
                        slot = j;
                    }
                }
                let a = addr >> shift;
                let delta = a.wrapping_sub(prev[slot]) as i64;
                prev[slot] = a;
                let small = slot.min(SLOT_ESCAPE) as u64;
                at = put_at(&mut buf, at, (zigzag(delta) << 5) | (small << 1) | (p & 1));
                if slot >= SLOT_ESCAPE {
                    at = put_at(&mut buf, at, (slot - SLOT_ESCAPE) as u64);
                }
            }
            raw.extend_from_slice(&buf[..at]);
        }
    }

    /// Many regions: each access's found by binary search.
    fn block_search(&self, accesses: &[u64], prev: &mut Vec<u64>, raw: &mut Vec<u8>) {
        prev.clear();
        prev.resize(self.bases.len() + 1, 0);
        for &p in accesses {
            let addr = p >> 1;
            let slot = self.header.region_of(addr).unwrap_or(self.bases.len());
            let a = addr >> self.shift;
            let delta = a.wrapping_sub(prev[slot]) as i64;
            prev[slot] = a;
            encode_access(raw, slot, delta, p & 1 == 1);
        }
    }
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

/// A full block on its way to an encoding thread.
struct Job {
    seq: u64,
    stream: u16,
    accesses: Vec<u64>,
}

/// A block encoded and compressed, on its way to the appending thread.
struct Packed {
    seq: u64,
    stream: u16,
    count: u32,
    raw_len: u32,
    compressed: Vec<u8>,
    /// The job's buffer, sent back to the writer for reuse.
    spent: Vec<u64>,
}

/// An encoding thread: takes jobs until the queue closes or the appender is gone.
fn encode_jobs(
    enc: &Encoding,
    jobs: &Mutex<Receiver<Job>>,
    done: &Sender<std::result::Result<Packed, std::io::Error>>,
) {
    let mut compressor = match zstd::bulk::Compressor::new(LEVEL) {
        Ok(c) => c,
        Err(e) => {
            let _ = done.send(Err(e));
            return;
        }
    };
    let (mut prev, mut raw) = (Vec::new(), Vec::new());
    loop {
        // The lock is held only while waiting for a job, never while encoding.
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(mut job) = job else { return };
        enc.block(&job.accesses, &mut prev, &mut raw);
        let packed = compressor.compress(&raw).map(|compressed| Packed {
            seq: job.seq,
            stream: job.stream,
            count: job.accesses.len() as u32,
            raw_len: raw.len() as u32,
            compressed,
            spent: {
                job.accesses.clear();
                std::mem::take(&mut job.accesses)
            },
        });
        if done.send(packed).is_err() {
            return;
        }
    }
}

/// The appending thread's side: writes blocks in the order they were handed over.
struct Sink {
    path: PathBuf,
    /// The trace's file until it is committed (a temporary file beside its path), or a stream.
    out: Output,
    written: u64,
}

impl Sink {
    fn io(&self, e: std::io::Error) -> Error {
        Error::Io {
            path: self.path.clone(),
            source: e,
        }
    }

    fn block(&mut self, b: &Packed) -> Result<()> {
        let mut h = [0u8; 24];
        h[..4].copy_from_slice(BLOCK_TAG);
        h[4..6].copy_from_slice(&b.stream.to_le_bytes());
        h[8..12].copy_from_slice(&b.count.to_le_bytes());
        h[12..16].copy_from_slice(&b.raw_len.to_le_bytes());
        h[16..20].copy_from_slice(&(b.compressed.len() as u32).to_le_bytes());
        let crc = block_crc(&h[4..20], &b.compressed);
        h[20..24].copy_from_slice(&crc.to_le_bytes());
        self.written += (h.len() + b.compressed.len()) as u64;
        let r = self
            .out
            .write_all(&h)
            .and_then(|_| self.out.write_all(&b.compressed));
        r.map_err(|e| self.io(e))
    }

    /// Take blocks until every encoding thread is gone, writing each as soon as those before
    /// it are written and sending its buffer back; stop at the first error.
    fn run(
        mut self,
        done: Receiver<std::result::Result<Packed, std::io::Error>>,
        free: Sender<Vec<u64>>,
    ) -> Result<Sink> {
        let mut waiting = BTreeMap::new();
        let mut next = 0u64;
        for b in done {
            let b = b.map_err(|e| self.io(e))?;
            waiting.insert(b.seq, b);
            while let Some(b) = waiting.remove(&next) {
                self.block(&b)?;
                next += 1;
                // The writer may be gone (dropped unfinished); the buffer is then just freed.
                let _ = free.send(b.spent);
            }
        }
        if let Some(seq) = waiting.keys().next() {
            return Err(Error::Invalid(format!(
                "block {next} of the trace was lost before block {seq} was written"
            )));
        }
        Ok(self)
    }
}

/// The threads behind a writer.
struct Pool {
    jobs: SyncSender<Job>,
    workers: Vec<JoinHandle<()>>,
    sink: JoinHandle<Result<Sink>>,
}

/// An open trace being written.
pub struct Writer {
    path: PathBuf,
    block_accesses: u32,
    /// Each stream's accesses not yet handed over.
    pending: Vec<Vec<u64>>,
    accesses: u64,
    blocks: u64,
    pool: Option<Pool>,
    free: Receiver<Vec<u64>>,
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
        let io = |e| Error::Io {
            path: path.to_path_buf(),
            source: e,
        };
        // A temporary file beside `path`, never another user's link; or a device or FIFO.
        let mut out = Output::create(path).map_err(io)?;
        let h = header.encode();
        let (free_tx, free) = channel::<Vec<u64>>();
        out.write_all(&h).map_err(io)?;
        let sink = Sink {
            path: path.to_path_buf(),
            out,
            written: h.len() as u64,
        };
        let pool = start_pool(header, sink, free_tx).map_err(io)?;
        Ok(Writer {
            path: path.to_path_buf(),
            block_accesses,
            pending: (0..header.streams).map(|_| Vec::new()).collect(),
            accesses: 0,
            blocks: 0,
            pool: Some(pool),
            free,
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
        if i >= self.pending.len() {
            return Err(Error::Invalid(format!(
                "stream {stream} is not in the header"
            )));
        }
        let mut rest = accesses;
        while !rest.is_empty() {
            let p = &mut self.pending[i];
            if p.capacity() == 0 {
                *p = self
                    .free
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(self.block_accesses as usize));
            }
            let room = self.block_accesses as usize - p.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            p.extend_from_slice(now);
            if p.len() == self.block_accesses as usize {
                self.flush_stream(i)?;
            }
            rest = later;
        }
        Ok(())
    }

    /// Record the accesses in `batch` as [`Writer::push_packed`] does, and give back an empty
    /// buffer for the next batch. A batch of exactly one block, with nothing of its stream
    /// buffered, goes to the encoding threads as it is, without a copy.
    pub fn push_vec(&mut self, stream: u16, mut batch: Vec<u64>) -> Result<Vec<u64>> {
        let whole = batch.len() == self.block_accesses as usize;
        match self.pending.get_mut(stream as usize) {
            Some(p) if whole && p.is_empty() => {
                *p = batch;
                self.flush_stream(stream as usize)?;
                // A buffer the appender is done with, else a new one of a block's size.
                let mut next = self
                    .free
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(self.block_accesses as usize));
                next.clear();
                Ok(next)
            }
            _ => {
                self.push_packed(stream, &batch)?;
                batch.clear();
                Ok(batch)
            }
        }
    }

    /// Stop the threads and return the error that stopped them, if any.
    fn stop_pool(&mut self) -> Result<Sink> {
        let Some(pool) = self.pool.take() else {
            return Err(Error::Invalid("trace already finished".into()));
        };
        drop(pool.jobs);
        for w in pool.workers {
            let _ = w.join();
        }
        match pool.sink.join() {
            Ok(r) => r,
            Err(_) => Err(Error::Invalid(
                "the trace's appending thread stopped".into(),
            )),
        }
    }

    /// Hand stream `i`'s buffered block to the encoding threads.
    fn flush_stream(&mut self, i: usize) -> Result<()> {
        if self.pending[i].is_empty() {
            return Ok(());
        }
        let accesses = std::mem::take(&mut self.pending[i]);
        self.accesses += accesses.len() as u64;
        let job = Job {
            seq: self.blocks,
            stream: i as u16,
            accesses,
        };
        self.blocks += 1;
        let sent = self.pool.as_ref().is_some_and(|p| p.jobs.send(job).is_ok());
        if sent {
            return Ok(());
        }
        // The threads are gone: the appender's error says why.
        match self.stop_pool() {
            Err(e) => Err(e),
            Ok(_) => Err(Error::Invalid(
                "the trace's encoding threads stopped".into(),
            )),
        }
    }

    /// Write what is buffered and the end record, flush to disk, and move the file to its name.
    pub fn finish(mut self) -> Result<Summary> {
        for i in 0..self.pending.len() {
            self.flush_stream(i)?;
        }
        let sink = self.stop_pool()?;
        let mut end = [0u8; 24];
        end[..4].copy_from_slice(END_TAG);
        end[4..12].copy_from_slice(&self.accesses.to_le_bytes());
        end[12..20].copy_from_slice(&self.blocks.to_le_bytes());
        let crc = crc32fast::hash(&end[..20]);
        end[20..24].copy_from_slice(&crc.to_le_bytes());
        let bytes = sink.written + end.len() as u64;
        let mut out = sink.out;
        out.write_all(&end)
            .and_then(|_| out.commit())
            .map_err(|e| Error::Io {
                path: self.path.clone(),
                source: e,
            })?;
        Ok(Summary {
            accesses: self.accesses,
            blocks: self.blocks,
            bytes,
        })
    }
}

/// Start the encoding threads (one per core, at least two, at most [`MAX_WORKERS`]) and the
/// appending thread.
fn start_pool(header: &Header, sink: Sink, free: Sender<Vec<u64>>) -> std::io::Result<Pool> {
    let enc = Arc::new(Encoding {
        shift: header.addr_shift,
        bases: header.regions.iter().map(|r| r.base).collect(),
        sizes: header.regions.iter().map(|r| r.size).collect(),
        header: header.clone(),
    });
    let n = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, MAX_WORKERS);
    let (jobs, jobs_rx) = sync_channel::<Job>(IN_FLIGHT);
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    let (done, done_rx) = channel();
    let sink = std::thread::Builder::new()
        .name("hwt-append".into())
        .spawn(move || sink.run(done_rx, free))?;
    let mut workers = Vec::with_capacity(n);
    for k in 0..n {
        let (enc, jobs_rx, done) = (Arc::clone(&enc), Arc::clone(&jobs_rx), done.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("hwt-encode-{k}"))
            .spawn(move || encode_jobs(&enc, &jobs_rx, &done));
        match spawned {
            Ok(h) => workers.push(h),
            // The threads already started end when `jobs` is dropped with this error.
            Err(e) => return Err(e),
        }
    }
    Ok(Pool {
        jobs,
        workers,
        sink,
    })
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Unfinished or failed: stop the threads; the sink's uncommitted file goes with it,
        // so no half trace is left under any name.
        let _ = self.stop_pool();
    }
}
