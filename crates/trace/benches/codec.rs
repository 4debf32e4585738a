//! Trace write and read speed, in accesses per second: `cargo bench -p hugewise-trace`.
//!
//! The accesses are either a graph kernel's mix (edges in order, property at random in
//! 64 MiB, a small stack; 32 Mi accesses in one stream) or, with `HWT_BENCH_TRACE=run.hwt`,
//! a real trace's, decoded into memory first. They are written five times (the writer's
//! whole work: region lookup, deltas, varints, zstd, checksums) and read five times;
//! medians are printed.

use std::path::Path;
use std::time::Instant;

use hugewise_trace::{Header, Reader, Region, Writer};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn synthetic(n: u64) -> (Header, Vec<u64>) {
    let header = Header {
        addr_shift: 2,
        streams: 1,
        regions: vec![
            Region {
                name: "edges".into(),
                base: 0x10_0000,
                size: 1 << 30,
            },
            Region {
                name: "property".into(),
                base: 0x8000_0000,
                size: 64 << 20,
            },
        ],
    };
    let mut x = 1u64;
    let accesses = (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let a = match i % 3 {
                0 => 0x10_0000 + (i / 3) * 4,
                1 => 0x8000_0000 + ((x >> 20) % (16 << 20)) * 4,
                _ => 0x7ffd_0000_0000 + ((x >> 40) % 1024) * 8,
            };
            (a << 1) | u64::from(i % 11 == 0)
        })
        .collect();
    (header, accesses)
}

fn decoded(path: &Path) -> (Header, Vec<u64>) {
    let mut r = Reader::open(path).expect("open");
    let mut header = r.header().clone();
    header.streams = 1;
    let mut all = Vec::new();
    let mut buf = Vec::new();
    while r.next_block(&mut buf).expect("read").is_some() {
        all.extend_from_slice(&buf);
    }
    (header, all)
}

fn main() {
    let (header, accesses) = match std::env::var_os("HWT_BENCH_TRACE") {
        Some(p) if !p.is_empty() => decoded(Path::new(&p)),
        _ => synthetic(
            std::env::var("HWT_BENCH_ACCESSES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(32 << 20),
        ),
    };
    let n = accesses.len() as f64;
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("bench.hwt");
    let mut writes = Vec::new();
    let mut bytes = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let mut w = Writer::create(&path, &header, 1 << 20).expect("create");
        for chunk in accesses.chunks(1 << 16) {
            w.push_packed(0, chunk).expect("push");
        }
        bytes = w.finish().expect("finish").bytes;
        writes.push(n / t.elapsed().as_secs_f64());
    }
    let mut reads = Vec::new();
    let mut buf = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut r = Reader::open(&path).expect("open");
        let mut total = 0u64;
        let mut check = 0u64;
        while r.next_block(&mut buf).expect("read").is_some() {
            total += buf.len() as u64;
            check ^= buf.iter().fold(0, |a, &b| a ^ b);
        }
        assert_eq!(total, accesses.len() as u64);
        std::hint::black_box(check);
        reads.push(n / t.elapsed().as_secs_f64());
    }
    let runs = |v: &[f64]| v.iter().map(|x| (x / 1e6).round()).collect::<Vec<_>>();
    println!(
        "trace codec: {} accesses, {:.2} bytes/access; write median {:.1} M accesses/s \
         (runs: {:?}); read median {:.1} M accesses/s (runs: {:?})",
        accesses.len(),
        bytes as f64 / n,
        median(writes.clone()) / 1e6,
        runs(&writes),
        median(reads.clone()) / 1e6,
        runs(&reads),
    );
}
