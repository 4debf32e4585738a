//! hugewise-study owns studies: presets named for the question each answers, expanded into
//! plans of runs; the runner that runs a plan in its machine shapes, saves each result as soon
//! as it exists and resumes; a plan as a Slurm array job. The runs themselves are
//! `hugewise-bench`'s experiments, and their errors are its [`hugewise_bench::Error`].
//!
//! - [`presets`]: a table of studies, each with its question, the function building its runs
//!   and the papers' claims its headlines are set against;
//! - [`runner`]: a plan run in its machine shapes, each result saved as soon as it exists;
//! - [`swapsweep`]: a study's `swap` run, one kernel under memory limits and overcommit
//!   factors, point by point;
//! - [`slurm`]: a study as a Slurm array job, one task per run;
//! - [`task`]: a scheduler's task, one run of a plan asked of `hugewise worker` as typed data.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod presets;
pub mod runner;
pub mod slurm;
pub mod swapsweep;
pub mod task;
