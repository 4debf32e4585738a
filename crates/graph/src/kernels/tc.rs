//! Triangle counting, degree-ordered: vertices are ranked by (degree, id) and every edge is
//! oriented from the lower rank to the higher, which bounds every out-list by about √(2m);
//! each triangle a < b < c (in rank order) is then found once, as c in the out-lists of both a
//! and b, by a branch-free merge of the two sorted lists. The oriented graph is stored in rank
//! ids, so the hubs' short lists sit together at the end.
//!
//! Ranking and orienting are part of the kernel's time (the GAP suite likewise counts its
//! relabelling); the rank and the oriented graph are "property" regions, created by the first
//! run. [`verify_count`] counts with a serial marking method.

use hugewise_mem::Region;
use rayon::prelude::*;

use crate::csr::RegionReport;
use crate::kernels::{Kernel, Outcome};
use crate::{Csr, Layout, Result};

/// Triangle counting with its oriented graph.
#[derive(Debug)]
pub struct Tc {
    layout: Layout,
    arrays: Option<Dag>,
    triangles: u64,
}

/// The oriented graph, relabelled by rank so that every list holds higher ranks only.
#[derive(Debug)]
struct Dag {
    rank: Region<u32>,
    offsets: Region<u64>,
    edges: Region<u32>,
}

impl Tc {
    /// Arrays are made by the first run, when the edge count is known.
    pub fn new(layout: &Layout) -> Tc {
        Tc {
            layout: layout.clone(),
            arrays: None,
            triangles: 0,
        }
    }

    fn arrays(&mut self, n: usize, m: usize) -> Result<Dag> {
        match self.arrays.take() {
            Some(d) if d.rank.len() == n && d.edges.len() >= m => Ok(d),
            _ => Ok(Dag {
                rank: self.layout.region("property", "property-rank", n)?,
                offsets: self
                    .layout
                    .region("property", "property-dag-offsets", n + 1)?,
                edges: self.layout.region("property", "property", m)?,
            }),
        }
    }
}

impl Kernel for Tc {
    fn run(&mut self, g: &Csr, _: &[u32]) -> Result<()> {
        let n = g.n();
        let mut dag = self.arrays(n, g.edges() as usize)?;
        // Rank by (degree, id): ranks grow towards the hubs.
        let mut order: Vec<u64> = (0..n as u32)
            .into_par_iter()
            .map(|v| (g.out_degree(v) as u64) << 32 | v as u64)
            .collect();
        order.par_sort_unstable();
        {
            let rank = hugewise_sys::atomic::u32s(&mut dag.rank);
            order.par_iter().enumerate().for_each(|(r, &key)| {
                rank[key as u32 as usize].store(r as u32, std::sync::atomic::Ordering::Relaxed);
            });
        }
        let rank: &[u32] = &dag.rank;
        let vertex_of = |r: usize| order[r] as u32;
        let ups = |r: usize| {
            let v = vertex_of(r);
            g.out_neighbors(v)
                .iter()
                .map(|&w| rank[w as usize])
                .filter(move |&x| x as usize > r)
        };
        dag.offsets[..n]
            .par_iter_mut()
            .enumerate()
            .with_min_len(1024)
            .for_each(|(r, d)| *d = ups(r).count() as u64);
        let mut acc = 0u64;
        for o in dag.offsets[..n].iter_mut() {
            let d = *o;
            *o = acc;
            acc += d;
        }
        dag.offsets[n] = acc;
        {
            let off: &[u64] = &dag.offsets;
            let mut rest: &mut [u32] = &mut dag.edges[..acc as usize];
            let mut lists = Vec::with_capacity(n);
            for r in 0..n {
                let len = (off[r + 1] - off[r]) as usize;
                let (mine, tail) = std::mem::take(&mut rest).split_at_mut(len);
                lists.push(mine);
                rest = tail;
            }
            lists
                .into_par_iter()
                .enumerate()
                .with_min_len(1024)
                .for_each(|(r, out)| {
                    for (slot, x) in out.iter_mut().zip(ups(r)) {
                        *slot = x;
                    }
                    out.sort_unstable();
                });
        }
        drop(order);
        let off: &[u64] = &dag.offsets;
        let adj: &[u32] = &dag.edges;
        let list = |r: u32| &adj[off[r as usize] as usize..off[r as usize + 1] as usize];
        self.triangles = (0..n as u32)
            .into_par_iter()
            .with_min_len(64)
            .map(|a| {
                let la = list(a);
                // Each b's list holds ranks above b, so only la's part after b can match.
                la.iter()
                    .enumerate()
                    .map(|(k, &b)| merge_count(&la[k + 1..], list(b)))
                    .sum::<u64>()
            })
            .sum();
        self.arrays = Some(dag);
        Ok(())
    }

    fn outcome(&self, _: &Csr) -> Outcome {
        Outcome::Tc {
            triangles: self.triangles,
        }
    }

    fn verify(&self, g: &Csr, _: &[u32]) -> std::result::Result<(), String> {
        let want = verify_count(g);
        if want == self.triangles {
            Ok(())
        } else {
            Err(format!(
                "counted {} triangles but the serial count is {want}",
                self.triangles
            ))
        }
    }

    fn regions(&self) -> Result<Vec<RegionReport>> {
        match &self.arrays {
            Some(d) => Ok(vec![
                RegionReport::of(&d.edges)?,
                RegionReport::of(&d.offsets)?,
                RegionReport::of(&d.rank)?,
            ]),
            None => Ok(Vec::new()),
        }
    }
}

/// Common elements of two sorted lists: a branch-free merge, or binary searches of the short
/// list's elements in the long one when their lengths differ a lot.
fn merge_count(a: &[u32], b: &[u32]) -> u64 {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.len() * 32 < long.len() {
        let mut rest = long;
        let mut c = 0;
        for &x in short {
            match rest.binary_search(&x) {
                Ok(k) => {
                    c += 1;
                    rest = &rest[k + 1..];
                }
                Err(k) => rest = &rest[k..],
            }
        }
        return c;
    }
    let (mut i, mut j, mut c) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        c += (x == y) as u64;
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    c
}

/// Serial count: rank vertices by (degree, id); for each vertex mark its higher-ranked
/// neighbours, then look for marks among the higher-ranked neighbours of each of them.
pub fn verify_count(g: &Csr) -> u64 {
    let n = g.n();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&v| (g.out_degree(v), v));
    let mut rank = vec![0u32; n];
    for (r, &v) in order.iter().enumerate() {
        rank[v as usize] = r as u32;
    }
    let higher: Vec<Vec<u32>> = (0..n as u32)
        .map(|x| {
            let rx = rank[x as usize];
            g.out_neighbors(x)
                .iter()
                .copied()
                .filter(|&y| rank[y as usize] > rx)
                .collect()
        })
        .collect();
    let mut mark = vec![false; n];
    let mut count = 0u64;
    for ups in &higher {
        for &b in ups {
            mark[b as usize] = true;
        }
        for &b in ups {
            count += higher[b as usize]
                .iter()
                .filter(|&&c| mark[c as usize])
                .count() as u64;
        }
        for &b in ups {
            mark[b as usize] = false;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{from_edges, generated};

    fn tc(g: &Csr) -> u64 {
        let mut k = Tc::new(&Layout::default());
        k.run(g, &[]).expect("run");
        match k.outcome(g) {
            Outcome::Tc { triangles } => {
                k.verify(g, &[]).expect("verifies");
                triangles
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn small_graphs_by_hand() {
        let triangle = from_edges(3, &[(0, 1, 1), (1, 2, 1), (2, 0, 1)], true);
        assert_eq!(tc(&triangle), 1);
        // K4 has 4 triangles; a square with one diagonal has 2; a 4-cycle has none.
        let k4: Vec<_> = (0..4)
            .flat_map(|u| (u + 1..4).map(move |v| (u, v, 1)))
            .collect();
        assert_eq!(tc(&from_edges(4, &k4, true)), 4);
        let square = [(0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 0, 1)];
        assert_eq!(tc(&from_edges(4, &square, true)), 0);
        let mut diag = square.to_vec();
        diag.push((0, 2, 1));
        assert_eq!(tc(&from_edges(4, &diag, true)), 2);
    }

    #[test]
    fn agrees_with_the_serial_count_on_generated_graphs() {
        for spec in ["kron:13", "urand:13"] {
            let g = generated(spec, true, false);
            let t = tc(&g);
            assert!(spec.starts_with("urand") || t > 0, "{spec}");
        }
    }

    #[test]
    fn a_second_run_reuses_the_arrays_and_counts_the_same() {
        let g = generated("kron:12", true, false);
        let mut k = Tc::new(&Layout::default());
        k.run(&g, &[]).expect("first");
        let first = k.outcome(&g);
        k.run(&g, &[]).expect("second");
        assert_eq!(k.outcome(&g), first);
        k.verify(&g, &[]).expect("verifies");
    }
}
