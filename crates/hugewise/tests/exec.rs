//! `hugewise exec` on real programs hugewise did not write (a C program built here, Debian's
//! `python3` and `sqlite3`): each prints exactly what it prints without the preload library,
//! its large allocations get the policy the rules say, read back from the kernel, and bad
//! input is refused with what is wrong.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hugewise_results::exec::{ExecAllocation, ExecReport, ProfileReport};
use hugewise_results::Saved;

fn hw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .arg("--no-progress")
        .args(args)
        .output()
        .expect("run hugewise")
}

/// A test's own directory, made new (mode 0700) and removed when the test ends, also when it
/// skips or fails.
struct Scratch(tempfile::TempDir);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

fn scratch(name: &str) -> Scratch {
    let d = tempfile::Builder::new()
        .prefix(&format!("hw-exec-{name}-"))
        .tempdir()
        .expect("scratch dir");
    Scratch(d)
}

/// Run `cmd` plainly and under `hugewise exec ARGS`; both outputs must match. The result.
fn same_output(dir: &Path, args: &[&str], cmd: &[&str]) -> ExecReport {
    let text = same_output_under(dir, "exec", args, cmd);
    Saved::<ExecReport>::from_json(&text)
        .expect("an exec result")
        .result
}

/// Run `cmd` plainly and under `hugewise SUB ARGS --out FILE`; both outputs must match. The
/// saved result's text.
fn same_output_under(dir: &Path, sub: &str, args: &[&str], cmd: &[&str]) -> String {
    let plain = Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .expect("run plainly");
    assert!(plain.status.success(), "{cmd:?} failed plainly: {plain:?}");
    let out = dir.join(format!("{sub}.json"));
    let mut all = vec![sub, "--out", out.to_str().expect("utf-8")];
    all.extend_from_slice(args);
    all.push("--");
    all.extend_from_slice(cmd);
    let under = hw(&all);
    let stderr = String::from_utf8_lossy(&under.stderr);
    assert!(under.status.success(), "{cmd:?} under {sub}: {stderr}");
    // The timing line of a benchmark program is its own to vary.
    let timeless = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .filter(|l| !l.starts_with("time_s="))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        timeless(&plain.stdout),
        timeless(&under.stdout),
        "{cmd:?}: output differs under hugewise {sub}"
    );
    std::fs::read_to_string(&out).expect("result saved")
}

/// Build `tests/programs/NAME.c` (or `PATH.c` from the repository's root) into `dir` with
/// `cc`; None (the test skips) without one.
fn compile(dir: &Path, name: &str, flags: &[&str]) -> Option<PathBuf> {
    let exe = dir.join(Path::new(name).file_name().expect("a name"));
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = if name.contains('/') {
        manifest.join("../..").join(format!("{name}.c"))
    } else {
        manifest.join(format!("tests/programs/{name}.c"))
    };
    // Libraries come after the source, or the linker has nothing to take from them yet.
    let (libs, flags): (Vec<&str>, Vec<&str>) = flags.iter().partition(|f| f.starts_with("-l"));
    let built = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .args(libs)
        .status();
    if built.is_ok_and(|s| s.success()) {
        Some(exe)
    } else {
        hugewise_sys::testing::skip("no C compiler (cc)");
        None
    }
}

fn allocations(r: &ExecReport) -> Vec<&ExecAllocation> {
    r.processes.iter().flat_map(|p| &p.allocations).collect()
}

fn thp_possible() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| !s.contains("[never]"))
}

/// Allocation logs whose `hugewise exec` has exited (its pid starts the session name): each
/// run removes its own, and other tests' runs may be going on.
fn leftover_logs() -> Vec<String> {
    let orphan = |name: &str| {
        name.strip_prefix("hugewise-exec.")
            .and_then(|rest| rest.split('-').next())
            .is_some_and(|pid| !Path::new("/proc").join(pid).exists())
    };
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| orphan(n))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_c_program_using_every_allocation_call_prints_the_same() {
    let dir = scratch("c");
    let Some(exe) = compile(&dir, "allocs", &["-O1", "-pthread"]) else {
        return;
    };
    let r = same_output(
        &dir,
        &["--min-size", "1MiB", "--pages", ">=2MiB=thp"],
        &[exe.to_str().expect("utf-8")],
    );
    assert_eq!(r.exit_code, Some(0));
    assert!(
        r.processes.len() >= 2,
        "the forked child keeps its own log: {:?}",
        r.processes.iter().map(|p| p.pid).collect::<Vec<_>>()
    );
    assert_eq!(r.processes[0].allocator, "glibc");
    assert!(r
        .processes
        .iter()
        .all(|p| p.fallbacks == 0 && !p.rules_refused));
    let all = allocations(&r);
    assert!(all.len() > 1000, "{} allocations taken over", all.len());
    for a in all.iter().filter(|a| a.origin == "malloc") {
        assert!(a.requested_bytes >= 1 << 20, "{a:?}");
        let (policy, rule) = if a.requested_bytes >= 2 << 20 {
            ("thp", Some(0))
        } else {
            ("system", None)
        };
        assert_eq!((a.policy.as_str(), a.rule), (policy, rule), "{a:?}");
        // The mapping starts on 2 MiB, or (for alignments above a page) the data does.
        assert!(
            a.start.is_multiple_of(2 << 20) || (a.start + 4096).is_multiple_of(2 << 20),
            "2 MiB aligned: {a:?}"
        );
        assert!(a.advice_error.is_none(), "{a:?}");
    }
    let mapped: Vec<_> = all.iter().filter(|a| a.origin == "mmap").collect();
    assert!(
        mapped.iter().any(|a| a.requested_bytes == 8 << 20)
            && mapped.iter().any(|a| a.requested_bytes == 16 << 20),
        "the program's own mmap and its mremap result were adopted: {mapped:?}"
    );
    assert!(
        mapped.iter().all(|a| a.lifetime_ns.is_some()),
        "and logged as freed once wholly unmapped: {mapped:?}"
    );
    let child = &r.processes[1];
    assert!(
        child
            .allocations
            .iter()
            .any(|a| a.requested_bytes == 16 << 20 && a.lifetime_ns.is_some()),
        "the child's own 16 MiB block, freed: {child:?}"
    );
    assert!(leftover_logs().is_empty(), "{:?}", leftover_logs());
    let _ = std::fs::remove_dir_all(&dir);
}

const PY: &str = r#"
import os, sys, time
big = bytearray(64 << 20)
for i in range(0, len(big), 4096):
    big[i] = i % 251
squares = [i * i for i in range(2_000_000)]
table = {i: str(i) for i in range(200_000)}
time.sleep(0.6)
pid = os.fork()
if pid == 0:
    child = bytearray(32 << 20)
    child[12345] = 7
    print("child", sum(child), sum(big[::4096]) % 1000)
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
print("parent", len(squares), sum(squares) % 1000003, len(table), table[4242])
"#;

#[test]
fn python_prints_the_same_and_its_big_buffer_gets_huge_pages() {
    let dir = scratch("py");
    let r = same_output(&dir, &["--interval", "50ms"], &["python3", "-c", PY]);
    let all = allocations(&r);
    let big = all
        .iter()
        .find(|a| a.requested_bytes >= 64 << 20 && a.requested_bytes < (64 << 20) + 4096)
        .unwrap_or_else(|| panic!("the 64 MiB bytearray was taken over: {all:?}"));
    assert_eq!(big.policy, "thp");
    let resident = big.peak_resident_bytes.expect("observed: it lives 0.6 s");
    assert!(resident >= 60 << 20, "touched pages resident: {resident}");
    if thp_possible() {
        let huge = big.peak_huge_bytes.expect("observed");
        assert!(
            huge >= 32 << 20,
            "MADV_HUGEPAGE on its own aligned mapping: {huge} bytes huge of {resident}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn base_rules_keep_every_allocation_on_4k_pages() {
    let dir = scratch("base");
    let r = same_output(
        &dir,
        &["--pages", "*=base", "--interval", "50ms"],
        &["python3", "-c", PY],
    );
    let all = allocations(&r);
    assert!(!all.is_empty());
    for a in &all {
        assert_eq!((a.policy.as_str(), a.rule), ("base", Some(0)), "{a:?}");
        assert_eq!(a.peak_huge_bytes.unwrap_or(0), 0, "{a:?}");
    }
    assert!(
        all.iter()
            .any(|a| a.peak_resident_bytes.unwrap_or(0) >= 60 << 20),
        "the bytearray was observed resident"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Debian's jemalloc, when installed (`.ci/run` installs libjemalloc2).
fn jemalloc() -> Option<PathBuf> {
    ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
        .iter()
        .map(|d| Path::new(d).join("libjemalloc.so.2"))
        .find(|p| p.exists())
}

#[test]
fn a_program_with_its_own_allocator_keeps_it_and_gets_its_mappings_adopted() {
    let Some(je) = jemalloc() else {
        hugewise_sys::testing::skip("no libjemalloc.so.2 (Debian's libjemalloc2)");
        return;
    };
    let dir = scratch("je");
    let out = dir.join("exec.json");
    let plain = Command::new("python3")
        .args(["-c", PY])
        .env("LD_PRELOAD", &je)
        .output()
        .expect("python3 with jemalloc");
    let under = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(["--no-progress", "exec", "--interval", "50ms", "--out"])
        .arg(&out)
        .args(["--", "python3", "-c", PY])
        .env("LD_PRELOAD", &je)
        .output()
        .expect("hugewise exec");
    assert!(under.status.success(), "{under:?}");
    assert_eq!(
        String::from_utf8_lossy(&plain.stdout),
        String::from_utf8_lossy(&under.stdout)
    );
    let r = Saved::<ExecReport>::from_json(&std::fs::read_to_string(&out).expect("saved"))
        .expect("an exec result")
        .result;
    let main = r
        .processes
        .iter()
        .find(|p| !p.allocations.is_empty())
        .expect("a process with adopted mappings");
    assert_eq!(main.allocator, "other");
    assert!(
        main.allocations.iter().all(|a| a.origin == "mmap"),
        "{main:?}"
    );
    let big = main
        .allocations
        .iter()
        .find(|a| a.requested_bytes >= 64 << 20)
        .unwrap_or_else(|| panic!("jemalloc's extent for the bytearray: {main:?}"));
    if thp_possible() {
        assert!(big.peak_huge_bytes.unwrap_or(0) >= 32 << 20, "{big:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sqlite_prints_the_same_with_its_buffers_taken_over() {
    let dir = scratch("sqlite");
    if Command::new("sqlite3").arg("-version").output().is_err() {
        hugewise_sys::testing::skip("no sqlite3");
        return;
    }
    let sql = "pragma cache_size = -65536; \
               create table t(k integer primary key, v text); \
               with recursive c(x) as (select 1 union all select x + 1 from c where x < 200000) \
               insert into t select x, hex(x * 7919) || printf('%05d', x % 99991) from c; \
               select count(*), sum(length(v)), min(v), max(v) from t; \
               select v from t order by v desc limit 3;";
    let r = same_output(
        &dir,
        &["--min-size", "64KiB"],
        &["sqlite3", ":memory:", sql],
    );
    assert_eq!(r.exit_code, Some(0));
    assert!(
        !allocations(&r).is_empty(),
        "sqlite's large buffers were taken over"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_programs_exit_code_is_passed_on_and_bad_input_is_named() {
    let out = hw(&["exec", "--", "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7), "{out:?}");

    let out = hw(&["exec", "--", "/nonexistent/program"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot start '/nonexistent/program'"), "{err}");

    let out = hw(&["exec", "--pages", ">=2MiB=thp,>=1MiB=huge", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rule 2 ('>=1MiB=huge'): unknown policy 'huge'"),
        "{err}"
    );

    let dir = scratch("rules");
    let file = dir.join("pages.rules");
    std::fs::write(&file, "# arrays\n>=1GiB=thp\n2M..1G=bse\n").expect("write");
    let out = hw(&[
        "exec",
        "--pages-file",
        file.to_str().expect("utf-8"),
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pages.rules:3: '2M..1G=bse'"), "{err}");

    let out = hw(&["exec"]);
    assert_eq!(out.status.code(), Some(2), "no command: {out:?}");

    let out = hw(&["exec", "--preload", "/nonexistent.so", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--preload /nonexistent.so"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A statically linked program never loads the preload library: refused by name, with the
/// way that works instead; a --preload file that is not a shared object is refused by name.
#[test]
fn a_static_program_and_a_preload_that_is_no_library_are_refused_by_name() {
    let dir = scratch("static");
    let text = dir.join("notes.so");
    std::fs::write(&text, "not a library\n").expect("write");
    let out = hw(&[
        "exec",
        "--preload",
        text.to_str().expect("utf-8"),
        "--",
        "true",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("--preload {}: not an ELF file", text.display())),
        "{err}"
    );
    let Some(exe) = compile(&dir, "allocs", &["-static"]) else {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let out = hw(&["exec", "--", exe.to_str().expect("utf-8")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{} is statically linked", exe.display()))
            && err.contains("hugewise promote --"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_promotion_daemon_gives_huge_pages_to_a_program_run_on_4k_pages() {
    let dir = scratch("promote");
    // The program waits long enough for a daemon that starts late: in a CI run with every test
    // binary beside it, a 3 s wait once left the daemon 0.2 s of the program's life and no
    // promotion.
    let script = "import time\n\
                  big = bytearray(64 << 20)\n\
                  for i in range(0, len(big), 4096):\n    big[i] = 1\n\
                  time.sleep(8)\n\
                  print(sum(big[::4096]))\n";
    let r = same_output(
        &dir,
        &[
            "--pages",
            "*=system",
            "--promote",
            "mega",
            "--promote-interval",
            "100ms",
            "--interval",
            "100ms",
        ],
        &["python3", "-c", script],
    );
    assert!(r.promote_error.is_none(), "{:?}", r.promote_error);
    let p = r.promote.as_ref().expect("the daemon's session");
    assert_eq!(p.policy, "mega");
    assert!(
        p.totals.promoted > 0,
        "the fully mapped chunks of the 64 MiB buffer were collapsed: {:?}",
        p.totals
    );
    let big = allocations(&r)
        .into_iter()
        .find(|a| a.requested_bytes >= 64 << 20)
        .expect("the buffer");
    assert_eq!(big.policy, "system");
    assert!(
        big.peak_huge_bytes.unwrap_or(0) > 0,
        "read back huge while it ran: {big:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn allocations_named_through_the_header_get_their_rule() {
    let dir = scratch("named");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../preload/include");
    let Some(exe) = compile(&dir, "named", &["-I", include.to_str().expect("utf-8")]) else {
        return;
    };
    let r = same_output(
        &dir,
        &["--pages", "name:hot.vertices=thp,*=base"],
        &[exe.to_str().expect("utf-8")],
    );
    let all = allocations(&r);
    let hot: Vec<_> = all.iter().filter(|a| a.name.is_some()).collect();
    assert_eq!(hot.len(), 1, "{all:?}");
    assert_eq!(
        (hot[0].name.as_deref(), hot[0].policy.as_str(), hot[0].rule),
        (Some("hot.vertices"), "thp", Some(0))
    );
    assert!(
        all.iter()
            .filter(|a| a.name.is_none())
            .all(|a| a.policy == "base" && a.rule == Some(1)),
        "{all:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_ends_the_program_and_leaves_no_log() {
    let child = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(["--no-progress", "exec", "--", "python3", "-c"])
        .arg("import time\nb = bytearray(8 << 20)\nb[::4096] = b'x' * 2048\ntime.sleep(60)\n")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start hugewise exec");
    let pid = child.id();
    // Until the program has logged its buffer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let prefix = format!("hugewise-exec.{pid}-");
    let logged = || {
        std::fs::read_dir("/dev/shm").is_ok_and(|d| {
            d.filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        })
    };
    while !logged() {
        assert!(std::time::Instant::now() < deadline, "no log appeared");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SIGINT to hugewise alone, as `kill -INT` would (a terminal's Ctrl-C reaches both).
    let killed = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let t = std::time::Instant::now();
    let out = child.wait_with_output().expect("hugewise exits");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "ended within its grace"
    );
    assert_eq!(
        out.status.code(),
        Some(128 + 2),
        "the program was ended with SIGTERM, and hugewise exits as the SIGINT it got: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("allocation(s) taken over"),
        "the summary is still printed"
    );
    assert!(!logged(), "the log was removed");
}

#[test]
fn a_profile_finds_the_hot_call_site_and_its_placement_packs_it_into_huge_pages() {
    let dir = scratch("profile");
    let Some(exe) = compile(&dir, "benches/programs/packing", &["-O2"]) else {
        return;
    };
    let exe = exe.to_str().expect("utf-8");
    let rules = dir.join("placement.rules");
    let cmd = [exe, "200000", "8000000"];
    let text = same_output_under(
        &dir,
        "profile",
        &[
            "--placement-out",
            rules.to_str().expect("utf-8"),
            "--interval",
            "50ms",
        ],
        &cmd,
    );
    let p = Saved::<ProfileReport>::from_json(&text)
        .expect("a profile result")
        .result;
    assert!(p.run.profile);
    let mine: Vec<_> = p
        .sites
        .iter()
        .filter(|s| s.site.starts_with("packing+") && s.kind == "small")
        .collect();
    // 200 000 hot records of 32 bytes (6.1 MiB) and as many cold ones of 480 (92 MiB), each
    // from a call site of its own; the chase reads only the hot ones.
    let hot = mine
        .iter()
        .find(|s| s.peak_resident_bytes < 16 << 20 && s.peak_resident_bytes >= 4 << 20)
        .unwrap_or_else(|| panic!("the hot site, with its records packed: {mine:?}"));
    let cold = mine
        .iter()
        .find(|s| s.peak_resident_bytes >= 64 << 20)
        .unwrap_or_else(|| panic!("the cold site: {mine:?}"));
    let share = |s: &hugewise_results::exec::ProfileSite| s.accessed_share.expect("seen");
    if p.kdamonds > 0 {
        // The machine's own DAMON clears the accessed bits the profile reads (seen: the hot
        // site at 20-38 % instead of over 50 %, the cold one up to 17 %).
        hugewise_sys::testing::skip(
            "a kdamond ran beside the profile and cleared the accessed bits it reads",
        );
        return;
    }
    assert!(
        share(hot) >= 0.5 && share(cold) < share(hot) / 2.0,
        "hot {hot:?} cold {cold:?}"
    );
    assert_eq!(hot.placement.as_deref(), Some("arena"));
    assert_eq!(cold.placement, None, "a cold site stays with the program");
    let written = std::fs::read_to_string(&rules).expect("placement written");
    assert!(
        written.contains(&format!("site:{}=arena", hot.site))
            && written.trim_end().ends_with("*=base"),
        "{written}"
    );

    let r = same_output(
        &dir,
        &[
            "--placement",
            rules.to_str().expect("utf-8"),
            "--interval",
            "50ms",
        ],
        &cmd,
    );
    let all = allocations(&r);
    let arena = all
        .iter()
        .find(|a| a.origin == "arena" && a.name.as_deref() == Some("hot-arena"))
        .unwrap_or_else(|| panic!("the hot arena was opened: {all:?}"));
    let resident = arena.peak_resident_bytes.expect("observed");
    assert!(
        (4 << 20..12 << 20).contains(&resident),
        "the hot records, packed: {resident} bytes"
    );
    if thp_possible() {
        let huge = arena.peak_huge_bytes.expect("observed");
        assert!(
            huge >= 4 << 20,
            "the hot arena is huge: {huge} of {resident}"
        );
    }
    assert_eq!(r.hot_arena_bytes, Some(256 << 20));

    // A placement made for another build names sites this one does not have: said so.
    std::fs::write(&rules, "site:packing+0x7ffffff0=arena\n*=base\n").expect("write");
    let stale = same_output(&dir, &["--placement", rules.to_str().expect("utf-8")], &cmd);
    assert!(stale.processes[0].sites_missing, "{:?}", stale.processes[0]);
    assert!(!r.processes[0].sites_missing);

    // A placement with a typo is refused with its line, before the program runs.
    std::fs::write(&rules, "# hot\nsite:packing=arena\n").expect("write");
    let bad = hw(&[
        "exec",
        "--placement",
        rules.to_str().expect("utf-8"),
        "--",
        exe,
    ]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("placement.rules:2") && err.contains("MODULE+0xOFFSET"),
        "{err}"
    );
    assert!(leftover_logs().is_empty(), "{:?}", leftover_logs());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_small_allocation_in_arenas_of_its_call_site_keeps_programs_output() {
    // A profile run takes every small allocation: the C program's threads, fork, realloc and
    // aligned calls, and python3's whole heap, must not notice.
    let dir = scratch("profile-all");
    if let Some(exe) = compile(&dir, "allocs", &["-O1", "-pthread"]) {
        let text = same_output_under(
            &dir,
            "profile",
            &[
                "--placement-out",
                dir.join("c.rules").to_str().expect("utf-8"),
            ],
            &[exe.to_str().expect("utf-8")],
        );
        let p = Saved::<ProfileReport>::from_json(&text)
            .expect("profile")
            .result;
        assert!(
            p.sites.iter().filter(|s| s.kind == "small").count() >= 2,
            "{:?}",
            p.sites
        );
    }
    let text = same_output_under(
        &dir,
        "profile",
        &[
            "--placement-out",
            dir.join("py.rules").to_str().expect("utf-8"),
        ],
        &["python3", "-c", PY],
    );
    let p = Saved::<ProfileReport>::from_json(&text)
        .expect("profile")
        .result;
    assert!(
        p.sites
            .iter()
            .any(|s| s.site.starts_with("libpython3") && s.kind == "small"),
        "{:?}",
        p.sites
    );
    assert!(leftover_logs().is_empty(), "{:?}", leftover_logs());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_program_linked_with_the_library_follows_rules_without_preloading() {
    let dir = scratch("linked");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_hugewise"))
        .parent()
        .expect("target dir")
        .to_path_buf();
    let lib_dir = [bin_dir.clone(), bin_dir.join("deps")]
        .into_iter()
        .find(|d| d.join("libhugewise_preload.so").is_file())
        .expect("the library is built beside hugewise");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../preload/include");
    let l = format!("-L{}", lib_dir.display());
    let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
    let Some(exe) = compile(
        &dir,
        "named",
        &[
            "-I",
            include.to_str().expect("utf-8"),
            &l,
            &rpath,
            "-lhugewise_preload",
        ],
    ) else {
        return;
    };
    let plain = Command::new(&exe).output().expect("run");
    assert!(plain.status.success(), "{plain:?}");
    // Rules and a session in its environment, no LD_PRELOAD, no hugewise exec.
    let session = format!("{}-linked", std::process::id());
    let run = Command::new(&exe)
        .env_remove("LD_PRELOAD")
        .env("HUGEWISE_EXEC_RULES", "name:hot.vertices=thp,*=base")
        .env("HUGEWISE_EXEC_SESSION", &session)
        .output()
        .expect("run");
    assert!(run.status.success(), "{run:?}");
    assert_eq!(plain.stdout, run.stdout);
    let logs: Vec<PathBuf> = std::fs::read_dir("/dev/shm")
        .expect("shm")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("hugewise-exec.{session}.")))
        })
        .collect();
    assert_eq!(logs.len(), 1, "one process, one log: {logs:?}");
    let log = hugewise_sys::alloclog::AllocLog::open(&logs[0]).expect("a log");
    let entries = log.entries();
    for p in &logs {
        let _ = std::fs::remove_file(p);
    }
    let policies: Vec<(Option<&str>, u8)> = entries.iter().map(|e| (e.name(), e.policy)).collect();
    // Policy codes: 1 base, 2 thp.
    assert_eq!(
        policies,
        [(Some("hot.vertices"), 2), (None, 1)],
        "{entries:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn huge_pages_the_program_partly_frees_are_released_by_the_daemon() {
    // Collapsed by the daemon, then half of every 2 MiB chunk handed back (as an allocator
    // purging pages does): the kernel splits the mappings but keeps the pages whole, freed
    // half and all, until the daemon splits them.
    let dir = scratch("release");
    let script = "import ctypes, mmap, time\n\
                  n = 64 << 20\n\
                  m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n\
                  for i in range(0, n, 4096):\n    m[i] = 1\n\
                  time.sleep(2.5)\n\
                  base = ctypes.addressof(ctypes.c_char.from_buffer(m))\n\
                  first = (base + (2 << 20) - 1) & ~((2 << 20) - 1)\n\
                  for c in range(first - base, n - (2 << 20) + 1, 2 << 20):\n    \
                  m.madvise(mmap.MADV_DONTNEED, c + (1 << 20), 1 << 20)\n\
                  time.sleep(1.5)\n\
                  print(sum(m[::4096]) > 0)\n";
    let r = same_output(
        &dir,
        &[
            "--pages",
            "*=system",
            "--promote",
            "mega",
            "--promote-interval",
            "100ms",
        ],
        &["python3", "-c", script],
    );
    let p = r.promote.as_ref().expect("the daemon's session");
    // The looks' notes say why a session ended early (a target dropped names what said so).
    let notes: Vec<&String> = p.intervals.iter().flat_map(|i| &i.notes).collect();
    assert!(
        p.totals.promoted > 0,
        "{:?} after {} ms, gone {:?}: {notes:?}",
        p.totals,
        p.wall_ns / 1_000_000,
        p.gone
    );
    assert!(
        p.totals.released > 0,
        "partly freed huge pages were split: {:?}",
        p.totals
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_daemon_leaves_alone_what_the_rules_put_on_4k_pages() {
    // It reads the program's allocation log: the 64 MiB buffer the rules keep on 4 KiB pages
    // is never acted on, the 8 MiB one left to the system is collapsed.
    let dir = scratch("respect");
    let script = "import time\n\
                  big = bytearray(64 << 20)\n\
                  small = bytearray(8 << 20)\n\
                  for i in range(0, len(big), 4096):\n    big[i] = 1\n\
                  for i in range(0, len(small), 4096):\n    small[i] = 1\n\
                  time.sleep(2.5)\n\
                  print(sum(big[::4096]) + sum(small[::4096]))\n";
    let r = same_output(
        &dir,
        &[
            "--pages",
            ">=32MiB=base,*=system",
            "--promote",
            "mega",
            "--promote-interval",
            "100ms",
            "--interval",
            "100ms",
        ],
        &["python3", "-c", script],
    );
    let p = r.promote.as_ref().expect("the daemon's session");
    let all = allocations(&r);
    let big = all
        .iter()
        .find(|a| a.requested_bytes >= 64 << 20)
        .expect("the 64 MiB buffer");
    let small = all
        .iter()
        .find(|a| a.requested_bytes >= 8 << 20 && a.requested_bytes < 9 << 20)
        .expect("the 8 MiB buffer");
    assert_eq!(big.policy, "base");
    let inside = |a: &&hugewise_results::promote::Action| {
        (a.start as u64) < big.start + big.len_bytes && big.start < a.start as u64 + a.len_bytes
    };
    assert!(
        !p.actions.iter().any(|a| inside(&a)),
        "no action on the 4 KiB allocation: {:?}",
        p.actions.iter().filter(inside).collect::<Vec<_>>()
    );
    assert_eq!(big.peak_huge_bytes, Some(0));
    if thp_possible() {
        assert!(
            small.peak_huge_bytes.unwrap_or(0) > 0,
            "the system allocation was collapsed: {small:?} {:?}",
            p.totals
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
