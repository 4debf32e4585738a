//! hugewise-report owns the views of results: every table, Markdown page and chart reads a
//! result model, never a live measurement, so a report can be rebuilt without re-running.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod envview;
pub mod fmt;
pub mod simview;
pub mod table;
pub mod views;
