//! hugewise-sys owns every system call and every `unsafe` block of hugewise, and the readers and
//! writers of `/proc` and `/sys` that tell what the kernel really did with our memory.
//!
//! Two halves:
//! - syscalls: [`mmap`] (anonymous mappings, advice, collapse), [`process`] (pidfd and
//!   `process_madvise`), [`lock`] (mlock, personality), [`rusage`] (fault counters), [`debugfs`]
//!   (debugfs files, through a private mount detached at once when needed), [`swap`] (swapon,
//!   swapoff, preallocated files), [`affinity`] (the CPUs a thread may run on), [`priority`]
//!   (a thread's nice value), and [`hint`]
//!   (cache prefetch for the kernels' hot loops, of a value or of a slice's i-th slot);
//! - readers: [`proc`], [`sysfs`] and [`memlimit`] (the room left under `MemAvailable` and the
//!   memory cgroup), each rooted at an injectable path so that every parser is tested on
//!   recorded samples.
//!
//! Beside them, for the kernels' hot loops: [`atomic`] views of plain arrays, and [`bounded`]
//! index lists, checked once and then read without a bounds check per index.
//!
//! Audit rule: every `unsafe` block carries a `// SAFETY:` comment; advice that can change memory
//! contents is only reachable through an `unsafe fn`.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]

pub mod affinity;
pub mod alloclog;
pub mod arena;
pub mod atomic;
pub mod bounded;
pub mod caps;
pub mod debugfs;
pub mod errno;
mod error;
pub mod file;
pub mod hint;
pub mod interpose;
pub mod lock;
pub mod machine;
pub mod memlimit;
pub mod mmap;
pub mod page_size;
pub mod pagecache;
pub mod priority;
pub mod proc;
pub mod process;
pub mod read;
pub mod rusage;
pub mod shm;
pub mod swap;
pub mod sysfs;
#[doc(hidden)]
pub mod testing;

pub use error::{Error, Result};
pub use page_size::PageSize;
