//! `hugewise report`: saved results in, a view out; nothing is re-run.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use hugewise_report::{Format, Style};
use hugewise_results::collection;

use crate::cli::args::{name, usage};

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

/// `hugewise report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Saved results (any command's --out FILE) or directories of them (a study's --out DIR,
    /// with its runs/ folder).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Write the report to FILE (atomically) instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// text, md, csv or html [default: html when --out ends in .html, else text].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<ReportFormat>,
    /// One file's Markdown table (bench pages, bench randread, bench promote), as before
    /// --format existed; with several paths, the same as --format md.
    #[arg(long, conflicts_with = "format")]
    pub markdown: bool,
}

/// What `hugewise report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Terminal tables, as the commands print them.
    Text,
    /// Markdown: headlines and tables.
    Md,
    /// CSV: one row per bench pages layout per run.
    Csv,
    /// One self-contained HTML page with charts.
    Html,
}

/// One file rendered as its command printed it (or its Markdown table).
fn single(path: &Path, style: Style) -> anyhow::Result<String> {
    let r = hugewise_sys::read::result(path)?;
    match hugewise_report::render(&r, style) {
        Some(text) => Ok(text),
        None => Err(usage(format!(
            "--markdown: a {} result has no Markdown table (bench pages, bench randread and \
             bench promote have); --format md renders any result",
            r.schema()
        ))),
    }
}

/// Read the results and write the view asked for.
pub fn run(a: &ReportArgs) -> anyhow::Result<()> {
    let asked = a.format.and_then(|f| Format::named(&name(f)));
    let format = Format::chosen(asked, a.markdown, a.out.as_deref());
    let one_file = match a.paths.as_slice() {
        [p] if !p.is_dir() => Some(p.as_path()),
        _ => None,
    };
    let text = match (one_file, format, a.markdown) {
        (Some(p), _, true) => single(p, Style::Markdown)?,
        (Some(p), Format::Text, false) => single(p, Style::Text)?,
        _ => {
            let c = collection::load(&a.paths, &hugewise_sys::read::result)
                .context("reading the results")?;
            hugewise_report::render_collection(&c, format)
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
