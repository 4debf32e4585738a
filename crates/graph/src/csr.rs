//! Compressed sparse rows in regions: u64 offsets, u32 neighbour ids, optional u32 weights,
//! and for directed graphs the incoming side too.

use std::sync::atomic::{AtomicU64, Ordering};

use hugewise_mem::Region;
pub use hugewise_results::graph::{GraphInfo, RegionReport};
use rayon::prelude::*;

use crate::rng::mix;
use crate::{Layout, Result};

/// One direction of adjacency.
#[derive(Debug)]
pub struct Adjacency {
    /// `offsets[v]..offsets[v+1]` indexes v's neighbours; n + 1 values.
    pub offsets: Region<u64>,
    /// Neighbour ids, sorted within each vertex, without duplicates or self-loops.
    pub edges: Region<u32>,
    /// Weights parallel to `edges`, when the graph is weighted.
    pub weights: Option<Region<u32>>,
}

impl Adjacency {
    fn range(&self, v: u32) -> std::ops::Range<usize> {
        let v = v as usize;
        self.offsets[v] as usize..self.offsets[v + 1] as usize
    }

    /// Plain slices of this side, for hot loops.
    pub fn side(&self) -> Side<'_> {
        Side {
            offsets: &self.offsets,
            edges: &self.edges,
            weights: self.weights.as_deref().unwrap_or(&[]),
        }
    }
}

/// One direction of adjacency as plain slices, taken once before a hot loop.
///
/// Going through [`Csr`] costs a region lookup (pointer, length, cast checks) per array on
/// every call; a kernel step that reads millions of adjacency lists takes a `Side` instead, so
/// each list costs two offset loads and a bounds check.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// `offsets[v]..offsets[v+1]` indexes v's neighbours; n + 1 values.
    pub offsets: &'a [u64],
    /// Neighbour ids, sorted within each vertex.
    pub edges: &'a [u32],
    /// Weights parallel to `edges`; empty when the graph is unweighted.
    pub weights: &'a [u32],
}

impl<'a> Side<'a> {
    /// Vertex count.
    #[inline]
    pub fn n(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Where `v`'s neighbours sit in `edges`.
    #[inline]
    pub fn range(&self, v: u32) -> std::ops::Range<usize> {
        let v = v as usize;
        self.offsets[v] as usize..self.offsets[v + 1] as usize
    }

    /// Degree of `v` on this side.
    #[inline]
    pub fn degree(&self, v: u32) -> usize {
        self.range(v).len()
    }

    /// Neighbours of `v`, sorted.
    #[inline]
    pub fn neighbors(&self, v: u32) -> &'a [u32] {
        &self.edges[self.range(v)]
    }

    /// Hint that `v`'s offsets will be read soon.
    #[inline]
    pub fn prefetch_offsets(&self, v: u32) {
        if let Some(o) = self.offsets.get(v as usize) {
            hugewise_sys::hint::prefetch(o);
        }
    }

    /// Hint that `v`'s neighbours will be read soon (reads `v`'s offset now, so prefetch that
    /// first with [`Side::prefetch_offsets`]).
    #[inline]
    pub fn prefetch_neighbors(&self, v: u32) {
        if let Some(e) = self.edges.get(self.offsets[v as usize] as usize) {
            hugewise_sys::hint::prefetch(e);
        }
    }

    /// Two-stage prefetch for a loop over a work list of vertices, at its position `k`: the
    /// list head of the vertex `ahead` places on (whose offsets were asked for `ahead` steps
    /// earlier), and the offsets of the vertex `2 × ahead` places on. `id_at(i)` is the vertex
    /// at position `i` of the work list, if there is one.
    #[inline]
    pub fn prefetch_ahead(&self, k: usize, ahead: usize, id_at: impl Fn(usize) -> Option<u32>) {
        if let Some(x) = id_at(k + 2 * ahead) {
            self.prefetch_offsets(x);
        }
        if let Some(x) = id_at(k + ahead) {
            self.prefetch_neighbors(x);
        }
    }

    /// Hint that `v`'s weights will be read soon (as [`Side::prefetch_neighbors`]).
    #[inline]
    pub fn prefetch_weights(&self, v: u32) {
        if let Some(w) = self.weights.get(self.offsets[v as usize] as usize) {
            hugewise_sys::hint::prefetch(w);
        }
    }

    /// Weights of `v`'s arcs (empty when unweighted).
    #[inline]
    pub fn weights(&self, v: u32) -> &'a [u32] {
        if self.weights.is_empty() {
            &[]
        } else {
            &self.weights[self.range(v)]
        }
    }
}

/// A graph.
#[derive(Debug)]
pub struct Csr {
    directed: bool,
    out: Adjacency,
    inc: Option<Adjacency>,
    id: u64,
}

/// The next graph's [`Csr::id`].
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// A [`RegionReport`] read from a live region.
pub trait RegionReportExt {
    /// Report on any region.
    fn of<T: bytemuck::Pod>(r: &Region<T>) -> Result<RegionReport>;
}

impl RegionReportExt for RegionReport {
    fn of<T: bytemuck::Pod>(r: &Region<T>) -> Result<RegionReport> {
        Ok(RegionReport {
            name: r.name().to_string(),
            policy: r.policy_label(),
            data_bytes: r.data_bytes() as u64,
            backing: r.backing()?,
            // Read for a region asked to lock (a measured 0 stays 0); absent for the others.
            locked_bytes: r.locks().then(|| r.locked_bytes()).transpose()?,
        })
    }
}

impl Csr {
    pub(crate) fn new(directed: bool, out: Adjacency, inc: Option<Adjacency>) -> Csr {
        Csr {
            directed,
            out,
            inc,
            id: next_id(),
        }
    }

    /// A number no other graph of this process has had: what a kernel keeps made from a graph
    /// (SSSP's pairs of arcs and weights) is checked against it, where an address could be a
    /// later graph's mapped at the same place.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The graph's size and shape, for results.
    pub fn info(&self) -> GraphInfo {
        GraphInfo {
            vertices: self.n() as u64,
            edges: self.edges(),
            arcs: self.arcs(),
            directed: self.directed(),
            weighted: self.weighted(),
            data_bytes: self.data_bytes(),
        }
    }

    /// Directed (in-edges stored apart) or symmetric.
    pub fn directed(&self) -> bool {
        self.directed
    }

    /// Vertex count.
    pub fn n(&self) -> usize {
        self.out.offsets.len() - 1
    }

    /// Stored out-arcs (a symmetric graph stores each edge twice).
    pub fn arcs(&self) -> u64 {
        self.out.edges.len() as u64
    }

    /// Edges as GAP counts them: arcs for directed graphs, arcs / 2 for symmetric ones.
    pub fn edges(&self) -> u64 {
        if self.directed {
            self.arcs()
        } else {
            self.arcs() / 2
        }
    }

    /// Whether weights are stored.
    pub fn weighted(&self) -> bool {
        self.out.weights.is_some()
    }

    /// Out-degree of `v`.
    pub fn out_degree(&self, v: u32) -> usize {
        self.out.range(v).len()
    }

    /// In-degree of `v` (out-degree for symmetric graphs).
    pub fn in_degree(&self, v: u32) -> usize {
        self.inc.as_ref().unwrap_or(&self.out).range(v).len()
    }

    /// Out-neighbours of `v`, sorted.
    pub fn out_neighbors(&self, v: u32) -> &[u32] {
        &self.out.edges[self.out.range(v)]
    }

    /// Weights of `v`'s out-arcs (empty when unweighted).
    pub fn out_weights(&self, v: u32) -> &[u32] {
        match &self.out.weights {
            Some(w) => &w[self.out.range(v)],
            None => &[],
        }
    }

    /// In-neighbours of `v` (out-neighbours for symmetric graphs), sorted.
    pub fn in_neighbors(&self, v: u32) -> &[u32] {
        let a = self.inc.as_ref().unwrap_or(&self.out);
        &a.edges[a.range(v)]
    }

    /// Out-arcs as plain slices, for hot loops.
    pub fn out_side(&self) -> Side<'_> {
        self.out.side()
    }

    /// In-arcs as plain slices (the out-arcs for symmetric graphs), for hot loops.
    pub fn in_side(&self) -> Side<'_> {
        self.inc.as_ref().unwrap_or(&self.out).side()
    }

    /// Outgoing adjacency.
    pub fn out_adjacency(&self) -> &Adjacency {
        &self.out
    }

    /// Incoming adjacency, for directed graphs.
    pub fn in_adjacency(&self) -> Option<&Adjacency> {
        self.inc.as_ref()
    }

    /// Bytes of all arrays' data.
    pub fn data_bytes(&self) -> u64 {
        let side = |a: &Adjacency| {
            (a.offsets.data_bytes()
                + a.edges.data_bytes()
                + a.weights.as_ref().map(|w| w.data_bytes()).unwrap_or(0)) as u64
        };
        side(&self.out) + self.inc.as_ref().map(side).unwrap_or(0)
    }

    /// Give an unweighted graph weights in [1, 255], as the GAP suite does for SSSP on an
    /// unweighted input: each weight is a hash of the seed and the edge's two ends, so both
    /// arcs of an undirected edge, and an arc in the out- and in-lists, carry the same one.
    pub fn add_weights(&mut self, seed: u64, layout: &Layout) -> Result<()> {
        if self.weighted() {
            return Ok(());
        }
        let fill = |a: &Adjacency, name: &str, incoming: bool| -> Result<Region<u32>> {
            let mut w: Region<u32> = layout.region("weights", name, a.edges.len())?;
            let n = a.offsets.len() - 1;
            let mut rest: &mut [u32] = &mut w;
            let mut lists = Vec::with_capacity(n);
            for v in 0..n {
                let (mine, tail) = std::mem::take(&mut rest).split_at_mut(a.range(v as u32).len());
                lists.push((v as u32, mine));
                rest = tail;
            }
            lists
                .into_par_iter()
                .with_min_len(1024)
                .for_each(|(v, ws)| {
                    for (x, &u) in ws.iter_mut().zip(&a.edges[a.range(v)]) {
                        let (from, to) = if incoming { (u, v) } else { (v, u) };
                        *x = edge_weight(seed, from, to, self.directed);
                    }
                });
            Ok(w)
        };
        let out = fill(&self.out, "weights", false)?;
        let inc = match &self.inc {
            Some(a) => Some(fill(a, "in-weights", true)?),
            None => None,
        };
        self.out.weights = Some(out);
        if let (Some(a), Some(w)) = (self.inc.as_mut(), inc) {
            a.weights = Some(w);
        }
        Ok(())
    }

    /// The same graph in fresh regions (same names and page policies), copied in parallel,
    /// each old array freed as soon as its copy exists. A page is charged to the memory cgroup
    /// of the process that faults it in, and stays there when the process moves (cgroup v1 no
    /// longer moves charges, v2 never did): a process that loaded its graph and then joined a
    /// limited cgroup copies it to have it held by that limit.
    pub fn rehome(self) -> Result<Csr> {
        fn copy<T: bytemuck::Pod + Send + Sync>(r: Region<T>) -> Result<Region<T>> {
            let opts = hugewise_mem::RegionOptions::new(r.policy())
                .first_touch()
                .locked(r.locks());
            let mut fresh: Region<T> = Region::new(r.name(), r.len(), opts)?;
            const CHUNK: usize = 1 << 16;
            fresh
                .par_chunks_mut(CHUNK)
                .zip(r.par_chunks(CHUNK))
                .for_each(|(d, s)| d.copy_from_slice(s));
            Ok(fresh)
        }
        let side = |a: Adjacency| -> Result<Adjacency> {
            Ok(Adjacency {
                offsets: copy(a.offsets)?,
                edges: copy(a.edges)?,
                weights: a.weights.map(copy).transpose()?,
            })
        };
        let Csr {
            directed, out, inc, ..
        } = self;
        Ok(Csr {
            directed,
            out: side(out)?,
            inc: inc.map(side).transpose()?,
            id: next_id(),
        })
    }

    /// Size and backing of every array.
    pub fn regions(&self) -> Result<Vec<RegionReport>> {
        let mut v = Vec::new();
        for a in std::iter::once(&self.out).chain(self.inc.as_ref()) {
            v.push(RegionReport::of(&a.offsets)?);
            v.push(RegionReport::of(&a.edges)?);
            if let Some(w) = &a.weights {
                v.push(RegionReport::of(w)?);
            }
        }
        Ok(v)
    }
}

/// The weight `add_weights` gives the arc `from → to`: undirected edges hash their ends in
/// order, so both directions agree. Changing it changes cached graphs: raise
/// [`crate::reorder::OUTPUT_VERSION`] with it.
fn edge_weight(seed: u64, from: u32, to: u32, directed: bool) -> u32 {
    let (a, b) = if directed || from < to {
        (from, to)
    } else {
        (to, from)
    };
    1 + (mix(seed ^ mix((a as u64) << 32 | b as u64)) % 255) as u32
}

#[cfg(test)]
mod tests {
    use crate::kernels::testing::generated;
    use crate::Layout;

    #[test]
    fn a_rehomed_graph_is_the_same_graph() {
        let g = generated("kron:10", true, true);
        let (n, before): (usize, Vec<Vec<u32>>) = (
            g.n(),
            (0..g.n() as u32)
                .map(|v| g.out_neighbors(v).to_vec())
                .collect(),
        );
        let names: Vec<String> = g
            .regions()
            .expect("r")
            .into_iter()
            .map(|r| r.name)
            .collect();
        let h = g.rehome().expect("rehome");
        assert_eq!(h.n(), n);
        for (v, adj) in before.iter().enumerate() {
            assert_eq!(h.out_neighbors(v as u32), adj.as_slice());
        }
        let after: Vec<String> = h
            .regions()
            .expect("r")
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, after);
    }

    #[test]
    fn the_arrays_hold_n_times_8_plus_m_times_4_bytes() {
        // Regions round up to 2 MiB (so that their tails can be huge too): within 5 % from
        // about a hundred megabytes of graph, here urand:20 (136 MiB, 264 MiB weighted).
        let mut g = generated("urand:20", true, false);
        let (n, m) = (g.n() as u64, g.arcs());
        for per_arc in [4, 8] {
            if per_arc == 8 {
                g.add_weights(1, &Layout::default()).expect("weights");
            }
            // offsets hold n + 1 values.
            assert_eq!(g.data_bytes(), (n + 1) * 8 + m * per_arc);
            let a = g.out_adjacency();
            let mapped = a.offsets.mapped_bytes()
                + a.edges.mapped_bytes()
                + a.weights.as_ref().map_or(0, |w| w.mapped_bytes());
            let ideal = n * 8 + m * per_arc;
            assert!(
                mapped as f64 <= 1.05 * ideal as f64,
                "{mapped} bytes mapped for {ideal}"
            );
        }
    }

    #[test]
    fn added_weights_agree_in_both_directions() {
        for directed in [false, true] {
            let mut g = generated("kron:9", !directed, false);
            assert!(!g.weighted());
            g.add_weights(5, &Layout::default()).expect("weights");
            assert!(g.weighted());
            let mut seen = std::collections::HashSet::new();
            for u in 0..g.n() as u32 {
                for (&v, &w) in g.out_neighbors(u).iter().zip(g.out_weights(u)) {
                    assert!((1..=255).contains(&w));
                    seen.insert(w);
                    if !directed {
                        let k = g.out_neighbors(v).binary_search(&u).expect("reverse arc");
                        assert_eq!(g.out_weights(v)[k], w);
                    } else {
                        let inc = g.in_adjacency().expect("in");
                        let r =
                            inc.offsets[v as usize] as usize..inc.offsets[v as usize + 1] as usize;
                        let k = inc.edges[r.clone()].binary_search(&u).expect("in arc");
                        assert_eq!(inc.weights.as_ref().expect("in weights")[r][k], w);
                    }
                }
            }
            assert!(seen.len() > 200, "weights spread over [1, 255]");
        }
    }
}
