//! hugewise-report owns the views of results: every table, Markdown page and chart reads a
//! saved result, never a live measurement, so a report can be rebuilt without re-running. It
//! depends on the result model alone.
//!
//! [`views`] holds the terminal text of each kind of result (one module per kind) and of a
//! whole collection; [`figures`] the numbers that charts and tables share; [`charts`] and
//! [`html`] the report page; [`table`], [`fmt`] and [`escape`] what every view uses.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod charts;
pub mod escape;
pub mod figures;
pub mod fmt;
pub mod html;
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
    /// The format named `text`, `md`, `csv` or `html`.
    pub fn named(name: &str) -> Option<Format> {
        match name {
            "text" => Some(Format::Text),
            "md" => Some(Format::Markdown),
            "csv" => Some(Format::Csv),
            "html" => Some(Format::Html),
            _ => None,
        }
    }

    /// The format `asked` for, else Markdown when `markdown`, else the one `out` implies.
    pub fn chosen(asked: Option<Format>, markdown: bool, out: Option<&Path>) -> Format {
        match (asked, markdown) {
            (Some(f), _) => f,
            (None, true) => Format::Markdown,
            (None, false) => Format::implied_by(out),
        }
    }

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
        Format::Text => views::collection::text(c),
        Format::Markdown => views::collection::markdown(c),
        Format::Csv => views::collection::csv(c),
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
            AnyResult::Pages(s) => Some(views::run::pagebench_markdown(&s.result)),
            AnyResult::Randread(s) => Some(views::machine::randread_markdown(&s.result)),
            AnyResult::BenchPromote(s) => Some(views::promote::bench_markdown(&s.result)),
            AnyResult::BenchExec(s) => Some(views::exec::bench_markdown(&s.result)),
            AnyResult::BenchBloat(s) => Some(views::exec::bloat_markdown(&s.result)),
            AnyResult::BenchPacking(s) => Some(views::exec::packing_markdown(&s.result)),
            AnyResult::BenchGap(s) => Some(views::gap::markdown(&s.result)),
            _ => None,
        };
    }
    Some(match r {
        AnyResult::Machine(s) => views::machine::machine(&s.result),
        AnyResult::Faultlat(s) => views::machine::faultlat(&s.result),
        AnyResult::Run(s) => views::run::run(&s.result),
        AnyResult::GraphInfo(s) => views::run::graph_info(&s.result),
        AnyResult::Pages(s) => views::run::pagebench(&s.result),
        AnyResult::Randread(s) => views::machine::randread(&s.result),
        AnyResult::GraphWritten(s) => views::run::graph_written(&s.result),
        AnyResult::Capture(s) => views::sim::capture(&s.result),
        AnyResult::Lackey(s) => views::sim::lackey(&s.result),
        AnyResult::Curves(s) => views::sim::curves(&s.result),
        AnyResult::Reuse(s) => views::sim::reuse(&s.result.granularities),
        AnyResult::Plans(s) => views::sim::plans(&s.result),
        AnyResult::Promote(s) => views::promote::session(&s.result),
        AnyResult::BenchPromote(s) => views::promote::bench(&s.result),
        AnyResult::EnvShow(s) => views::env::show(&s.result),
        AnyResult::EnvSet(s) => views::env::set_report(&s.result),
        AnyResult::EnvAction(s) => views::env::action(&s.result),
        AnyResult::EnvSwap(s) => views::env::swap(&s.result),
        AnyResult::EnvShaped(s) => views::env::shaped_run(&s.result),
        AnyResult::EnvRestore(s) => views::env::restore(&s.result),
        AnyResult::Study(s) => views::study::plan(&s.result),
        AnyResult::Swap(s) => views::study::swap_table(&[("swap", &s.result)]),
        AnyResult::Exec(s) => views::exec::exec(&s.result, false),
        AnyResult::Profile(s) => views::exec::profile(&s.result),
        AnyResult::BenchExec(s) => views::exec::bench(&s.result),
        AnyResult::BenchBloat(s) => views::exec::bloat(&s.result),
        AnyResult::BenchPacking(s) => views::exec::packing(&s.result),
        AnyResult::BenchGap(s) => views::gap::text(&s.result),
        AnyResult::BenchFaultlat(s) => views::machine::fault_bench(&s.result),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_asked_for_wins_then_markdown_then_the_outputs_name() {
        let out = Some(Path::new("r.html"));
        assert_eq!(Format::named("md"), Some(Format::Markdown));
        assert_eq!(Format::named("pdf"), None);
        assert_eq!(Format::chosen(Some(Format::Csv), true, out), Format::Csv);
        assert_eq!(Format::chosen(None, true, out), Format::Markdown);
        assert_eq!(Format::chosen(None, false, out), Format::Html);
        assert_eq!(Format::chosen(None, false, None), Format::Text);
    }
}
