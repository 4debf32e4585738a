//! Graph kernels, each beside an independent serial verifier.

pub mod bfs;

use crate::rng::SplitMix64;
use crate::{Csr, Error, Result};

/// `count` source vertices drawn reproducibly from `seed`, none of them isolated (out-degree 0),
/// as the GAP suite's source picker does.
pub fn pick_sources(g: &Csr, seed: u64, count: usize) -> Result<Vec<u32>> {
    let mut rng = SplitMix64::new(seed, 0x5eed);
    let n = g.n() as u64;
    let mut out = Vec::with_capacity(count);
    let mut tries = 0u64;
    while out.len() < count {
        let v = rng.below(n) as u32;
        tries += 1;
        if g.out_degree(v) > 0 {
            out.push(v);
        } else if tries > 64 * n.max(1024) {
            return Err(Error::Invalid(
                "no vertex with outgoing edges to start from".into(),
            ));
        }
    }
    Ok(out)
}
