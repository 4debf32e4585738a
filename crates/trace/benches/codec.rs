//! Trace write and read speed, in accesses per second: `cargo bench -p hugewise-trace`.
//!
//! A graph kernel's mix (edges in order, property at random in 64 MiB, a small stack), 32 Mi
//! accesses in one stream, written once, then read five times; the median is printed.

use std::time::Instant;

use hugewise_trace::{Header, Reader, Region, Writer};

fn main() {
    let n: u64 = std::env::var("HWT_BENCH_ACCESSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32 << 20);
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("bench.hwt");
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
    let t0 = Instant::now();
    let mut w = Writer::create(&path, &header, 1 << 20).expect("create");
    for i in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let a = match i % 3 {
            0 => 0x10_0000 + (i / 3) * 4,
            1 => 0x8000_0000 + ((x >> 20) % (16 << 20)) * 4,
            _ => 0x7ffd_0000_0000 + ((x >> 40) % 1024) * 8,
        };
        w.push(0, a, i % 11 == 0).expect("push");
    }
    let sum = w.finish().expect("finish");
    let write_s = t0.elapsed().as_secs_f64();
    let mut times = Vec::new();
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
        assert_eq!(total, n);
        std::hint::black_box(check);
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let med = times[2];
    println!(
        "trace codec: {n} accesses, {:.2} bytes/access; write {:.0} M accesses/s; read median \
         {:.0} M accesses/s (min {:.3} s, max {:.3} s over 5)",
        sum.bytes as f64 / n as f64,
        n as f64 / write_s / 1e6,
        n as f64 / med / 1e6,
        times[0],
        times[4]
    );
}
