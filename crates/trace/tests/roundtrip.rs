//! Traces written and read back, and every way a file can be cut or damaged.

use std::path::Path;

use hugewise_trace::{Access, Error, Header, Reader, Region, Writer};

fn header(streams: u16) -> Header {
    Header {
        addr_shift: 2,
        streams,
        regions: vec![
            Region {
                name: "edges".into(),
                base: 0x10_0000,
                size: 64 << 20,
            },
            Region {
                name: "property".into(),
                base: 0x1000_0000,
                size: 64 << 20,
            },
        ],
    }
}

/// A graph kernel's pattern: edges read in order, the property read at the neighbour, and now
/// and then a store and an address outside every region.
fn pattern(n: usize, seed: u64) -> Vec<(u16, Access)> {
    let mut x = seed;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let stream = (i % 2) as u16;
        let a = match i % 5 {
            0 | 1 => 0x10_0000 + (i as u64 / 2) * 4,
            2 | 3 => 0x1000_0000 + ((x >> 20) % (16 << 20)) * 4,
            _ => 0x7ffd_0000_0000 + ((x >> 40) % 4096) * 4,
        };
        out.push((
            stream,
            Access {
                addr: a,
                write: i % 7 == 0,
            },
        ));
    }
    out
}

fn write(path: &Path, h: &Header, accesses: &[(u16, Access)], block: u32) {
    let mut w = Writer::create(path, h, block).expect("create");
    for (s, a) in accesses {
        w.push(*s, a.addr, a.write).expect("push");
    }
    let sum = w.finish().expect("finish");
    assert_eq!(sum.accesses, accesses.len() as u64);
    assert_eq!(sum.bytes, std::fs::metadata(path).expect("meta").len());
}

fn read_all(path: &Path) -> Result<Vec<(u16, Access)>, Error> {
    let mut r = Reader::open(path)?;
    let mut per_stream: Vec<Vec<Access>> = vec![Vec::new(); r.header().streams as usize];
    let mut buf = Vec::new();
    while let Some(b) = r.next_block(&mut buf)? {
        per_stream[b.stream as usize].extend(buf.iter().map(|&p| Access::unpack(p)));
    }
    Ok(per_stream
        .into_iter()
        .enumerate()
        .flat_map(|(s, v)| v.into_iter().map(move |a| (s as u16, a)))
        .collect())
}

fn by_stream(v: &[(u16, Access)]) -> Vec<(u16, Access)> {
    let mut v = v.to_vec();
    v.sort_by_key(|(s, _)| *s);
    v
}

#[test]
fn roundtrip_is_exact_per_stream() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("t.hwt");
    let acc = pattern(100_000, 7);
    write(&p, &header(2), &acc, 4096);
    let back = read_all(&p).expect("read");
    assert_eq!(back, by_stream(&acc));
    let r = Reader::open(&p).expect("open");
    assert_eq!(r.header(), &header(2));
}

#[test]
fn graph_like_pattern_costs_about_two_bytes_an_access() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("t.hwt");
    let acc = pattern(1 << 20, 3);
    write(&p, &header(2), &acc, 1 << 18);
    let per = std::fs::metadata(&p).expect("meta").len() as f64 / acc.len() as f64;
    eprintln!("{per:.2} bytes per access");
    // 40 % in order, 40 % uniformly random over 16 Mi elements (24 bits each, incompressible),
    // 20 % random in a 16 KiB stack (12 bits): at least 1.5 bytes an access in entropy alone.
    // Measured 2.51; real kernels read far more in order.
    assert!(per < 2.75, "{per:.2} bytes per access");
}

#[test]
fn every_truncation_is_an_error_naming_the_offset() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("t.hwt");
    write(&p, &header(2), &pattern(3000, 1), 500);
    let bytes = std::fs::read(&p).expect("read");
    let cut = dir.path().join("cut.hwt");
    for len in 0..bytes.len() {
        std::fs::write(&cut, &bytes[..len]).expect("write");
        match read_all(&cut) {
            Err(Error::Truncated { offset, .. }) => assert!(offset <= len as u64, "{len}"),
            Err(e) => panic!("cut at {len}: expected truncation, got {e}"),
            Ok(_) => panic!("cut at {len} read as a whole trace"),
        }
    }
}

#[test]
fn a_flipped_byte_anywhere_is_caught() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("t.hwt");
    write(&p, &header(2), &pattern(2000, 5), 400);
    let bytes = std::fs::read(&p).expect("read");
    let bad = dir.path().join("bad.hwt");
    for i in (0..bytes.len()).step_by(7) {
        let mut b = bytes.clone();
        b[i] ^= 0x10;
        std::fs::write(&bad, &b).expect("write");
        let r = read_all(&bad);
        assert!(r.is_err(), "byte {i} flipped went unnoticed");
        let msg = r.expect_err("err").to_string();
        assert!(msg.contains("at byte"), "{msg}");
    }
}

#[test]
fn an_unfinished_writer_leaves_no_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("t.hwt");
    {
        let mut w = Writer::create(&p, &header(1), 100).expect("create");
        for i in 0..1000u64 {
            w.push(0, 0x10_0000 + i * 4, false).expect("push");
        }
    }
    assert!(!p.exists());
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
}

#[test]
fn bad_arguments_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("t.hwt");
    assert!(Writer::create(&p, &header(1), 0).is_err());
    let mut w = Writer::create(&p, &header(1), 10).expect("create");
    assert!(w.push(3, 0, false).is_err());
    let e = Reader::open(&dir.path().join("missing.hwt"))
        .err()
        .expect("missing");
    assert!(e.to_string().contains("missing.hwt"));
    std::fs::write(dir.path().join("x.hwt"), b"not a trace at all, clearly not").expect("w");
    let e = Reader::open(&dir.path().join("x.hwt"))
        .err()
        .expect("magic");
    assert!(e.to_string().contains("no HWTRACE magic"), "{e}");
}

#[test]
fn blocks_are_written_in_the_order_they_were_handed_over() {
    // Many small blocks, so that the encoding threads finish them out of order.
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("t.hwt");
    let block = 64u32;
    let mut w = Writer::create(&p, &header(2), block).expect("create");
    let mut want = Vec::new();
    let mut spare = Vec::new();
    for k in 0..2000u64 {
        let stream = (k % 2) as u16;
        // Every other block is handed over whole, without a copy.
        let base = 0x10_0000 + k * 4096;
        let mut batch = std::mem::take(&mut spare);
        batch.extend((0..u64::from(block)).map(|i| ((base + i * 4) << 1) | (i & 1)));
        if k % 4 < 2 {
            spare = w.push_vec(stream, batch).expect("push");
            assert!(spare.is_empty() && spare.capacity() >= block as usize);
        } else {
            w.push_packed(stream, &batch).expect("push");
        }
        want.push((stream, base));
    }
    let s = w.finish().expect("finish");
    assert_eq!(s.blocks, 2000);
    let mut r = Reader::open(&p).expect("open");
    let mut buf = Vec::new();
    let mut got = Vec::new();
    while let Some(b) = r.next_block(&mut buf).expect("read") {
        assert_eq!(buf.len(), block as usize);
        got.push((b.stream, buf[0] >> 1));
    }
    assert_eq!(got, want);
}

#[test]
fn every_region_count_roundtrips() {
    // The encoder has paths for up to 4, 8 and 16 regions (scanned) and more (searched), and
    // slots from 15 on take a second varint.
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("t.hwt");
    for regions in [0usize, 1, 4, 5, 9, 15, 16, 17, 40] {
        let h = Header {
            addr_shift: 2,
            streams: 1,
            regions: (0..regions)
                .map(|r| Region {
                    name: format!("r{r}"),
                    base: 0x10_0000 + r as u64 * (4 << 20),
                    size: 2 << 20,
                })
                .collect(),
        };
        let mut x = 9u64;
        let acc: Vec<(u16, Access)> = (0..20_000u64)
            .map(|i| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                // Into every region, the gaps between them, and far outside.
                let addr = match i % 3 {
                    0 => 0x10_0000 + (x >> 33) % ((regions as u64 + 1) * (4 << 20)),
                    1 => 0x10_0000 + (i % (regions as u64 + 1)) * (4 << 20) + i * 4 % 4096,
                    _ => 0x7fff_0000_0000 + (x >> 50),
                } & !3;
                (
                    0,
                    Access {
                        addr,
                        write: x & 1 == 1,
                    },
                )
            })
            .collect();
        write(&p, &h, &acc, 1000);
        assert_eq!(read_all(&p).expect("read"), acc, "{regions} regions");
    }
}
