//! Inputs that are not what their name says (endless devices, FIFOs, directories, binary data,
//! megabyte lines, escape sequences), run through the real binary: each is refused quickly,
//! saying where, or read once and whole.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Run hugewise in `dir`; a run that outlives `limit` is killed and fails the test (the old
/// readers hung on these inputs).
fn hw_within(dir: &Path, limit: Duration, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hugewise"))
        .args(args)
        .arg("--no-progress")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hugewise");
    let t = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hugewise {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn refused(o: &Output, want: &str) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(want), "expected {want:?} in: {err}");
    err
}

fn mkfifo(p: &Path) {
    let made = Command::new("mkfifo").arg(p).status().expect("mkfifo");
    assert!(made.success());
}

const QUICK: Duration = Duration::from_secs(30);

#[test]
fn endless_zeros_and_binary_graph_files_are_refused_at_their_offset() {
    let d = tempfile::tempdir().expect("tmp");
    std::os::unix::fs::symlink("/dev/zero", d.path().join("z.el")).expect("link");
    let o = hw_within(d.path(), QUICK, &["graph", "info", "--graph", "z.el"]);
    refused(&o, "z.el: byte 0: a NUL byte: binary data, not text");
    std::fs::write(
        d.path().join("g.mtx"),
        b"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 \x002\n",
    )
    .expect("write");
    let o = hw_within(d.path(), QUICK, &["graph", "info", "--graph", "g.mtx"]);
    refused(&o, "g.mtx: byte 57: a NUL byte");
}

#[test]
fn a_bad_line_is_shown_in_a_few_words_not_echoed_whole() {
    let d = tempfile::tempdir().expect("tmp");
    let line = format!("0 1\n1 \x1b[2J{}\n", "7x".repeat(450_000));
    std::fs::write(d.path().join("g.el"), line).expect("write");
    let o = hw_within(d.path(), QUICK, &["graph", "info", "--graph", "g.el"]);
    let err = refused(&o, "g.el:2: target id '\\u{1b}[2J7x7x");
    assert!(err.len() < 1000, "{} bytes of stderr", err.len());
    assert!(err.contains("… (900006 bytes)"), "{err}");
    assert!(!err.contains('\x1b'), "{err}");
    std::fs::write(
        d.path().join("g.el"),
        format!("0 1\n{}\n", "1".repeat(5 << 20)),
    )
    .expect("write");
    let o = hw_within(d.path(), QUICK, &["graph", "info", "--graph", "g.el"]);
    let err = refused(&o, "g.el: byte 4: a line longer than 1 MiB");
    assert!(err.len() < 1000, "{} bytes of stderr", err.len());
}

#[test]
fn a_fifo_graph_is_read_once_and_whole() {
    let d = tempfile::tempdir().expect("tmp");
    let fifo = d.path().join("f.el");
    mkfifo(&fifo);
    let writer = std::thread::spawn(move || std::fs::write(&fifo, "0 1\n1 2\n").expect("write"));
    let o = hw_within(
        d.path(),
        QUICK,
        &["graph", "info", "--graph", "f.el", "--json"],
    );
    writer.join().expect("writer");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["graph"]["arcs"], 2, "{v}");
}

#[test]
fn a_fifo_without_a_writer_and_a_directory_are_refused_by_their_kind() {
    let d = tempfile::tempdir().expect("tmp");
    mkfifo(&d.path().join("f.el"));
    mkfifo(&d.path().join("f.sg"));
    std::fs::create_dir(d.path().join("d.el")).expect("mkdir");
    let o = hw_within(d.path(), QUICK, &["graph", "info", "--graph", "f.el"]);
    refused(
        &o,
        "f.el: a FIFO that gave nothing: no writer opened it within 5 s",
    );
    let o = hw_within(d.path(), QUICK, &["graph", "info", "--graph", "f.sg"]);
    refused(
        &o,
        "f.sg: a FIFO, not a regular file: GAP .sg files are read by offset",
    );
    let o = hw_within(d.path(), QUICK, &["graph", "info", "--graph", "d.el"]);
    refused(&o, "d.el: a directory, not a file");
}

#[test]
fn files_read_whole_are_refused_past_their_bound() {
    let d = tempfile::tempdir().expect("tmp");
    std::os::unix::fs::symlink("/dev/zero", d.path().join("z.json")).expect("link");
    std::os::unix::fs::symlink("/dev/zero", d.path().join("z.toml")).expect("link");
    std::os::unix::fs::symlink("/dev/zero", d.path().join("z.rules")).expect("link");
    let big = std::fs::File::create(d.path().join("big.json")).expect("create");
    big.set_len(600 << 20).expect("sparse");
    let result = "more than the 512 MiB a saved result may hold";
    let settings = "more than the 4 MiB a rules or configuration file may hold";
    for (args, want) in [
        (
            &["report", "big.json"][..],
            format!("big.json: 629145600 bytes: {result}"),
        ),
        (&["report", "z.json"], format!("z.json: {result}")),
        (
            &["run", "bfs", "--graph", "kron:4", "--promote", "z.json"],
            format!("z.json: {result}"),
        ),
        (
            &["promote", "--plan", "z.json", "--", "sleep", "2"],
            format!("z.json: {result}"),
        ),
        (
            &["sim", "--config", "z.toml", "--trace", "t.hwt"],
            format!("z.toml: {settings}"),
        ),
        (
            &["exec", "--pages-file", "z.rules", "--", "true"],
            settings.to_string(),
        ),
    ] {
        let o = hw_within(d.path(), QUICK, args);
        let err = refused(&o, &want);
        assert!(
            err.contains("z.rules") || !args.contains(&"z.rules"),
            "{err}"
        );
    }
}

#[test]
fn report_text_writes_control_characters_out() {
    let d = tempfile::tempdir().expect("tmp");
    std::fs::write(d.path().join("g.el"), "0 1\n1 2\n").expect("write");
    let o = hw_within(
        d.path(),
        QUICK,
        &["graph", "info", "--graph", "g.el", "--json"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v["graph_spec"] = "g\u{1b}[2J\u{1b}]0;owned\u{7}\r.el".into();
    std::fs::write(d.path().join("g.json"), v.to_string()).expect("write");
    for args in [
        &["report", "g.json"][..],
        &["report", "--format", "md", "g.json"],
    ] {
        let o = hw_within(d.path(), QUICK, args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.contains(['\x1b', '\x07', '\r']), "{out:?}");
        assert!(
            out.contains("g\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\r.el"),
            "{out}"
        );
    }
}
