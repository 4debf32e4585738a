//! The kernels once more, serial, telling a [`Probe`] every data access they make, in program
//! order: the source of `hugewise trace`. They follow the parallel kernels' algorithms and
//! arrays (BFS is top-down, as the seeds' BFS; CC links and compresses labels; TC counts
//! ordered triangles without relabelling), and their results go through the same verifiers.
//!
//! With [`Off`] as the probe every hook compiles away, so the same code, untraced, measures
//! how many accesses per second the traced work makes.

use bytemuck::Pod;
use hugewise_mem::Region;

use crate::csr::RegionReportExt;
use crate::kernels::{bc, bfs, cc, pr, sssp, tc, Spec};
use crate::{Csr, Layout, Result};

mod threads;

/// Receives every access.
pub trait Probe {
    /// A load (`write` false) or store at `addr`.
    fn touch(&mut self, addr: usize, write: bool);
}

/// No tracing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Off;

impl Probe for Off {
    #[inline(always)]
    fn touch(&mut self, _: usize, _: bool) {}
}

/// Counts accesses (for tests and dry runs).
#[derive(Debug, Default, Clone, Copy)]
pub struct Count {
    /// Loads.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
}

impl Probe for Count {
    fn touch(&mut self, _: usize, write: bool) {
        if write {
            self.stores += 1;
        } else {
            self.loads += 1;
        }
    }
}

#[inline(always)]
fn ld<T: Copy, P: Probe>(p: &mut P, s: &[T], i: usize) -> T {
    p.touch(&s[i] as *const T as usize, false);
    s[i]
}

#[inline(always)]
fn st<T, P: Probe>(p: &mut P, s: &mut [T], i: usize, v: T) {
    p.touch(&s[i] as *const T as usize, true);
    s[i] = v;
}

/// One array of the traced program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Array name.
    pub name: String,
    /// First address.
    pub base: u64,
    /// Bytes of data.
    pub bytes: u64,
}

fn span<T: Pod>(r: &Region<T>) -> Span {
    Span {
        name: r.name().to_string(),
        base: r.addr() as u64,
        bytes: r.data_bytes() as u64,
    }
}

/// The graph's arrays, in allocation order.
pub fn graph_spans(g: &Csr) -> Vec<Span> {
    let mut out = Vec::new();
    for (a, prefix) in [(Some(g.out_adjacency()), ""), (g.in_adjacency(), "in-")] {
        let Some(a) = a else { continue };
        let mut s = span(&a.offsets);
        s.name = format!("{prefix}{}", s.name);
        out.push(s);
        let mut s = span(&a.edges);
        s.name = format!("{prefix}{}", s.name);
        out.push(s);
        if let Some(w) = &a.weights {
            let mut s = span(w);
            s.name = format!("{prefix}{}", s.name);
            out.push(s);
        }
    }
    out
}

/// The first touch of every 4 KiB page of `spans`, in order: what loading the graph and
/// creating the arrays did before the kernel ran, so that a first-touch policy sees the
/// program's real allocation order.
pub fn first_touch<P: Probe>(spans: &[Span], p: &mut P) {
    for s in spans {
        let mut a = s.base;
        while a < s.base + s.bytes {
            p.touch(a as usize, true);
            a += 4096;
        }
    }
}

/// A traced kernel with its working arrays.
pub struct Traced {
    spec: Spec,
    u32s: Vec<Region<u32>>,
    f32s: Vec<Region<f32>>,
    f64s: Vec<Region<f64>>,
    last_change: f64,
    triangles: u64,
}

impl Traced {
    /// Create the arrays of `spec` for `g` (property arrays first, then frontier ones).
    pub fn new(spec: Spec, layout: &Layout, g: &Csr) -> Result<Traced> {
        let n = g.n();
        let (mut u32s, mut f32s, mut f64s) = (Vec::new(), Vec::new(), Vec::new());
        match spec {
            Spec::Bfs { .. } => {
                u32s.push(layout.region("property", "property", n)?);
                u32s.push(layout.region("frontier", "frontier", n)?);
            }
            Spec::Sssp { .. } => u32s.push(layout.region("property", "property", n)?),
            Spec::Pr { .. } => {
                f32s.push(layout.region("property", "property", n)?);
                f32s.push(layout.region("property", "property-contrib", n)?);
            }
            Spec::Cc { .. } => u32s.push(layout.region("property", "property", n)?),
            Spec::Bc { .. } => {
                u32s.push(layout.region("property", "property-depth", n)?);
                f64s.push(layout.region("property", "property-paths", n)?);
                f32s.push(layout.region("property", "property-delta", n)?);
                f32s.push(layout.region("property", "property", n)?);
                u32s.push(layout.region("frontier", "frontier", n)?);
            }
            Spec::Tc => {}
        }
        Ok(Traced {
            spec,
            u32s,
            f32s,
            f64s,
            last_change: 0.0,
            triangles: 0,
        })
    }

    /// The kernel's arrays, in allocation order.
    pub fn spans(&self) -> Vec<Span> {
        let mut v: Vec<Span> = self.u32s.iter().map(span).collect();
        v.extend(self.f32s.iter().map(span));
        v.extend(self.f64s.iter().map(span));
        v.sort_by_key(|s| s.base);
        v
    }

    /// How the kernel's arrays are backed (page sizes the kernel gave).
    pub fn regions(&self) -> Result<Vec<crate::csr::RegionReport>> {
        let mut v = Vec::new();
        for r in &self.u32s {
            v.push(crate::csr::RegionReport::of(r)?);
        }
        for r in &self.f32s {
            v.push(crate::csr::RegionReport::of(r)?);
        }
        for r in &self.f64s {
            v.push(crate::csr::RegionReport::of(r)?);
        }
        Ok(v)
    }

    /// Run once from `sources`, telling `p` every access.
    pub fn run<P: Probe>(&mut self, g: &Csr, sources: &[u32], p: &mut P) {
        match self.spec {
            Spec::Bfs { .. } => self.bfs(g, sources[0], p),
            Spec::Sssp { delta } => self.sssp(g, sources[0], delta, p),
            Spec::Pr {
                tolerance,
                max_iters,
                ..
            } => self.pr(g, tolerance, max_iters, p),
            Spec::Cc { .. } => self.cc(g, p),
            Spec::Bc { .. } => self.bc(g, sources, p),
            Spec::Tc => self.triangles = tc_ordered(g, p),
        }
    }

    /// Check the last run with the parallel kernel's verifier.
    pub fn verify(&self, g: &Csr, sources: &[u32]) -> std::result::Result<(), String> {
        match self.spec {
            Spec::Bfs { .. } => bfs::verify(g, sources[0], &self.u32s[0]),
            Spec::Sssp { .. } => sssp::verify(g, sources[0], &self.u32s[0]),
            Spec::Pr { .. } => pr::verify(g, &self.f32s[0], self.last_change),
            Spec::Cc { .. } => cc::verify(g, &self.u32s[0]),
            Spec::Bc { .. } => bc::verify(g, sources, &self.f32s[1]),
            Spec::Tc => {
                let want = tc::verify_count(g);
                if want == self.triangles {
                    Ok(())
                } else {
                    Err(format!(
                        "counted {} triangles, expected {want}",
                        self.triangles
                    ))
                }
            }
        }
    }

    fn bfs<P: Probe>(&mut self, g: &Csr, src: u32, p: &mut P) {
        let off = &g.out_adjacency().offsets;
        let edges = &g.out_adjacency().edges;
        let (parent, rest) = self.u32s.split_at_mut(1);
        let (parent, queue) = (&mut parent[0][..], &mut rest[0][..]);
        for v in 0..parent.len() {
            st(p, parent, v, bfs::NONE);
        }
        st(p, parent, src as usize, src);
        st(p, queue, 0, src);
        let (mut head, mut tail) = (0, 1);
        while head < tail {
            let u = ld(p, queue, head) as usize;
            head += 1;
            let (a, b) = (ld(p, off, u) as usize, ld(p, off, u + 1) as usize);
            for e in a..b {
                let v = ld(p, edges, e) as usize;
                if ld(p, parent, v) == bfs::NONE {
                    st(p, parent, v, u as u32);
                    st(p, queue, tail, v as u32);
                    tail += 1;
                }
            }
        }
    }

    fn sssp<P: Probe>(&mut self, g: &Csr, src: u32, delta: u32, p: &mut P) {
        let adj = g.out_adjacency();
        let (off, edges) = (&adj.offsets, &adj.edges);
        let Some(weights) = adj.weights.as_ref() else {
            return;
        };
        let dist = &mut self.u32s[0][..];
        let delta = delta.max(1);
        for v in 0..dist.len() {
            st(p, dist, v, sssp::INF);
        }
        st(p, dist, src as usize, 0);
        // Buckets are heap vectors, as in the parallel kernel; their accesses fall outside
        // the named arrays.
        let mut buckets: Vec<Vec<u32>> = vec![vec![src]];
        let mut i = 0;
        while i < buckets.len() {
            while !buckets[i].is_empty() {
                let list = std::mem::take(&mut buckets[i]);
                for k in 0..list.len() {
                    let u = ld(p, &list, k) as usize;
                    let du = ld(p, dist, u);
                    if du / delta != i as u32 {
                        continue;
                    }
                    let (a, b) = (ld(p, off, u) as usize, ld(p, off, u + 1) as usize);
                    for e in a..b {
                        let v = ld(p, edges, e) as usize;
                        let nd = du + ld(p, weights, e);
                        if nd < ld(p, dist, v) {
                            st(p, dist, v, nd);
                            let bi = (nd / delta) as usize;
                            if bi >= buckets.len() {
                                buckets.resize_with(bi + 1, Vec::new);
                            }
                            let bucket = &mut buckets[bi];
                            bucket.push(v as u32);
                            p.touch(bucket.as_ptr() as usize + 4 * (bucket.len() - 1), true);
                        }
                    }
                }
            }
            i += 1;
        }
    }

    fn pr<P: Probe>(&mut self, g: &Csr, tolerance: f64, max_iters: u32, p: &mut P) {
        let n = g.n();
        let out = g.out_adjacency();
        let inc = g.in_adjacency().unwrap_or(out);
        let (score, contrib) = self.f32s.split_at_mut(1);
        let (score, contrib) = (&mut score[0][..], &mut contrib[0][..]);
        let base = ((1.0 - pr::DAMPING) / n as f64) as f32;
        for v in 0..n {
            st(p, score, v, 1.0 / n as f32);
        }
        self.last_change = f64::INFINITY;
        for _ in 0..max_iters {
            for u in 0..n {
                let deg = ld(p, &out.offsets, u + 1) - ld(p, &out.offsets, u);
                let c = if deg == 0 {
                    0.0
                } else {
                    ld(p, score, u) / deg as f32
                };
                st(p, contrib, u, c);
            }
            let mut change = 0.0f64;
            for v in 0..n {
                let (a, b) = (
                    ld(p, &inc.offsets, v) as usize,
                    ld(p, &inc.offsets, v + 1) as usize,
                );
                let mut sum = 0.0f32;
                for e in a..b {
                    let u = ld(p, &inc.edges, e) as usize;
                    sum += ld(p, contrib, u);
                }
                let new = base + pr::DAMPING as f32 * sum;
                change += f64::from((new - ld(p, score, v)).abs());
                st(p, score, v, new);
            }
            self.last_change = change;
            if change < tolerance {
                break;
            }
        }
    }

    fn cc<P: Probe>(&mut self, g: &Csr, p: &mut P) {
        let adj = g.out_adjacency();
        let comp = &mut self.u32s[0][..];
        let n = comp.len();
        for v in 0..n {
            st(p, comp, v, v as u32);
        }
        fn find<P: Probe>(p: &mut P, comp: &mut [u32], mut x: usize) -> usize {
            loop {
                let up = ld(p, comp, x) as usize;
                if up == x {
                    return x;
                }
                let upper = ld(p, comp, up) as usize;
                st(p, comp, x, upper as u32);
                x = up;
            }
        }
        for u in 0..n {
            let (a, b) = (
                ld(p, &adj.offsets, u) as usize,
                ld(p, &adj.offsets, u + 1) as usize,
            );
            for e in a..b {
                let v = ld(p, &adj.edges, e) as usize;
                let (ru, rv) = (find(p, comp, u), find(p, comp, v));
                if ru != rv {
                    st(p, comp, ru.max(rv), ru.min(rv) as u32);
                }
            }
        }
        for v in 0..n {
            let r = find(p, comp, v);
            st(p, comp, v, r as u32);
        }
    }

    fn bc<P: Probe>(&mut self, g: &Csr, sources: &[u32], p: &mut P) {
        let adj = g.out_adjacency();
        let (off, edges) = (&adj.offsets, &adj.edges);
        let (depth, order) = self.u32s.split_at_mut(1);
        let (depth, order) = (&mut depth[0][..], &mut order[0][..]);
        let paths = &mut self.f64s[0][..];
        let (delta, scores) = self.f32s.split_at_mut(1);
        let (delta, scores) = (&mut delta[0][..], &mut scores[0][..]);
        let n = depth.len();
        for v in 0..n {
            st(p, scores, v, 0.0);
        }
        for &s in sources {
            for v in 0..n {
                st(p, depth, v, u32::MAX);
                st(p, paths, v, 0.0);
                st(p, delta, v, 0.0);
            }
            st(p, depth, s as usize, 0);
            st(p, paths, s as usize, 1.0);
            st(p, order, 0, s);
            let (mut head, mut tail) = (0, 1);
            while head < tail {
                let u = ld(p, order, head) as usize;
                head += 1;
                let du = ld(p, depth, u);
                for e in ld(p, off, u) as usize..ld(p, off, u + 1) as usize {
                    let v = ld(p, edges, e) as usize;
                    let mut dv = ld(p, depth, v);
                    if dv == u32::MAX {
                        dv = du + 1;
                        st(p, depth, v, dv);
                        st(p, order, tail, v as u32);
                        tail += 1;
                    }
                    if dv == du + 1 {
                        let x = ld(p, paths, v) + ld(p, paths, u);
                        st(p, paths, v, x);
                    }
                }
            }
            for k in (0..tail).rev() {
                let u = ld(p, order, k) as usize;
                let du = ld(p, depth, u);
                let mut acc = 0.0f64;
                for e in ld(p, off, u) as usize..ld(p, off, u + 1) as usize {
                    let v = ld(p, edges, e) as usize;
                    if ld(p, depth, v) == du + 1 {
                        acc +=
                            ld(p, paths, u) / ld(p, paths, v) * (1.0 + f64::from(ld(p, delta, v)));
                    }
                }
                st(p, delta, u, acc as f32);
                if u != s as usize {
                    let x = ld(p, scores, u) + acc as f32;
                    st(p, scores, u, x);
                }
            }
        }
        let mut max = 0.0f32;
        for v in 0..n {
            max = max.max(ld(p, scores, v));
        }
        if max > 0.0 {
            for v in 0..n {
                let x = ld(p, scores, v) / max;
                st(p, scores, v, x);
            }
        }
    }
}

/// Ordered triangle count: for u, each neighbour v < u, each common neighbour w < v.
fn tc_ordered<P: Probe>(g: &Csr, p: &mut P) -> u64 {
    let adj = g.out_adjacency();
    (0..g.n())
        .map(|u| tc_from(&adj.offsets, &adj.edges, u, p))
        .sum()
}

/// The triangles counted from `u`.
fn tc_from<P: Probe>(off: &[u64], edges: &[u32], u: usize, p: &mut P) -> u64 {
    let mut count = 0u64;
    let (ua, ub) = (ld(p, off, u) as usize, ld(p, off, u + 1) as usize);
    for e in ua..ub {
        let v = ld(p, edges, e) as usize;
        if v > u {
            break;
        }
        let mut it = ua;
        let (va, vb) = (ld(p, off, v) as usize, ld(p, off, v + 1) as usize);
        for f in va..vb {
            let w = ld(p, edges, f);
            if w as usize > v {
                break;
            }
            while it < ub && ld(p, edges, it) < w {
                it += 1;
            }
            if it < ub && ld(p, edges, it) == w {
                count += 1;
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::generated;
    use crate::kernels::{pick_sources, Spec};

    #[test]
    fn every_traced_kernel_verifies_and_reports_accesses() {
        let layout = Layout::default();
        for name in ["bfs", "sssp", "pr", "cc", "bc", "tc"] {
            let spec = Spec::default_for(name).expect("kernel");
            let g = generated("kron:10", true, spec.needs_weights());
            let sources = pick_sources(&g, 7, spec.sources_per_trial().max(1)).expect("sources");
            let mut t = Traced::new(spec, &layout, &g).expect("arrays");
            let mut c = Count::default();
            t.run(&g, &sources, &mut c);
            t.verify(&g, &sources)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(c.loads > g.arcs() / 2, "{name}: {c:?}");
            let mut off = Off;
            t.run(&g, &sources, &mut off);
            t.verify(&g, &sources).expect("untraced run verifies too");
        }
    }

    #[test]
    fn bfs_accesses_fall_in_its_arrays() {
        struct Within(Vec<Span>, u64);
        impl Probe for Within {
            fn touch(&mut self, addr: usize, _: bool) {
                let a = addr as u64;
                assert!(
                    self.0.iter().any(|s| a >= s.base && a < s.base + s.bytes),
                    "{a:#x} outside every array"
                );
                self.1 += 1;
            }
        }
        let g = generated("urand:10", true, false);
        let spec = Spec::default_for("bfs").expect("bfs");
        let mut t = Traced::new(spec, &Layout::default(), &g).expect("arrays");
        let mut spans = graph_spans(&g);
        spans.extend(t.spans());
        let mut w = Within(spans.clone(), 0);
        first_touch(&spans, &mut w);
        let pages: u64 = spans.iter().map(|s| s.bytes.div_ceil(4096)).sum();
        assert_eq!(w.1, pages);
        t.run(&g, &[0], &mut w);
        // n parent inits + for each reached vertex a queue read, two offsets; an edge read
        // and a parent read per arc of reached vertices.
        assert!(w.1 > pages + g.n() as u64 + g.arcs());
    }
}
