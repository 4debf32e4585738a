//! Does promotion pay? One bench, four arms alternated round by round (4 KiB pages only, every
//! chunk huge, a promotion plan replayed, the online daemon promoting while the work runs), on
//! two workloads: a skewed random-read stream ([`stream`], run by [`driver`] on the regions of
//! [`frames`]) and a graph kernel, each arm its own `hugewise run` ([`graph`]); [`named`] holds the
//! workloads a user names; [`shape`] shapes the machine around a round's second run of the
//! arms.

pub mod driver;
pub mod frames;
pub mod graph;
pub mod named;
pub mod shape;
pub mod stream;
