//! Any bytes as a text edge list: the reader must return edges or an error, never panic;
//! what it accepts must build, or be refused by the size check (capped at 256 MiB here, so a
//! far id is refused instead of allocated).
#![no_main]

use hugewise_graph::build::{build, BuildOptions, Edge, VecSource};
use hugewise_graph::fits::Fit;
use hugewise_graph::Layout;
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
        if ok.is_ok() {
            let mut src = VecSource {
                edges,
                weighted,
                vertices: None,
            };
            let opts = BuildOptions {
                symmetrize: weighted,
                fit: Fit {
                    cap_bytes: Some(1 << 28),
                    ..Fit::default()
                },
            };
            let _ = build(&mut src, opts, &Layout::default(), &mut |_| Ok(()));
        }
    }
});
