//! hugewise-report owns the views of results: every table, Markdown page and chart reads a
//! saved result, never a live measurement, so a report can be rebuilt without re-running. It
//! depends on the result model alone.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod charts;
pub mod collectionview;
pub mod digest;
pub mod envview;
pub mod escape;
pub mod execview;
pub mod fmt;
pub mod html;
pub mod promoteview;
pub mod simview;
pub mod studyview;
pub mod table;
pub mod views;

use std::path::Path;

use hugewise_results::collection::Collection;
use hugewise_results::AnyResult;

/// How to render a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Style {
    /// The terminal table the command prints.
    #[default]
    Text,
    /// A Markdown table, for the kinds that have one (`bench pages`, `bench randread`).
    Markdown,
}

/// What many results (files, study directories) are rendered as together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Terminal tables, as the commands print them.
    Text,
    /// Markdown: headlines and tables.
    Markdown,
    /// CSV: one row per `bench pages` layout per run.
    Csv,
    /// One self-contained HTML page with charts.
    Html,
}

impl Format {
    /// The format the name of the file it goes to implies: HTML for `.html` or `.htm`, else
    /// text.
    pub fn implied_by(out: Option<&Path>) -> Format {
        let html = out
            .and_then(Path::extension)
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
        if html {
            Format::Html
        } else {
            Format::Text
        }
    }
}

/// A collection of results rendered as `format`.
pub fn render_collection(c: &Collection, format: Format) -> String {
    match format {
        Format::Text => collectionview::text(c),
        Format::Markdown => collectionview::markdown(c),
        Format::Csv => collectionview::csv(c),
        Format::Html => html::render(c),
    }
}

/// The text the command that made `r` printed, or its Markdown table; `None` for Markdown of
/// a kind that has none. Control characters from the file are written out (see [`escape`]).
pub fn render(r: &AnyResult, style: Style) -> Option<String> {
    view(r, style).map(|t| escape::controls(&t).into_owned())
}

fn view(r: &AnyResult, style: Style) -> Option<String> {
    if style == Style::Markdown {
        return match r {
            AnyResult::Pages(s) => Some(views::pagebench_markdown(&s.result)),
            AnyResult::Randread(s) => Some(views::randread_markdown(&s.result)),
            AnyResult::BenchPromote(s) => Some(promoteview::bench_markdown(&s.result)),
            AnyResult::BenchExec(s) => Some(execview::bench_markdown(&s.result)),
            AnyResult::BenchBloat(s) => Some(execview::bloat_markdown(&s.result)),
            AnyResult::BenchPacking(s) => Some(execview::packing_markdown(&s.result)),
            _ => None,
        };
    }
    Some(match r {
        AnyResult::Machine(s) => views::machine(&s.result),
        AnyResult::Faultlat(s) => views::faultlat(&s.result),
        AnyResult::Run(s) => views::run(&s.result),
        AnyResult::GraphInfo(s) => views::graph_info(&s.result),
        AnyResult::Pages(s) => views::pagebench(&s.result),
        AnyResult::Randread(s) => views::randread(&s.result),
        AnyResult::GraphWritten(s) => views::graph_written(&s.result),
        AnyResult::Capture(s) => simview::capture(&s.result),
        AnyResult::Lackey(s) => simview::lackey(&s.result),
        AnyResult::Curves(s) => simview::curves(&s.result),
        AnyResult::Reuse(s) => simview::reuse(&s.result.granularities),
        AnyResult::Plans(s) => simview::plans(&s.result),
        AnyResult::Promote(s) => promoteview::session(&s.result),
        AnyResult::BenchPromote(s) => promoteview::bench(&s.result),
        AnyResult::EnvShow(s) => envview::show(&s.result),
        AnyResult::EnvSet(s) => envview::set_report(&s.result),
        AnyResult::EnvAction(s) => envview::action(&s.result),
        AnyResult::EnvSwap(s) => envview::swap(&s.result),
        AnyResult::EnvShaped(s) => envview::shaped_run(&s.result),
        AnyResult::EnvRestore(s) => envview::restore(&s.result),
        AnyResult::Study(s) => studyview::plan(&s.result),
        AnyResult::Swap(s) => studyview::swap_table(&[("swap", &s.result)]),
        AnyResult::Exec(s) => execview::exec(&s.result, false),
        AnyResult::Profile(s) => execview::profile(&s.result),
        AnyResult::BenchExec(s) => execview::bench(&s.result),
        AnyResult::BenchBloat(s) => execview::bloat(&s.result),
        AnyResult::BenchPacking(s) => execview::packing(&s.result),
    })
}
