//! hugewise-mem owns page-policy memory regions: typed anonymous mappings whose page size is
//! chosen per region and whose real backing is read back from the kernel.
//!
//! - [`Bytes`] and [`Amount`]: sizes and shares as users write them (`1.5GiB`, `2M`, `25%`);
//! - [`Share`], [`Interval`], [`Count`]: shares, time spans and counts as users write them
//!   (`30%`, `0.5s`, `20M`), each flag's range a [`ShareRange`] or [`Interval::at_least`];
//!   [`Threads`], [`Overcommit`] (`4` or `auto`), [`SizeMode`] (`64kB=always`),
//!   [`AutoSize`] (`auto`, `off` or a size) and [`IntervalOrOff`] (`50ms` or `off`);
//! - [`PagePolicy`], [`PolicyMap`], [`AllocOrder`]: what each region asks of the kernel, and in
//!   which order regions are faulted in;
//! - [`Region`]: one array in one mapping, with `collapse`, `split` and `backing`;
//! - [`Backing`]: what the kernel actually gave, with the source it was read from.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod backing;
mod bytes;
mod error;
mod locked;
mod policy;
mod region;
mod value;

pub use backing::{Backing, BackingSource};
pub use bytes::{Amount, Bytes};
pub use error::{Error, Result};
pub use policy::{AllocOrder, PagePolicy, PolicyMap};
pub use region::{
    CollapseOutcome, KernelFiles, Populate, Region, RegionOptions, SplitMethod, SplitOutcome,
};
pub use value::{
    AutoSize, Bare, Count, Interval, IntervalOrOff, Overcommit, Share, ShareRange, SizeMode,
    Threads,
};
