//! What `hugewise trace` wrote: the trace, its arrays, how fast capture and the untraced runs went.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::graph::GraphInfo;
use crate::kernel::Spec;
use crate::stats::Summary;

/// One array of the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrayInfo {
    /// Name.
    pub name: String,
    /// First address.
    pub base: u64,
    /// Bytes.
    pub bytes: u64,
}

/// What a capture did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaptureReport {
    /// The graph as given.
    pub graph_spec: String,
    /// The graph as loaded.
    pub graph: GraphInfo,
    /// Kernel and settings.
    pub kernel: Spec,
    /// Sources, in the input's ids.
    pub sources: Vec<u32>,
    /// The trace.
    pub trace: PathBuf,
    /// Its arrays, in allocation order.
    pub arrays: Vec<ArrayInfo>,
    /// Accesses of the first-touch prologue (one per 4 KiB page of every array).
    pub prologue_accesses: u64,
    /// Threads traced (one stream each).
    pub threads: usize,
    /// Accesses of each stream, the prologue in the first.
    pub stream_accesses: Vec<u64>,
    /// Accesses in all.
    pub accesses: u64,
    /// Trace file bytes.
    pub trace_bytes: u64,
    /// Bytes per access.
    pub bytes_per_access: f64,
    /// Wall seconds of the traced run, encoding included.
    pub capture_s: f64,
    /// Accesses captured per second.
    pub capture_accesses_per_s: f64,
    /// Wall seconds of the untraced runs of the same code.
    pub untraced_ns: Option<Summary>,
    /// Kernel accesses per second untraced (the simulator's clock).
    pub accesses_per_s: Option<f64>,
    /// Untraced times on 4 KiB pages and on THP, for the cost model (`null`: not asked for).
    pub calibration: Option<Calibration>,
    /// Whether the traced run's result verified (`null`: not checked, `trace --no-verify`).
    pub verified: Option<bool>,
}

/// Untraced wall times of the traced work, measured on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Median seconds with every array on 4 KiB pages.
    pub base_s: f64,
    /// Median seconds with every array on 2 MiB pages (THP), as far as the kernel gave them.
    pub huge_s: f64,
    /// Share of the footprint the kernel did back with huge pages in the huge runs.
    pub huge_share: f64,
    /// Runs of each.
    pub runs: u32,
}

/// What `hugewise trace lackey` imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LackeyImport {
    /// Lackey output read (`-` for stdin).
    pub input: PathBuf,
    /// The trace written.
    pub trace: PathBuf,
    /// Data accesses written.
    pub accesses: u64,
    /// Lines read.
    pub lines: u64,
    /// Instruction fetches skipped.
    pub instructions_skipped: u64,
    /// The trace's size.
    pub trace_bytes: u64,
    /// Time from the first line read to the trace renamed in place.
    pub elapsed_ns: u64,
}
