//! Compressed sparse rows in regions: u64 offsets, u32 neighbour ids, optional u32 weights,
//! and for directed graphs the incoming side too.

use hugewise_mem::{Backing, Region};
use serde::Serialize;

use crate::Result;

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
}

/// A graph.
#[derive(Debug)]
pub struct Csr {
    directed: bool,
    out: Adjacency,
    inc: Option<Adjacency>,
}

/// Size and backing of one array, for results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegionReport {
    /// Array name.
    pub name: String,
    /// Page policy asked for.
    pub policy: String,
    /// Bytes of data.
    pub data_bytes: u64,
    /// Backing read from the kernel.
    pub backing: Backing,
}

impl RegionReport {
    /// Report on any region.
    pub fn of<T: bytemuck::Pod>(r: &Region<T>) -> Result<RegionReport> {
        Ok(RegionReport {
            name: r.name().to_string(),
            policy: r.policy().to_string(),
            data_bytes: r.data_bytes() as u64,
            backing: r.backing()?,
        })
    }
}

impl Csr {
    pub(crate) fn new(directed: bool, out: Adjacency, inc: Option<Adjacency>) -> Csr {
        Csr { directed, out, inc }
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
