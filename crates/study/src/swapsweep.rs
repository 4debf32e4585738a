//! A study's `swap` run: one kernel on one graph held to several shares of its footprint in
//! memory, at several thread overcommit factors. Each point is a whole `hugewise run --memory`
//! (a supervisor here, a worker process in the memory cgroup, swap made and removed per
//! point, see [`hugewise_bench::run::memory`]), so a point that is OOM-killed costs that point
//! only.
//!
//! The worker is this program's own `run` command: [`worker_args`] writes its command line,
//! the one place outside the binary that knows those flags.

use std::path::{Path, PathBuf};

use hugewise_bench::run::memory::{self, SwapSource};
use hugewise_bench::{Error, Result};
use hugewise_env::Host;
use hugewise_results::swapstudy::{SwapPoint, SwapStudy};

/// Where a study run's points put their swap file (made and removed by each point): one path
/// per run, so that runs of one study started side by side (Slurm tasks) do not collide.
pub fn swap_file(run_id: &str) -> PathBuf {
    PathBuf::from(format!("/var/tmp/hugewise-study-{run_id}.swap"))
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The hugewise program (its `run` command is the worker).
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

/// One point's worker: `hugewise run` held to `share`, at `factor`, with telemetry, printing
/// its result as JSON for the supervisor. Its threads are `factor` per CPU of the machine (or
/// of the cgroup's cpuset), as `run --overcommit` gives them.
pub fn worker_args(c: &Config, share: f64, factor: &str) -> Vec<String> {
    // `auto` explores for up to one trial per factor before it settles; the trials after
    // that are its steady state, as many as a fixed factor's.
    let trials = match factor {
        "auto" => c.trials + hugewise_bench::run::overcommit::FACTORS.len() as u32,
        _ => c.trials,
    };
    let mut a: Vec<String> = vec![
        c.exe.display().to_string(),
        "run".into(),
        c.kernel.clone(),
        "--graph".into(),
        c.graph.display().to_string(),
        "--seed".into(),
        c.seed.to_string(),
        "--trials".into(),
        trials.to_string(),
        "--pages".into(),
        c.pages.clone(),
        "--memory".into(),
        share.to_string(),
        "--overcommit".into(),
        factor.to_string(),
        "--swap-file".into(),
        c.swap_file.display().to_string(),
        "--telemetry".into(),
        "--json".into(),
        "--no-progress".into(),
    ];
    if let Some(n) = c.page_cluster {
        a.extend(["--page-cluster".into(), n.to_string()]);
    }
    if let Some(m) = &c.reorder {
        a.extend(["--reorder".into(), m.clone()]);
    }
    if let Some(d) = &c.reorder_cache {
        a.extend(["--reorder-cache".into(), d.display().to_string()]);
    }
    a.push("--contained".into());
    a
}

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
            let point =
                match memory::supervise(&host, &plan, &worker_args(c, share, factor), cancel) {
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
    fn the_worker_runs_this_programs_run_command_contained() {
        let c = Config {
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
        let a = worker_args(&c, 0.3, "auto");
        let s = a.join(" ");
        assert!(s.starts_with("/usr/bin/hugewise run bfs --graph /s/graphs/kron-20-seed1.hwg"));
        assert!(s.contains("--memory 0.3 "), "{s}");
        assert!(s.contains(
            "--overcommit auto --swap-file /var/tmp/hugewise-study-swap-bfs-kron20.swap"
        ));
        assert!(s.contains("--page-cluster 0 --reorder dbg"), "{s}");
        assert!(s.contains("--reorder-cache /s/graphs/reordered"), "{s}");
        assert!(
            s.contains("--trials 8 "),
            "auto explores beside its 3 trials: {s}"
        );
        assert!(worker_args(&c, 0.3, "4").join(" ").contains("--trials 3 "));
        assert_eq!(a.last().map(String::as_str), Some("--contained"));
    }
}
