//! The daemon's compaction on a machine shaped by hugewise itself: free memory squeezed and
//! broken up by `env with` (pinned pages keep most free 2 MiB blocks broken), a program that
//! faults its memory in afterwards, so that its collapses use up the few whole blocks left and
//! are refused, and `promote --compact always` compacting for them. Root only.

use std::process::Command;

fn hugewise() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hugewise"))
}

fn skip(why: &str) {
    hugewise_sys::testing::skip(why);
}

/// The settings `env with` changes to fragment memory, and the one the daemon never changes.
const KNOBS: [&str; 4] = [
    "/proc/sys/vm/compact_unevictable_allowed",
    "/proc/sys/vm/percpu_pagelist_high_fraction",
    "/proc/sys/vm/compaction_proactiveness",
    "/sys/kernel/mm/transparent_hugepage/enabled",
];

fn knobs() -> Vec<String> {
    KNOBS
        .iter()
        .map(|k| std::fs::read_to_string(k).unwrap_or_default())
        .collect()
}

fn available_gib() -> f64 {
    hugewise_sys::proc::ProcFs::default()
        .meminfo()
        .ok()
        .and_then(|m| m.available_bytes)
        .map(|b| b as f64 / f64::from(1u32 << 30))
        .unwrap_or(0.0)
}

#[test]
fn refused_collapses_on_fragmented_memory_are_compacted_for_and_logged() {
    if std::fs::File::open("/proc/kpageflags").is_err() {
        return skip("needs root to shape memory and collapse another process's pages");
    }
    if Command::new("python3").arg("-V").output().is_err() {
        return skip("python3 is not installed");
    }
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[never]") {
        return skip("THP is never here: MADV_COLLAPSE refuses");
    }
    // Shaping leaves 6 GiB available and the program takes 1 GiB of it: the machine keeps
    // more than 4 GiB free throughout. Shaping needs room above that to find whole blocks.
    if available_gib() < 14.0 {
        return skip("under 14 GiB available: too little to shape and keep 4 GiB free");
    }
    let dir = tempfile::tempdir().expect("tmp");
    let session = dir.path().join("always.json");
    let auto = dir.path().join("auto.json");
    let before = knobs();
    let exe = env!("CARGO_BIN_EXE_hugewise");
    // The program: 1 GiB faulted in 4 KiB pages, held 9 s.
    let program = "python3 -c 'import mmap, time\n\
                   n = 1 << 30\n\
                   m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n\
                   for i in range(0, n, 4096):\n    m[i] = 1\n\
                   time.sleep(9)\n'";
    let promote = |mode: &str, out: &std::path::Path| {
        format!(
            "{exe} promote --no-preload --compact {mode} --policy mega --budget 100% \
             --interval 0.5s --for 8s --out {} -- {program}",
            out.display()
        )
    };
    // 6 GiB left available, 95 % of free memory in broken blocks: about 150 whole 2 MiB
    // blocks. Each program's 1 GiB (512 chunks) is faulted after the shaping, into the broken
    // blocks' holes, so collapsing it needs whole blocks, which run out. One shaping, two
    // sessions: `always`, then `auto`.
    let out = hugewise()
        .args([
            "env",
            "with",
            "--pressure-leave",
            "6GiB",
            "--fragment",
            "95%",
            "--floor",
            "4GiB",
            "--probe",
            "off",
            "--",
            "sh",
            "-c",
        ])
        .arg(format!(
            "{} && {}",
            promote("always", &session),
            promote("auto", &auto)
        ))
        .output()
        .expect("run hugewise");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    // Put back: every setting as it was (the daemon changes none; `env with` restores its own).
    assert_eq!(knobs(), before, "{err}");

    // `auto`: every look in which a collapse was refused either compacted or says why not.
    let a: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&auto).expect("auto saved")).expect("JSON");
    assert_eq!(a["compact"], "auto");
    let ivs = a["intervals"].as_array().expect("intervals");
    let starts: Vec<f64> = ivs
        .iter()
        .map(|i| i["t_ms"].as_f64().unwrap_or(0.0))
        .collect();
    for act in a["actions"].as_array().expect("actions") {
        // An attempt the daemon tried again is not the chunk's outcome (a retry may make it).
        if act["kind"] != "promote"
            || !(act["outcome"] == "ENOMEM" || act["outcome"] == "EAGAIN")
            || act["tried_again"] == true
        {
            continue;
        }
        let t = act["t_ms"].as_f64().unwrap_or(0.0);
        let i = starts.partition_point(|&s| s <= t).saturating_sub(1);
        let iv = &ivs[i];
        assert!(
            iv.get("compaction").is_some() || iv.get("compaction_declined").is_some(),
            "a refusal at {t} ms, neither compacted for nor declined: {iv}"
        );
    }
    let auto_made = ivs.iter().filter(|i| i.get("compaction").is_some()).count();
    eprintln!(
        "auto: {} compaction(s), CPU {:?} ns, declined in {} look(s)",
        auto_made,
        a["totals"]["compaction_cpu_ns"].as_u64(),
        ivs.iter()
            .filter(|i| i.get("compaction_declined").is_some())
            .count()
    );

    let text = std::fs::read_to_string(&session).expect("session saved");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["compact"], "always");
    let refused = v["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter(|a| {
            a["kind"] == "promote"
                && (a["outcome"] == "ENOMEM" || a["outcome"] == "EAGAIN")
                && a["tried_again"] != true
        })
        .count();
    let compactions: Vec<&serde_json::Value> = v["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter_map(|i| i.get("compaction"))
        .collect();
    // A look stops collapsing after four refusals for want of memory in a row (the rest are
    // held back for the compaction to weigh): never more in a row within one look.
    let starts: Vec<f64> = v["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .map(|i| i["t_ms"].as_f64().unwrap_or(0.0))
        .collect();
    let mut run = (usize::MAX, 0u32);
    for act in v["actions"].as_array().expect("actions") {
        if act["kind"] != "promote" {
            continue;
        }
        let look = starts.partition_point(|&s| s <= act["t_ms"].as_f64().unwrap_or(0.0));
        // `ENOMEM` counts, a collapse made starts the count again, anything else (`EAGAIN`:
        // pages busy) does neither.
        run = match (act["outcome"].as_str(), run.0 == look) {
            (Some("ENOMEM"), true) => (look, run.1 + 1),
            (Some("ENOMEM"), false) => (look, 1),
            (Some("ok"), _) => (look, 0),
            _ if run.0 == look => run,
            _ => (look, 0),
        };
        assert!(
            run.1 <= hugewise_promote::refusals::IN_A_ROW,
            "{} refusals in a row in one look: {text}",
            run.1
        );
    }
    if refused == 0 {
        // The kernel found blocks for every collapse (its own compaction, or the shaping left
        // more than asked): nothing to compact for, and `always` compacts only on a refusal.
        assert!(compactions.is_empty(), "{text}");
        return skip("no collapse was refused here: the compaction path was not reached");
    }
    assert!(
        !compactions.is_empty(),
        "{refused} refused, no compaction: {text}"
    );
    for c in &compactions {
        assert!(c["wall_ns"].as_u64() > Some(0), "{c}");
        assert!(c["aim_bytes"].as_u64() >= Some(2 << 20), "{c}");
        assert!(c["error"].is_null(), "{c}");
        let (b, a) = (&c["before"], &c["after"]);
        for side in [b, a] {
            let u = side["unusable_index"].as_f64().expect("index");
            assert!((0.0..=1.0).contains(&u), "{c}");
            assert!(side["free_bytes"].as_u64() > Some(0), "{c}");
        }
        // Read before the compaction, on memory shaped to be 95 % broken up and with the
        // collapses' blocks used up: far from 0.
        assert!(b["unusable_index"].as_f64() > Some(0.5), "{c}");
    }
    let first = compactions[0];
    eprintln!(
        "{refused} collapses refused; {} compaction(s); the first took {} ms (cpu {} ms), \
         moved {:?} bytes, free 2 MiB blocks {} -> {}, unusable index {:.3} -> {:.3}",
        compactions.len(),
        first["wall_ns"].as_u64().unwrap_or(0) / 1_000_000,
        first["cpu_ns"].as_u64().unwrap_or(0) / 1_000_000,
        first["migrated_bytes"].as_u64(),
        first["before"]["free_2m_blocks"],
        first["after"]["free_2m_blocks"],
        first["before"]["unusable_index"].as_f64().unwrap_or(0.0),
        first["after"]["unusable_index"].as_f64().unwrap_or(0.0),
    );
    let totals = &v["totals"];
    assert_eq!(
        totals["compactions"].as_u64(),
        Some(compactions.len() as u64)
    );
    // The text view shows them.
    let shown = hugewise()
        .args(["report"])
        .arg(&session)
        .output()
        .expect("report");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("compactions (--compact always)"), "{shown}");
    assert!(shown.contains("unusable index"), "{shown}");
}
