//! `hugewise bench faultlat`: a program's page faults alone and with the daemon collapsing
//! beside them, alternated.

use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use hugewise_bench::faultbench;
use hugewise_console::progress::{Mode, Steps, Unit};
use hugewise_mem::{Bytes, Interval, Share, ShareRange};
use hugewise_report::views::machine as view;

use crate::cli::args::{name, Output, UntilArgs};
use crate::signals::cancel_flag;

pub const HELP: &str = "Examples:
  hugewise bench faultlat                          4 GiB, 6 rounds (about two minutes)
  hugewise bench faultlat --size 1GiB --rounds 3   a quicker look, no interval
  hugewise bench faultlat --rounds 6 --until 10%   rounds until each interval is within 10 %
  hugewise bench faultlat --fault-waits 0.1%       the daemon allowed to hold up more faults
  hugewise bench faultlat --settle                 each arm once the guest has handed what the
                                                   arm before freed back to its host (a VM's
                                                   slowest start; about 20 minutes)

Each round faults a fresh region page by page with 4 KiB pages three times, in alternating
order: alone; with the online daemon collapsing the region from a process of its own
(as root; from a thread of the faulting process otherwise, see --daemon-in), paced by them (--fault-waits, as hugewise promote); and with the same daemon unpaced, every
collapse made whatever the faults. A fault that comes while the region is collapsed waits for
the collapse, so the measure is each arm's p99.9 fault latency over the alone arm's in the same
round, the median of those ratios with its 95 % interval (6 rounds at least). The target:
at most 1.5x, the interval's upper end included.

In a VM, a 4 KiB fault on memory the guest has handed back to its host (free page reporting)
costs a host fault too, about six times a guest's own at the median. A run unmeasured comes
first, and the arms run back to back (unless --settle), each faulting mostly what the one
before freed; the result says how much the guest handed back before and during each arm.";

/// Policies that act on mapped pages (the region publishes no samples).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FaultPolicyArg {
    /// Mapped and used chunks, as MEGA.
    Mega,
    /// Address order, as khugepaged.
    Linux,
}

/// Where the daemon runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DaemonInArg {
    /// A process of its own as root, else a thread.
    Auto,
    /// A process of its own.
    Process,
    /// A thread of the faulting process.
    Thread,
}

/// `hugewise bench faultlat`.
#[derive(Debug, Args)]
pub struct BenchFaultlatArgs {
    /// Region size.
    #[arg(long, default_value = "4GiB", allow_negative_numbers = true)]
    pub size: Bytes,
    /// Rounds; each runs every arm once, alternated: 6 by default, the fewest whose ratios
    /// get a 95 % interval.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// More rounds until the intervals are narrow enough.
    #[command(flatten)]
    pub until: UntilArgs,
    /// The daemon's policy.
    #[arg(long, value_enum, default_value = "mega")]
    pub policy: FaultPolicyArg,
    /// The daemon's budget, a share of the region.
    #[arg(long, default_value = "100%", value_name = "SHARE",
          value_parser = |s: &str| Share::parse_in(s, &ShareRange::POSITIVE))]
    pub budget: Share,
    /// The paced daemon's limit: most of the faults its collapses may hold up, as a share of
    /// those taken (as hugewise promote --fault-waits).
    #[arg(long, default_value = "0.02%", value_name = "SHARE",
          value_parser = |s: &str| Share::parse_in(s, &ShareRange::UNIT))]
    pub fault_waits: Share,
    /// Collapse onto whatever page the kernel gives, without first faulting one in: a
    /// collapse then pays for backing its new page while the target waits (see
    /// `hugewise promote --help`).
    #[arg(long)]
    pub no_warm: bool,
    /// The nice value the daemon's thread gives way with, 0 to 19 (as `hugewise promote
    /// --nice`).
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = crate::cli::promote::nice)]
    pub nice: i32,
    /// Time between two looks of the daemon.
    #[arg(long, default_value = "1s", value_parser = Interval::period)]
    pub interval: Duration,
    /// Run even when the region is larger than the memory available; only sensible with swap
    /// to spare.
    #[arg(long)]
    pub force: bool,
    /// Where the daemon runs: in a process of its own, as under `hugewise promote` (needs
    /// root: collapsing another process's memory takes CAP_SYS_NICE), or in a thread of the
    /// faulting process, whose memory map the daemon's own mappings then change too; `auto`
    /// takes a process as root and a thread otherwise.
    #[arg(long, value_enum, default_value = "auto")]
    pub daemon_in: DaemonInArg,
    /// Before each arm, wait until the guest's free page reporting has gone quiet (5 s still,
    /// at most a minute). In a VM whose guest hands free memory back to its host, a page handed
    /// back costs a host fault at its next first touch; by default the arms run back to back
    /// and each faults mostly the memory the one before freed, some of it still backed, as a
    /// program started after another would. With the wait, most of what the arm before freed
    /// has been handed back (the result says when a wait ran to its cap instead), and most
    /// faults pay the host's share: the slowest start such a VM gives.
    /// It applies where the kernel counts what it hands back (`reported_kib` of the
    /// page_reporting module); each wait lasts up to a minute, so a 4 GiB round takes up to about
    /// three and a half minutes longer (6 rounds took 21.6 minutes on the AMD EPYC).
    #[arg(long)]
    pub settle: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// Fault, alone and beside the daemon.
pub fn run(a: BenchFaultlatArgs, progress: Mode) -> anyhow::Result<()> {
    let cfg = faultbench::Config {
        bytes: a.size,
        rounds: a.rounds,
        until: a.until.until(),
        policy: name(a.policy),
        budget_share: a.budget.fraction(),
        fault_waits: a.fault_waits.fraction(),
        warm: !a.no_warm,
        nice: a.nice,
        interval: a.interval,
        force: a.force,
        settle: a.settle,
        daemon_in: match a.daemon_in {
            DaemonInArg::Thread => faultbench::DaemonIn::Thread,
            placement => {
                let exe =
                    std::env::current_exe().context("finding this program to run the daemon")?;
                match placement {
                    DaemonInArg::Auto => faultbench::DaemonIn::auto(Some(exe)),
                    _ => faultbench::DaemonIn::Process(exe),
                }
            }
        },
    };
    let steps = Steps::new(progress, "runs", Unit::Items);
    let cancel = cancel_flag()?;
    let r = faultbench::run(&cfg, &cancel, &mut |done, total| steps.update(done, total))
        .context("fault-latency benchmark")?;
    steps.finish();
    a.output.emit(r, view::fault_bench)
}
