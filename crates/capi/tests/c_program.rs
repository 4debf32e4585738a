//! A real C program built against `hugewise.h` publishes its hot chunks; the daemon, pointed at
//! its pid, promotes exactly those within the budget.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hugewise_promote::budget::Limit;
use hugewise_promote::daemon::{Config, Daemon};
use hugewise_promote::policy::by_name;
use hugewise_promote::target::Target;
use hugewise_promote::HUGE;
use hugewise_sys::proc::ProcFs;

/// Build this crate's shared library (`cargo test` builds only the rlib the test links) in the
/// test's own profile, and return the directory holding it: the test binary runs from `deps/`
/// beside it.
fn lib_dir() -> Option<PathBuf> {
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "-q", "-p", "hugewise-capi"]);
    if !cfg!(debug_assertions) {
        cargo.arg("--release");
    }
    let built = cargo
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .ok()?;
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?.to_path_buf();
    (built.success() && dir.join("libhugewise_capi.so").exists()).then_some(dir)
}

#[test]
fn a_c_program_gets_its_hot_chunks_promoted() {
    if ProcFs::default().kpageflags().is_err() {
        hugewise_sys::testing::skip("frames are visible to root only");
        return;
    }
    let Some(lib) = lib_dir() else {
        hugewise_sys::testing::skip("libhugewise_capi.so could not be built");
        return;
    };
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("hw-capi-{}", std::process::id()));
    let built = Command::new("cc")
        .arg(here.join("tests/c_program.c"))
        .arg("-I")
        .arg(here.join("include"))
        .arg("-L")
        .arg(&lib)
        .arg("-lhugewise_capi")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&out)
        .status();
    match built {
        Ok(s) if s.success() => {}
        _ => {
            hugewise_sys::testing::skip("no C compiler (cc)");
            return;
        }
    }
    let mut child = Command::new(&out)
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the C program");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("its address");
    let addr: usize = line.trim().parse().expect("an address");
    let pid = child.id() as i32;

    let t0 = Instant::now();
    let cfg = Config {
        interval: Duration::from_millis(100),
        limit: Limit::Bytes(2 * HUGE as u64),
        ..Config::default()
    };
    let mut d = Daemon::new(by_name("pcc").expect("pcc"), cfg, t0);
    d.add(Target::attach(&ProcFs::default(), pid, t0).expect("attach"));
    assert_eq!(d.sampled(), [pid], "the daemon found the program's channel");
    let mut promoted = 0;
    let mut looks = Vec::new();
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(100));
        let iv = d.step(&mut |_| {}).expect("step");
        assert!(iv.huge_bytes_after <= 2 * HUGE as u64, "{iv:?}");
        promoted += iv.promoted;
        looks.push(iv);
    }
    let check = Target::attach(&ProcFs::default(), pid, t0).expect("attach");
    let huge: Vec<usize> = check
        .scan(&(addr..addr + 16 * HUGE))
        .expect("scan")
        .iter()
        .enumerate()
        .filter(|(_, c)| c.huge == Some(true))
        .map(|(i, _)| i)
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&out);
    assert_eq!(huge, [3, 9], "promoted {promoted}: {looks:#?}");
    // The program's channel file goes away with the program only if it closes it; the killed
    // one leaves it, which the daemon ignores once the pid is gone.
    let _ = std::fs::remove_file(hugewise_promote::channel::path(pid));
}
