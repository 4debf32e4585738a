//! Breadth-first search: parent of every reached vertex.
//!
//! Two variants over the same arrays: `TopDown` pushes from the frontier only (the seeds'
//! BFS); `DirectionOptimizing` switches to bottom-up steps (every unvisited vertex looks for a
//! parent in the frontier) while the frontier is large, with the GAP suite's α = 15, β = 18.
//! The parent array is the "property" region; the queue and the two bitmaps are "frontier"
//! regions. [`verify`] checks a result against a serial BFS written independently.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use hugewise_mem::Region;
use hugewise_sys::atomic;
use rayon::prelude::*;
use serde::Serialize;

use crate::csr::RegionReport;
use crate::kernels::{Kernel, Outcome};
use crate::{Csr, Layout, Result};

/// Parent value of an unreached vertex.
pub const NONE: u32 = u32::MAX;

/// Which BFS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Top-down push only.
    TopDown,
    /// Direction-optimizing (Beamer).
    DirectionOptimizing,
}

/// α: switch to bottom-up when the frontier's edges exceed the unexplored edges / α.
pub const ALPHA: u64 = 15;
/// β: switch back when the frontier holds fewer than n / β vertices and shrinks.
pub const BETA: u64 = 18;

/// The kernel's working arrays, created in the layout's order and reused across trials.
#[derive(Debug)]
pub struct Arrays {
    /// Parent of each vertex ("property").
    pub parent: Region<u32>,
    queue: Region<u32>,
    front: Region<u64>,
    next: Region<u64>,
}

impl Arrays {
    /// Create the arrays for `n` vertices.
    pub fn new(layout: &Layout, n: usize) -> Result<Arrays> {
        let words = n.div_ceil(64);
        Ok(Arrays {
            parent: layout.region("property", "property", n)?,
            queue: layout.region("frontier", "frontier", n)?,
            front: layout.region("frontier", "frontier-bits", words)?,
            next: layout.region("frontier", "frontier-next-bits", words)?,
        })
    }

    /// Size and backing of each array.
    pub fn regions(&self) -> Result<Vec<RegionReport>> {
        Ok(vec![
            RegionReport::of(&self.parent)?,
            RegionReport::of(&self.queue)?,
            RegionReport::of(&self.front)?,
            RegionReport::of(&self.next)?,
        ])
    }
}

/// BFS as a [`Kernel`].
#[derive(Debug)]
pub struct Bfs {
    mode: Mode,
    arrays: Arrays,
    last: Option<Stats>,
}

impl Bfs {
    /// Arrays for `n` vertices.
    pub fn new(layout: &Layout, n: usize, mode: Mode) -> Result<Bfs> {
        Ok(Bfs {
            mode,
            arrays: Arrays::new(layout, n)?,
            last: None,
        })
    }
}

impl Kernel for Bfs {
    fn run(&mut self, g: &Csr, sources: &[u32]) -> Result<()> {
        self.last = Some(run(g, sources[0], self.mode, &mut self.arrays));
        Ok(())
    }

    fn outcome(&self, _: &Csr) -> Outcome {
        Outcome::Bfs(self.last.clone().unwrap_or(Stats {
            reached: 0,
            levels: 0,
            top_down_steps: 0,
            bottom_up_steps: 0,
        }))
    }

    fn verify(&self, g: &Csr, sources: &[u32]) -> std::result::Result<(), String> {
        verify(g, sources[0], &self.arrays.parent)
    }

    fn regions(&self) -> Result<Vec<RegionReport>> {
        self.arrays.regions()
    }
}

/// What one search did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Vertices reached, the source included.
    pub reached: u64,
    /// Levels explored.
    pub levels: u32,
    /// Steps done top-down.
    pub top_down_steps: u32,
    /// Steps done bottom-up.
    pub bottom_up_steps: u32,
}

/// Run BFS from `src`; `arrays.parent` holds the tree afterwards.
pub fn run(g: &Csr, src: u32, mode: Mode, arrays: &mut Arrays) -> Stats {
    let n = g.n();
    let Arrays {
        parent,
        queue,
        front,
        next,
    } = arrays;
    parent.par_iter_mut().for_each(|p| *p = NONE);
    let parent = atomic::u32s(parent);
    let queue = atomic::u32s(queue);
    let mut front = atomic::u64s(front);
    let mut next = atomic::u64s(next);
    parent[src as usize].store(src, Relaxed);
    queue[0].store(src, Relaxed);
    let (mut head, mut tail) = (0usize, 1usize);
    let mut stats = Stats {
        reached: 1,
        levels: 0,
        top_down_steps: 0,
        bottom_up_steps: 0,
    };
    let mut edges_to_check = g.arcs();
    let mut scout = g.out_degree(src) as u64;
    while head < tail {
        stats.levels += 1;
        let go_bottom_up = mode == Mode::DirectionOptimizing && scout > edges_to_check / ALPHA;
        if go_bottom_up {
            clear(front);
            for q in &queue[head..tail] {
                set(front, q.load(Relaxed));
            }
            let mut awake = (tail - head) as u64;
            loop {
                let old = awake;
                clear(next);
                awake = bottom_up_step(g, parent, front, next);
                stats.bottom_up_steps += 1;
                stats.reached += awake;
                std::mem::swap(&mut front, &mut next);
                if awake == 0 || (awake < old && awake <= n as u64 / BETA) {
                    break;
                }
                stats.levels += 1;
            }
            // Back to a queue of the last level found.
            head = tail;
            tail = bitmap_to_queue(front, queue, tail, n);
            scout = 1;
        } else {
            edges_to_check = edges_to_check.saturating_sub(scout);
            let (new_tail, s) = top_down_step(g, parent, queue, head, tail);
            stats.top_down_steps += 1;
            stats.reached += (new_tail - tail) as u64;
            scout = s;
            head = tail;
            tail = new_tail;
        }
    }
    if head == tail && stats.levels > 0 {
        stats.levels -= 1;
    }
    stats
}

fn top_down_step(
    g: &Csr,
    parent: &[AtomicU32],
    queue: &[AtomicU32],
    head: usize,
    tail: usize,
) -> (usize, u64) {
    let end = AtomicUsize::new(tail);
    let scout: u64 = queue[head..tail]
        .par_chunks(64)
        .map(|chunk| {
            let mut found: Vec<u32> = Vec::new();
            let mut scout = 0u64;
            for q in chunk {
                let u = q.load(Relaxed);
                for &v in g.out_neighbors(u) {
                    let p = &parent[v as usize];
                    if p.load(Relaxed) == NONE
                        && p.compare_exchange(NONE, u, Relaxed, Relaxed).is_ok()
                    {
                        found.push(v);
                        scout += g.out_degree(v) as u64;
                    }
                }
            }
            let at = end.fetch_add(found.len(), Relaxed);
            for (i, v) in found.into_iter().enumerate() {
                queue[at + i].store(v, Relaxed);
            }
            scout
        })
        .sum();
    (end.into_inner(), scout)
}

fn bottom_up_step(g: &Csr, parent: &[AtomicU32], front: &[AtomicU64], next: &[AtomicU64]) -> u64 {
    (0..g.n() as u32)
        .into_par_iter()
        .with_min_len(1024)
        .map(|v| {
            if parent[v as usize].load(Relaxed) != NONE {
                return 0;
            }
            for &u in g.in_neighbors(v) {
                if get(front, u) {
                    parent[v as usize].store(u, Relaxed);
                    set(next, v);
                    return 1;
                }
            }
            0
        })
        .sum()
}

fn clear(bits: &[AtomicU64]) {
    bits.par_iter().for_each(|w| w.store(0, Relaxed));
}

fn set(bits: &[AtomicU64], v: u32) {
    bits[v as usize / 64].fetch_or(1 << (v % 64), Relaxed);
}

fn get(bits: &[AtomicU64], v: u32) -> bool {
    bits[v as usize / 64].load(Relaxed) & (1 << (v % 64)) != 0
}

fn bitmap_to_queue(bits: &[AtomicU64], queue: &[AtomicU32], at: usize, n: usize) -> usize {
    let mut end = at;
    for (w, word) in bits.iter().enumerate() {
        let mut x = word.load(Relaxed);
        while x != 0 {
            let v = w * 64 + x.trailing_zeros() as usize;
            if v < n {
                queue[end].store(v as u32, Relaxed);
                end += 1;
            }
            x &= x - 1;
        }
    }
    end
}

/// Check `parent` against a serial BFS from `src`: the same vertices reached, the source its
/// own parent, and every other reached vertex's parent one level closer with an arc to it.
pub fn verify(g: &Csr, src: u32, parent: &[u32]) -> std::result::Result<(), String> {
    let n = g.n();
    let mut depth = vec![u32::MAX; n];
    let mut q = VecDeque::new();
    depth[src as usize] = 0;
    q.push_back(src);
    while let Some(u) = q.pop_front() {
        for &v in g.out_neighbors(u) {
            if depth[v as usize] == u32::MAX {
                depth[v as usize] = depth[u as usize] + 1;
                q.push_back(v);
            }
        }
    }
    if parent[src as usize] != src {
        return Err(format!("source {src} has parent {}", parent[src as usize]));
    }
    for v in 0..n {
        let (p, d) = (parent[v], depth[v]);
        match (p == NONE, d == u32::MAX) {
            (true, true) => {}
            (true, false) => {
                return Err(format!(
                    "vertex {v} is reachable (depth {d}) but has no parent"
                ))
            }
            (false, true) => return Err(format!("vertex {v} is unreachable but has parent {p}")),
            (false, false) if v as u32 == src => {}
            (false, false) => {
                if p as usize >= n || depth[p as usize] == u32::MAX || depth[p as usize] + 1 != d {
                    return Err(format!(
                        "vertex {v} at depth {d} has parent {p} not at depth {}",
                        d.wrapping_sub(1)
                    ));
                }
                if g.out_neighbors(p).binary_search(&(v as u32)).is_err() {
                    return Err(format!(
                        "vertex {v} has parent {p} but there is no arc {p} -> {v}"
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{build_default, Edge, VecSource};
    use crate::gen::{Generator, Spec};
    use crate::kernels::pick_sources;

    fn graph(spec: &str, symmetrize: bool) -> Csr {
        let mut g = Generator::new(spec.parse::<Spec>().expect("spec"), 3, false);
        build_default(&mut g, symmetrize).expect("build")
    }

    #[test]
    fn path_graph_by_hand() {
        let edges = (0..5)
            .map(|i| Edge {
                u: i,
                v: i + 1,
                w: 1,
            })
            .collect();
        let mut src = VecSource {
            edges,
            weighted: false,
            vertices: Some(8),
        };
        let g = build_default(&mut src, true).expect("build");
        for mode in [Mode::TopDown, Mode::DirectionOptimizing] {
            let mut a = Arrays::new(&Layout::default(), g.n()).expect("arrays");
            let s = run(&g, 2, mode, &mut a);
            assert_eq!(&a.parent[..], [1, 2, 2, 2, 3, 4, NONE, NONE]);
            assert_eq!(s.reached, 6);
            assert_eq!(s.levels, 3);
            verify(&g, 2, &a.parent).expect("verifies");
        }
    }

    #[test]
    fn both_modes_verify_on_kron_and_urand() {
        for (spec, sym) in [("kron:14", true), ("urand:14", true), ("kron:12", false)] {
            let g = graph(spec, sym);
            let mut a = Arrays::new(&Layout::default(), g.n()).expect("arrays");
            for src in pick_sources(&g, 1, 3).expect("sources") {
                let td = run(&g, src, Mode::TopDown, &mut a);
                verify(&g, src, &a.parent).expect("top-down verifies");
                let dobfs = run(&g, src, Mode::DirectionOptimizing, &mut a);
                verify(&g, src, &a.parent).expect("direction-optimizing verifies");
                assert_eq!(td.reached, dobfs.reached);
                if sym && spec.starts_with("kron") {
                    assert!(
                        dobfs.bottom_up_steps > 0,
                        "{spec}: expected bottom-up steps"
                    );
                }
            }
        }
    }

    #[test]
    fn verifier_catches_a_wrong_tree() {
        let g = graph("kron:10", true);
        let src = pick_sources(&g, 2, 1).expect("src")[0];
        let mut a = Arrays::new(&Layout::default(), g.n()).expect("arrays");
        run(&g, src, Mode::TopDown, &mut a);
        let mut bad = a.parent.to_vec();
        let v = (0..g.n())
            .find(|&v| bad[v] != NONE && v as u32 != src)
            .expect("a reached vertex");
        bad[v] = NONE;
        assert!(verify(&g, src, &bad).is_err());
        let mut bad = a.parent.to_vec();
        bad[v] = v as u32;
        assert!(verify(&g, src, &bad).is_err());
    }
}
