//! `hugewise env`: shape this machine as real servers are, and always put it back. Arguments
//! become env-crate calls; their reports are printed and the outcome mapped to an exit code.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use anyhow::bail;
use clap::{Args, Subcommand, ValueEnum};
use hugewise_console::emit::Stream;
use hugewise_console::progress::Mode;
use hugewise_env::actions::measured;
use hugewise_env::fragment::FragmentPages;
use hugewise_env::kept::{self, require_root};
use hugewise_env::scoped::pressure_target;
use hugewise_env::scoped::{self, compact, drop_caches, hugetlb_pools, khugepaged_settings};
use hugewise_env::scoped::{CommandSpec, Plan, ProbeSize, SwapPlan, Then};
use hugewise_env::Host;
use hugewise_mem::{AutoSize, Bytes, Interval, Share, ShareRange, SizeMode};
use hugewise_report::views;

use crate::cli::args::Output;
use crate::signals::cancel_flag;

pub const HELP: &str = "\
Every change is written to a journal before it is made (old value, new value, how to undo):
HUGEWISE_STATE_DIR/journal.jsonl, by default /var/lib/hugewise/journal.jsonl. `env with`,
`env pressure`, `env fragment` and `env limit` undo their changes when they end, also on error,
Ctrl-C (SIGINT) or SIGTERM; memory they hold belongs to the hugewise process and is freed even
if it is killed. Settings made on their own (`env thp`, `env hugetlb`, `env khugepaged`,
`env page-cluster`, `env swap`) stay until `hugewise env restore`, which also undoes whatever a
killed run left behind. Everything except `env show` needs root.";

/// `hugewise env ...`.
#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// Show the settings hugewise can change, the memory state (free 2 MiB blocks,
    /// fragmentation), swap, and what the journal still has to undo.
    Show(EnvShowArgs),

    /// Set THP modes (kept until `env restore`).
    #[command(after_help = "Examples:
  hugewise env thp --enabled always
  hugewise env thp --enabled madvise --defrag defer+madvise
  hugewise env thp --size 64kB=always --size 2048kB=inherit")]
    Thp(EnvThpArgs),

    /// Resize hugetlb pools (kept until `env restore`). The kernel may find fewer pages than
    /// asked when memory is fragmented; the result says how many it found.
    #[command(after_help = "Example:
  hugewise env hugetlb --2m 512 --1g 1")]
    Hugetlb(EnvHugetlbArgs),

    /// Set khugepaged's scan rate and collapse threshold (kept until `env restore`).
    #[command(
        after_help = "Example (a khugepaged that scans hard, as some studies use):
  hugewise env khugepaged --pages-to-scan 65536 --scan-sleep-ms 100 --max-ptes-none 511"
    )]
    Khugepaged(EnvKhugepagedArgs),

    /// Set swap readahead, 2^N pages (`vm.page-cluster`; kept until `env restore`).
    PageCluster(EnvPageClusterArgs),

    /// Compact all memory now, and show free 2 MiB blocks before and after.
    Compact(EnvActionArgs),

    /// Drop the page cache now (after sync), and show memory before and after.
    DropCaches(EnvActionArgs),

    /// Create and enable a swap file (kept until `env restore`, which turns it off and deletes
    /// it).
    #[command(after_help = "Example:
  hugewise env swap --size 16GiB --file /var/tmp/hugewise.swap")]
    Swap(EnvSwapArgs),

    /// Hold memory (mlocked) so that only what is left stays available, until Ctrl-C or --for.
    #[command(after_help = "Examples:
  hugewise env pressure --leave 3GiB          hold all but 3 GiB of available memory
  hugewise env pressure --take 10GiB --for 5m

Memory is taken in 4 KiB pages: the kernel serves them from its smallest free blocks first,
so pressure alone leaves whole 2 MiB blocks for the workload. Refuses to leave less than
--floor available.")]
    Pressure(EnvPressureArgs),

    /// Make a share of free memory useless for 2 MiB pages (one kept 4 KiB page in each
    /// broken 2 MiB block), until Ctrl-C or --for.
    #[command(after_help = "Examples:
  hugewise env fragment --level 50%
  hugewise env fragment --level 90% --for 10m --probe off
  hugewise env fragment --level 90% --pages movable

The level is measured from /proc/buddyinfo (free memory in blocks under 2 MiB / all free
memory) and corrected until it is within 2 points. The kept pages are mlocked and
vm.compact_unevictable_allowed is set to 0, so compaction cannot move them (the seeds'
fragmentation); with --pages movable they are ordinary pages, as other programs' memory
breaks a busy server's free memory, and compaction (kcompactd's, a THP fault's, a collapse's)
can move them and make blocks whole again. The per-CPU free lists are kept minimal. Every
setting is put back at the end. A THP probe then shows what share of a fresh THP region still
gets 2 MiB pages (skipped for movable pages unless --probe gives a size: its faults would
compact them away).")]
    Fragment(EnvFragmentArgs),

    /// Run a command in a memory cgroup created for it and removed afterwards.
    #[command(after_help = "Example:
  hugewise env limit --memory 2GiB -- hugewise run bfs --graph kron:22

cgroup v2 is used where its root delegates the memory controller, else the v1 memory
hierarchy. While the command runs, hugewise reads the cgroup's memory.stat every 50 ms from
outside it: each read makes the kernel flush the cgroup's per-CPU statistics, which on cgroup v1
kept a locked run near its limit from being OOM-killed with swap to spare (see `run --help`,
--stats-flush). The reads are counted in the report. The exit code is the command's.")]
    Limit(EnvLimitArgs),

    /// Shape the machine, run a command in it, and put everything back.
    #[command(after_help = "Examples:
  hugewise env with --thp always -- hugewise run pr --graph kron:22
  hugewise env with --pressure-leave 2GiB --fragment 50% -- hugewise run bfs --graph kron:22
  hugewise env with --limit-memory 3GiB --swap 8GiB -- ./my-workload
  hugewise env with --fragment 25% --out shaped.json -- sleep 1
  hugewise env with --pressure-leave 10GiB --fragment 90% --fragment-pages movable -- ./my-workload

Order: settings and swap; drop caches (always when fragmenting); compaction; pressure and
fragmentation (with --fragment-pages movable, THP defrag held at never meanwhile, so that no
fault compacts the kept pages away); measure; THP probe (skipped for movable pages unless
--probe gives a size); the command; restore. With both --pressure-leave and
--fragment the level is that of the memory left: 'working set + 0.5 GiB free, 50%
fragmented' is --pressure-leave <working set + 0.5GiB> --fragment 50%.
The report goes to stderr (the command owns stdout), as JSON at the end with --json; --out
saves it as JSON. The exit code is
the command's (128 + signal if a signal ended it), 128 + signal when hugewise itself got one
(Ctrl-C: 130, SIGTERM: 143), or 1 if shaping or restoring failed.")]
    With(Box<EnvWithArgs>),

    /// Undo every change the journal still holds, newest first: settings kept on purpose and
    /// whatever a killed run left behind.
    Restore(EnvActionArgs),
}

/// `env show`.
#[derive(Debug, Args)]
pub struct EnvShowArgs {
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// Commands with only output options.
#[derive(Debug, Args)]
pub struct EnvActionArgs {
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// `env thp`.
#[derive(Debug, Args)]
pub struct EnvThpArgs {
    /// Global mode: always, madvise or never.
    #[arg(long)]
    pub enabled: Option<String>,
    /// Fault-time defrag: always, defer, defer+madvise, madvise or never.
    #[arg(long)]
    pub defrag: Option<String>,
    /// A per-size (mTHP) mode, SIZE=MODE, e.g. 64kB=always; repeatable.
    #[arg(long = "size", value_name = "SIZE=MODE")]
    pub sizes: Vec<SizeMode>,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// `env hugetlb`.
#[derive(Debug, Args)]
pub struct EnvHugetlbArgs {
    /// Pages in the 2 MiB pool.
    #[arg(long = "2m", value_name = "N")]
    pub pages_2m: Option<u64>,
    /// Pages in the 1 GiB pool.
    #[arg(long = "1g", value_name = "N")]
    pub pages_1g: Option<u64>,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// `env khugepaged`.
#[derive(Debug, Args)]
pub struct EnvKhugepagedArgs {
    /// Pages scanned per wake-up (kernel default 4096).
    #[arg(long)]
    pub pages_to_scan: Option<u64>,
    /// Sleep between scans in ms (kernel default 10000).
    #[arg(long = "scan-sleep-ms")]
    pub scan_sleep_ms: Option<u64>,
    /// Empty PTEs allowed in a range it collapses, 0..=511 (kernel default 511).
    #[arg(long)]
    pub max_ptes_none: Option<u64>,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// `env page-cluster`.
#[derive(Debug, Args)]
pub struct EnvPageClusterArgs {
    /// Readahead of 2^N pages, 0..=31 (kernel default 3).
    pub value: u32,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// `env swap`.
#[derive(Debug, Args)]
pub struct EnvSwapArgs {
    /// Size of the swap file.
    #[arg(long)]
    pub size: Bytes,
    /// Where (must not exist; never on tmpfs).
    #[arg(long, default_value = "/var/tmp/hugewise.swap")]
    pub file: PathBuf,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// Holding options shared by `env pressure` and `env fragment`.
#[derive(Debug, Args)]
pub struct HoldArgs {
    /// Never leave less than this available while shaping.
    #[arg(long, default_value = "1GiB")]
    pub floor: Bytes,
    /// Hold this long, then restore (e.g. 90s, 5m, 1h); default: until Ctrl-C.
    #[arg(long = "for", value_name = "DURATION", value_parser = Interval::span)]
    pub hold_for: Option<std::time::Duration>,
    /// Output options: the report goes to stderr as the work goes; --json prints it as JSON
    /// on stdout at the end instead.
    #[command(flatten)]
    pub output: Output,
}

/// `env pressure`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("amount").required(true).args(["leave", "take"])))]
pub struct EnvPressureArgs {
    /// Hold memory until only this much is available.
    #[arg(long)]
    pub leave: Option<Bytes>,
    /// Hold this much memory.
    #[arg(long)]
    pub take: Option<Bytes>,
    /// Holding options.
    #[command(flatten)]
    pub hold: HoldArgs,
}

/// `env fragment`.
#[derive(Debug, Args)]
pub struct EnvFragmentArgs {
    /// Share of free memory to make useless for 2 MiB pages, 0% to 95%.
    #[arg(long, value_parser = |s: &str| Share::parse_in(s, &ShareRange::FRAGMENT))]
    pub level: Share,
    /// What keeps each broken block broken: an mlocked page compaction may not move
    /// (unmovable), or an ordinary one it can move away (movable).
    #[arg(long, value_enum, default_value = "unmovable")]
    pub pages: Pages,
    /// THP probe afterwards: auto (all above the floor, at most 4 GiB), off, or a size.
    #[arg(long, default_value = "auto", value_parser = |s: &str| s.parse::<AutoSize>().map(ProbeSize::from))]
    pub probe: ProbeSize,
    /// Holding options.
    #[command(flatten)]
    pub hold: HoldArgs,
}

/// The kind of page that keeps a block broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Pages {
    /// mlocked, out of compaction's reach while shaped (the seeds' fragmentation).
    Unmovable,
    /// An ordinary anonymous page: compaction can move it.
    Movable,
}

impl From<Pages> for FragmentPages {
    fn from(p: Pages) -> FragmentPages {
        match p {
            Pages::Unmovable => FragmentPages::Unmovable,
            Pages::Movable => FragmentPages::Movable,
        }
    }
}

/// `env limit`.
#[derive(Debug, Args)]
pub struct EnvLimitArgs {
    /// Memory limit of the cgroup.
    #[arg(long)]
    pub memory: Bytes,
    /// Output options: the report goes to stderr (the command owns stdout); --json prints it
    /// there as JSON at the end instead.
    #[command(flatten)]
    pub output: Output,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `env with`.
#[derive(Debug, Args)]
pub struct EnvWithArgs {
    /// THP mode for the run.
    #[arg(long, value_name = "MODE")]
    pub thp: Option<String>,
    /// THP defrag policy for the run.
    #[arg(long, value_name = "MODE")]
    pub thp_defrag: Option<String>,
    /// A per-size (mTHP) mode, SIZE=MODE; repeatable.
    #[arg(long = "mthp", value_name = "SIZE=MODE")]
    pub mthp: Vec<SizeMode>,
    /// 2 MiB hugetlb pool size for the run.
    #[arg(long = "hugetlb-2m", value_name = "N")]
    pub hugetlb_2m: Option<u64>,
    /// 1 GiB hugetlb pool size for the run.
    #[arg(long = "hugetlb-1g", value_name = "N")]
    pub hugetlb_1g: Option<u64>,
    /// khugepaged pages_to_scan for the run.
    #[arg(long, value_name = "N")]
    pub khugepaged_pages_to_scan: Option<u64>,
    /// khugepaged scan_sleep_millisecs for the run.
    #[arg(long, value_name = "MS")]
    pub khugepaged_scan_sleep_ms: Option<u64>,
    /// khugepaged max_ptes_none for the run.
    #[arg(long, value_name = "N")]
    pub khugepaged_max_ptes_none: Option<u64>,
    /// vm.page-cluster for the run.
    #[arg(long, value_name = "N")]
    pub page_cluster: Option<u32>,
    /// vm.compaction_proactiveness (0-100) for the run.
    #[arg(long, value_name = "N")]
    pub compaction_proactiveness: Option<u32>,
    /// Add a swap file of this size for the run.
    #[arg(long, value_name = "SIZE")]
    pub swap: Option<Bytes>,
    /// Where the swap file goes (must not exist).
    #[arg(long, default_value = "/var/tmp/hugewise.swap", requires = "swap")]
    pub swap_file: PathBuf,
    /// Drop the page cache first.
    #[arg(long)]
    pub drop_caches: bool,
    /// Compact memory first.
    #[arg(long)]
    pub compact: bool,
    /// Hold memory until only this much is available.
    #[arg(long, value_name = "SIZE", conflicts_with = "pressure_take")]
    pub pressure_leave: Option<Bytes>,
    /// Hold this much memory.
    #[arg(long, value_name = "SIZE")]
    pub pressure_take: Option<Bytes>,
    /// Make this share of the free memory that remains useless for 2 MiB pages.
    #[arg(long, value_name = "LEVEL", value_parser = |s: &str| Share::parse_in(s, &ShareRange::FRAGMENT))]
    pub fragment: Option<Share>,
    /// What keeps each broken block broken: an mlocked page compaction may not move
    /// (unmovable), or an ordinary one it can move away (movable).
    #[arg(long, value_enum, default_value = "unmovable", requires = "fragment")]
    pub fragment_pages: Pages,
    /// Run the command in a memory cgroup with this limit (its statistics kept fresh by a read
    /// of memory.stat every 50 ms, as `env limit` does).
    #[arg(long, value_name = "SIZE")]
    pub limit_memory: Option<Bytes>,
    /// THP probe before the command: auto, off, or a size.
    #[arg(long, default_value = "auto", value_parser = |s: &str| s.parse::<AutoSize>().map(ProbeSize::from))]
    pub probe: ProbeSize,
    /// Never leave less than this available while shaping.
    #[arg(long, default_value = "1GiB")]
    pub floor: Bytes,
    /// Output options: the report (shaping, command, restore) goes to stderr (the command owns
    /// stdout); --json prints it there as JSON at the end instead.
    #[command(flatten)]
    pub output: Output,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// The settings of `env thp` and `env with --mthp`, as a plan's.
fn mthp(sizes: Vec<SizeMode>) -> Vec<(u64, String)> {
    sizes.into_iter().map(|m| (m.kib, m.mode)).collect()
}

/// Shape, then run a command or hold, then restore; the report goes to stderr stage by stage
/// (or as JSON at the end: to stdout when hugewise owns it, to stderr when a command does).
fn shape_and(plan: Plan, then: Then, out: &Output, progress: Mode) -> anyhow::Result<u8> {
    let cancel = cancel_flag()?;
    let is_cancelled = || cancel.load(Ordering::Relaxed);
    let r = hugewise_console::env::shape_and(&plan, &then, &is_cancelled, progress, !out.json)?;
    let code = scoped::verdict(&r);
    let stream = match then {
        Then::Run(_) => Stream::Stderr,
        Then::Hold(_) => Stream::Stdout,
    };
    out.emit_to(stream, r, None::<fn(&_) -> String>)?;
    Ok(code?.clamp(0, 255) as u8)
}

/// A plan that only holds memory, above `h`'s floor, without a probe unless asked.
fn hold_plan(h: &HoldArgs) -> Plan {
    Plan {
        floor_bytes: h.floor.0,
        probe: ProbeSize::Off,
        ..Plan::new()
    }
}

/// Run one `hugewise env` subcommand; returns the exit code.
pub fn run(cmd: EnvCommand, progress: Mode) -> anyhow::Result<u8> {
    let (host, set, act) = (Host::real(), views::env::set_report, views::env::action);
    match cmd {
        EnvCommand::Show(a) => a
            .output
            .emit(hugewise_env::show::show(&host)?, views::env::show)?,
        EnvCommand::Thp(a) => {
            let r = kept::thp(&host, a.enabled, a.defrag, mthp(a.sizes))?;
            a.output.emit(r, set)?
        }
        EnvCommand::Hugetlb(a) => {
            let r = kept::hugetlb(&host, a.pages_2m, a.pages_1g)?;
            a.output.emit(r, set)?
        }
        EnvCommand::Khugepaged(a) => {
            let r = kept::khugepaged(&host, a.pages_to_scan, a.scan_sleep_ms, a.max_ptes_none)?;
            a.output.emit(r, set)?
        }
        EnvCommand::PageCluster(a) => a.output.emit(kept::page_cluster(&host, a.value)?, set)?,
        EnvCommand::Compact(a) => a.output.emit(measured(&host, "compact", compact)?, act)?,
        EnvCommand::DropCaches(a) => a
            .output
            .emit(measured(&host, "drop-caches", drop_caches)?, act)?,
        EnvCommand::Swap(a) => a
            .output
            .emit(kept::swap(&host, &a.file, a.size.0)?, views::env::swap)?,
        EnvCommand::Pressure(a) => {
            require_root("pressure")?;
            let pressure = pressure_target(a.leave.map(|b| b.0), a.take.map(|b| b.0));
            let plan = Plan {
                pressure,
                ..hold_plan(&a.hold)
            };
            return shape_and(plan, Then::Hold(a.hold.hold_for), &a.hold.output, progress);
        }
        EnvCommand::Fragment(a) => {
            require_root("fragment")?;
            let fragment = Some(a.level.fraction());
            let plan = Plan {
                fragment,
                fragment_pages: a.pages.into(),
                probe: a.probe,
                ..hold_plan(&a.hold)
            };
            return shape_and(plan, Then::Hold(a.hold.hold_for), &a.hold.output, progress);
        }
        EnvCommand::Limit(a) => {
            require_root("limit")?;
            let plan = Plan {
                limit_bytes: Some(a.memory.0),
                probe: ProbeSize::Off,
                ..Plan::new()
            };
            let cmd = CommandSpec { argv: a.command };
            return shape_and(plan, Then::Run(cmd), &a.output, progress);
        }
        EnvCommand::With(a) => {
            require_root("with")?;
            let plan = Plan {
                thp_enabled: a.thp,
                thp_defrag: a.thp_defrag,
                mthp: mthp(a.mthp),
                khugepaged: khugepaged_settings(
                    a.khugepaged_pages_to_scan,
                    a.khugepaged_scan_sleep_ms,
                    a.khugepaged_max_ptes_none,
                ),
                hugetlb: hugetlb_pools(a.hugetlb_2m, a.hugetlb_1g),
                page_cluster: a.page_cluster,
                compaction_proactiveness: a.compaction_proactiveness,
                swap: a.swap.map(|b| SwapPlan {
                    bytes: b.0,
                    path: a.swap_file.clone(),
                }),
                drop_caches: a.drop_caches,
                compact: a.compact,
                pressure: pressure_target(
                    a.pressure_leave.map(|b| b.0),
                    a.pressure_take.map(|b| b.0),
                ),
                fragment: a.fragment.map(Share::fraction),
                fragment_pages: a.fragment_pages.into(),
                limit_bytes: a.limit_memory.map(|b| b.0),
                probe: a.probe,
                floor_bytes: a.floor.0,
                ..Plan::new()
            };
            let cmd = CommandSpec { argv: a.command };
            return shape_and(plan, Then::Run(cmd), &a.output, progress);
        }
        EnvCommand::Restore(a) => {
            require_root("restore")?;
            let r = hugewise_env::restore_all(&host)?;
            let complete = r.complete();
            a.output.emit(r, views::env::restore)?;
            if !complete {
                bail!("some changes could not be undone; they stay in the journal");
            }
        }
    }
    Ok(0)
}
