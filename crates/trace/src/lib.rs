//! hugewise-trace owns the `.hwt` memory-access trace format: a header with the traced
//! program's regions, then blocks of accesses (delta + varint + zstd), read back by a streaming
//! reader whose memory is one block, whatever the trace's length.
//!
//! Every block decodes on its own (deltas restart at zero), so readers can decode blocks in
//! parallel. A truncated or damaged file is an error naming the byte offset. The layout is in
//! `docs/trace-format.md`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod error;
pub mod format;
pub mod lackey;
pub mod meta;
pub mod reader;
pub mod varint;
pub mod writer;

pub use error::{Error, Result};
pub use format::{Access, Header, Region};
pub use meta::TraceMeta;
pub use reader::{Block, Reader};
pub use writer::{Summary, Writer};
