//! hugewise-results owns the result model: every result hugewise saves, the `meta` block each
//! carries, and the envelope that names its kind and schema version, so that any saved file can
//! be read back and rendered without re-running anything.
//!
//! A saved file is one JSON object: `schema` (`hugewise/<kind>`), `schema_version`, `meta`,
//! then the result's own fields. Units are in field names (`wall_ns`, `huge_bytes`); a value
//! that was not measured is `null`, never 0.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod backing;
pub mod bloat;
pub mod capture;
pub mod collection;
pub mod env;
pub mod exec;
pub mod exit;
pub mod faultlat;
pub mod gapbench;
pub mod graph;
pub mod kernel;
pub mod machine;
pub mod meta;
pub mod packing;
pub mod page_size;
pub mod pagebench;
pub mod plan;
pub mod promote;
pub mod randread;
pub mod run;
pub mod scale;
pub mod sim;
pub mod stats;
pub mod study;
pub mod swapstudy;
pub mod telemetry;

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use meta::Meta;

/// Why a saved result could not be read, or a plan was refused.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not JSON, or not the shape its schema says.
    #[error("{what}: {source}")]
    Json {
        /// What was being read.
        what: String,
        /// The cause (with line and column).
        source: serde_json::Error,
    },
    /// No `schema` field, or one hugewise does not know.
    #[error("{0}")]
    Schema(String),
    /// A schema version newer than this hugewise reads.
    #[error("{schema} version {found}: this hugewise reads version {supported}")]
    Version {
        /// The kind.
        schema: String,
        /// Version in the file.
        found: u32,
        /// Version this build writes and reads.
        supported: u32,
    },
    /// A value that breaks the contract, named by its field.
    #[error("{field}: {what}")]
    Invalid {
        /// Path of the field (`plans[2].entries[7].addr`).
        field: String,
        /// What is wrong.
        what: String,
    },
}

/// A kind of result: the name its files carry in `schema` and the version of its shape.
pub trait Kind: Serialize + DeserializeOwned {
    /// `hugewise/<kind>`.
    const SCHEMA: &'static str;
    /// Bumped when a field changes meaning or goes away.
    const VERSION: u32;
}

/// A result as saved: its kind and version, the meta block, and the result's own fields at the
/// top level.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Saved<T> {
    /// `hugewise/<kind>`.
    pub schema: String,
    /// Version of the kind's shape.
    pub schema_version: u32,
    /// How and where the result was made.
    pub meta: Meta,
    /// The result.
    #[serde(flatten)]
    pub result: T,
}

impl<T: Kind> Saved<T> {
    /// Wrap `result` with its kind and `meta`.
    pub fn new(meta: Meta, result: T) -> Saved<T> {
        Saved {
            schema: T::SCHEMA.to_string(),
            schema_version: T::VERSION,
            meta,
            result,
        }
    }

    /// Read a saved result of this kind from JSON text.
    pub fn from_json(text: &str) -> Result<Saved<T>, Error> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|source| Error::Json {
            what: "not JSON".into(),
            source,
        })?;
        let (schema, version) = header(&v)?;
        if schema != T::SCHEMA {
            return Err(Error::Schema(format!(
                "a {schema} result, not {}",
                T::SCHEMA
            )));
        }
        check_version(schema, version, T::VERSION)?;
        decode(v, T::SCHEMA)
    }
}

fn header(v: &serde_json::Value) -> Result<(&str, u32), Error> {
    let schema = v.get("schema").and_then(|s| s.as_str()).ok_or_else(|| {
        Error::Schema(
            "no \"schema\" field: not a result saved by hugewise (or saved before results \
             named their kind)"
                .into(),
        )
    })?;
    let version = v
        .get("schema_version")
        .and_then(|s| s.as_u64())
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| Error::Schema(format!("{schema}: no schema_version")))?;
    // The schema is echoed in errors: a terminal must not be handed what a file put there.
    if schema.len() > 64 || schema.chars().any(char::is_control) {
        return Err(Error::Schema(
            "\"schema\" is no kind hugewise names (too long, or control characters)".into(),
        ));
    }
    Ok((schema, version))
}

fn check_version(schema: &str, found: u32, supported: u32) -> Result<(), Error> {
    if found > supported || found == 0 {
        return Err(Error::Version {
            schema: schema.to_string(),
            found,
            supported,
        });
    }
    Ok(())
}

fn decode<T: DeserializeOwned>(v: serde_json::Value, schema: &str) -> Result<T, Error> {
    serde_json::from_value(v).map_err(|source| Error::Json {
        what: format!("not a {schema} result"),
        source,
    })
}

macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident($ty:ty) = $schema:literal, $version:literal;)*) => {
        $(
            impl Kind for $ty {
                const SCHEMA: &'static str = $schema;
                const VERSION: u32 = $version;
            }
        )*

        /// Any saved result, by kind (boxed: the kinds differ much in size).
        #[derive(Debug, Clone)]
        pub enum AnyResult {
            $($(#[$doc])* $variant(Box<Saved<$ty>>),)*
        }

        impl AnyResult {
            /// The kind's `schema` name.
            pub fn schema(&self) -> &'static str {
                match self {
                    $(AnyResult::$variant(_) => $schema,)*
                }
            }

            /// The meta block: how and where the result was made.
            pub fn meta(&self) -> &Meta {
                match self {
                    $(AnyResult::$variant(s) => &s.meta,)*
                }
            }

            /// The saved JSON again, as it would be written.
            pub fn to_json(&self) -> Result<serde_json::Value, Error> {
                let v = match self {
                    $(AnyResult::$variant(s) => serde_json::to_value(s),)*
                };
                v.map_err(|source| Error::Json {
                    what: format!("writing a {} result", self.schema()),
                    source,
                })
            }

            /// Every kind this build reads, as `schema` names.
            pub const SCHEMAS: &'static [&'static str] = &[$($schema),*];

            /// Read any saved result from JSON text, by its `schema` field.
            pub fn from_json(text: &str) -> Result<AnyResult, Error> {
                let v: serde_json::Value =
                    serde_json::from_str(text).map_err(|source| Error::Json {
                        what: "not JSON".into(),
                        source,
                    })?;
                let (schema, version) = header(&v)?;
                match schema {
                    $($schema => {
                        check_version(schema, version, $version)?;
                        Ok(AnyResult::$variant(Box::new(decode(v, $schema)?)))
                    })*
                    other => Err(Error::Schema(format!(
                        "unknown result kind {other} (known: {})",
                        Self::SCHEMAS.join(", ")
                    ))),
                }
            }
        }
    };
}

kinds! {
    /// `hugewise sys`.
    Machine(machine::MachineReport) = "hugewise/sys", 1;
    /// `hugewise faultlat`.
    Faultlat(faultlat::FaultlatReport) = "hugewise/faultlat", 1;
    /// `hugewise run`.
    Run(run::RunReport) = "hugewise/run", 1;
    /// `hugewise graph info`.
    GraphInfo(run::InfoReport) = "hugewise/graph-info", 1;
    /// `hugewise bench pages`.
    Pages(pagebench::PagesReport) = "hugewise/bench-pages", 1;
    /// `hugewise bench randread`.
    Randread(randread::RandreadReport) = "hugewise/bench-randread", 1;
    /// `hugewise graph gen|convert`.
    GraphWritten(graph::GraphWritten) = "hugewise/graph-write", 1;
    /// `hugewise trace`.
    Capture(capture::CaptureReport) = "hugewise/trace", 1;
    /// `hugewise trace lackey`.
    Lackey(capture::LackeyImport) = "hugewise/trace-lackey", 1;
    /// `hugewise sim`.
    Curves(sim::Curves) = "hugewise/sim", 1;
    /// `hugewise sim reuse`.
    Reuse(sim::ReuseReport) = "hugewise/sim-reuse", 1;
    /// `hugewise sim --plan`.
    Plans(plan::PromotionPlans) = "hugewise/promotion-plan", 1;
    /// `hugewise promote`.
    Promote(promote::PromoteReport) = "hugewise/promote", 1;
    /// `hugewise bench promote`.
    BenchPromote(promote::PromoteBenchReport) = "hugewise/bench-promote", 3;
    /// `hugewise env show`.
    EnvShow(env::EnvShow) = "hugewise/env-show", 1;
    /// `hugewise env thp|hugetlb|khugepaged|page-cluster`.
    EnvSet(env::SetReport) = "hugewise/env-set", 1;
    /// `hugewise env compact|drop-caches`.
    EnvAction(env::ActionReport) = "hugewise/env-action", 1;
    /// `hugewise env swap`.
    EnvSwap(env::SwapReport) = "hugewise/env-swap", 1;
    /// `hugewise env with|pressure|fragment|limit`.
    EnvShaped(env::ShapedRun) = "hugewise/env-shaped", 1;
    /// `hugewise env restore`.
    EnvRestore(env::RestoreReport) = "hugewise/env-restore", 1;
    /// `hugewise study`: the plan of a study directory.
    Study(study::StudyPlan) = "hugewise/study", 1;
    /// `hugewise study swap`: one kernel under memory limits and overcommit factors.
    Swap(swapstudy::SwapStudy) = "hugewise/study-swap", 1;
    /// `hugewise exec`: a program run with the preload library.
    Exec(exec::ExecReport) = "hugewise/exec", 1;
    /// `hugewise profile`: the hot call sites of a program and the placement made of them.
    Profile(exec::ProfileReport) = "hugewise/profile", 1;
    /// `hugewise bench exec`: one program under several page rules, alternated.
    BenchExec(exec::ExecBenchReport) = "hugewise/bench-exec", 1;
    /// `hugewise bench packing`: a program's hot call sites packed into a hot arena, against
    /// 4 KiB pages and THP for everything.
    BenchPacking(packing::PackingReport) = "hugewise/bench-packing", 1;
    /// `hugewise bench bloat`: a Redis server's memory and speed under THP modes and rules.
    BenchBloat(bloat::BloatReport) = "hugewise/bench-bloat", 1;
    /// `hugewise bench gap`: the GAP suite's binaries against hugewise's kernels, alternated.
    BenchGap(gapbench::GapBenchReport) = "hugewise/bench-gap", 1;
    /// `hugewise bench faultlat`: page faults alone and with the daemon collapsing beside them.
    BenchFaultlat(faultlat::FaultBenchReport) = "hugewise/bench-faultlat", 1;
}

/// Parse the saved result `text`, read from `path` (named in errors). Reading the file is the
/// caller's, bounded: see `hugewise_sys::read::result`.
pub fn parse(path: &Path, text: &str) -> Result<AnyResult, Error> {
    AnyResult::from_json(text).map_err(|e| match e {
        Error::Json { what, source } => Error::Json {
            what: format!("{}: {what}", path.display()),
            source,
        },
        Error::Schema(m) => Error::Schema(format!("{}: {m}", path.display())),
        other => other,
    })
}
