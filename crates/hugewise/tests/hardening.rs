//! What another local user, or a careless one, can feed hugewise through shared places and
//! `--out`, tried on the real binary: it never writes through what it did not make.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::process::Command;

fn hugewise() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hugewise"));
    c.arg("--no-progress");
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Run `script` in Python as user `nobody` (65534); whether it could. The system's Python:
/// one found on root's PATH may live where nobody cannot reach it.
fn as_nobody(script: &str) -> bool {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["/usr/bin/python3", "-c", script])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn links_planted_under_the_next_pids_rings_make_root_write_nothing() {
    if !hugewise_sys::testing::root_or_skip() {
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"root's file").expect("write");
    // As in the report: nobody links the rings of the next pids to a file of root's.
    let plant = format!(
        "import os\n\
         b = int(open('/proc/sys/kernel/ns_last_pid').read())\n\
         for p in range(b + 1, b + 400):\n\
         \x20   try: os.symlink('{}', '/dev/shm/hugewise-samples.%d' % p)\n\
         \x20   except FileExistsError: pass\n",
        victim.display()
    );
    let planted = || {
        std::fs::read_dir("/dev/shm")
            .expect("ls /dev/shm")
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("hugewise-samples.")
                    && e.file_type().is_ok_and(|t| t.is_symlink())
            })
            .map(|e| e.path())
            .collect::<Vec<_>>()
    };
    let mut hit = false;
    for _ in 0..3 {
        if !as_nobody(&plant) {
            hugewise_sys::testing::skip("setpriv or python3 missing: cannot act as nobody");
            return;
        }
        let child = hugewise()
            .args(["run", "bfs", "--graph", "kron:10", "--trials", "1"])
            .args(["--sample-every", "64"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run hugewise");
        let pid = child.id();
        let out = child.wait_with_output().expect("wait");
        let ring = format!("/dev/shm/hugewise-samples.{pid}");
        let was_planted = planted().iter().any(|p| p == Path::new(&ring));
        for p in planted() {
            let _ = std::fs::remove_file(p);
        }
        assert_eq!(std::fs::read(&victim).expect("read"), b"root's file");
        if was_planted {
            // Its ring's name was taken: the run says so and writes nothing.
            assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
            let err = text(&out.stderr);
            assert!(
                err.contains(&ring) && err.contains("a symbolic link, owned by uid 65534"),
                "{err}"
            );
            hit = true;
            break;
        }
    }
    assert!(hit, "the run never drew a planted pid in three tries");
}

#[test]
fn out_streams_to_a_device_and_refuses_a_link_or_a_directory() {
    let d = tempfile::tempdir().expect("tmp");
    let run = |out: &Path| {
        hugewise()
            .args(["run", "bfs", "--graph", "kron:8", "--trials", "1", "--out"])
            .arg(out)
            .output()
            .expect("run hugewise")
    };
    // /dev/null takes the JSON and stays a device (as root it used to become a file).
    let null = std::fs::metadata("/dev/null").expect("stat");
    let o = run(Path::new("/dev/null"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let after = std::fs::symlink_metadata("/dev/null").expect("stat");
    assert!(after.file_type().is_char_device());
    assert_eq!(after.ino(), null.ino());
    // A full device: the write fails, and says where.
    let o = run(Path::new("/dev/full"));
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("/dev/full") && err.contains("No space left"),
        "{err}"
    );
    assert!(std::fs::symlink_metadata("/dev/full")
        .expect("stat")
        .file_type()
        .is_char_device());
    // A link and a directory are refused by type, and left as they were.
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"keep").expect("write");
    let link = d.path().join("r.json");
    std::os::unix::fs::symlink(&victim, &link).expect("link");
    for (p, what) in [
        (&link, "a symbolic link"),
        (&d.path().to_path_buf(), "a directory"),
    ] {
        let o = run(p);
        assert_eq!(o.status.code(), Some(1));
        let err = text(&o.stderr);
        assert!(
            err.contains(&p.display().to_string()) && err.contains(what),
            "{err}"
        );
    }
    assert_eq!(std::fs::read(&victim).expect("read"), b"keep");
    assert!(std::fs::symlink_metadata(&link)
        .expect("stat")
        .file_type()
        .is_symlink());
    // `-` is standard output.
    let o = hugewise()
        .args(["graph", "info", "--graph", "kron:8", "--out", "-"])
        .output()
        .expect("run hugewise");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("\"schema\""),
        "{}",
        text(&o.stdout)
    );
    // Other commands' --out go the same way.
    let saved = d.path().join("info.json");
    let o = hugewise()
        .args(["graph", "info", "--graph", "kron:8", "--out"])
        .arg(&saved)
        .output()
        .expect("run hugewise");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = hugewise()
        .arg("report")
        .arg(&saved)
        .args(["--format", "md", "--out", "/dev/null"])
        .output()
        .expect("run hugewise");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(std::fs::symlink_metadata("/dev/null")
        .expect("stat")
        .file_type()
        .is_char_device());
}
