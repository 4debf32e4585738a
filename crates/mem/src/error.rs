//! The typed error of the mem crate.

/// What can go wrong creating, advising or measuring a region.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A size, share or policy string did not parse.
    #[error("{0}")]
    Parse(String),
    /// The hugetlb pool cannot hold the region.
    #[error(
        "region '{region}' needs {needed} free {size} hugetlb pages but the pool has {free}; \
         grow it with: echo {want} > {knob}"
    )]
    HugetlbPool {
        /// Region name.
        region: String,
        /// Page size.
        size: hugewise_sys::PageSize,
        /// Pages needed.
        needed: u64,
        /// Pages free now.
        free: u64,
        /// Pool size that would do.
        want: u64,
        /// The sysfs file to write.
        knob: String,
    },
    /// `+lock` could not lock the region in memory.
    #[error("region '{region}': locking {bytes} bytes in memory (+lock){hint}: {source}")]
    Lock {
        /// Region name.
        region: String,
        /// Bytes asked to lock.
        bytes: u64,
        /// What usually causes the errno, or empty.
        hint: &'static str,
        /// Cause.
        #[source]
        source: hugewise_sys::Error,
    },
    /// A kernel call failed.
    #[error("region '{region}': {source}")]
    Sys {
        /// Region name.
        region: String,
        /// Cause.
        #[source]
        source: hugewise_sys::Error,
    },
    /// A range or option does not fit the region.
    #[error("region '{region}': {message}")]
    Invalid {
        /// Region name.
        region: String,
        /// What was wrong.
        message: String,
    },
}

/// Result alias of the mem crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
