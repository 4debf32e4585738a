//! Whether a graph fits before any of it is allocated: the bytes an input implies (from a
//! header, the largest id read so far, or a generator's scale) against the room this process
//! has left (`MemAvailable` and its memory cgroup's headroom, see [`hugewise_sys::memlimit`]).
//!
//! A 17-byte edge list that names vertex 2 000 000 000 implies 16 GB of offsets alone; without
//! this check the builder would start allocating them and the kernel would kill the process
//! (or a cgroup limit would abort it) long after the mistake could have been named. Every
//! reader and generator asks [`Fit::check`] with the sizes it knows before it allocates; the
//! refusal names the input, the number, what it implies and what is available.

use hugewise_mem::Bytes;
use hugewise_sys::memlimit::{self, Room};
use hugewise_sys::proc::ProcFs;
use hugewise_sys::sysfs::SysFs;

use crate::{Error, Result};

/// Buffers a load holds besides its arrays (a reader's 1 MiB buffers, a generator's batch of
/// 4 Mi edges): small, but counted so that a tight fit is not judged by the arrays alone.
const SLACK: u64 = 64 << 20;

/// What a kernel allocates per vertex at most, beside the graph: BC keeps a depth, a path
/// count and a dependency (4 + 8 + 8 bytes) and a frontier; PageRank two or three scores.
pub const KERNEL_VERTEX_BYTES: u64 = 24;

/// How strictly to check, and what else will share the room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fit {
    /// Go ahead even when the input needs more than is available (a user with swap on
    /// purpose); the estimate is still made, only not enforced.
    pub force: bool,
    /// Bytes per vertex that a kernel will allocate beside the graph (property, frontier).
    pub vertex_extra_bytes: u64,
    /// Bytes per arc added after loading to a graph without weights of its own (4 when weights
    /// are hashed onto it).
    pub arc_extra_bytes: u64,
    /// Never count more than this much as available (tests; a user's own budget).
    pub cap_bytes: Option<u64>,
}

/// The arrays an input implies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    /// Vertices.
    pub vertices: u64,
    /// Arcs on the outgoing side (both directions of every edge for an undirected graph);
    /// the incoming side of a directed graph holds as many.
    pub arcs: u64,
    /// In-edges are stored apart.
    pub directed: bool,
    /// A weight per arc.
    pub weighted: bool,
}

impl Shape {
    fn sides(&self) -> u64 {
        if self.directed {
            2
        } else {
            1
        }
    }

    /// Bytes of the finished CSR: u64 offsets, u32 ids, u32 weights, per side.
    pub fn graph_bytes(&self) -> u64 {
        let per_arc = if self.weighted { 8 } else { 4 };
        let side = (self.vertices.saturating_add(1))
            .saturating_mul(8)
            .saturating_add(self.arcs.saturating_mul(per_arc));
        side.saturating_mul(self.sides())
    }

    /// The streaming builder's per-vertex arrays at their peak: a u64 cursor per vertex and
    /// side during placement (the u32 degree counters of the first pass are gone by then).
    pub fn builder_bytes(&self) -> u64 {
        self.vertices.saturating_mul(8).saturating_mul(self.sides())
    }
}

fn gib(b: u64) -> String {
    Bytes(b).to_string()
}

impl Fit {
    /// Refuse (unless forced) when a graph of `shape`, `temp_bytes` of temporary arrays beside
    /// it, and what [`Fit`] adds per vertex and arc come to more than this process may take
    /// now. `input` names the input; `implies` says what was read and what it implies, e.g.
    /// "vertex id 2000000000 implies 2 000 000 001 vertices".
    pub fn check(&self, input: &str, implies: &str, shape: Shape, temp_bytes: u64) -> Result<()> {
        self.check_bytes(input, implies, self.need(shape, temp_bytes))
    }

    /// Refuse (unless forced) when `need` bytes are more than this process may take now.
    pub fn check_bytes(&self, input: &str, implies: &str, need: u64) -> Result<()> {
        if self.force {
            return Ok(());
        }
        let room = memlimit::room(&ProcFs::default(), &SysFs::default()).map_err(|e| {
            Error::Invalid(format!(
                "{input}: cannot tell how much memory is available ({e}); pass --force to go \
                 ahead without checking"
            ))
        })?;
        self.check_in(&room, input, implies, need)
    }

    /// The bytes [`Fit::check`] compares with the room.
    pub fn need(&self, shape: Shape, temp_bytes: u64) -> u64 {
        let arcs = shape.arcs.saturating_mul(shape.sides());
        shape
            .graph_bytes()
            .saturating_add(temp_bytes)
            .saturating_add(shape.vertices.saturating_mul(self.vertex_extra_bytes))
            .saturating_add(if shape.weighted {
                0
            } else {
                arcs.saturating_mul(self.arc_extra_bytes)
            })
            .saturating_add(SLACK)
    }

    /// The bytes this process may take now (`MemAvailable` and the cgroup's headroom, within
    /// `cap_bytes`), forced or not; `None` when they cannot be read. For optional buffers.
    pub fn room_bytes(&self) -> Option<u64> {
        let room = memlimit::room(&ProcFs::default(), &SysFs::default()).ok()?;
        let available = room.available_bytes();
        Some(self.cap_bytes.map_or(available, |c| c.min(available)))
    }

    /// Compare `need` bytes (see [`Fit::need`]) with a given room.
    pub fn check_in(&self, room: &Room, input: &str, implies: &str, need: u64) -> Result<()> {
        if self.force {
            return Ok(());
        }
        let mut available = room.available_bytes();
        let mut whose = match &room.cgroup {
            Some(c) if c.headroom_bytes() < room.mem_available_bytes => format!(
                "the memory cgroup {} allows {} more (limit {}); MemAvailable is {}",
                c.dir.display(),
                gib(c.headroom_bytes()),
                gib(c.limit_bytes),
                gib(room.mem_available_bytes)
            ),
            _ => format!("MemAvailable is {}", gib(room.mem_available_bytes)),
        };
        if let Some(cap) = self.cap_bytes.filter(|&c| c < available) {
            available = cap;
            whose = format!("capped at {}", gib(cap));
        }
        if need <= available {
            return Ok(());
        }
        Err(Error::TooLarge {
            input: input.to_string(),
            need_bytes: need,
            available_bytes: available,
            message: format!(
                "{implies}, which needs about {} of memory, but only {} is available ({whose}); \
                 refused before allocating. Pass --force to go ahead anyway (sensible only with \
                 swap to spare: {} free)",
                gib(need),
                gib(available),
                gib(room.swap_free_bytes)
            ),
        })
    }
}

/// Thousands separated by spaces, so that 2000000001 reads as 2 000 000 001.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(avail: u64) -> Room {
        Room {
            mem_available_bytes: avail,
            swap_free_bytes: 0,
            cgroup: None,
        }
    }

    #[test]
    fn sizes_count_every_array() {
        let s = Shape {
            vertices: 10,
            arcs: 100,
            directed: false,
            weighted: false,
        };
        assert_eq!(s.graph_bytes(), 11 * 8 + 400);
        let d = Shape {
            directed: true,
            weighted: true,
            ..s
        };
        assert_eq!(d.graph_bytes(), 2 * (11 * 8 + 800));
        assert_eq!(d.builder_bytes(), 160);
        let f = Fit {
            vertex_extra_bytes: 3,
            arc_extra_bytes: 4,
            ..Fit::default()
        };
        assert_eq!(f.need(d, 5), d.graph_bytes() + 5 + 30 + SLACK);
        let u = Shape {
            weighted: false,
            ..d
        };
        assert_eq!(f.need(u, 5), u.graph_bytes() + 5 + 30 + 800 + SLACK);
        let huge = Shape {
            vertices: u64::MAX,
            arcs: u64::MAX,
            directed: true,
            weighted: true,
        };
        assert_eq!(huge.graph_bytes(), u64::MAX);
    }

    #[test]
    fn refuses_with_the_numbers_unless_forced() {
        let f = Fit {
            vertex_extra_bytes: 8,
            ..Fit::default()
        };
        let e = f
            .check_in(
                &room(1 << 30),
                "g.el",
                "vertex id 7 implies 8 vertices",
                f.need(Shape::default(), 1 << 30),
            )
            .expect_err("too big")
            .to_string();
        for want in [
            "g.el: vertex id 7 implies 8 vertices",
            "1.06GiB",
            "1GiB is available",
            "MemAvailable",
            "--force",
        ] {
            assert!(e.contains(want), "{want:?} not in {e}");
        }
        f.check_in(&room(2 << 30), "g.el", "x", 1 << 30)
            .expect("fits");
        let forced = Fit { force: true, ..f };
        forced
            .check_in(&room(0), "g.el", "x", 1 << 30)
            .expect("forced");
        let capped = Fit {
            cap_bytes: Some(1 << 20),
            ..Fit::default()
        };
        let e = capped
            .check_in(&room(2 << 30), "g", "x", 2 << 20)
            .expect_err("capped")
            .to_string();
        assert!(e.contains("capped at 1MiB"), "{e}");
    }

    #[test]
    fn counts_read_in_groups() {
        assert_eq!(count(2_000_000_001), "2 000 000 001");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1 000");
    }
}
