//! Graphs bigger than memory: a run held to a share of its footprint in a memory cgroup, with
//! swap that hugewise makes and removes.
//!
//! Two processes. The *supervisor* (the `hugewise run --memory` the user started, or a study's
//! point) holds every change to the machine in an env [`Session`] and never enters the cgroup;
//! the *worker* (a `hugewise worker` given a contained [`RunRequest`], spawned by it) loads
//! the graph outside the limit, says how large its arrays are, is given a cgroup, moves itself
//! in, copies the graph into memory charged there, and runs the trials. So an OOM kill or a
//! crash of the worker, or Ctrl-C, ends only the worker: the supervisor removes the cgroup and
//! the swap file and puts `vm.page-cluster` back. If the supervisor itself is killed, the
//! worker dies with it and `hugewise env restore` undoes what the journal holds.
//!
//! Why copy after the move: a page is charged to the cgroup of the process that faulted it in
//! and stays charged there when the process moves. cgroup v1 could move charges with a task
//! (`memory.move_charge_at_immigrate`), but kernels since 6.8 deprecate it and current ones
//! refuse to set it (checked on 6.18: EINVAL), and v2 never had it. Loading inside the limit
//! instead would swap the loader's temporary arrays too. A copy costs one pass over the graph,
//! timed apart as `settle_ns`.
//!
//! The protocol on the worker's stdin and stdout, after the request line
//! ([`crate::worker`]), one line each way before the result:
//! worker → `footprint <total bytes> <per-vertex bytes> <other locked bytes>`;
//! supervisor → `cgroup <limit bytes> <share> <path>` or `abort`; then the worker prints its
//! result as JSON and exits.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hugewise_env::cgroup;
use hugewise_env::journal::Lifetime;
use hugewise_env::{swapfile, Host, Knob, Session};
use hugewise_results::run::RunReport;
pub use hugewise_results::telemetry::{MemoryLimit, StatsFlush};
use hugewise_sys::process::Signal;

use crate::run::{Contained, Footprint};
use crate::worker::{self, Request, RunRequest};
use crate::{Error, Result};

/// Memory the kernel needs resident beside its per-vertex arrays to make progress: page
/// tables, the threads' stacks and frontier chunks, the binary.
pub const PROGRESS_SLACK: u64 = 64 << 20;
/// Free disk a swap file must leave.
pub const DISK_SPARE: u64 = 1 << 30;
/// Swap beyond what the limit leaves out, for the kernel's arrays made during the warm-up.
pub const SWAP_SLACK: u64 = 256 << 20;

/// Where the swap comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwapSource {
    /// A swap file made at this path for the run and removed after it.
    File(PathBuf),
    /// The swap already on.
    Existing,
}

/// A run under a memory limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Share of the footprint allowed (0..1].
    pub share: f64,
    /// Where swap comes from.
    pub swap: SwapSource,
    /// `vm.page-cluster` for the run.
    pub page_cluster: Option<u32>,
    /// Read the cgroup's `memory.stat` this often while the run runs (`None`: never); see
    /// [`StatsFlusher`].
    pub stats_flush: Option<Duration>,
}

pub use hugewise_env::flush::{StatsFlusher, STATS_FLUSH};

/// What can be checked before the worker starts: root, a memory cgroup hierarchy, a place for
/// the swap file (or swap already on), no leftovers of an earlier run.
pub fn precheck(host: &Host, plan: &Plan) -> Result<()> {
    host.require_root("a run under --memory", "a memory cgroup and swap")
        .map_err(Error::from_env)?;
    cgroup::Hierarchy::find(host).map_err(Error::from_env)?;
    match &plan.swap {
        SwapSource::Existing => {
            if host.proc.swaps()?.is_empty() {
                return Err(Error::Config(
                    "no swap is on (and --swap none keeps hugewise from making any): the run \
                     would be OOM-killed instead of swapping"
                        .into(),
                ));
            }
        }
        SwapSource::File(p) => {
            if p.exists() {
                return Err(Error::from_env(swapfile::exists(
                    p,
                    "choose another --swap-file, or `hugewise env restore` if an earlier run \
                     left it",
                )));
            }
            swapfile::check_location(host, p, swapfile::MIN_BYTES, DISK_SPARE)
                .map_err(Error::from_env)?;
        }
    }
    Ok(())
}

/// The cgroup limit for `share` of `fp`, or why it is too small to make progress.
pub fn limit_for(share: f64, fp: &Footprint) -> Result<u64> {
    let limit = ((fp.total_bytes() as f64 * share).ceil() as u64).div_ceil(4096) * 4096;
    let need = fp.floor_bytes() + PROGRESS_SLACK;
    if limit < need {
        let at_least = (need as f64 / fp.total_bytes().max(1) as f64 * 100.0).ceil();
        let vertex_share = fp.vertex_bytes as f64 / fp.total_bytes().max(1) as f64;
        return Err(Error::Config(format!(
            "--memory {:.0}% is {} MiB of the {} MiB footprint, below the {} MiB the kernel needs \
             to make progress (its per-vertex arrays, {} MiB, which every step touches,{} and {} \
             MiB besides): {}",
            share * 100.0,
            limit >> 20,
            fp.total_bytes() >> 20,
            need >> 20,
            fp.vertex_bytes >> 20,
            if fp.locked_other_bytes > 0 {
                format!(" {} MiB locked by +lock,", fp.locked_other_bytes >> 20)
            } else {
                String::new()
            },
            PROGRESS_SLACK >> 20,
            if at_least <= 100.0 {
                format!("give at least {at_least:.0}%")
            } else if vertex_share >= share {
                // A sparse graph (a road network: under 3 arcs a vertex) keeps most of its
                // footprint in per-vertex arrays: no size of it runs at this share.
                format!(
                    "these arrays alone are {:.1}% of the footprint, so a graph of this shape \
                     cannot run at {:.0}% at any size: give more than {:.1}% on a graph large \
                     enough that the {} MiB besides fit too",
                    vertex_share * 100.0,
                    share * 100.0,
                    vertex_share * 100.0,
                    PROGRESS_SLACK >> 20
                )
            } else if fp.locked_other_bytes > 0 {
                format!(
                    "lock less: +lock holds {} MiB outside the per-vertex arrays",
                    fp.locked_other_bytes >> 20
                )
            } else {
                // The same shape, larger: its share of the footprint past the per-vertex
                // arrays must hold the slack.
                let fits = PROGRESS_SLACK as f64 / (share - vertex_share);
                format!(
                    "the graph is too small to run short of memory: take one of the same shape \
                     with a footprint of at least {} MiB",
                    (fits / (1 << 20) as f64).ceil()
                )
            }
        )));
    }
    Ok(limit)
}

/// Swap for the run: twice what the limit leaves out, and some. Once swap is more than half
/// full the kernel frees a page's swap slot when it reads the page back (`vm_swap_full`), so
/// even a page that was never written must be written out again when it is next evicted; with
/// swap at most half full, read-only arrays such as the edges are written once.
pub fn swap_bytes_for(limit: u64, fp: &Footprint) -> u64 {
    (2 * fp.total_bytes().saturating_sub(limit) + SWAP_SLACK).div_ceil(1 << 20) << 20
}

fn read_line(r: &mut dyn BufRead) -> Result<Option<String>> {
    let mut line = String::new();
    let n = r
        .read_line(&mut line)
        .map_err(|e| Error::Config(format!("reading from the worker: {e}")))?;
    Ok((n > 0).then(|| line.trim_end().to_string()))
}

fn parse_footprint(line: &str) -> Option<Footprint> {
    let mut f = line.strip_prefix("footprint ")?.split(' ');
    let total: u64 = f.next()?.parse().ok()?;
    let vertex_bytes: u64 = f.next()?.parse().ok()?;
    let locked_other_bytes: u64 = f.next()?.parse().ok()?;
    Some(Footprint {
        graph_bytes: total,
        kernel_bytes: 0,
        vertex_bytes,
        locked_other_bytes,
    })
}

/// Run `request` in a worker (`exe worker`, this program) under `plan`: answer its footprint
/// with a memory cgroup and swap, wait for its result, and put everything back, also on error,
/// cancellation and when the worker is killed.
pub fn supervise(
    host: &Host,
    plan: &Plan,
    exe: &Path,
    request: &RunRequest,
    cancel: &dyn Fn() -> bool,
) -> Result<RunReport> {
    precheck(host, plan)?;
    let mut session = Session::open(host, Lifetime::Run).map_err(Error::from_env)?;
    let mut child = worker::start(exe, hugewise_sys::process::tie_to_parent)?;
    let pid = child.id() as i32;
    let argv = [exe.display().to_string(), worker::COMMAND.to_string()];
    let seq = match session.record_command(pid, &argv) {
        Ok(s) => s,
        Err(e) => {
            let _ = hugewise_sys::process::signal_group(pid, Signal::Kill);
            let _ = child.wait();
            return Err(Error::from_env(e));
        }
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(Error::Config("the worker has no pipes".into()));
    };
    let mut out = BufReader::new(stdout);
    let mut limit = None;
    let answer = (|| -> Result<()> {
        let contained = RunRequest {
            contained: true,
            ..request.clone()
        };
        worker::send_first(&mut stdin, &Request::Run(contained))?;
        let Some(line) = read_line(&mut out)? else {
            return Err(Error::Config(
                "the run ended before its graph was loaded (see above)".into(),
            ));
        };
        let fp = parse_footprint(&line)
            .ok_or_else(|| Error::Config(format!("the worker said {line:?}")))?;
        let l = limit_for(plan.share, &fp)?;
        let mut rec = MemoryLimit {
            share: plan.share,
            footprint_bytes: fp.total_bytes(),
            limit_bytes: l,
            cgroup: PathBuf::new(),
            swap_file: None,
            swap_bytes: None,
            page_cluster: plan.page_cluster,
            settle_ns: 0,
            peak_bytes: None,
            limit_hits: None,
            oom_kills: None,
            stats_flush: None,
        };
        let swap = swap_bytes_for(l, &fp);
        match &plan.swap {
            SwapSource::File(p) => {
                swapfile::check_location(host, p, swap, DISK_SPARE).map_err(Error::from_env)?;
                rec.swap_file = Some(p.clone());
                rec.swap_bytes = Some(swap);
            }
            SwapSource::Existing => {
                let free: u64 = host
                    .proc
                    .swaps()?
                    .iter()
                    .map(|a| a.size_bytes.saturating_sub(a.used_bytes))
                    .sum();
                if free < (swap - SWAP_SLACK) / 2 {
                    return Err(Error::Config(format!(
                        "the swap on has {} MiB free, the run needs about {} MiB: it would be \
                         OOM-killed (use --swap auto)",
                        free >> 20,
                        ((swap - SWAP_SLACK) / 2) >> 20
                    )));
                }
            }
        }
        if cancel() {
            return Err(Error::Interrupted);
        }
        // Every check passed: now the machine changes, each change journaled first.
        if let Some(n) = plan.page_cluster {
            session
                .set(Knob::PageCluster, &n.to_string())
                .map_err(Error::from_env)?;
        }
        if let SwapSource::File(p) = &plan.swap {
            session.add_swap(p, swap).map_err(Error::from_env)?;
        }
        let cg = session.create_cgroup(l).map_err(Error::from_env)?;
        rec.cgroup = cg.path.clone();
        writeln!(stdin, "cgroup {l} {} {}", plan.share, cg.path.display())
            .and_then(|()| stdin.flush())
            .map_err(|e| Error::Config(format!("answering the worker: {e}")))?;
        limit = Some((cg, rec));
        Ok(())
    })();
    if answer.is_err() {
        let _ = writeln!(stdin, "abort");
    }
    drop(stdin);
    // The result comes on stdout; read it beside the wait so a full pipe never blocks it.
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let stop_worker = || cancel() || answer.is_err();
    let flusher = match (&limit, plan.stats_flush) {
        (Some((cg, _)), Some(every)) => Some(StatsFlusher::start(&cg.path, every)),
        _ => None,
    };
    let status = hugewise_env::group::wait_or_end(&mut child, pid, &stop_worker).ok();
    let flushed = flusher.and_then(StatsFlusher::finish);
    let text = reader.join().unwrap_or_default();
    let _ = session.end_command(seq);
    let usage = limit.as_ref().map(|(cg, _)| cg.usage());
    if let Some((cg, _)) = &limit {
        let _ = cgroup::remove(&cg.path);
    }
    let restored = session.restore();
    if let Some(f) = restored.failed.first() {
        return Err(Error::Config(format!(
            "could not put back {}: {} (run `hugewise env restore`)",
            f.change, f.outcome
        )));
    }
    answer?;
    if cancel() {
        return Err(Error::Interrupted);
    }
    let oom = usage.as_ref().and_then(|u| u.oom_kills).unwrap_or(0);
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) if s.success() => {}
        Some(s) if oom > 0 => {
            return Err(Error::Config(format!(
                "the run was OOM-killed in its cgroup ({} MiB) ({s}): swap ran out, or the \
                 kernel found no page to reclaim (a share close to the whole footprint, or \
                 --page-cluster 0, can end this way with swap to spare: try a smaller share); \
                 the machine is put back",
                limit.as_ref().map_or(0, |(_, r)| r.limit_bytes >> 20)
            )))
        }
        Some(s) => {
            return Err(Error::Config(format!(
                "the run failed ({}); the machine is put back",
                s.signal()
                    .map_or_else(|| s.to_string(), |n| format!("killed by signal {n}"))
            )))
        }
        None => return Err(Error::Config("lost the worker".into())),
    }
    let mut report: RunReport = serde_json::from_str(&text)
        .map_err(|e| Error::Config(format!("the worker's result: {e}")))?;
    if let (Some((_, mut rec)), Some(u)) = (limit, usage) {
        if let Some(m) = &report.memory {
            rec.settle_ns = m.settle_ns;
        }
        rec.peak_bytes = u.peak_bytes;
        rec.limit_hits = u.limit_hits;
        rec.oom_kills = u.oom_kills;
        rec.stats_flush = flushed;
        report.memory = Some(rec);
    }
    Ok(report)
}

/// The worker's side, once its graph is loaded: tell the supervisor the footprint, wait for a
/// cgroup, and move this process into it.
pub fn contain_worker(
    fp: &Footprint,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Result<Contained> {
    writeln!(
        output,
        "footprint {} {} {}",
        fp.total_bytes(),
        fp.vertex_bytes,
        fp.locked_other_bytes
    )
    .and_then(|()| output.flush())
    .map_err(|e| Error::Config(format!("telling the supervisor: {e}")))?;
    let line = read_line(input)?.unwrap_or_default();
    let parsed = (|| {
        let rest = line.strip_prefix("cgroup ")?;
        let (l, rest) = rest.split_once(' ')?;
        let (share, path) = rest.split_once(' ')?;
        Some((
            l.parse::<u64>().ok()?,
            share.parse::<f64>().ok()?,
            PathBuf::from(path),
        ))
    })();
    let Some((limit_bytes, share, path)) = parsed else {
        return Err(Error::Config(format!(
            "the supervisor refused the run ({})",
            if line.is_empty() { "no answer" } else { &line }
        )));
    };
    join(&path)?;
    Ok(Contained {
        cgroup: path.clone(),
        limit: MemoryLimit {
            share,
            footprint_bytes: fp.total_bytes(),
            limit_bytes,
            cgroup: path,
            swap_file: None,
            swap_bytes: None,
            page_cluster: None,
            settle_ns: 0,
            peak_bytes: None,
            limit_hits: None,
            oom_kills: None,
            stats_flush: None,
        },
    })
}

/// Move this whole process (every thread) into the cgroup at `path`.
fn join(path: &Path) -> Result<()> {
    let procs = path.join("cgroup.procs");
    std::fs::write(&procs, std::process::id().to_string())
        .map_err(|e| Error::Config(format!("joining {}: {e}", procs.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(total: u64, vertex: u64) -> Footprint {
        Footprint {
            graph_bytes: total,
            kernel_bytes: 0,
            vertex_bytes: vertex,
            locked_other_bytes: 0,
        }
    }

    #[test]
    fn locked_arrays_raise_the_floor() {
        let f = Footprint {
            locked_other_bytes: 300 << 20,
            ..fp(1000 << 20, 100 << 20)
        };
        assert_eq!(limit_for(0.5, &f).expect("half"), 500 << 20);
        let e = limit_for(0.4, &f).expect_err("locked");
        assert!(e.to_string().contains("300 MiB locked by +lock"), "{e}");
        assert!(e.to_string().contains("give at least 47%"), "{e}");
    }

    #[test]
    fn limits_below_progress_are_refused_with_the_share_that_would_do() {
        let f = fp(1000 << 20, 100 << 20);
        assert_eq!(limit_for(0.5, &f).expect("half"), 500 << 20);
        let e = limit_for(0.1, &f).expect_err("too small");
        assert!(e.to_string().contains("give at least 17%"), "{e}");
        assert_eq!(swap_bytes_for(500 << 20, &f), 1256 << 20);
    }

    #[test]
    fn a_graph_too_small_is_told_apart_from_one_too_sparse_for_the_share() {
        // road:1000x1000 under BFS: 26 MiB, 15 MiB of it per-vertex arrays.
        let road = fp(26 << 20, 15 << 20);
        let e = limit_for(0.5, &road).expect_err("sparse").to_string();
        assert!(e.contains("alone are 57.7% of the footprint"), "{e}");
        assert!(e.contains("cannot run at 50% at any size"), "{e}");
        // At 65 % the shape would do; this one is too small for the 64 MiB besides, which take
        // a footprint of 64 MiB / (0.65 - 15/26) = 875.8 MiB.
        let e = limit_for(0.65, &road).expect_err("small").to_string();
        assert!(e.contains("too small to run short of memory"), "{e}");
        assert!(e.contains("footprint of at least 876 MiB"), "{e}");
        // Locking cannot be the way out of a share below the per-vertex arrays.
        let locked = Footprint {
            locked_other_bytes: 4 << 20,
            ..road
        };
        let e = limit_for(0.5, &locked).expect_err("sparse").to_string();
        assert!(e.contains("at any size") && !e.contains("lock less"), "{e}");
        // The same shape, 36 times larger (road:6000x6000), runs at 70 %.
        assert!(limit_for(0.7, &fp(936 << 20, 540 << 20)).is_ok());
    }

    #[test]
    fn the_protocol_round_trip() {
        let f = Footprint {
            locked_other_bytes: 7 << 20,
            ..fp(3 << 30, 1 << 20)
        };
        let mut said = Vec::new();
        let mut answer = "abort\n".as_bytes();
        let e = contain_worker(&f, &mut answer, &mut said).expect_err("refused");
        assert!(e.to_string().contains("refused"), "{e}");
        let line = String::from_utf8(said).expect("utf8");
        let back = parse_footprint(line.trim_end()).expect("parse");
        assert_eq!(
            (
                back.total_bytes(),
                back.vertex_bytes,
                back.locked_other_bytes
            ),
            (3 << 30, 1 << 20, 7 << 20)
        );
        let mut bad = "cgroup 1 0.5 /no/such/cgroup\n".as_bytes();
        let e = contain_worker(&f, &mut bad, &mut Vec::new()).expect_err("no cgroup");
        assert!(e.to_string().contains("joining"), "{e}");
    }
}
