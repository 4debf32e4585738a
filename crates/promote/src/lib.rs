//! hugewise-promote gives 2 MiB pages to chosen ranges of a running process, from user space on
//! an unmodified kernel, and takes them back when they stop paying.
//!
//! The kernel offers two calls that make this possible without patches: `process_madvise`
//! through a pidfd carries `MADV_COLLAPSE` (Linux 6.1) into another process, which collapses a
//! 2 MiB range into one huge page synchronously; and `MADV_COLD` over part of a PMD-mapped huge
//! page makes the kernel split it to deactivate only that part (mm/madvise.c), which is the
//! stock kernel's only way to demote another process's huge page when debugfs
//! `split_huge_pages` is locked down. Both are checked by reading the backing back from
//! pagemap and kpageflags, never assumed.
//!
//! - [`target`]: one process under management: attach, check a range against its mappings
//!   right before acting, promote, demote;
//! - [`chunk`]: what each 2 MiB chunk of a range holds (mapped base pages, huge or not);
//! - [`action`]: the record of one promotion or demotion, as data;
//! - [`replay`]: a plan's promotions applied at their times;
//! - [`daemon`]: the online engine: every interval, read the targets' chunks and access samples
//!   ([`channel`]), ask a [`policy`] (one per file in [`policies`]), act within the [`budget`],
//!   and ask for fewer samples while nothing changes ([`thinning`]); when collapses are refused
//!   for want of free 2 MiB blocks, [`compact`] weighs asking the kernel to compact, and
//!   [`room`] picks lower-priority targets' cold huge pages to split first, and after a few
//!   refusals in a row a look holds its other collapses back ([`refusals`]); while a
//!   target faults its memory in, [`pacing`] holds its collapses back; [`warm`] faults in the
//!   page each collapse copies into, so that the target waits on the copy alone.
#![forbid(unsafe_code)]

pub mod action;
pub mod budget;
pub mod channel;
pub mod chunk;
pub mod compact;
pub mod daemon;
mod error;
pub mod known;
pub mod pacing;
pub mod plan;
pub mod policies;
pub mod policy;
pub mod refusals;
pub mod replay;
pub mod room;
pub mod session;
pub mod settle;
pub mod target;
pub mod thinning;
pub mod warm;

pub use error::{Error, Result};

/// The size of the huge pages this crate promotes to: one PMD on x86-64 and arm64 with 4 KiB
/// base pages.
pub const HUGE: usize = 2 << 20;

/// Base pages per huge page.
pub const BASE_PER_HUGE: usize = HUGE / 4096;
