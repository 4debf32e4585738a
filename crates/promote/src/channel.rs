//! The channel through which a cooperating program tells a promotion daemon what it touches:
//! a sample ring at a path derived from the program's pid, so a daemon pointed at the pid finds
//! it. A sample is a virtual address; its lowest bit says whether the access was a write.

use std::path::{Path, PathBuf};

use hugewise_sys::shm::{self, SampleRing, Writer};

use crate::Result;

/// Where process `pid` publishes its samples.
pub fn path(pid: i32) -> PathBuf {
    hugewise_sys::shm::ring_path(pid)
}

/// Where `bench promote`, running in process `pid`, publishes its workload's samples: beside
/// the programs' rings, under a name of its own.
pub fn bench_path(pid: i32) -> PathBuf {
    path(pid).with_file_name(format!("{BENCH_PREFIX}{pid}"))
}

/// File-name prefix of a program's ring (see [`hugewise_sys::shm::ring_path`]).
const PROGRAM_PREFIX: &str = "hugewise-samples.";

/// File-name prefix of `bench promote`'s ring.
const BENCH_PREFIX: &str = "hugewise-bench-samples.";

/// Remove the rings in `/dev/shm` whose writer has exited without removing its own (Ctrl-C,
/// SIGKILL), so that shared memory does not fill up with them. Returns how many were removed.
pub fn remove_dead_rings() -> usize {
    remove_stale(Path::new("/dev/shm"), &|pid| {
        Path::new("/proc").join(pid.to_string()).exists()
    })
}

/// Remove the sample rings in `dir` (a program's or `bench promote`'s) of this user whose
/// writer, named by the pid in the file name, is no longer `alive`. Returns how many were
/// removed.
pub fn remove_stale(dir: &Path, alive: &dyn Fn(i32) -> bool) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| {
                [PROGRAM_PREFIX, BENCH_PREFIX]
                    .iter()
                    .find_map(|p| n.strip_prefix(p))
            })
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if !alive(pid)
            && hugewise_sys::file::is_own(&e.path())
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// The writing end, owned by the program: it removes the file when dropped.
#[derive(Debug)]
pub struct Publisher {
    ring: SampleRing,
    path: PathBuf,
}

impl Publisher {
    /// Publish this process's samples in a ring of `slots` samples. Rings left in `/dev/shm`
    /// by programs that died without removing theirs (Ctrl-C, SIGKILL) are removed first, so
    /// shared memory does not fill up with them.
    pub fn create(slots: usize) -> Result<Publisher> {
        remove_dead_rings();
        Publisher::create_at(&path(std::process::id() as i32), slots)
    }

    /// Publish at an explicit path (tests, or a program that names its own).
    pub fn create_at(path: &Path, slots: usize) -> Result<Publisher> {
        Ok(Publisher {
            ring: SampleRing::create(path, slots)?,
            path: path.to_path_buf(),
        })
    }

    /// The thinning the daemon asks for: a program that samples one access in N should now
    /// sample one in N times this, and publish with [`sample_weighted`](Self::sample_weighted)
    /// (read it now and then, not at every access).
    #[inline]
    pub fn thinning(&self) -> u32 {
        self.ring.thinning()
    }

    /// Record one access that stands for `weight` (the thinning it was taken at).
    #[inline]
    pub fn sample_weighted(&self, addr: usize, write: bool, weight: u32) {
        self.ring
            .push_weighted(&[shm::sample_word(addr, write, false)], weight);
    }

    /// Record one access.
    #[inline]
    pub fn sample(&self, addr: usize, write: bool) {
        self.ring.push(shm::sample_word(addr, write, false));
    }

    /// Say how many accesses one sample stands for (one in `accesses` is published, before
    /// the daemon's thinning): the daemon can then weigh a chunk's walks in walks per second
    /// against what collapsing it costs.
    pub fn set_period(&self, accesses: u64) {
        self.ring.set_period(accesses);
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

/// The reading end, held by a daemon. When it goes, it asks the program for every sample
/// again: a program left thinned by a daemon that stopped would leave the next one too few
/// samples to start from.
#[derive(Debug)]
pub struct Subscriber {
    ring: SampleRing,
    cursor: u64,
    /// The ring's weight word at the last drain.
    weight_seen: u64,
    /// Samples overwritten before they were read, in total.
    pub lost: u64,
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.ring.set_thinning(1);
    }
}

impl Subscriber {
    /// Open `writer`'s ring at its usual path, if it publishes one there.
    pub fn open(writer: Writer) -> Option<Subscriber> {
        Subscriber::open_at(&path(writer.pid), writer).ok()
    }

    /// Open the ring at `path` if it is valid and `writer` made it (its user or root owns the
    /// file, and its header names that pid: another user may have put a file under a name in
    /// `/dev/shm` to steer the daemon). Starts from the newest sample.
    pub fn open_at(path: &Path, writer: Writer) -> Result<Subscriber> {
        let ring = SampleRing::open_written_by(path, writer)?;
        let cursor = ring.head();
        let weight_seen = ring.weight();
        Ok(Subscriber {
            ring,
            cursor,
            weight_seen,
            lost: 0,
        })
    }

    /// Ask the program to publish one sample in `factor` of those it would (1: all); see
    /// [`crate::thinning`]. Returns whether the ring could take the request (not when the
    /// daemon may only read it). A program that does not read the request publishes as before.
    pub fn ask_thinning(&self, factor: u32) -> bool {
        self.ring.set_thinning(factor)
    }

    /// How many accesses one sample stands for before thinning, if the program said.
    pub fn period(&self) -> Option<u64> {
        self.ring.period()
    }

    /// Samples published since the last [`drain`](Self::drain), read or not.
    pub fn waiting(&self) -> u64 {
        self.ring.head().saturating_sub(self.cursor)
    }

    /// Append the addresses sampled since the last call to `out` (write bit cleared, the
    /// [`DENSE_BIT`](shm::DENSE_BIT) kept for [`is_dense`] to read), at most
    /// the newest `max` of them: a fast program can publish more samples than are worth
    /// counting, and the newest are the ones that say what is hot now. Returns how many were
    /// passed over (overwritten, or beyond `max`) and what one sample of these stands for on
    /// average (the thinning they were published at; 1 from a writer that does not say).
    pub fn drain(&mut self, out: &mut Vec<usize>, max: usize) -> Drained {
        let weight = self.ring.weight();
        let head = self.ring.head();
        let published = head.saturating_sub(self.cursor);
        let weighed = weight.saturating_sub(self.weight_seen);
        self.weight_seen = weight;
        let skip_to = head.saturating_sub(max as u64).max(self.cursor);
        let mut raw = Vec::new();
        let (c, lost) = self.ring.read_since(skip_to, &mut raw);
        let passed = (skip_to - self.cursor) + lost;
        self.cursor = c;
        self.lost += passed;
        out.extend(raw.into_iter().map(|s| (s & !shm::WRITE_BIT) as usize));
        Drained {
            passed,
            weight: if weighed == 0 || published == 0 {
                1.0
            } else {
                (weighed as f64 / published as f64).max(1.0)
            },
        }
    }
}

/// Whether a drained sample was taken densely (see [`shm::DENSE_BIT`]), and its address.
#[inline]
pub fn is_dense(sample: usize) -> (bool, usize) {
    let dense = shm::DENSE_BIT as usize;
    (sample & dense != 0, sample & !dense)
}

/// What one [`Subscriber::drain`] read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drained {
    /// Samples passed over: overwritten before they were read, or older than the newest `max`.
    pub passed: u64,
    /// What one sample stands for, on average over those published since the last drain.
    pub weight: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_of_dead_writers_are_removed_and_others_kept() {
        assert_eq!(
            bench_path(7).file_name(),
            Some(std::ffi::OsStr::new("hugewise-bench-samples.7"))
        );
        let dir = std::env::temp_dir().join(format!("hw-stale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        for name in [
            "hugewise-samples.11",
            "hugewise-samples.22",
            "hugewise-bench-samples.44",
            "other.33",
            "hugewise-samples.x",
        ] {
            std::fs::write(dir.join(name), b"").expect("write");
        }
        // A bench's ring is a ring too: 11 and 44 are gone.
        assert_eq!(remove_stale(&dir, &|pid| pid == 22), 2);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .expect("read")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["hugewise-samples.22", "hugewise-samples.x", "other.33"]
        );
        std::fs::remove_dir_all(&dir).expect("clean");
    }
}
