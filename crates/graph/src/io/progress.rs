//! How far the reader of an input has got, for a progress display in another thread: the
//! bytes read of the file being read (compressed bytes for `.gz` and `.zst`), or the edges a
//! generator has made. One load at a time per process; a second pass starts the count again.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

static READ: AtomicU64 = AtomicU64::new(0);
static TOTAL: AtomicU64 = AtomicU64::new(0);
static EDGES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the count is of edges (a generator) rather than bytes (a file).
pub fn counts_edges() -> bool {
    EDGES.load(Ordering::Relaxed)
}

/// Bytes read so far and the file's size (0 when no file is being read).
pub fn bytes_read() -> (u64, u64) {
    (READ.load(Ordering::Relaxed), TOTAL.load(Ordering::Relaxed))
}

/// Nothing is being read (before a load that may not read a file at all).
pub fn reset() {
    begin(0);
}

/// A read of a file of `total` bytes starts.
pub(crate) fn begin(total: u64) {
    READ.store(0, Ordering::Relaxed);
    TOTAL.store(total, Ordering::Relaxed);
    EDGES.store(false, Ordering::Relaxed);
}

/// A generator starts making `total` edges.
pub(crate) fn begin_edges(total: u64) {
    begin(total);
    EDGES.store(true, Ordering::Relaxed);
}

/// `n` more bytes were read.
pub(crate) fn add(n: u64) {
    READ.fetch_add(n, Ordering::Relaxed);
}

/// A reader that counts what passes through it.
pub(crate) struct Counting<R>(pub R);

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        add(n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counting_reader_adds_what_it_reads() {
        begin(10);
        let mut r = Counting(&b"0123456789"[..]);
        let mut buf = [0u8; 4];
        r.read_exact(&mut buf).expect("read");
        assert_eq!(bytes_read(), (4, 10));
    }
}
