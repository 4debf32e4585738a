//! The online policies, one per file, under the simulator's names.

pub mod auto;
pub mod hawkeye;
pub mod linux;
pub mod mega;
pub mod pcc;
