//! Terminal views of results, one module per kind of result: [`machine`] (`sys`, `faultlat`,
//! `bench randread`), [`run`] (`run`, `graph`, `bench pages`), [`sim`] (traces, curves, plans,
//! reuse), [`promote`], [`exec`] (`exec`, `profile` and their benchmarks),
//! [`env`](mod@env), [`study`], and [`collection`] (many results at once). Below them, what
//! several views share: the busy marker and the notes under tables of samples.

pub mod collection;
pub mod env;
pub mod exec;
pub mod gap;
pub mod machine;
pub mod promote;
pub mod run;
pub mod sim;
pub mod study;

use std::fmt::Write;

use hugewise_results::stats::{Quiet, BUSY_SHARE};

/// What the tables' "spread" is.
pub(crate) const SPREAD_NOTE: &str =
    "spread: median absolute deviation of the samples from their median, as a share of the median";

/// How many of `samples` were taken on a busy machine, and how many there are.
pub(crate) fn busy_of<'a>(samples: impl Iterator<Item = &'a Option<Quiet>>) -> (usize, usize) {
    samples.fold((0, 0), |(busy, all), q| {
        (busy + usize::from(q.is_some_and(|q| q.busy())), all + 1)
    })
}

/// A row's name with the busy marker when any of its samples was busy.
pub(crate) fn marked(name: &str, busy: usize) -> String {
    if busy > 0 {
        format!("{name} *")
    } else {
        name.to_string()
    }
}

/// The footnotes under a table of samples: what spread is, and what the busy marker means.
pub(crate) fn sample_notes(busy: usize, all: usize) -> String {
    let mut o = format!("\n{SPREAD_NOTE}.\n");
    if busy > 0 {
        let _ = writeln!(
            o,
            "* busy machine: {busy} of {all} samples were taken while other processes used more \
             than {:.0}% of the CPUs (the quiet check gave up waiting); their times may be \
             inflated",
            BUSY_SHARE * 100.0
        );
    }
    o
}

pub(crate) fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or_else(|| "-".into(), f)
}
