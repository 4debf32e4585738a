//! hugewise-graph owns graphs laid out in page-policy regions: the CSR, the streaming
//! builder, generators, readers and writers, and the kernels with their verifiers.
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
pub mod reorder;
pub mod rng;
pub mod save;
pub mod settings;
pub mod shapes;
pub mod traced;

pub use csr::Csr;
pub use error::{Error, Result};
pub use layout::Layout;
