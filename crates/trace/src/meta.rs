//! The sidecar `<trace>.json` that says where a trace came from and how fast the traced
//! program ran without tracing: the simulator's clock (accesses per second) and the runs its
//! cost model is calibrated against.

use std::path::{Path, PathBuf};

pub use hugewise_results::capture::Calibration;
use hugewise_sys::read::Bound;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Schema version of the sidecar.
pub const SCHEMA: u32 = 1;

/// What the sidecar holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceMeta {
    /// Schema version.
    pub schema_version: u32,
    /// What was traced (`bfs on kron:20`, `lackey: ./a.out`).
    pub source: String,
    /// Accesses in the trace.
    pub accesses: u64,
    /// Accesses per second of the untraced program, if measured.
    pub accesses_per_s: Option<f64>,
    /// Untraced runs, if measured.
    pub calibration: Option<Calibration>,
    /// Leading accesses of stream 0 that set the program up rather than run it (hugewise's
    /// first-touch prologue): the simulator runs them as warm-up and counts what follows.
    #[serde(default)]
    pub warmup_accesses: u64,
    /// Anything else worth keeping (settings, seeds), as given by the producer.
    #[serde(default)]
    pub details: serde_json::Value,
}

/// The sidecar's path for a trace.
pub fn sidecar(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".json");
    PathBuf::from(s)
}

impl TraceMeta {
    /// Read the sidecar of `trace`; `None` if there is none.
    pub fn read(trace: &Path) -> Result<Option<TraceMeta>> {
        let p = sidecar(trace);
        let text = match hugewise_sys::read::bounded_string(&p, Bound::SIDECAR) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::Io { path: p, source: e }),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| Error::Invalid(format!("{}: {e}", p.display())))
    }
}
