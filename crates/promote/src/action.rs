//! The record of one promotion or demotion: when, where, what the kernel answered, how long it
//! took, and what backs the range afterwards, read back from the kernel. The types belong to
//! the result model.

pub use hugewise_results::promote::{Action, ActionKind};
