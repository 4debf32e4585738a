//! hugewise-graph owns graphs laid out in page-policy regions: the CSR, the streaming
//! builder, generators, readers and writers, the kernels with their verifiers, and the access
//! probes through which one kernel body is timed, traced ([`probe`]) or sampled ([`sampler`]).
//!
//! Every array (offsets, edges, weights, a kernel's property and frontier arrays) is a
//! [`hugewise_mem::Region`], so its page size comes from the command line and its real backing
//! is read back after a run.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod build;
pub mod cache;
pub mod csr;
mod error;
pub mod fits;
pub mod gen;
pub mod io;
pub mod kernels;
pub mod layout;
pub mod load;
mod owned;
pub mod probe;
pub mod reorder;
pub mod rng;
pub mod sampler;
pub mod save;
pub mod settings;
pub mod shapes;

pub use csr::Csr;
pub use error::{Error, Result};
pub use layout::Layout;
