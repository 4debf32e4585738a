//! A `.hwg` file whose header and checksums are made valid around fuzzed contents, so that
//! the fuzzer gets past the checksums and reaches the structure check: a graph that loads is
//! sound, anything else is an error, never a panic.
//!
//! Input: byte 0 is the flags (bit 0 directed, bit 1 weighted), byte 1 the vertex count
//! (below 64), byte 2 the arc count per side; the rest fills the sections in file order
//! (zeros once it runs out).
#![no_main]

use hugewise_graph::io::hwg;
use hugewise_graph::fits::Fit;
use hugewise_graph::Layout;
use libfuzzer_sys::fuzz_target;

/// The file layout is the one docs in `crates/graph/src/io/hwg.rs` give.
fn sealed(data: &[u8]) -> Option<Vec<u8>> {
    let (&flags, rest) = data.split_first()?;
    let (&n, rest) = rest.split_first()?;
    let (&m, body) = rest.split_first()?;
    let (directed, weighted) = (flags & 1 != 0, flags & 2 != 0);
    let (n, m) = (u64::from(n % 64), u64::from(m));
    let side = [(n + 1) * 8, m * 4, if weighted { m * 4 } else { 0 }];
    let inc = if directed { side } else { [0; 3] };
    let sections = [side[0], side[1], side[2], inc[0], inc[1], inc[2]];
    let total: u64 = sections.iter().sum();
    let mut bytes = vec![0u8; 64 + total as usize];
    let fill = body.len().min(total as usize);
    bytes[64..64 + fill].copy_from_slice(&body[..fill]);
    bytes[..8].copy_from_slice(b"HWGRAPH\0");
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    let f = u32::from(directed) | u32::from(weighted) << 1;
    bytes[12..16].copy_from_slice(&f.to_le_bytes());
    bytes[16..24].copy_from_slice(&n.to_le_bytes());
    bytes[24..32].copy_from_slice(&m.to_le_bytes());
    let mut at = 64usize;
    for (i, &size) in sections.iter().enumerate() {
        let end = at + size as usize;
        let crc = if size > 0 {
            crc32fast::hash(&bytes[at..end])
        } else {
            0
        };
        bytes[32 + 4 * i..36 + 4 * i].copy_from_slice(&crc.to_le_bytes());
        at = end;
    }
    let crc = crc32fast::hash(&bytes[..56]);
    bytes[56..60].copy_from_slice(&crc.to_le_bytes());
    Some(bytes)
}

fuzz_target!(|data: &[u8]| {
    let Some(bytes) = sealed(data) else { return };
    let path =
        std::env::temp_dir().join(format!("hugewise-fuzz-sealed-{}.hwg", std::process::id()));
    if std::fs::write(&path, &bytes).is_err() {
        return;
    }
    if let Ok((g, _)) = hwg::read(&path, Fit { cap_bytes: Some(1 << 28), ..Fit::default() }, &Layout::default(), &mut |_| Ok(())) {
        let arcs: usize = (0..g.n() as u32).map(|v| g.out_neighbors(v).len()).sum();
        assert_eq!(arcs as u64, g.arcs());
        for v in 0..g.n() as u32 {
            assert!(g.out_neighbors(v).iter().all(|&u| (u as usize) < g.n()));
        }
    }
    let _ = std::fs::remove_file(&path);
});
