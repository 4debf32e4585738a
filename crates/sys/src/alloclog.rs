//! The allocation log a program run under `hugewise exec` keeps in shared memory: one entry per
//! allocation the preload library took over (where it is, how big, which page policy it got
//! and whether the kernel took the advice), so that `hugewise exec` and the promotion daemon
//! see the program's allocations, not only its mappings.
//!
//! Layout, little-endian, a 64-byte header then `capacity` entries of 128 bytes. Header words:
//! magic `HWALOG01`, version (u32) | capacity (u32) << 32, entries claimed, writer pid,
//! allocations not logged because the log was full, allocations left to the program's own
//! allocator because hugewise could not place them, the errno of the last such refusal, flags.
//! Entry words: state (0 empty, 1 being written, 2 live, 3 freed), mapping start, mapping
//! length, bytes asked for, packed attributes, birth and death times (CLOCK_MONOTONIC ns), tag,
//! then 32 bytes of the name the program gave the allocation and 32 bytes of the call site that
//! made it (`module+0xoffset`; both NUL-padded).
//!
//! One process writes (the preload library); readers in other processes see an entry once its
//! state says live, because the state is stored last with release order.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::shm::{Backing, Shared, Writer};
use crate::{Error, Result};

const MAGIC: u64 = u64::from_le_bytes(*b"HWALOG01");
const VERSION: u32 = 2;
const HEADER_WORDS: usize = 8;
const ENTRY_WORDS: usize = 16;
/// Bytes of an allocation's name kept in the log.
pub const NAME_BYTES: usize = 32;

/// Where the logs live (shared memory).
pub const LOG_DIR: &str = "/dev/shm";
/// Every log's file name starts with this, then `SESSION.PID`.
pub const LOG_PREFIX: &str = "hugewise-exec.";
/// The policy code of an allocation kept on 4 KiB pages (`base`): the promotion daemon
/// leaves it alone.
pub const POLICY_BASE: u8 = 1;

/// The logs of process `pid`, whatever their session (a process normally has one).
pub fn logs_of(pid: i32) -> Vec<std::path::PathBuf> {
    let suffix = format!(".{pid}");
    let Ok(dir) = std::fs::read_dir(LOG_DIR) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(LOG_PREFIX) && n.ends_with(&suffix))
        })
        .map(|e| e.path())
        .collect()
}

const WRITING: u64 = 1;
const LIVE: u64 = 2;
const FREED: u64 = 3;

/// Header flag: the program's allocator is not glibc's, so allocations were left to it and
/// only its mappings could be seen.
pub const FLAG_FOREIGN_ALLOCATOR: u64 = 1;
/// Header flag: the page rules given to the preload library could not be read; nothing was
/// taken over.
pub const FLAG_BAD_RULES: u64 = 2;
/// Header flag: a rule names a call site that is not in the program as loaded (a placement
/// made for another build of it, or a library not loaded at start).
pub const FLAG_SITES_MISSING: u64 = 4;

/// How an allocation reached the preload library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `malloc`, `calloc`, `realloc` or an aligned variant.
    Malloc,
    /// An anonymous private `mmap` the program (or its allocator) made itself.
    Mmap,
    /// An arena of small objects: one call site's while profiling, or the hot arena.
    Arena,
}

/// One allocation as logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogEntry {
    /// First byte of the mapping that holds it.
    pub start: u64,
    /// Length of that mapping.
    pub len: u64,
    /// Bytes the program asked for.
    pub requested: u64,
    /// The page policy's code, as the preload library numbers them.
    pub policy: u8,
    /// Index of the rule that chose the policy (`u16::MAX`: no rule matched).
    pub rule: u16,
    /// How it was allocated.
    pub origin: Origin,
    /// The errno of the advice call when the kernel refused it, 0 when it took it.
    pub advice_errno: u16,
    /// When it was made, CLOCK_MONOTONIC nanoseconds.
    pub born_ns: u64,
    /// When it was freed, if it was.
    pub freed_ns: Option<u64>,
    /// A program-given tag (0: none).
    pub tag: u64,
    /// The name the program gave it, NUL-padded (all zeros: none).
    pub name: [u8; NAME_BYTES],
    /// The call site that made it (`module+0xoffset`), NUL-padded (all zeros: unknown).
    pub site: [u8; NAME_BYTES],
}

impl LogEntry {
    fn attrs(&self) -> u64 {
        let origin = match self.origin {
            Origin::Malloc => 0u64,
            Origin::Mmap => 1,
            Origin::Arena => 2,
        };
        u64::from(self.policy)
            | (u64::from(self.rule) << 8)
            | (origin << 24)
            | (u64::from(self.advice_errno) << 32)
    }

    fn from_words(w: [u64; ENTRY_WORDS]) -> LogEntry {
        let attrs = w[4];
        LogEntry {
            start: w[1],
            len: w[2],
            requested: w[3],
            policy: (attrs & 0xff) as u8,
            rule: ((attrs >> 8) & 0xffff) as u16,
            origin: match (attrs >> 24) & 0xff {
                1 => Origin::Mmap,
                2 => Origin::Arena,
                _ => Origin::Malloc,
            },
            advice_errno: ((attrs >> 32) & 0xffff) as u16,
            born_ns: w[5],
            freed_ns: (w[0] == FREED).then_some(w[6]),
            tag: w[7],
            name: padded(&w[8..12]),
            site: padded(&w[12..16]),
        }
    }

    /// The name the program gave it, if any.
    pub fn name(&self) -> Option<&str> {
        name_of(&self.name)
    }

    /// The call site that made it, if known.
    pub fn site(&self) -> Option<&str> {
        name_of(&self.site)
    }
}

fn padded(words: &[u64]) -> [u8; NAME_BYTES] {
    let mut n = [0u8; NAME_BYTES];
    for (chunk, w) in n.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    n
}

/// `text` NUL-padded to [`NAME_BYTES`], cut to `NAME_BYTES - 1` bytes.
pub fn pad(text: &str) -> [u8; NAME_BYTES] {
    let mut n = [0u8; NAME_BYTES];
    let len = text.len().min(NAME_BYTES - 1);
    n[..len].copy_from_slice(&text.as_bytes()[..len]);
    n
}

/// A NUL-padded name as text; None when empty or not UTF-8.
pub fn name_of(padded: &[u8; NAME_BYTES]) -> Option<&str> {
    let len = padded.iter().position(|&b| b == 0).unwrap_or(NAME_BYTES);
    std::str::from_utf8(&padded[..len])
        .ok()
        .filter(|s| !s.is_empty())
}

/// What the header says about the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogHeader {
    /// The process that writes the log.
    pub pid: i32,
    /// Entries the log can hold.
    pub capacity: usize,
    /// Allocations taken over but not logged because the log was full.
    pub dropped: u64,
    /// Allocations left to the program's own allocator because hugewise could not place them.
    pub fallbacks: u64,
    /// The errno of the last such refusal (0: none).
    pub last_errno: i32,
    /// `FLAG_*` bits.
    pub flags: u64,
}

/// An allocation log: mapped for its writer and for readers of a log they trust, read through
/// its descriptor by a reader of another process's log (the file stays until
/// `hugewise exec` removes it).
#[derive(Debug)]
pub struct AllocLog {
    shared: Shared,
    capacity: usize,
    writable: bool,
}

impl AllocLog {
    /// Create the log at `path` (as [`crate::shm::SampleRing::create`] makes a ring) with room
    /// for `capacity` entries, for this process to write. The file is sparse: only entries
    /// written take memory.
    pub fn create(path: &Path, capacity: usize) -> Result<AllocLog> {
        let capacity = capacity.clamp(1, u32::MAX as usize);
        let len = (HEADER_WORDS + capacity * ENTRY_WORDS) * 8;
        Ok(AllocLog {
            shared: Shared::create(path, len, Backing::Sparse, MAGIC, VERSION, capacity)?,
            capacity,
            writable: true,
        })
    }

    /// Map an existing log read-only, checking its header.
    pub fn open(path: &Path) -> Result<AllocLog> {
        AllocLog::open_from(path, None)
    }

    /// As [`open`](Self::open), for a reader that acts on the log: only a log that `writer`
    /// made (see [`Writer`]), read through its descriptor.
    pub fn open_written_by(path: &Path, writer: Writer) -> Result<AllocLog> {
        AllocLog::open_from(path, Some(writer))
    }

    fn open_from(path: &Path, from: Option<Writer>) -> Result<AllocLog> {
        let shared = Shared::open(
            path,
            HEADER_WORDS * 8,
            MAGIC,
            "an allocation log",
            false,
            from,
        )?;
        let size = shared.len();
        let vc = shared.word(1);
        let (version, capacity) = ((vc & 0xffff_ffff) as u32, (vc >> 32) as usize);
        if version != VERSION {
            return Err(Error::parse(
                path,
                0,
                format!("allocation log version {version}, this hugewise reads {VERSION}"),
            ));
        }
        if (HEADER_WORDS + capacity * ENTRY_WORDS) * 8 != size {
            return Err(Error::parse(
                path,
                0,
                format!("{capacity} entries do not match the file's {size} bytes"),
            ));
        }
        Ok(AllocLog {
            shared,
            capacity,
            writable: false,
        })
    }

    /// The header's words, when mapped (the writer's side).
    fn header(&self) -> Option<&[AtomicU64]> {
        self.shared.words(0, HEADER_WORDS)
    }

    /// Entry `i`'s words, when mapped (the writer's side).
    fn entry(&self, i: usize) -> Option<&[AtomicU64]> {
        debug_assert!(i < self.capacity);
        self.shared
            .words(HEADER_WORDS + i * ENTRY_WORDS, ENTRY_WORDS)
    }

    /// Header word `i`.
    fn word(&self, i: usize) -> u64 {
        self.shared.word(i)
    }

    /// The header as it is now.
    pub fn head(&self) -> LogHeader {
        LogHeader {
            pid: self.word(3) as i32,
            capacity: self.capacity,
            dropped: self.word(4),
            fallbacks: self.word(5),
            last_errno: self.word(6) as i32,
            flags: self.word(7),
        }
    }

    /// Log an allocation; its slot, or None when the log is full (counted as dropped). Only
    /// the creator writes; its threads may append at once (each claims a slot with one atomic
    /// add, and a reader skips a claimed slot until its state says live).
    pub fn append(&self, e: &LogEntry) -> Option<u32> {
        if !self.writable {
            return None;
        }
        let h = self.header()?;
        let i = h[2].fetch_add(1, Ordering::AcqRel) as usize;
        if i >= self.capacity {
            h[4].fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let w = self.entry(i)?;
        w[0].store(WRITING, Ordering::Relaxed);
        for (k, v) in [e.start, e.len, e.requested, e.attrs(), e.born_ns, 0, e.tag]
            .into_iter()
            .enumerate()
        {
            w[k + 1].store(v, Ordering::Relaxed);
        }
        for (k, chunk) in e
            .name
            .chunks_exact(8)
            .chain(e.site.chunks_exact(8))
            .enumerate()
        {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            w[8 + k].store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
        w[0].store(LIVE, Ordering::Release);
        Some(i as u32)
    }

    /// Mark the allocation in `slot` freed at `at_ns`.
    pub fn freed(&self, slot: u32, at_ns: u64) {
        if !self.writable || slot as usize >= self.capacity {
            return;
        }
        if let Some(w) = self.entry(slot as usize) {
            w[6].store(at_ns, Ordering::Relaxed);
            w[0].store(FREED, Ordering::Release);
        }
    }

    /// Count an allocation left to the program's allocator, with the errno that refused it.
    pub fn fallback(&self, errno: i32) {
        if let (true, Some(h)) = (self.writable, self.header()) {
            h[5].fetch_add(1, Ordering::Relaxed);
            h[6].store(errno as u64, Ordering::Relaxed);
        }
    }

    /// Raise header flags (`FLAG_*`).
    pub fn flag(&self, bits: u64) {
        if let (true, Some(h)) = (self.writable, self.header()) {
            h[7].fetch_or(bits, Ordering::Relaxed);
        }
    }

    /// Every entry written so far, live or freed, in allocation order.
    pub fn entries(&self) -> Vec<LogEntry> {
        let n = (self.word(2) as usize).min(self.capacity);
        // One read of every claimed entry, each entry's state first: a claimed entry whose
        // state does not yet say live is skipped; what a shrunk file no longer holds is left out.
        let mut raw = Vec::with_capacity(n * ENTRY_WORDS);
        self.shared
            .read_words(HEADER_WORDS, n * ENTRY_WORDS, &mut raw);
        raw.chunks_exact(ENTRY_WORDS)
            .filter_map(|c| {
                let words: [u64; ENTRY_WORDS] = c.try_into().ok()?;
                (words[0] == LIVE || words[0] == FREED).then(|| LogEntry::from_words(words))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(start: u64, rule: u16) -> LogEntry {
        LogEntry {
            start,
            len: 4 << 20,
            requested: 3 << 20,
            policy: 2,
            rule,
            origin: Origin::Malloc,
            advice_errno: 0,
            born_ns: 7,
            freed_ns: None,
            tag: 0,
            name: pad("hot.vertices"),
            site: pad("prog+0x1a2b"),
        }
    }

    #[test]
    fn a_reader_sees_appended_and_freed_entries_and_what_did_not_fit() {
        let path = std::env::temp_dir().join(format!("hw-alog-{}", std::process::id()));
        let w = AllocLog::create(&path, 2).expect("create");
        let r = AllocLog::open(&path).expect("open");
        assert_eq!(w.append(&entry(1 << 21, 0)), Some(0));
        assert_eq!(w.append(&entry(2 << 21, u16::MAX)), Some(1));
        assert_eq!(w.append(&entry(3 << 21, 1)), None, "full");
        w.freed(0, 99);
        w.fallback(libc::ENOMEM);
        w.flag(FLAG_FOREIGN_ALLOCATOR);
        let got = r.entries();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].freed_ns, Some(99));
        assert_eq!(got[1], entry(2 << 21, u16::MAX));
        assert_eq!(got[1].name(), Some("hot.vertices"));
        assert_eq!(got[1].site(), Some("prog+0x1a2b"));
        let h = r.head();
        assert_eq!(
            (
                h.pid,
                h.capacity,
                h.dropped,
                h.fallbacks,
                h.last_errno,
                h.flags
            ),
            (
                std::process::id() as i32,
                2,
                1,
                1,
                libc::ENOMEM,
                FLAG_FOREIGN_ALLOCATOR
            )
        );
        std::fs::remove_file(&path).expect("remove");
    }

    #[test]
    fn a_file_that_is_not_a_log_is_refused_with_why() {
        let path = std::env::temp_dir().join(format!("hw-alog-bad-{}", std::process::id()));
        std::fs::write(&path, [0u8; 64]).expect("write");
        let err = AllocLog::open(&path).expect_err("bad magic").to_string();
        assert!(err.contains("bad magic"), "{err}");
        std::fs::write(&path, [0u8; 10]).expect("write");
        let err = AllocLog::open(&path).expect_err("short").to_string();
        assert!(
            err.contains("shorter than the header of an allocation log"),
            "{err}"
        );
        std::fs::remove_file(&path).expect("remove");
    }

    #[test]
    fn a_reader_of_another_process_log_reads_it_and_survives_its_shrinking() {
        let d = tempfile::tempdir().expect("tmp");
        let path = d.path().join("hugewise-exec.s.1");
        let w = AllocLog::create(&path, 4).expect("create");
        let r = AllocLog::open_written_by(&path, Writer::this_process()).expect("open");
        assert_eq!(w.append(&entry(1 << 21, 0)), Some(0));
        assert_eq!(w.append(&entry(2 << 21, 1)), Some(1));
        w.freed(0, 99);
        w.fallback(12);
        let e = r.entries();
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].start, e[0].freed_ns, e[1].start),
            (1 << 21, Some(99), 2 << 21)
        );
        assert_eq!((r.head().fallbacks, r.head().last_errno), (1, 12));
        // Shrunk under the reader: nothing is read, and nothing faults.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open")
            .set_len(0)
            .expect("shrink");
        assert!(r.entries().is_empty());
        assert_eq!(r.head().fallbacks, 0);
    }
}
