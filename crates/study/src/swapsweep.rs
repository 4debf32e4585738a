//! A study's `swap` run: one kernel on one graph held to several shares of its footprint in
//! memory, at several thread overcommit factors. Each point is a whole `hugewise run --memory`
//! (a supervisor here, a worker process in the memory cgroup, swap made and removed per
//! point, see [`hugewise_bench::run::memory`]), so a point that is OOM-killed costs that point
//! only.
//!
//! Each point's worker is a [`RunRequest`] served by this program's `worker` command:
//! [`request`] builds it from the study's settings, typed, so no command line is involved.

use std::path::{Path, PathBuf};

use std::time::Duration;

use hugewise_bench::run::memory::{self, SwapSource};
use hugewise_bench::run::{self, overcommit};
use hugewise_bench::worker::RunRequest;
use hugewise_bench::{Error, Result};
use hugewise_env::Host;
use hugewise_graph::cache::Cache;
use hugewise_graph::kernels::Spec;
use hugewise_graph::load::{Input, LoadOptions};
use hugewise_graph::reorder::Method;
use hugewise_graph::Layout;
use hugewise_results::swapstudy::{SwapPoint, SwapStudy};

/// Where a study run's points put their swap file (made and removed by each point): one path
/// per run, so that runs of one study started side by side (Slurm tasks) do not collide.
pub fn swap_file(run_id: &str) -> PathBuf {
    PathBuf::from(format!("/var/tmp/hugewise-study-{run_id}.swap"))
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The hugewise program (its `worker` command serves each point).
    pub exe: PathBuf,
    /// The graph as the study names it.
    pub graph_spec: String,
    /// The graph file the workers load.
    pub graph: PathBuf,
    /// Seed of source picking.
    pub seed: u64,
    /// Kernel name.
    pub kernel: String,
    /// Page policies of every array.
    pub pages: String,
    /// Vertex order (`dbg`), or `None` for the graph's own.
    pub reorder: Option<String>,
    /// Where the workers keep and find the reordered graph (`--reorder-cache`).
    pub reorder_cache: Option<PathBuf>,
    /// Shares of the footprint, largest first.
    pub shares: Vec<f64>,
    /// Overcommit factors (`1`, `4`, `auto`).
    pub factors: Vec<String>,
    /// `vm.page-cluster` for the points.
    pub page_cluster: Option<u32>,
    /// Trials of each point.
    pub trials: u32,
    /// The swap file each point makes and removes.
    pub swap_file: PathBuf,
}

/// One point's worker: the kernel's trials at `factor`, with telemetry, for a supervisor that
/// holds it to its share. Its threads are `factor` per CPU of this machine (the worker runs
/// here too), as `run --overcommit` gives them; `auto` starts at one per CPU and chooses.
pub fn request(c: &Config, factor: &str) -> Result<RunRequest> {
    let bad = |what: String| Error::Config(format!("the swap run's {what}"));
    let (per_cpu, auto) = match factor {
        "auto" => (1, true),
        f => match f.parse::<usize>() {
            Ok(n) if n >= 1 => (n, false),
            _ => return Err(bad(format!("factor '{f}': a factor of 1 or more, or auto"))),
        },
    };
    // `auto` explores for up to one trial per factor before it settles; the trials after
    // that are its steady state, as many as a fixed factor's.
    let trials = match auto {
        true => c.trials + overcommit::FACTORS.len() as u32,
        false => c.trials,
    };
    let config = run::Config {
        input: Input::File(c.graph.clone()),
        load: LoadOptions::for_kernel(c.seed),
        layout: Layout::parse(&c.pages, "natural").map_err(|e| bad(format!("pages: {e}")))?,
        kernel: Spec::default_for(&c.kernel)
            .ok_or_else(|| bad(format!("kernel '{}' is not one", c.kernel)))?,
        reorder: c
            .reorder
            .as_deref()
            .map(str::parse::<Method>)
            .transpose()
            .map_err(|e| bad(format!("reordering: {e}")))?,
        reorder_cache: Cache::chosen(c.reorder_cache.as_deref()),
        trials,
        sources: Vec::new(),
        verify: false,
        threads: overcommit::cpus() * per_cpu,
        sample_every: None,
        replay: None,
    };
    Ok(RunRequest {
        telemetry: Some(TELEMETRY),
        auto_overcommit: auto,
        ..RunRequest::new(config)
    })
}

/// How often a point samples its telemetry (`run --telemetry`'s default).
const TELEMETRY: Duration = Duration::from_millis(100);

/// Every share × factor, in this order: shares largest first; factors in the order given at
/// even shares and reversed at odd ones, so that no factor always runs first on a fresh swap
/// file. `done(i, n)` hears each finished point.
pub fn run(
    c: &Config,
    done: &mut dyn FnMut(usize, usize),
    cancel: &dyn Fn() -> bool,
) -> Result<SwapStudy> {
    if !Path::new(&c.exe).exists() {
        return Err(Error::Config(format!(
            "the worker program {} does not exist",
            c.exe.display()
        )));
    }
    let host = Host::real();
    let total = c.shares.len() * c.factors.len();
    let mut points = Vec::with_capacity(total);
    for (i, &share) in c.shares.iter().enumerate() {
        let mut factors: Vec<&String> = c.factors.iter().collect();
        if i % 2 == 1 {
            factors.reverse();
        }
        for factor in factors {
            if cancel() {
                return Err(Error::Interrupted);
            }
            let plan = memory::Plan {
                share,
                swap: SwapSource::File(c.swap_file.clone()),
                page_cluster: c.page_cluster,
                stats_flush: Some(memory::STATS_FLUSH),
            };
            let point = match request(c, factor)
                .and_then(|r| memory::supervise(&host, &plan, &c.exe, &r, cancel))
            {
                Ok(r) => SwapPoint {
                    share,
                    factor: factor.clone(),
                    run: Some(r),
                    error: None,
                },
                Err(Error::Interrupted) => return Err(Error::Interrupted),
                Err(e) => SwapPoint {
                    share,
                    factor: factor.clone(),
                    run: None,
                    error: Some(e.to_string()),
                },
            };
            points.push(point);
            done(points.len(), total);
        }
    }
    // Nothing ran: the cause is the machine's (no cgroup, a file in the way), not a point's;
    // fail the run so that --resume tries it again.
    if points.iter().all(|p| p.run.is_none()) {
        let why = points
            .iter()
            .find_map(|p| p.error.clone())
            .unwrap_or_else(|| "no point to run".into());
        return Err(Error::Config(format!(
            "every point failed; the first: {why}"
        )));
    }
    Ok(SwapStudy {
        graph_spec: c.graph_spec.clone(),
        kernel: c.kernel.clone(),
        pages: c.pages.clone(),
        reorder: c.reorder.clone(),
        page_cluster: c.page_cluster,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_point_is_a_typed_run_of_the_graph_file() {
        let mut c = Config {
            exe: "/usr/bin/hugewise".into(),
            graph_spec: "kron:20".into(),
            graph: "/s/graphs/kron-20-seed1.hwg".into(),
            seed: 1,
            kernel: "bfs".into(),
            pages: "all=thp".into(),
            reorder: Some("dbg".into()),
            reorder_cache: Some("/s/graphs/reordered".into()),
            shares: vec![1.0, 0.3],
            factors: vec!["1".into(), "auto".into()],
            page_cluster: Some(0),
            trials: 3,
            swap_file: swap_file("swap-bfs-kron20"),
        };
        let auto = request(&c, "auto").expect("auto");
        assert_eq!(auto.config.input, Input::File(c.graph.clone()));
        assert_eq!(auto.config.layout.pages.to_string(), "all=thp");
        assert_eq!(auto.config.reorder, Some(Method::Dbg));
        assert_eq!(
            auto.config
                .reorder_cache
                .as_ref()
                .map(|r| r.dir().to_path_buf()),
            c.reorder_cache
        );
        assert_eq!(auto.config.trials, 8, "auto explores beside its 3 trials");
        assert!(auto.auto_overcommit && auto.telemetry.is_some() && !auto.config.verify);
        assert_eq!(auto.config.threads, overcommit::cpus());
        let four = request(&c, "4").expect("4");
        assert_eq!(four.config.trials, 3);
        assert!(!four.auto_overcommit);
        assert_eq!(four.config.threads, 4 * overcommit::cpus());
        for bad in ["0", "x"] {
            let e = request(&c, bad).expect_err(bad).to_string();
            assert!(e.contains(&format!("factor '{bad}'")), "{e}");
        }
        c.kernel = "dfs".into();
        assert!(request(&c, "1").is_err());
    }
}
