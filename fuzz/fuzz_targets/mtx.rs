//! Any bytes as a Matrix Market file: entries or an error, never a panic.
#![no_main]

use hugewise_graph::build::{build_default, Edge, VecSource};
use hugewise_graph::io::mtx::read_entries;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut edges: Vec<Edge> = Vec::new();
    let mut r = data;
    let header = read_entries(&mut r, "fuzz.mtx".as_ref(), &mut |c| {
        edges.extend_from_slice(c);
        Ok(())
    });
    if let Ok(h) = header {
        if h.vertices < 1 << 16 {
            let mut src = VecSource {
                edges,
                weighted: h.weighted,
                vertices: Some(h.vertices as usize),
            };
            let _ = build_default(&mut src, h.symmetric);
        }
    }
});
