//! Any bytes as a Matrix Market file: entries or an error, never a panic.
#![no_main]

use hugewise_graph::build::{build, BuildOptions, Edge, VecSource};
use hugewise_graph::fits::Fit;
use hugewise_graph::Layout;
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
        // The declared size goes through the size check (capped at 256 MiB here) instead of
        // being allocated.
        let mut src = VecSource {
            edges,
            weighted: h.weighted,
            vertices: Some(h.vertices as usize),
        };
        let opts = BuildOptions {
            symmetrize: h.symmetric,
            fit: Fit {
                cap_bytes: Some(1 << 28),
                ..Fit::default()
            },
        };
        let _ = build(&mut src, opts, &Layout::default(), &mut |_| Ok(()));
    }
});
