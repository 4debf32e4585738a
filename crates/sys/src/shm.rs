//! A ring of 64-bit samples in a shared file mapping (`/dev/shm`), written by a program that
//! cooperates with hugewise (its own kernels, or any program through the C ABI) and read by a
//! promotion daemon in another process.
//!
//! Layout, little-endian, 64-byte header then `slots` words: magic `HWSAMP01`, version (u32),
//! slots (u32, a power of two), head (u64: samples ever written), writer pid (u64), thinning
//! (u64, written by the reader: publish one sample in this many of those the writer would, 0 or
//! 1 for all; a writer that does not read it publishes as before), weight (u64: the sum over the
//! samples written of the thinning each was published at, so that a reader can weigh what it
//! reads by what it stands for; 0 from a writer that does not keep it), period (u64: how many
//! of its accesses one published sample stands for before thinning; 0 when the writer does not
//! say). A sample is an address whose two low bits say more (see [`sample_word`]): bit 0 that
//! the access wrote, bit 1 that it was taken at the writer's full rate inside a stretch the
//! thinning skipped whole (a watched pass of a kernel's loop), not one access in so many.
//! A writer
//! claims a slot with one `fetch_add` on head and then stores its word, so several threads may
//! write at once without a lock; a reader may see a claimed slot before its store lands (it
//! then reads the slot's previous sample), which a sampler tolerates. A reader that falls more
//! than `slots` behind has lost the oldest samples and is told how many.
//!
//! Trust: the files live in world-writable `/dev/shm` under names anyone can guess. A writer
//! creates its file afresh (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600), so it never writes
//! through a link or a file another user planted; a reader opens without following links, only
//! a regular file, and a reader that acts on what it reads names the [`Writer`] it expects:
//! the file must belong to that process's user (or root) and its header must name that pid.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

const MAGIC: u64 = u64::from_le_bytes(*b"HWSAMP01");

/// Where process `pid` publishes its sample ring, by convention, so that a daemon pointed at
/// the pid finds it.
pub fn ring_path(pid: i32) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/dev/shm/hugewise-samples.{pid}"))
}
const VERSION: u32 = 1;
const HEADER: usize = 64;
/// The header word in which the reader asks for fewer samples.
const THINNING: usize = 4;
/// The header word in which writers add up what their samples stand for.
const WEIGHT: usize = 5;
/// The header word in which a writer says how many accesses one published sample stands for
/// before any thinning (0: it does not say).
const PERIOD: usize = 6;
/// The bit of a sample that says the access wrote.
pub const WRITE_BIT: u64 = 1;

/// The bit of a sample that says it was taken densely: at the writer's full rate, inside a
/// stretch of work that the thinning took or skipped whole (a kernel's watched pass). Its
/// neighbours in the stretch were not thinned away, so a step between two of them is all the
/// reader would have seen at the full rate; a sample without it stands alone for the thinning,
/// one access in so many.
pub const DENSE_BIT: u64 = 2;

/// The word of one sample: the address, its two low bits replaced by the flags (the address
/// is kept to the nearest 4 bytes, far finer than any page a reader counts).
#[inline]
pub fn sample_word(addr: usize, write: bool, dense: bool) -> u64 {
    addr as u64 & !(WRITE_BIT | DENSE_BIT)
        | if write { WRITE_BIT } else { 0 }
        | if dense { DENSE_BIT } else { 0 }
}

/// The most thinning a reader may ask for: even thinned, a writer keeps publishing enough for
/// the reader to notice that what is hot has changed.
pub const MAX_THINNING: u32 = 1024;

/// A sample ring: mapped for its writer and for readers of a ring they trust, read through its
/// descriptor by a reader that acts on another process's ring (the file stays
/// until its owner removes it).
#[derive(Debug)]
pub struct SampleRing {
    shared: Shared,
    slots: usize,
    writable: bool,
    /// Whether this reader may store the reader's words (the thinning).
    answers: bool,
}

fn map_shared(file: &File, path: &Path, len: usize, write: bool) -> Result<NonNull<u8>> {
    let prot = if write {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    // SAFETY: a fresh shared mapping of a file we hold open, at an address of the kernel's
    // choice; it overlaps no existing memory and the result is checked against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(Error::Syscall {
            call: "mmap(MAP_SHARED)",
            errno: crate::errno::Errno::last(),
        });
    }
    NonNull::new(p.cast())
        .ok_or_else(|| Error::Invalid(format!("{}: mmap gave null", path.display())))
}

/// Who must have made a shared file for a reader to act on what it says (see the module's
/// doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writer {
    /// The process that must have created it: the pid its header names.
    pub pid: i32,
    /// The user that process runs as: the file must belong to it, or to root.
    pub uid: u32,
}

impl Writer {
    /// This process, as the writer of the files it reads back itself.
    pub fn this_process() -> Writer {
        Writer {
            pid: std::process::id() as i32,
            uid: crate::caps::euid(),
        }
    }
}

/// Create the file at `path` afresh, mode 0600, never through a link; or, when this user's
/// own file is already there (the same process after `exec`, whose watcher keeps the file
/// mapped, or an earlier process that had the same pid), take that file over, emptied.
/// Anything else there (a link, a FIFO, another user's file, a second name of another file)
/// is refused.
fn create_private(path: &Path) -> Result<File> {
    let created = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o600)
        .open(path);
    match created {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        r => return r.map_err(|e| Error::io(path, e)),
    }
    // No O_CREAT: what is there now, looked at through the handle itself (no race between
    // a look and an open), never a link, never blocking on a FIFO.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let (kind, uid, links) = match &file {
        Ok(f) => {
            let m = f.metadata().map_err(|e| Error::io(path, e))?;
            (crate::file::type_name(&m.file_type()), m.uid(), m.nlink())
        }
        Err(_) => {
            let m = std::fs::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
            (crate::file::type_name(&m.file_type()), m.uid(), m.nlink())
        }
    };
    match file {
        Ok(f) if kind == "a regular file" && uid == crate::caps::euid() && links == 1 => {
            f.set_len(0).map_err(|e| Error::io(path, e))?;
            f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .map_err(|e| Error::io(path, e))?;
            Ok(f)
        }
        _ => Err(Error::Invalid(format!(
            "{} already exists ({kind}, owned by uid {uid}{}): hugewise never writes through \
             a shared file it did not make; remove it if it is stale",
            path.display(),
            if links > 1 { ", with another name" } else { "" }
        ))),
    }
}

/// One of hugewise's shared files as this process holds it: mapped, for its writer and for a
/// reader of a file it trusts (its own), or read and written through the descriptor, for a
/// reader that acts on another process's file, whose writer could shrink it under a mapping
/// (the next read of the mapping would raise SIGBUS). Every format begins with the same words:
/// magic, version with a count in the high half, a word of the format's, the writer's pid.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The mapping, when there is one.
    ptr: Option<NonNull<u8>>,
    len: usize,
    /// The descriptor, when the file is read through it.
    file: Option<File>,
}

// SAFETY: the mapping is only reached through atomics, which are safe to share across threads,
// and a File is Send and Sync.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// Whether a new shared file's pages are faulted in when it is made, or as they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backing {
    /// Every page now, once: for a file written through from end to end at a steady pace (the
    /// sample ring), whose first-time writes would otherwise fault a page every few hundred
    /// samples, stalling the program and reading to a promotion daemon, which counts its
    /// faults, as memory being faulted in.
    Faulted,
    /// Only pages written take memory: for a file most of which stays unwritten (the
    /// allocation log, sized for 262,144 entries where a program makes dozens). Faulted in at
    /// once, its 32 MiB were charged to every program `hugewise exec` ran.
    Sparse,
}

impl Shared {
    /// Create the file at `path` (see [`create_private`]), `len` bytes long, backed as `backing`
    /// says, map it for writing and write the header words: `magic`, `version` with `count` in
    /// the high half, and this process's pid in the fourth word. The magic goes last: a reader
    /// that sees it sees a complete header.
    pub(crate) fn create(
        path: &Path,
        len: usize,
        backing: Backing,
        magic: u64,
        version: u32,
        count: usize,
    ) -> Result<Shared> {
        let file = create_private(path)?;
        file.set_len(len as u64).map_err(|e| Error::io(path, e))?;
        let ptr = map_shared(&file, path, len, true)?;
        if backing == Backing::Faulted {
            // A kernel without MADV_POPULATE_WRITE (before 5.14) faults them as they come.
            let at = ptr.as_ptr() as usize;
            let _ = crate::mmap::advise_own(at..at + len, crate::mmap::Advice::PopulateWrite);
        }
        let s = Shared {
            ptr: Some(ptr),
            len,
            file: None,
        };
        s.store_word(1, u64::from(version) | ((count as u64) << 32));
        s.store_word(3, u64::from(std::process::id()));
        if let Some(h) = s.words(0, 1) {
            h[0].store(magic, Ordering::Release);
        }
        Ok(s)
    }

    /// Open the file at `path`, checked as [`open_checked`] checks it: read through the
    /// descriptor when `from` names another process as its writer, mapped otherwise; for
    /// writing too when `write`.
    pub(crate) fn open(
        path: &Path,
        min: usize,
        magic: u64,
        what: &str,
        write: bool,
        from: Option<Writer>,
    ) -> Result<Shared> {
        let (file, len) = open_checked(path, min, magic, what, write, from)?;
        if from.is_some() {
            return Ok(Shared {
                ptr: None,
                len,
                file: Some(file),
            });
        }
        Ok(Shared {
            ptr: Some(map_shared(&file, path, len, write)?),
            len,
            file: None,
        })
    }

    /// The file's length when opened.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Words `from..from + n` of the mapping, when mapped and inside it.
    pub(crate) fn words(&self, from: usize, n: usize) -> Option<&[AtomicU64]> {
        let p = self.ptr?;
        if (from + n) * 8 > self.len {
            return None;
        }
        // SAFETY: the range lies inside the mapping (checked above), which is page aligned
        // and lives as long as self; AtomicU64 has u64's size and alignment; every access goes
        // through atomics, so a writer in another process is no data race.
        Some(unsafe { std::slice::from_raw_parts(p.as_ptr().cast::<AtomicU64>().add(from), n) })
    }

    /// Word `i`: 0 past the file's end.
    pub(crate) fn word(&self, i: usize) -> u64 {
        match (self.words(i, 1), &self.file) {
            (Some(w), _) => w[0].load(Ordering::Acquire),
            (None, Some(f)) => read_word(f, i as u64),
            (None, None) => 0,
        }
    }

    /// Store word `i` (a header word the format gives its readers, or the writer's).
    pub(crate) fn store_word(&self, i: usize, v: u64) {
        match (self.words(i, 1), &self.file) {
            (Some(w), _) => w[0].store(v, Ordering::Relaxed),
            (None, Some(f)) => {
                let _ = f.write_at(&v.to_le_bytes(), (i * 8) as u64);
            }
            (None, None) => {}
        }
    }

    /// Append words `from..from + n` to `out`, in address order (a record's first word, read
    /// first, can say whether the rest is complete): fewer when the file ends before them.
    pub(crate) fn read_words(&self, from: usize, n: usize, out: &mut Vec<u64>) {
        if let Some(w) = self.words(from, n) {
            out.extend(w.iter().map(|x| x.load(Ordering::Acquire)));
            return;
        }
        let Some(f) = &self.file else {
            return;
        };
        let mut buf = vec![0u8; n * 8];
        let mut got = 0;
        while got < buf.len() {
            match f.read_at(&mut buf[got..], (from * 8 + got) as u64) {
                Ok(0) | Err(_) => break,
                Ok(k) => got += k,
            }
        }
        out.extend(
            buf[..got / 8 * 8]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())),
        );
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(p) = self.ptr {
            // SAFETY: ptr/len are the mapping made in create/open, unmapped once here; no
            // reference into it outlives self.
            unsafe {
                libc::munmap(p.as_ptr().cast(), self.len);
            }
        }
    }
}

/// Word `i` of `file` (little-endian), read through the descriptor: 0 past its end.
fn read_word(file: &File, i: u64) -> u64 {
    let mut b = [0u8; 8];
    match file.read_at(&mut b, i * 8) {
        Ok(8) => u64::from_le_bytes(b),
        _ => 0,
    }
}

/// Open the shared file at `path` (for writing too when `write`) and check it, through the
/// descriptor alone: a regular file, never through a link, never waiting on a FIFO planted
/// under the name; at least `min` bytes; `magic` first (a `what`, with its article's); and,
/// when `from` is given, owned by that writer's user (or root) with its pid in the header. The
/// file and its length.
fn open_checked(
    path: &Path,
    min: usize,
    magic: u64,
    what: &str,
    write: bool,
    from: Option<Writer>,
) -> Result<(File, usize)> {
    let file = OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.file_type().is_file() {
        return Err(Error::Invalid(format!(
            "{} is {}, not {what} of hugewise",
            path.display(),
            crate::file::type_name(&meta.file_type())
        )));
    }
    if let Some(w) = from {
        if meta.uid() != w.uid && meta.uid() != 0 {
            return Err(Error::Invalid(format!(
                "{} belongs to uid {}, not to uid {} that process {} runs as: not read, as \
                 another user may have put it there",
                path.display(),
                meta.uid(),
                w.uid,
                w.pid
            )));
        }
    }
    let size = meta.len() as usize;
    if size < min.max(32) {
        return Err(Error::parse(
            path,
            0,
            format!("{size} bytes: shorter than the header of {what}"),
        ));
    }
    let word = |i: u64| read_word(&file, i);
    if word(0) != magic {
        return Err(Error::parse(
            path,
            0,
            format!("not {what} of hugewise (bad magic)"),
        ));
    }
    let writer = word(3) as i32;
    if let Some(w) = from.filter(|w| w.pid != writer) {
        return Err(Error::parse(
            path,
            0,
            format!(
                "written by process {writer}, not by process {}: not read",
                w.pid
            ),
        ));
    }
    Ok((file, size))
}

impl SampleRing {
    /// Create the ring file at `path` (mode 0600, never through a link; one of this user's
    /// already there is taken over) with `slots` slots (rounded up to a power of two, at least
    /// 64) and map it for writing.
    pub fn create(path: &Path, slots: usize) -> Result<SampleRing> {
        let slots = slots.max(64).next_power_of_two();
        Ok(SampleRing {
            shared: Shared::create(
                path,
                HEADER + slots * 8,
                Backing::Faulted,
                MAGIC,
                VERSION,
                slots,
            )?,
            slots,
            writable: true,
            answers: true,
        })
    }

    /// Map an existing ring to read it, checking its header. Mapped for writing too where the
    /// file allows it, so the reader can ask for fewer samples ([`set_thinning`]); read-only
    /// otherwise.
    ///
    /// [`set_thinning`]: Self::set_thinning
    pub fn open(path: &Path) -> Result<SampleRing> {
        SampleRing::open_from(path, None)
    }

    /// As [`open`](Self::open), for a reader that acts on the samples: only a ring that
    /// `writer` made (see [`Writer`]), read through its descriptor, never mapped, so that the
    /// writer shrinking its file cannot make this reader fault.
    pub fn open_written_by(path: &Path, writer: Writer) -> Result<SampleRing> {
        SampleRing::open_from(path, Some(writer))
    }

    fn open_from(path: &Path, from: Option<Writer>) -> Result<SampleRing> {
        const WHAT: &str = "a sample ring";
        let (shared, answers) = match Shared::open(path, HEADER, MAGIC, WHAT, true, from) {
            Ok(s) => (s, true),
            Err(Error::Io { .. }) => (Shared::open(path, HEADER, MAGIC, WHAT, false, from)?, false),
            Err(e) => return Err(e),
        };
        let size = shared.len();
        let vs = shared.word(1);
        let (version, slots) = ((vs & 0xffff_ffff) as u32, (vs >> 32) as usize);
        if version != VERSION {
            return Err(Error::parse(
                path,
                0,
                format!("sample ring version {version}, this hugewise reads {VERSION}"),
            ));
        }
        if !slots.is_power_of_two() || HEADER + slots * 8 != size {
            return Err(Error::parse(
                path,
                0,
                format!("{slots} slots do not match the file's {size} bytes"),
            ));
        }
        Ok(SampleRing {
            shared,
            slots,
            writable: false,
            answers,
        })
    }

    /// Slots in the ring.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The pid of the process that created the ring.
    pub fn writer_pid(&self) -> i32 {
        self.shared.word(3) as i32
    }

    /// The thinning the reader asks for: publish one sample in this many (1: all). Read by a
    /// writer when it starts a piece of work, so a change reaches it within one piece.
    #[inline]
    pub fn thinning(&self) -> u32 {
        (self.shared.word(THINNING) as u32).clamp(1, MAX_THINNING)
    }

    /// Ask the writer to publish one sample in `factor` (clamped to 1..=[`MAX_THINNING`]).
    /// Returns whether the request could be stored: not on a ring opened read-only.
    pub fn set_thinning(&self, factor: u32) -> bool {
        if !self.answers {
            return false;
        }
        self.shared
            .store_word(THINNING, u64::from(factor.clamp(1, MAX_THINNING)));
        true
    }

    /// Samples ever written.
    pub fn head(&self) -> u64 {
        self.shared.word(2)
    }

    /// Append one sample. Only the ring's creator writes: on a ring opened to read this does
    /// nothing.
    #[inline]
    pub fn push(&self, sample: u64) {
        self.push_weighted(&[sample], 1);
    }

    /// Append `samples` in one claim: one atomic add for all of them, so that threads which
    /// publish often do not take the head's cache line from each other at every sample.
    #[inline]
    pub fn push_all(&self, samples: &[u64]) {
        self.push_weighted(samples, 1);
    }

    /// As [`push_all`](Self::push_all), each sample standing for `weight` (the thinning it
    /// was taken at): a reader then counts it `weight` times.
    #[inline]
    pub fn push_weighted(&self, samples: &[u64], weight: u32) {
        debug_assert!(self.writable, "push on a sample ring opened to read");
        let (Some(header), Some(ring)) = (
            self.shared.words(0, HEADER / 8),
            self.shared.words(HEADER / 8, self.slots),
        ) else {
            return;
        };
        if !self.writable || samples.is_empty() {
            return;
        }
        let n = samples.len() as u64;
        let first = header[2].fetch_add(n, Ordering::AcqRel);
        for (k, &s) in samples.iter().enumerate() {
            ring[(first as usize).wrapping_add(k) & (self.slots - 1)].store(s, Ordering::Relaxed);
        }
        header[WEIGHT].fetch_add(n * u64::from(weight.max(1)), Ordering::Relaxed);
    }

    /// The sum of what every sample written stands for (0 from writers that do not keep it).
    pub fn weight(&self) -> u64 {
        self.shared.word(WEIGHT)
    }

    /// Say that one published sample stands for `accesses` accesses of the writer (its
    /// sampling period, before the reader's thinning), so that a reader can turn sampled counts
    /// into rates. Only the ring's creator says it.
    pub fn set_period(&self, accesses: u64) {
        if self.writable {
            self.shared.store_word(PERIOD, accesses);
        }
    }

    /// The writer's sampling period, if it said (see [`set_period`](Self::set_period)).
    pub fn period(&self) -> Option<u64> {
        Some(self.shared.word(PERIOD)).filter(|&p| p > 0)
    }

    /// Append the samples written since `cursor` (a head value from an earlier call, 0 at
    /// first) to `out`; returns the new cursor and how many samples were overwritten before
    /// they could be read.
    pub fn read_since(&self, cursor: u64, out: &mut Vec<u64>) -> (u64, u64) {
        let head = self.head();
        let from = cursor.max(head.saturating_sub(self.slots as u64));
        let lost = from - cursor.min(from);
        // At most two runs of slots: up to the ring's end, then from its start.
        let mut i = from;
        while i < head {
            let slot = i as usize & (self.slots - 1);
            let n = ((head - i) as usize).min(self.slots - slot);
            let before = out.len();
            self.shared.read_words(HEADER / 8 + slot, n, out);
            if out.len() - before < n {
                // The file shrank under the reader: what is left is not there.
                break;
            }
            i += n as u64;
        }
        (head, lost)
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    /// Bytes the file system holds for `path` (tmpfs: the pages the file has).
    fn held(path: &Path) -> u64 {
        std::fs::metadata(path).expect("stat").blocks() * 512
    }

    #[test]
    fn an_allocation_log_takes_memory_only_where_written() {
        // tmpfs, where logs live in use (it counts a file's pages as they are allocated); any
        // file system that keeps sparse files sparse tells the same.
        let d = tempfile::Builder::new()
            .prefix("hw-backing.")
            .tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .expect("a directory");
        let log = d.path().join("log");
        let w = crate::alloclog::AllocLog::create(&log, 1 << 18).expect("log");
        let len = std::fs::metadata(&log).expect("stat").len();
        assert_eq!(len, 64 + (1 << 18) * 128, "the log's room");
        // Its header's page, or one huge page where tmpfs hands those out: not its 32 MiB
        // (a new ring is faulted in whole: see the test below).
        assert!(
            held(&log) <= (2 << 20) + (64 << 10),
            "a log with nothing written holds {} of its {len} B",
            held(&log)
        );
        drop(w);
    }

    #[test]
    fn a_reader_sees_what_a_writer_pushed_and_what_it_lost() {
        let dir = std::env::temp_dir().join(format!("hw-ring-{}", std::process::id()));
        let w = SampleRing::create(&dir, 100).expect("create");
        assert_eq!(w.slots(), 128);
        let r = SampleRing::open(&dir).expect("open");
        assert_eq!(
            (r.slots(), r.writer_pid()),
            (128, std::process::id() as i32)
        );
        let mut got = Vec::new();
        for i in 0..100u64 {
            w.push(i);
        }
        let (c, lost) = r.read_since(0, &mut got);
        assert_eq!((c, lost, got.len()), (100, 0, 100));
        assert_eq!(got[99], 99);
        // 300 more: the ring holds the newest 128, so 172 of them are lost to this reader.
        for i in 100..400u64 {
            w.push(i);
        }
        got.clear();
        let (c, lost) = r.read_since(c, &mut got);
        assert_eq!((c, lost, got.len()), (400, 172, 128));
        assert_eq!((got[0], got[127]), (272, 399));
        std::fs::remove_file(&dir).expect("remove");
    }

    #[test]
    fn a_reader_asks_the_writer_for_fewer_samples() {
        let path = std::env::temp_dir().join(format!("hw-ring-thin-{}", std::process::id()));
        let w = SampleRing::create(&path, 64).expect("create");
        assert_eq!(w.thinning(), 1, "a fresh ring asks for every sample");
        let r = SampleRing::open(&path).expect("open");
        assert!(r.set_thinning(16));
        assert_eq!(w.thinning(), 16);
        assert!(r.set_thinning(1 << 30));
        assert_eq!(w.thinning(), MAX_THINNING, "clamped");
        assert!(r.set_thinning(0));
        assert_eq!(w.thinning(), 1);
        // What the samples stand for adds up: 3 plain, 2 taken at one in 16.
        w.push_all(&[1, 2, 3]);
        w.push_weighted(&[4, 5], 16);
        assert_eq!((r.head(), r.weight()), (5, 35));
        // The writer's sampling period: unsaid, then said; only the writer says it.
        assert_eq!(r.period(), None);
        w.set_period(64);
        r.set_period(1);
        assert_eq!(r.period(), Some(64));
        std::fs::remove_file(&path).expect("remove");
    }

    #[test]
    fn a_foreign_file_is_refused_with_its_name() {
        let p = std::env::temp_dir().join(format!("hw-notring-{}", std::process::id()));
        std::fs::write(&p, [7u8; 4096]).expect("write");
        let e = SampleRing::open(&p).expect_err("foreign").to_string();
        assert!(e.contains("bad magic") && e.contains("hw-notring"), "{e}");
        std::fs::remove_file(&p).expect("remove");
    }

    /// Why creating a ring at `path` was refused.
    fn refused_create(path: &Path) -> String {
        SampleRing::create(path, 64)
            .expect_err("refused")
            .to_string()
    }

    fn chown(path: &Path, uid: u32) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: a NUL-terminated path that lives across the call; -1 leaves the group.
        assert_eq!(
            unsafe { libc::lchown(c.as_ptr(), uid, u32::MAX) },
            0,
            "chown"
        );
    }

    #[test]
    fn a_link_planted_under_the_ring_name_is_refused_not_written_through() {
        let d = tempfile::tempdir().expect("tmp");
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").expect("write");
        let ring = d.path().join("hugewise-samples.1");
        std::os::unix::fs::symlink(&victim, &ring).expect("plant");
        let e = refused_create(&ring);
        assert!(
            e.contains("a symbolic link") && e.contains("never writes through"),
            "{e}"
        );
        assert_eq!(std::fs::read(&victim).expect("read"), b"keep");
    }

    #[test]
    fn a_new_ring_is_faulted_in_whole_so_writing_it_takes_no_fault() {
        let d = tempfile::tempdir().expect("tmp");
        // 1 MiB of slots, 256 pages: written for the first time, each would fault.
        let w = SampleRing::create(&d.path().join("ring"), 1 << 17).expect("create");
        let samples: Vec<u64> = (0..1u64 << 17).collect();
        let before = crate::rusage::thread_faults();
        w.push_all(&samples);
        let after = crate::rusage::thread_faults();
        assert!(
            after.minor - before.minor < 8,
            "{} faults writing a new ring",
            after.minor - before.minor
        );
    }

    #[test]
    fn a_ring_is_private_and_a_stale_one_of_ours_is_taken_over() {
        let d = tempfile::tempdir().expect("tmp");
        let path = d.path().join("hugewise-samples.2");
        std::fs::write(&path, [9u8; 100]).expect("stale");
        let w = SampleRing::create(&path, 64).expect("create over our own stale file");
        assert_eq!(w.slots(), 64);
        let mode = std::fs::metadata(&path).expect("stat").mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn another_users_file_under_the_ring_name_is_refused() {
        if !crate::testing::root_or_skip() {
            return;
        }
        let d = tempfile::tempdir().expect("tmp");
        let path = d.path().join("hugewise-samples.3");
        std::fs::write(&path, b"theirs").expect("write");
        chown(&path, 65534);
        let e = refused_create(&path);
        assert!(e.contains("owned by uid 65534"), "{e}");
        assert_eq!(std::fs::read(&path).expect("read"), b"theirs");
    }

    #[test]
    fn a_reader_that_acts_reads_only_its_writers_ring() {
        let d = tempfile::tempdir().expect("tmp");
        let path = d.path().join("hugewise-samples.4");
        let _w = SampleRing::create(&path, 64).expect("create");
        let me = Writer::this_process();
        SampleRing::open_written_by(&path, me).expect("our own ring");
        let other_pid = Writer { pid: 1, ..me };
        let e = SampleRing::open_written_by(&path, other_pid).expect_err("not pid 1's");
        assert!(e.to_string().contains("not by process 1"), "{e}");
        if me.uid == 0 {
            // Root's ring for a target that runs as another user: a root file is trusted.
            SampleRing::open_written_by(&path, Writer { uid: 65534, ..me }).expect("root's");
            chown(&path, 65534);
            // A target of root's: a ring another user owns is refused, whatever it says.
            let e = SampleRing::open_written_by(&path, me).expect_err("nobody's");
            assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
        }
    }

    #[test]
    fn a_fifo_under_the_ring_name_is_refused_without_waiting() {
        let d = tempfile::tempdir().expect("tmp");
        let path = d.path().join("hugewise-samples.5");
        crate::testing::mkfifo(&path).expect("mkfifo");
        let e = SampleRing::open(&path).expect_err("a FIFO").to_string();
        assert!(e.contains("a FIFO"), "{e}");
    }

    #[test]
    fn a_second_name_of_another_file_is_refused() {
        let d = tempfile::tempdir().expect("tmp");
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").expect("write");
        let ring = d.path().join("hugewise-samples.6");
        std::fs::hard_link(&victim, &ring).expect("link");
        let e = refused_create(&ring);
        assert!(e.contains("with another name"), "{e}");
        assert_eq!(std::fs::read(&victim).expect("read"), b"keep");
    }

    #[test]
    fn a_reader_of_another_process_ring_survives_the_file_shrinking() {
        let d = tempfile::tempdir().expect("tmp");
        let path = d.path().join("hugewise-samples.7");
        let w = SampleRing::create(&path, 64).expect("create");
        let r = SampleRing::open_written_by(&path, Writer::this_process()).expect("open");
        w.push_all(&[10, 20, 30]);
        w.set_period(8);
        let mut got = Vec::new();
        assert_eq!(r.read_since(0, &mut got), (3, 0));
        assert_eq!((got, r.period()), (vec![10, 20, 30], Some(8)));
        assert!(r.set_thinning(4));
        assert_eq!(
            w.thinning(),
            4,
            "the request reached the writer through the descriptor"
        );
        // Samples that wrap round the ring's end come back in order.
        let more: Vec<u64> = (100..170).collect();
        w.push_all(&more);
        let mut got = Vec::new();
        assert_eq!(r.read_since(3, &mut got), (73, 6));
        assert_eq!(got, (106..170).collect::<Vec<u64>>());
        // The writer's user shrinks the file: a mapping would fault (SIGBUS) on the next read;
        // through the descriptor the reader sees nothing left.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open")
            .set_len(0)
            .expect("shrink");
        let mut got = Vec::new();
        assert_eq!(r.read_since(73, &mut got), (0, 0));
        assert!(got.is_empty());
        assert_eq!((r.weight(), r.period()), (0, None));
    }
}
