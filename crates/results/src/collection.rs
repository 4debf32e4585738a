//! A set of saved results read together for one report: result files and study directories
//! (`study.json` plus `runs/*.json`), possibly from several machines, each result kept with the
//! file it came from and the machine that made it.
//!
//! Machines are told apart by `meta.host` and `meta.cpu_model`, so that directories merged
//! from many machines keep each machine's kernel, THP settings and shapes apart.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::study::{Evidence, Headline, StudyPlan};
use crate::{AnyResult, Error, Meta};

/// A study's plan, as read from its directory.
#[derive(Debug, Clone)]
pub struct PlanEntry {
    /// The study directory (the folder holding `study.json`).
    pub dir: PathBuf,
    /// The plan file.
    pub path: PathBuf,
    /// The plan file's meta block.
    pub meta: Meta,
    /// The plan.
    pub plan: StudyPlan,
    /// Index into [`Collection::machines`].
    pub machine: usize,
}

/// One result read, with where it came from.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The file.
    pub path: PathBuf,
    /// The result (never a study plan: those are in [`Collection::plans`]).
    pub result: AnyResult,
    /// Index into [`Collection::machines`].
    pub machine: usize,
    /// Index into [`Collection::plans`] when the file is a run of a study directory read.
    pub plan: Option<usize>,
}

impl Entry {
    /// The result's meta block.
    pub fn meta(&self) -> &Meta {
        self.result.meta()
    }

    /// The study run id (`meta.study.run`), or the file's stem.
    pub fn run_id(&self) -> String {
        match &self.meta().study {
            Some(t) => t.run.clone(),
            None => self
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }
}

/// A machine that made some of the results.
#[derive(Debug, Clone)]
pub struct Machine {
    /// `meta.host`.
    pub host: Option<String>,
    /// `meta.cpu_model`.
    pub cpu_model: Option<String>,
    /// The meta block of the first file read from it (kernel, THP settings, memory).
    pub meta: Meta,
    /// Every kernel release its results name, in the order first seen.
    pub kernels: Vec<String>,
    /// Every THP `enabled`/`defrag` pair its results name, as `enabled / defrag`.
    pub thp: Vec<String>,
    /// Index into [`Collection::results`] of a `hugewise sys` report of it, if one was read.
    pub sys: Option<usize>,
}

impl Machine {
    /// A short name for headings: the host, else the CPU model, else `unknown machine`.
    pub fn name(&self) -> String {
        match (&self.host, &self.cpu_model) {
            (Some(h), _) => h.clone(),
            (None, Some(c)) => c.clone(),
            (None, None) => "unknown machine".into(),
        }
    }
}

/// Everything read for a report.
#[derive(Debug, Clone, Default)]
pub struct Collection {
    /// Study plans, in the order read.
    pub plans: Vec<PlanEntry>,
    /// Every other result, in the order read (files of one directory by name).
    pub results: Vec<Entry>,
    /// The machines, in the order first seen.
    pub machines: Vec<Machine>,
}

impl Collection {
    /// The results that are runs of plan `plan`, in the plan's run order (runs the plan does
    /// not list come last, by file name).
    pub fn runs_of(&self, plan: usize) -> Vec<&Entry> {
        let mut runs: Vec<&Entry> = self
            .results
            .iter()
            .filter(|e| e.plan == Some(plan))
            .collect();
        if let Some(p) = self.plans.get(plan) {
            let order = |e: &Entry| {
                let id = e.run_id();
                p.plan
                    .runs
                    .iter()
                    .position(|r| r.id == id)
                    .unwrap_or(usize::MAX)
            };
            runs.sort_by_key(|e| order(e));
        }
        runs
    }

    /// The results read outside any study directory.
    pub fn loose(&self) -> Vec<&Entry> {
        self.results.iter().filter(|e| e.plan.is_none()).collect()
    }

    /// The headlines of plan `plan` over its runs.
    pub fn headlines(&self, plan: usize) -> Vec<Headline> {
        let Some(p) = self.plans.get(plan) else {
            return Vec::new();
        };
        let runs = self.runs_of(plan);
        let pages: Vec<_> = runs
            .iter()
            .filter_map(|e| match &e.result {
                AnyResult::Pages(s) => Some(&s.result),
                _ => None,
            })
            .collect();
        // A curve's kernel is its run's, as the plan gives it.
        let kernel_of = |e: &Entry| -> &str {
            let id = e.run_id();
            p.plan
                .runs
                .iter()
                .find(|r| r.id == id)
                .and_then(|r| match &r.work {
                    crate::study::Work::Curve { kernel, .. } => Some(kernel.as_str()),
                    _ => None,
                })
                .unwrap_or("")
        };
        let curves: Vec<_> = runs
            .iter()
            .filter_map(|e| match &e.result {
                AnyResult::Curves(s) => Some((kernel_of(e), &s.result)),
                _ => None,
            })
            .collect();
        let swaps: Vec<_> = runs
            .iter()
            .filter_map(|e| match &e.result {
                AnyResult::Swap(s) => Some(&s.result),
                _ => None,
            })
            .collect();
        let bloats: Vec<_> = runs
            .iter()
            .filter_map(|e| match &e.result {
                AnyResult::BenchBloat(s) => Some(&s.result),
                _ => None,
            })
            .collect();
        let packings: Vec<_> = runs
            .iter()
            .filter_map(|e| match &e.result {
                AnyResult::BenchPacking(s) => Some(&s.result),
                _ => None,
            })
            .collect();
        let promotes: Vec<_> = runs
            .iter()
            .filter_map(|e| match &e.result {
                AnyResult::BenchPromote(s) => Some((&s.meta.study.as_ref()?.shape, &s.result)),
                _ => None,
            })
            .collect();
        let faults: Vec<_> = runs
            .iter()
            .filter_map(|e| match &e.result {
                AnyResult::BenchFaultlat(s) => Some((&s.meta.study.as_ref()?.shape, &s.result)),
                _ => None,
            })
            .collect();
        let ids: Vec<String> = runs.iter().map(|e| e.run_id()).collect();
        let answered: Vec<&str> = ids.iter().map(String::as_str).collect();
        crate::study::headlines(
            &p.plan,
            Evidence {
                answered: &answered,
                promotes: &promotes,
                faults: &faults,
                pages: &pages,
                curves: &curves,
                swaps: &swaps,
                bloats: &bloats,
                packings: &packings,
            },
        )
    }

    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.plans.is_empty() && self.results.is_empty()
    }

    fn machine_of(&mut self, meta: &Meta) -> usize {
        let i = match self
            .machines
            .iter()
            .position(|m| m.host == meta.host && m.cpu_model == meta.cpu_model)
        {
            Some(i) => i,
            None => {
                self.machines.push(Machine {
                    host: meta.host.clone(),
                    cpu_model: meta.cpu_model.clone(),
                    meta: meta.clone(),
                    kernels: Vec::new(),
                    thp: Vec::new(),
                    sys: None,
                });
                self.machines.len() - 1
            }
        };
        let m = &mut self.machines[i];
        if let Some(k) = &meta.kernel {
            if !m.kernels.contains(k) {
                m.kernels.push(k.clone());
            }
        }
        let thp = format!(
            "{} / {}",
            meta.thp_enabled.as_deref().unwrap_or("?"),
            meta.thp_defrag.as_deref().unwrap_or("?")
        );
        if !m.thp.contains(&thp) {
            m.thp.push(thp);
        }
        i
    }

    fn add(&mut self, path: PathBuf, result: AnyResult, plan: Option<usize>) {
        let machine = self.machine_of(result.meta());
        match result {
            AnyResult::Study(s) => {
                let s = *s;
                self.plans.push(PlanEntry {
                    dir: path
                        .parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|| PathBuf::from(".")),
                    path,
                    meta: s.meta,
                    plan: s.result,
                    machine,
                });
            }
            result => {
                if matches!(result, AnyResult::Machine(_)) && self.machines[machine].sys.is_none() {
                    self.machines[machine].sys = Some(self.results.len());
                }
                self.results.push(Entry {
                    path,
                    result,
                    machine,
                    plan,
                });
            }
        }
    }
}

/// Whether a file in a directory is a leftover of an interrupted atomic write (`.name.tmp`, see
/// `hugewise_sys::file`) or otherwise hidden, and so not a result.
fn is_temporary(name: &str) -> bool {
    name.starts_with('.') || name.ends_with(".tmp")
}

/// The result files of a directory: its `*.json` files, not hidden, by name.
fn json_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io)? {
        let e = e.map_err(io)?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if is_temporary(&name) || !name.ends_with(".json") {
            continue;
        }
        let path = e.path();
        if path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Read every result under `paths`: each is a result file, or a directory whose `*.json`
/// files (and those of its `runs/` folder) are results. A directory holding `study.json` is a
/// study: the results found in it are its runs. Hidden files and leftovers of interrupted
/// atomic writes are skipped; any other file that is not a hugewise result is an error naming
/// it, as is a directory holding no result. A file named twice is read once. Each file is read
/// by `read` (`hugewise_sys::read::result`, which bounds what it reads).
pub fn load(
    paths: &[PathBuf],
    read: &dyn Fn(&Path) -> Result<AnyResult, Error>,
) -> Result<Collection, Error> {
    let mut c = Collection::default();
    let mut seen = BTreeSet::new();
    let mut first_time = |p: &Path| seen.insert(std::fs::canonicalize(p).unwrap_or(p.into()));
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        if !meta.is_dir() {
            if first_time(path) {
                c.add(path.clone(), read(path)?, None);
            }
            continue;
        }
        let mut files = json_files(path)?;
        let runs = path.join("runs");
        if runs.is_dir() {
            files.extend(json_files(&runs)?);
        }
        if files.is_empty() {
            return Err(Error::Invalid {
                field: path.display().to_string(),
                what: "no result files (*.json) in this directory or its runs/ folder".into(),
            });
        }
        let mut found = Vec::new();
        for f in files {
            if first_time(&f) {
                found.push((read(&f)?, f));
            }
        }
        // The plan first, so that the runs beside it can name it.
        let plan = found
            .iter()
            .position(|(r, _)| matches!(r, AnyResult::Study(_)));
        let plan_index = plan.map(|i| {
            let (r, f) = found.remove(i);
            c.add(f, r, None);
            c.plans.len() - 1
        });
        for (r, f) in found {
            let plan = match &r {
                AnyResult::Study(_) => None,
                _ => plan_index,
            };
            c.add(f, r, plan);
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `load` reading as `hugewise_sys::read::result` does, less the bound: this crate sits
    /// below sys.
    fn load(paths: &[PathBuf]) -> Result<Collection, Error> {
        super::load(paths, &|p| {
            crate::parse(p, &std::fs::read_to_string(p).expect("read"))
        })
    }

    fn fixture(kind: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{kind}.json"))
    }

    fn with_host(kind: &str, host: &str, run: Option<&str>) -> String {
        let text = std::fs::read_to_string(fixture(kind)).expect("fixture");
        let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
        v["meta"]["host"] = host.into();
        if let Some(id) = run {
            v["meta"]["study"] = serde_json::json!({
                "preset": "quick", "run": id, "label": id,
                "shape": {"fragment": null, "free_beyond_footprint_bytes": null},
                "shaped": null
            });
        }
        v.to_string()
    }

    fn plan(host: &str) -> String {
        let meta: serde_json::Value = serde_json::from_str::<serde_json::Value>(
            &std::fs::read_to_string(fixture("sys")).expect("fixture"),
        )
        .expect("json")["meta"]
            .clone();
        let mut meta = meta;
        meta["host"] = host.into();
        serde_json::json!({
            "schema": "hugewise/study", "schema_version": 1, "meta": meta,
            "preset": "quick", "question": "q", "reproduces": "r", "quick": true,
            "repeat": 1, "threads": 1, "estimate_s": 1.0, "claims": [],
            "runs": [
                {"id": "b", "label": "b", "shape": {}, "estimate_s": 1.0,
                 "work": {"kind": "faultlat", "size_bytes": 1, "policy": "thp", "then_collapse": false}},
                {"id": "a", "label": "a", "shape": {}, "estimate_s": 1.0,
                 "work": {"kind": "faultlat", "size_bytes": 1, "policy": "base", "then_collapse": false}}
            ]
        })
        .to_string()
    }

    fn study_dir(root: &Path, host: &str) -> PathBuf {
        let d = root.join(host);
        std::fs::create_dir_all(d.join("runs")).expect("mkdir");
        std::fs::write(d.join("study.json"), plan(host)).expect("write");
        std::fs::write(
            d.join("runs/a.json"),
            with_host("bench-pages", host, Some("a")),
        )
        .expect("write");
        std::fs::write(
            d.join("runs/b.json"),
            with_host("faultlat", host, Some("b")),
        )
        .expect("write");
        // What an interrupted atomic write leaves, and a report written beside the runs.
        std::fs::write(d.join("runs/.c.json.123.tmp"), "{\"half").expect("write");
        std::fs::write(d.join("report.html"), "<html>").expect("write");
        d
    }

    #[test]
    fn study_directories_from_two_machines_merge_and_keep_machines_apart() {
        let root = tempfile::tempdir().expect("tmp");
        let a = study_dir(root.path(), "alpha");
        let b = study_dir(root.path(), "beta");
        let c = load(&[a.clone(), b, fixture("sim")]).expect("load");
        assert_eq!(c.plans.len(), 2);
        assert_eq!(c.results.len(), 5);
        assert_eq!(
            c.machines.len(),
            3,
            "alpha, beta, and the fixture's (no host)"
        );
        assert_eq!(c.machines[0].name(), "alpha");
        assert_eq!(c.machines[1].name(), "beta");
        assert_eq!(c.machines[2].name(), "AMD EPYC");
        assert_eq!(c.plans[0].dir, a);
        let runs = c.runs_of(0);
        let ids: Vec<String> = runs.iter().map(|e| e.run_id()).collect();
        assert_eq!(ids, ["b", "a"], "in the plan's order");
        assert!(runs.iter().all(|e| e.machine == 0));
        assert_eq!(c.loose().len(), 1);
        assert_eq!(c.machines[0].kernels, ["6.18.44-fc-v669"]);
    }

    #[test]
    fn a_file_named_twice_is_read_once() {
        let root = tempfile::tempdir().expect("tmp");
        let a = study_dir(root.path(), "alpha");
        let c = load(&[a.join("runs/a.json"), a]).expect("load");
        assert_eq!(c.results.len(), 2);
    }

    #[test]
    fn a_file_that_is_not_a_result_is_an_error_naming_it() {
        let root = tempfile::tempdir().expect("tmp");
        let a = study_dir(root.path(), "alpha");
        std::fs::write(a.join("runs/notes.json"), "{\"a\": 1}").expect("write");
        let e = load(&[a]).expect_err("not a result");
        assert!(e.to_string().contains("notes.json"), "{e}");
    }

    #[test]
    fn a_directory_without_results_is_an_error() {
        let root = tempfile::tempdir().expect("tmp");
        let e = load(&[root.path().to_path_buf()]).expect_err("empty");
        assert!(e.to_string().contains("no result files"), "{e}");
        let e = load(&[root.path().join("missing.json")]).expect_err("missing");
        assert!(e.to_string().contains("missing.json"), "{e}");
    }

    #[test]
    fn a_sys_report_is_its_machines() {
        let c = load(&[fixture("sys"), fixture("faultlat")]).expect("load");
        assert_eq!(c.machines.len(), 1);
        assert_eq!(c.machines[0].sys, Some(0));
    }
}
