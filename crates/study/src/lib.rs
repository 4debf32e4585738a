//! hugewise-study owns how hugewise measures: the experiments, the statistics, the checks that
//! the machine is quiet, and the results model every export reads.
//!
//! - [`meta`]: what every result records about the run and the machine;
//! - [`stats`]: medians and spreads over raw samples (all samples are kept);
//! - [`quiet`]: other processes' CPU use, checked before each timed run;
//! - [`save`]: atomic result files;
//! - [`slurm`]: a study as a Slurm array job, one task per run;
//! - [`faultlat`]: page-fault latency of a fresh region under a page policy;
//! - [`randread`]: random reads over a large region, page policies alternated A B C A B C;
//! - [`graphrun`]: graph kernels on page-policy arrays, verified, with every array's backing;
//! - [`pagebench`]: one kernel under several layouts of its arrays, alternated round by round;
//! - [`presets`]: studies named for the question they answer, expanded into plans of runs;
//! - [`runner`]: a plan run in its machine shapes, each result saved as soon as it exists;
//! - [`swapstudy`]: one kernel under memory limits and overcommit factors, point by point;
//! - [`bloat`]: a real Redis server's memory and speed under THP modes and page rules;
//! - [`execbench`]: a program hugewise did not write under several page rules, alternated;
//! - [`packing`]: a program's hot call sites packed into a hot arena of huge pages, against
//!   4 KiB pages and THP for everything;
//! - [`promotebench`]: a skewed workload with 4 KiB pages, all huge, a replayed plan and the
//!   online daemon, alternated;
//! - [`promotegraph`]: the same four arms on a graph kernel, each arm its own run.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bloat;
pub mod capture;
mod error;
pub mod execbench;
pub mod faultlat;
pub mod graphrun;
pub mod meta;
pub mod overcommit;
pub mod packing;
pub mod pagebench;
pub mod presets;
pub mod promotebench;
pub mod promotegraph;
pub mod quiet;
pub mod randread;
pub mod room;
pub mod runner;
pub mod save;
pub mod slurm;
pub mod stats;
pub mod swap;
pub mod swapstudy;
pub mod telemetry;

pub use error::{Error, Result};

/// A rayon pool of `threads` workers (at least one) for one experiment.
pub(crate) fn thread_pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| Error::Config(format!("thread pool: {e}")))
}

/// A progress sink for long work: `(done, total)` in the work's own units.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);
