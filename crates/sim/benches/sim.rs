//! Simulator speed: `cargo bench -p hugewise-sim`.
//!
//! On a trace (`HUGEWISE_BENCH_TRACE=run.hwt`, else a synthetic graph-kernel mix of 16 Mi
//! accesses: edges in order, property at random with a hot head, a small stack), five runs
//! each, medians printed:
//! - one configuration (Haswell TLBs + PCC at a 2 % budget) on one core, trace pre-decoded;
//! - a 62-configuration utility curve (six policies × ten budgets + none + all) over one
//!   decode, both cores, in configuration-accesses per second;
//! - reuse distance at 4 KiB, pre-decoded, one core; and `sim reuse`'s whole pass (decode,
//!   4 KiB and 2 MiB) over the file on both cores.
//!
//! `HUGEWISE_BENCH_ONLY=one|curve|reuse` runs just that part; `HUGEWISE_BENCH_POLICY` picks the
//! policy of the one configuration (`pcc`, `hawkeye`, `linux-khugepaged`, `ingens`, `mega`),
//! its interval a sixteenth of the trace.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use hugewise_sim::policies;
use hugewise_sim::policy::Timing;
use hugewise_sim::reuse::Stack;
use hugewise_sim::{CurveSpec, Machine, TlbConfig};
use hugewise_trace::{Header, Reader, Region, Writer};

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn synthetic(dir: &std::path::Path, n: u64) -> PathBuf {
    let path = dir.join("bench.hwt");
    let header = Header {
        addr_shift: 2,
        streams: 1,
        regions: vec![
            Region {
                name: "edges".into(),
                base: 0x4000_0000,
                size: 1 << 30,
            },
            Region {
                name: "property".into(),
                base: 0x8000_0000,
                size: 256 << 20,
            },
            Region {
                name: "stack".into(),
                base: 0x7ffd_0000_0000,
                size: 1 << 20,
            },
        ],
    };
    let mut w = Writer::create(&path, &header, 1 << 20).expect("create");
    let mut x = 1u64;
    for i in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = x >> 33;
        let a = match i % 3 {
            0 => 0x4000_0000 + (i / 3) * 4,
            // Half the property reads go to the first 4 MiB (hot vertices).
            1 if r & 1 == 0 => 0x8000_0000 + ((r >> 1) % (1 << 20)) * 4,
            1 => 0x8000_0000 + ((r >> 1) % (64 << 20)) * 4,
            _ => 0x7ffd_0000_0000 + (r % 1024) * 8,
        };
        w.push(0, a, i % 11 == 0).expect("push");
    }
    w.finish().expect("finish");
    path
}

fn main() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = match std::env::var_os("HUGEWISE_BENCH_TRACE") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => synthetic(dir.path(), 16 << 20),
    };
    let mut reader = Reader::open(&path).expect("open");
    let header: Header = reader.header().clone();
    let mut all = Vec::new();
    let mut buf = Vec::new();
    while reader.next_block(&mut buf).expect("read").is_some() {
        all.extend_from_slice(&buf);
    }
    let n = all.len() as f64;
    println!("trace: {} ({} accesses)", path.display(), all.len());
    let tlb = TlbConfig::preset("haswell").expect("preset");
    let timing = Timing {
        accesses_per_s: 200e6,
        time_scale: 1.0,
    };
    let interval = (n / 16.0 / 200e6).max(1e-6);

    let mut one = Vec::new();
    let mut re = Vec::new();
    let mut re_both = Vec::new();
    let mut curve = Vec::new();
    let spec = CurveSpec {
        policies: [
            "pcc",
            "hawkeye",
            "linux",
            "linux-khugepaged",
            "ingens",
            "mega",
        ]
        .iter()
        .map(|s| s.parse().expect("policy"))
        .collect(),
        budgets: vec![0.0, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.5, 0.64, 1.0],
        tlb: tlb.clone(),
        accesses_per_s: None,
        time_scale: None,
        calibration: None,
        reuse: false,
        warmup_accesses: None,
        phys: None,
    };
    let cancel = AtomicBool::new(false);
    let mut walks = 0;
    let mut configs = 0;
    let only = std::env::var("HUGEWISE_BENCH_ONLY").unwrap_or_default();
    if !["", "one", "curve", "reuse"].contains(&only.as_str()) {
        eprintln!("HUGEWISE_BENCH_ONLY={only}: expected one, curve or reuse");
        std::process::exit(2);
    }
    let part = |name: &str| only.is_empty() || only == name;
    let one_policy = std::env::var("HUGEWISE_BENCH_POLICY").unwrap_or_else(|_| "pcc".into());
    let interval_key = match one_policy.as_str() {
        "pcc" => "interval",
        "hawkeye" => "window",
        "linux-khugepaged" => "sleep",
        "ingens" | "mega" => "scan",
        other => {
            eprintln!("HUGEWISE_BENCH_POLICY={other}: expected pcc, hawkeye, linux-khugepaged, ingens or mega");
            std::process::exit(2);
        }
    };
    for _ in 0..5 {
        if part("one") {
            let p = policies::parse(
                &format!("{one_policy}:{interval_key}={interval}s"),
                &timing,
                1,
            )
            .expect("policy");
            let mut m = Machine::new(&tlb, &header, p, Some(0.02)).expect("machine");
            let t = Instant::now();
            m.feed(0, &all);
            one.push(n / t.elapsed().as_secs_f64());
            walks = m.totals().counts.walks;
        }
        if part("reuse") {
            let mut r = Stack::new(12);
            let t = Instant::now();
            r.access_packed(&all);
            re.push(n / t.elapsed().as_secs_f64());
            let t = Instant::now();
            hugewise_sim::reuse::run(&path, &()).expect("reuse");
            re_both.push(n / t.elapsed().as_secs_f64());
        }
        if part("curve") {
            let t = Instant::now();
            let (c, _) = hugewise_sim::curve::run(&path, &spec, &(), &cancel).expect("curve");
            configs = c.configurations;
            curve.push(configs as f64 * n / t.elapsed().as_secs_f64());
        }
    }
    println!(
        "one configuration (haswell + {one_policy} @ 2 %, {walks} walks): {:.1} M accesses/s (runs: {:?})",
        median(one.clone()) / 1e6,
        one.iter().map(|x| (x / 1e6).round()).collect::<Vec<_>>()
    );
    println!(
        "utility curve, {configs} configurations over one decode: {:.1} M configuration-accesses/s (runs: {:?})",
        median(curve.clone()) / 1e6,
        curve.iter().map(|x| (x / 1e6).round()).collect::<Vec<_>>()
    );
    println!(
        "reuse distance at 4 KiB, one core, pre-decoded: {:.1} M accesses/s (runs: {:?})",
        median(re.clone()) / 1e6,
        re.iter().map(|x| (x / 1e6).round()).collect::<Vec<_>>()
    );
    println!(
        "sim reuse (4 KiB + 2 MiB, from the file, both cores): {:.1} M accesses/s (runs: {:?})",
        median(re_both.clone()) / 1e6,
        re_both
            .iter()
            .map(|x| (x / 1e6).round())
            .collect::<Vec<_>>()
    );
}
