//! hugewise-sim owns the trace-driven simulator: a TLB hierarchy whose entries carry their
//! page size, a page table that policies change by promoting and demoting 2 MiB frames, the
//! promotion candidate cache, the promotion policies of Linux, HawkEye, Ingens, MEGA and the
//! PCC, physical memory with the compaction that frees blocks for them, utility curves over one
//! decode of a trace, and exact reuse distance.
//!
//! No hardware TLB counter is read here: every TLB figure this crate gives is simulated.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod config;
pub mod cost;
pub mod curve;
pub mod engine;
mod error;
pub mod grammar;
pub mod hash;
pub mod pagemap;
pub mod pcc;
pub mod physmem;
pub mod policies;
pub mod policy;
pub mod progress;
pub mod reuse;
pub mod tlb;

pub use config::TlbConfig;
pub use curve::{CurveSpec, Curves, PromotionPlan};
pub use engine::Machine;
pub use error::{Error, Result};
pub use grammar::{Budgets, PolicyList};
pub use policies::PolicySpec;
pub use progress::Progress;
