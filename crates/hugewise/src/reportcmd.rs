//! `hugewise report`: saved results in, a view out; nothing is re-run.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use hugewise_report::{collectionview, html, Style};
use hugewise_results::collection;

use crate::cli::{ReportArgs, ReportFormat};

pub const HELP: &str = "\
Examples:
  hugewise report bfs.json                     one result, as its command printed it
  hugewise report pages.json --markdown        its Markdown table (bench pages, randread, promote)
  hugewise report study-out/ --out report.html one HTML page with charts (opens offline)
  hugewise report a/ b/ c/ --out all.html      studies from several machines, merged
  hugewise report study-out/ --format md       headlines and tables as Markdown
  hugewise report study-out/ --format csv > pages.csv
                                               one row per bench pages layout per run

PATH is a result file or a directory: its *.json files and those of its runs/ folder are read
(a study's study.json and runs/<id>.json). Hidden files and leftovers of interrupted writes are
skipped; any other file that is not a hugewise result is an error naming it. Results from
different machines (host and CPU in each file's meta) are kept apart.

The HTML page holds its charts as SVG, its styles inline, and no script: it needs no network.
Every file names its kind (`schema`) and version; nothing is re-run.";

/// The format asked for, or the one the output's name implies.
fn format_of(a: &ReportArgs) -> ReportFormat {
    if let Some(f) = a.format {
        return f;
    }
    if a.markdown {
        return ReportFormat::Md;
    }
    let html = a
        .out
        .as_deref()
        .and_then(Path::extension)
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    if html {
        ReportFormat::Html
    } else {
        ReportFormat::Text
    }
}

/// One file rendered as its command printed it (or its Markdown table).
fn single(path: &Path, style: Style) -> anyhow::Result<String> {
    let r = hugewise_sys::read::result(path)?;
    match hugewise_report::render(&r, style) {
        Some(text) => Ok(text),
        None => crate::usage_error(format!(
            "--markdown: a {} result has no Markdown table (bench pages, bench randread and \
             bench promote have); --format md renders any result",
            r.schema()
        )),
    }
}

pub fn report(a: &ReportArgs) -> anyhow::Result<()> {
    let format = format_of(a);
    let one_file = match a.paths.as_slice() {
        [p] if !p.is_dir() => Some(p.as_path()),
        _ => None,
    };
    let text = match (one_file, format, a.markdown) {
        (Some(p), _, true) => single(p, Style::Markdown)?,
        (Some(p), ReportFormat::Text, false) => single(p, Style::Text)?,
        _ => {
            let c = collection::load(&a.paths, &hugewise_sys::read::result)
                .context("reading the results")?;
            match format {
                ReportFormat::Text => collectionview::text(&c),
                ReportFormat::Md => collectionview::markdown(&c),
                ReportFormat::Csv => collectionview::csv(&c),
                ReportFormat::Html => html::render(&c),
            }
        }
    };
    match &a.out {
        Some(path) => {
            hugewise_sys::file::write_atomic_with(path, &mut |w| w.write_all(text.as_bytes()))
                .with_context(|| format!("writing {}", path.display()))
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
            Ok(())
        }
    }
}
