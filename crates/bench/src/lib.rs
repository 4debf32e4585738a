//! hugewise-bench owns the experiments and how they measure: each experiment alternates its
//! variants round by round on this machine, keeps every raw sample, and returns the result
//! types of `hugewise-results`.
//!
//! Experiments:
//! - [`run`]: `hugewise run`, graph kernels on page-policy arrays, verified, with every array's
//!   backing; under a memory limit with swap ([`run::memory`]) and an overcommit factor chosen
//!   trial by trial ([`run::overcommit`]);
//! - [`capture`]: `hugewise trace`, one kernel run recorded to a `.hwt` trace;
//! - [`pagebench`]: one kernel under several layouts of its arrays, alternated round by round;
//! - [`randread`]: random reads over a large region, page policies alternated A B C A B C;
//! - [`faultlat`]: page-fault latency of a fresh region under a page policy;
//! - [`faultbench`]: those faults alone and with the daemon collapsing beside them, alternated;
//! - [`promote`]: does promotion pay? 4 KiB pages, all huge, a replayed plan and the online
//!   daemon, alternated, on a skewed random-read stream or a graph kernel;
//! - [`execbench`]: a program hugewise did not write under several page rules, alternated;
//! - [`packing`]: a program's hot call sites packed into a hot arena of huge pages, against
//!   4 KiB pages and THP for everything;
//! - [`bloat`]: a real Redis server's memory and speed under THP modes and page rules;
//! - [`gap`]: the user's build of the GAP suite against hugewise's kernels on one graph file.
//!
//! What they measure with:
//! - [`telemetry`]: `/proc` and `/sys` sampled while a run runs, summarized by stretch;
//! - [`quiet`]: other processes' CPU use, checked before each timed run;
//! - [`settle`]: the guest's freed memory handed back to the host, waited for before a run
//!   that faults fresh memory;
//! - [`stats`]: medians and spreads over raw samples (all samples are kept);
//! - [`room`]: whether a region fits in the memory available, before it is touched;
//! - [`meta`]: what every result records about the run and the machine;
//! - [`pool`]: the worker threads kernels run on, bound one per CPU;
//! - [`order`]: the order a round runs its variants in;
//! - [`save`]: atomic result files;
//! - [`worker`]: the typed requests hugewise's own child processes serve.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bloat;
pub mod capture;
mod error;
pub mod execbench;
pub mod faultbench;
pub mod faultlat;
pub mod gap;
pub mod meta;
pub mod order;
pub mod packing;
pub mod pagebench;
pub mod pool;
pub mod promote;
pub mod quiet;
pub mod randread;
pub mod room;
pub mod run;
pub mod save;
pub mod settle;
pub mod stats;
pub mod telemetry;
pub mod worker;

pub use error::{Error, Result};

/// A rayon pool of `threads` workers (at least one) for one experiment, bound one per CPU as
/// [`pool`] explains (unless `HUGEWISE_BIND_THREADS=off`).
pub fn thread_pool(threads: usize) -> Result<rayon::ThreadPool> {
    Ok(pool::kernel_pool(threads, pool::Binding::from_env()?)?.pool)
}

/// A progress sink for long work: `(done, total)` in the work's own units.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);
