//! Any bytes as a text edge list: the reader must return edges or an error, never panic;
//! what it accepts must build.
#![no_main]

use hugewise_graph::build::{build_default, Edge, VecSource};
use hugewise_graph::io::edgelist::read_edges;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for weighted in [false, true] {
        let mut edges: Vec<Edge> = Vec::new();
        let mut r = data;
        let ok = read_edges(&mut r, "fuzz.el".as_ref(), weighted, &mut |c| {
            edges.extend_from_slice(c);
            Ok(())
        });
        // Ids up to 2^32 - 2 are valid, but building that many vertices is not the point here.
        if ok.is_ok() && edges.iter().all(|e| e.u < 1 << 16 && e.v < 1 << 16) {
            let mut src = VecSource {
                edges,
                weighted,
                vertices: None,
            };
            let _ = build_default(&mut src, weighted);
        }
    }
});
