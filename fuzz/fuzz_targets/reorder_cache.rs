//! Any bytes in place of one file of a reordered-graph cache entry: a hit whose graph and
//! permutation are sound, or a miss; never a panic, never a wrong graph.
//!
//! Input: byte 0 picks the file. 0: the key, as given; 1: the permutation, as given; 2: a
//! permutation whose header (count, checksum) is made valid around the fuzzed ids and whose
//! checksum the key is made to name, so that the fuzzer reaches the permutation's own checks;
//! 3: the graph, as given. The rest is the file's content.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use hugewise_graph::cache::{Cache, Entry, Found};
use hugewise_graph::fits::Fit;
use hugewise_graph::load::{load, Input, LoadOptions};
use hugewise_graph::reorder::{reorder, Method};
use hugewise_graph::Layout;
use libfuzzer_sys::fuzz_target;

/// An entry of a kron:6 reordered by DBG, made once, and the three files' contents as stored.
struct Setup {
    entry: Entry,
    n: usize,
    files: [(PathBuf, Vec<u8>); 3],
}

fn opts() -> LoadOptions {
    LoadOptions {
        seed: 1,
        weighted: false,
        symmetrize: true,
        fit: Fit::default(),
    }
}

fn setup() -> &'static Setup {
    static S: OnceLock<Setup> = OnceLock::new();
    S.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("hugewise-fuzz-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (g, _) = load(&Input::parse("kron:6").expect("spec"), opts(), &Layout::default(), &mut |_| Ok(()))
            .expect("generate");
        let file = dir.join("k6.hwg");
        hugewise_graph::save::save(&g, &file).expect("save");
        let input = Input::File(file);
        let cache = Cache::new(dir.join("cache")).min_graph_bytes(0).keep_free_bytes(0);
        let entry = cache.entry(&input, &opts(), Method::Dbg, 1).expect("entry");
        let (h, r, _) = reorder(&g, Method::Dbg, 1, &Layout::default()).expect("reorder");
        entry.store(&h, &r, None).expect("stored");
        let files = ["key", "order", "graph.hwg"].map(|f| {
            let p = entry.dir().join(f);
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes)
        });
        Setup { entry, n: g.n(), files }
    })
}

/// A permutation file around `ids` (little-endian u32s), and the key naming its checksum.
fn sealed_order(s: &Setup, body: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let ids = &body[..body.len() / 4 * 4];
    let crc = crc32fast::hash(ids);
    let mut order = s.files[1].1[..24].to_vec();
    order[12..16].copy_from_slice(&crc.to_le_bytes());
    order[16..24].copy_from_slice(&((ids.len() / 4) as u64).to_le_bytes());
    order.extend_from_slice(ids);
    let key = String::from_utf8(s.files[0].1.clone()).expect("text");
    let key: String = key
        .lines()
        .map(|l| if l.starts_with("order ") { format!("order {crc:08x}\n") } else { format!("{l}\n") })
        .collect();
    (order, key.into_bytes())
}

fuzz_target!(|data: &[u8]| {
    let s = setup();
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let mut writes: Vec<(usize, Vec<u8>)> = Vec::new();
    match pick % 4 {
        0 => writes.push((0, body.to_vec())),
        1 => writes.push((1, body.to_vec())),
        2 => {
            let (order, key) = sealed_order(s, body);
            writes.push((1, order));
            writes.push((0, key));
        }
        _ => writes.push((2, body.to_vec())),
    }
    for (i, bytes) in &writes {
        std::fs::write(&s.files[*i].0, bytes).expect("write");
    }
    let fit = Fit { cap_bytes: Some(1 << 28), ..Fit::default() };
    if let Found::Hit(hit) = s.entry.find(&Layout::default(), fit, &mut |_| Ok(())) {
        let (g, r) = (hit.graph, hit.relabeling);
        assert_eq!(g.n(), s.n);
        assert_eq!(r.old_of_new().len(), g.n());
        let arcs: usize = (0..g.n() as u32).map(|v| g.out_neighbors(v).len()).sum();
        assert_eq!(arcs as u64, g.arcs());
        // A permutation: every original id once.
        let mut seen = vec![false; g.n()];
        for &old in r.old_of_new() {
            assert!(!std::mem::replace(&mut seen[old as usize], true));
        }
    }
    for (i, _) in &writes {
        std::fs::write(&s.files[*i].0, &s.files[*i].1).expect("restore");
    }
});
