//! The HTML report in a real browser: headless Chromium loads a report over the fixtures and
//! two assembled study directories, a probe added to the page measures every chart after load
//! and writes what it found into the DOM, the browser's log must hold no console message, and
//! a screenshot of the page must be a real picture. Skipped, with the reason, where no
//! Chromium is installed (`.ci/run` installs Debian's `chromium`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hugewise_results::collection;
use hugewise_sys::testing::skip;

/// Catches script errors and console errors from the start of the page.
const HOOK: &str = r#"<script>
window.__hwErrors = [];
window.addEventListener('error', function (e) { window.__hwErrors.push(String(e.message)); });
(function () {
  var ce = console.error;
  console.error = function () {
    window.__hwErrors.push(Array.prototype.join.call(arguments, ' '));
    return ce.apply(console, arguments);
  };
})();
</script>"#;

/// After load: one line per chart slot (drawn box, marks, labels, width on the page).
const PROBE: &str = r#"<script>
window.addEventListener('load', function () {
  var slots = document.querySelectorAll('div.chart');
  var lines = ['charts ' + slots.length];
  slots.forEach(function (slot, i) {
    var svg = slot.querySelector('svg');
    if (!svg) { lines.push('chart ' + i + ' none 0 0 0 0 0'); return; }
    var b = svg.getBBox();
    var marks = svg.querySelectorAll('rect, polyline, path, circle, line').length;
    var labels = svg.querySelectorAll('text').length;
    var shown = svg.getBoundingClientRect();
    lines.push('chart ' + i + ' svg ' + Math.round(b.width) + ' ' + Math.round(b.height) + ' ' +
               marks + ' ' + labels + ' ' + Math.round(shown.width));
  });
  lines.push('errors ' + JSON.stringify(window.__hwErrors));
  var out = document.createElement('pre');
  out.id = 'hw-probe';
  out.textContent = lines.join('\n');
  document.body.appendChild(out);
});
</script>"#;

/// The first Chromium on PATH.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome", "chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A browser run: its own process group, so that its helper processes go with it; killed
/// when dropped, whatever happened.
struct Browser {
    child: Child,
}

impl Browser {
    fn kill_group(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Run the browser on `page` with `args`; stdout and stderr go to files beside the page.
/// Returns (exited in time and successfully, stdout, stderr).
fn run(
    browser: &Path,
    dir: &Path,
    name: &str,
    args: &[String],
    page: &Path,
) -> (bool, String, String) {
    use std::os::unix::process::CommandExt;
    let out = dir.join(format!("{name}.out"));
    let err = dir.join(format!("{name}.err"));
    let child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.join(format!("{name}-profile")).display()
        ))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .process_group(0)
        .spawn()
        .expect("start the browser");
    let mut b = Browser { child };
    let deadline = Instant::now() + Duration::from_secs(90);
    let ok = loop {
        match b.child.try_wait() {
            Ok(Some(status)) => break status.success(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => break false,
        }
    };
    drop(b);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (ok, read(&out), read(&err))
}

/// Width and height from a PNG's header.
fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" || &png[12..16] != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(&png[16..20]), be(&png[20..24])))
}

#[test]
fn the_report_draws_every_chart_in_a_real_browser() {
    let Some(browser) = chromium() else {
        skip("no Chromium on PATH (Debian: apt-get install chromium)");
        return;
    };
    let root = tempfile::tempdir().expect("tmp");
    let c =
        collection::load(&common::inputs(root.path()), &hugewise_sys::read::result).expect("load");
    let html = hugewise_report::html::render(&c);
    let slots = html.matches("<div class=\"chart\">").count();
    assert!(slots >= 12, "{slots} chart slots");

    // The page as users get it, for the screenshot; with the probe, for the checks.
    let page = root.path().join("report.html");
    std::fs::write(&page, &html).expect("write");
    let probed = html
        .replacen("<head>", &format!("<head>{HOOK}"), 1)
        .replacen("</body>", &format!("{PROBE}</body>"), 1);
    let probed_page = root.path().join("probed.html");
    std::fs::write(&probed_page, probed).expect("write");

    let (ok, dom, log) = run(
        &browser,
        root.path(),
        "dom",
        &["--virtual-time-budget=10000".into(), "--dump-dom".into()],
        &probed_page,
    );
    assert!(ok, "the browser failed or timed out:\n{log}");
    let probe = dom
        .split("<pre id=\"hw-probe\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("the probe did not run:\n{log}"));
    let mut lines = probe.lines();
    assert_eq!(lines.next(), Some(format!("charts {slots}").as_str()));
    let mut charts = 0;
    for line in lines {
        if let Some(errors) = line.strip_prefix("errors ") {
            assert_eq!(errors, "[]", "script or console errors on the page");
            continue;
        }
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(
            f.get(2),
            Some(&"svg"),
            "a chart slot without an svg: {line}"
        );
        let n = |i: usize| f.get(i).and_then(|x| x.parse::<u32>().ok()).unwrap_or(0);
        let (w, h, marks, labels, shown) = (n(3), n(4), n(5), n(6), n(7));
        assert!(w > 300 && h > 200, "chart drawn {w}x{h}: {line}");
        assert!(marks > 5 && labels > 4, "chart nearly empty: {line}");
        assert!(shown > 300, "chart shown {shown} px wide: {line}");
        charts += 1;
    }
    assert_eq!(charts, slots);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );

    let shot = root.path().join("report.png");
    let (ok, _, log) = run(
        &browser,
        root.path(),
        "shot",
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,4000".into(),
            "--hide-scrollbars".into(),
        ],
        &page,
    );
    assert!(ok, "the screenshot failed:\n{log}");
    let png = std::fs::read(&shot).expect("screenshot written");
    assert_eq!(png_size(&png), Some((1280, 4000)));
    // A blank page of that size compresses to a few KiB; charts and tables take far more.
    assert!(png.len() > 100_000, "screenshot of {} bytes", png.len());
    if let Some(keep) = std::env::var_os("HUGEWISE_REPORT_SCREENSHOT") {
        std::fs::copy(&shot, keep).expect("keep the screenshot");
    }
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
}
