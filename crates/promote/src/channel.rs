//! The channel through which a cooperating program tells a promotion daemon what it touches:
//! a sample ring at a path derived from the program's pid, so a daemon pointed at the pid finds
//! it. A sample is a virtual address; its lowest bit says whether the access was a write.

use std::path::{Path, PathBuf};

use hugewise_sys::shm::SampleRing;

use crate::Result;

/// Where process `pid` publishes its samples.
pub fn path(pid: i32) -> PathBuf {
    hugewise_sys::shm::ring_path(pid)
}

/// The writing end, owned by the program: it removes the file when dropped.
#[derive(Debug)]
pub struct Publisher {
    ring: SampleRing,
    path: PathBuf,
}

impl Publisher {
    /// Publish this process's samples in a ring of `slots` samples.
    pub fn create(slots: usize) -> Result<Publisher> {
        Publisher::create_at(&path(std::process::id() as i32), slots)
    }

    /// Publish at an explicit path (tests, or a program that names its own).
    pub fn create_at(path: &Path, slots: usize) -> Result<Publisher> {
        Ok(Publisher {
            ring: SampleRing::create(path, slots)?,
            path: path.to_path_buf(),
        })
    }

    /// Record one access.
    #[inline]
    pub fn sample(&self, addr: usize, write: bool) {
        self.ring.push(addr as u64 & !1 | u64::from(write));
    }

    /// The ring, for readers in the same process.
    pub fn ring(&self) -> &SampleRing {
        &self.ring
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The reading end, held by a daemon.
#[derive(Debug)]
pub struct Subscriber {
    ring: SampleRing,
    cursor: u64,
    /// Samples overwritten before they were read, in total.
    pub lost: u64,
}

impl Subscriber {
    /// Open process `pid`'s ring, if it publishes one.
    pub fn open(pid: i32) -> Option<Subscriber> {
        Subscriber::open_at(&path(pid))
    }

    /// Open the ring at `path`, if there is one and it is valid. Starts from the newest sample.
    pub fn open_at(path: &Path) -> Option<Subscriber> {
        let ring = SampleRing::open(path).ok()?;
        let cursor = ring.head();
        Some(Subscriber {
            ring,
            cursor,
            lost: 0,
        })
    }

    /// Append the addresses sampled since the last call to `out` (write bit cleared), at most
    /// the newest `max` of them: a fast program can publish more samples than are worth
    /// counting, and the newest are the ones that say what is hot now. Returns how many were
    /// passed over (overwritten, or beyond `max`).
    pub fn drain(&mut self, out: &mut Vec<usize>, max: usize) -> u64 {
        let head = self.ring.head();
        let skip_to = head.saturating_sub(max as u64).max(self.cursor);
        let mut raw = Vec::new();
        let (c, lost) = self.ring.read_since(skip_to, &mut raw);
        let passed = (skip_to - self.cursor) + lost;
        self.cursor = c;
        self.lost += passed;
        out.extend(raw.into_iter().map(|s| (s & !1) as usize));
        passed
    }
}
