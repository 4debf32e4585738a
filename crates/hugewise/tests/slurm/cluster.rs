//! A private single-node Slurm for tests: munged, slurmctld and slurmd started as children of
//! the test with every file (key, sockets, state, spool, logs, slurm.conf) in a temporary
//! directory, on ports nobody else uses, so that it touches neither /etc/slurm, /etc/munge nor
//! a system service, and several can run at once.
//!
//! It installs nothing: it finds Debian's `slurm-wlm` and `munge` where they are (`.ci/run`
//! installs them). Dropping a [`Cluster`], also while a failed test unwinds, cancels its jobs,
//! stops its daemons (SIGTERM, then SIGKILL), ends the job steps they left (found by the
//! cluster's own `SLURM_CONF` in their environment) and removes its files. The daemons also
//! die with the test process if it is killed (parent-death signal).

use std::fs::File;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use hugewise_sys::process::{tie_to_parent, PidFd, Signal};

/// The programs a cluster needs.
const PROGRAMS: [&str; 6] = [
    "munged",
    "slurmctld",
    "slurmd",
    "sbatch",
    "sinfo",
    "scancel",
];

/// A running single-node cluster.
pub struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    /// Started daemons, in start order.
    daemons: Vec<Daemon>,
}

struct Daemon {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

/// Why no cluster runs.
#[derive(Debug)]
pub enum NoCluster {
    /// Slurm or munge is not installed.
    Missing(String),
    /// They are installed but the cluster did not come up: a failure.
    Failed(String),
}

/// `program` on PATH or in the system directories a non-root PATH leaves out.
pub fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

impl Cluster {
    /// Start a cluster and wait until its node is idle.
    pub fn start() -> Result<Cluster, NoCluster> {
        let missing: Vec<&str> = PROGRAMS.into_iter().filter(|p| find(p).is_none()).collect();
        if !missing.is_empty() {
            return Err(NoCluster::Missing(format!(
                "{} not installed (Debian: apt-get install slurm-wlm munge; .ci/run does)",
                missing.join(", ")
            )));
        }
        let dir = tempfile::Builder::new()
            .prefix("hugewise-slurm-")
            .tempdir()
            .map_err(|e| NoCluster::Failed(format!("temporary directory: {e}")))?;
        let mut cluster = Cluster {
            conf: dir.path().join("slurm.conf"),
            dir,
            daemons: Vec::new(),
        };
        cluster.boot().map_err(NoCluster::Failed)?;
        Ok(cluster)
    }

    /// The cluster's slurm.conf.
    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// A Slurm client (`sbatch`, `squeue`, ...) talking to this cluster.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new(find(program).unwrap_or_else(|| PathBuf::from(program)));
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// Run a client to its end; an error says what it printed.
    pub fn run(&self, program: &str, args: &[&str]) -> Result<Output, String> {
        let o = self
            .command(program)
            .args(args)
            .output()
            .map_err(|e| format!("{program}: {e}"))?;
        if o.status.success() {
            Ok(o)
        } else {
            Err(format!(
                "{program} {}: {}\n{}{}",
                args.join(" "),
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ))
        }
    }

    /// The pids of the daemons (munged, slurmctld, slurmd).
    pub fn daemon_pids(&self) -> Vec<u32> {
        self.daemons.iter().map(|d| d.child.id()).collect()
    }

    /// The daemons' logs, for a failure message.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        let logs = self.daemons.iter().map(|d| (d.name, d.log.clone()));
        let step_log = ("slurmstepd", self.path("log/slurmd.log"));
        for (name, log) in logs.chain([step_log]) {
            s.push_str(&format!(
                "--- {name} ({}):\n{}\n",
                log.display(),
                tail(&log)
            ));
        }
        s
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn boot(&mut self) -> Result<(), String> {
        let root = self.dir.path().to_path_buf();
        // munged wants its socket directory searchable by every user and nothing writable by
        // others on the way to its key.
        set_mode(&root, 0o711)?;
        for (d, mode) in [
            ("run", 0o755),
            ("state", 0o700),
            ("spool", 0o755),
            ("log", 0o700),
        ] {
            let p = root.join(d);
            std::fs::create_dir(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            set_mode(&p, mode)?;
        }
        let key = root.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| format!("/dev/urandom: {e}"))?;
        std::fs::write(&key, &bytes).map_err(|e| format!("{}: {e}", key.display()))?;
        set_mode(&key, 0o600)?;

        let socket = root.join("run/munge.sock");
        let p = |s: &Path| s.display().to_string();
        self.spawn(
            "munged",
            &[
                "--foreground".into(),
                format!("--socket={}", p(&socket)),
                format!("--key-file={}", p(&key)),
                format!("--pid-file={}", p(&root.join("run/munged.pid"))),
                format!("--log-file={}", p(&root.join("log/munged.log"))),
                format!("--seed-file={}", p(&root.join("munged.seed"))),
            ],
        )?;
        self.wait_for("munged's socket", Duration::from_secs(20), |_| {
            Ok(socket.exists())
        })?;

        std::fs::write(&self.conf, self.slurm_conf(&socket)?)
            .map_err(|e| format!("{}: {e}", self.conf.display()))?;
        self.spawn("slurmctld", &["-D".into()])?;
        self.spawn("slurmd", &["-D".into()])?;
        self.wait_for("the node to be idle", Duration::from_secs(60), |c| {
            let o = c
                .command("sinfo")
                .args(["-h", "-N", "-o", "%t"])
                .output()
                .map_err(|e| format!("sinfo: {e}"))?;
            Ok(o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "idle")
        })
    }

    fn slurm_conf(&self, munge_socket: &Path) -> Result<String, String> {
        let root = self.dir.path();
        let user = String::from_utf8_lossy(
            &Command::new("id")
                .arg("-un")
                .output()
                .map_err(|e| format!("id -un: {e}"))?
                .stdout,
        )
        .trim()
        .to_string();
        let node = node_line()?;
        let name = node
            .split_whitespace()
            .find_map(|w| w.strip_prefix("NodeName="))
            .ok_or_else(|| format!("slurmd -C printed no NodeName: {node}"))?
            .to_string();
        // Two ports free now (both held while picking, so that they differ).
        let l1 = TcpListener::bind("0.0.0.0:0").map_err(|e| format!("a free port: {e}"))?;
        let l2 = TcpListener::bind("0.0.0.0:0").map_err(|e| format!("a free port: {e}"))?;
        let port = |l: &TcpListener| l.local_addr().map(|a| a.port()).map_err(|e| e.to_string());
        let (ctld_port, slurmd_port) = (port(&l1)?, port(&l2)?);
        let at = |p: &str| root.join(p).display().to_string();
        Ok(format!(
            "ClusterName=hugewise-test
SlurmctldHost={name}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={ctld_pid}
SlurmdPidFile={slurmd_pid}
SlurmdLogFile={slurmd_log}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=2
{node} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes={name} Default=YES MaxTime=INFINITE State=UP
",
            socket = munge_socket.display(),
            state = at("state"),
            spool = at("spool"),
            ctld_pid = at("run/slurmctld.pid"),
            slurmd_pid = at("run/slurmd.pid"),
            slurmd_log = at("log/slurmd.log"),
        ))
    }

    fn spawn(&mut self, name: &'static str, args: &[String]) -> Result<(), String> {
        let program = find(name).ok_or_else(|| format!("{name} not found"))?;
        let log = self.path(&format!("log/{name}.out"));
        let out = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        tie_to_parent(&mut cmd);
        let child = cmd.spawn().map_err(|e| format!("starting {name}: {e}"))?;
        self.daemons.push(Daemon { name, child, log });
        Ok(())
    }

    /// Poll `ready` until it says yes; fail early when a daemon has exited.
    fn wait_for(
        &mut self,
        what: &str,
        limit: Duration,
        mut ready: impl FnMut(&Cluster) -> Result<bool, String>,
    ) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if ready(self)? {
                return Ok(());
            }
            let exited = self
                .daemons
                .iter_mut()
                .find_map(|d| Some((d.name, d.child.try_wait().ok()??)));
            if let Some((name, status)) = exited {
                return Err(format!(
                    "{name} exited ({status}) while waiting for {what}\n{}",
                    self.logs()
                ));
            }
            if start.elapsed() > limit {
                return Err(format!(
                    "no {what} after {} s\n{}",
                    limit.as_secs(),
                    self.logs()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Cancel every job, wait (briefly) for them to end.
    fn cancel_jobs(&self) {
        let Ok(o) = self.command("squeue").args(["-h", "-o", "%A"]).output() else {
            return;
        };
        let jobs: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(String::from)
            .collect();
        if jobs.is_empty() {
            return;
        }
        let _ = self.command("scancel").args(&jobs).output();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            match self.command("squeue").args(["-h", "-o", "%A"]).output() {
                Ok(o) if !o.stdout.iter().any(u8::is_ascii_digit) => return,
                Ok(_) => std::thread::sleep(Duration::from_millis(200)),
                Err(_) => return,
            }
        }
    }

    /// Processes other than the daemons that carry this cluster's `SLURM_CONF`: job steps and
    /// the jobs' own processes.
    pub fn leftovers(&self) -> Vec<i32> {
        let needle = format!("SLURM_CONF={}", self.conf.display()).into_bytes();
        let me = std::process::id() as i32;
        let daemons: Vec<i32> = self.daemons.iter().map(|d| d.child.id() as i32).collect();
        processes_with_env(&needle)
            .into_iter()
            .filter(|p| *p != me && !daemons.contains(p))
            .collect()
    }

    fn stop(&mut self) {
        self.cancel_jobs();
        // slurmd before slurmctld before munged: the reverse of the start.
        while let Some(mut d) = self.daemons.pop() {
            stop_child(&mut d.child);
        }
        for pid in self.leftovers() {
            if let Ok(fd) = PidFd::open(pid) {
                let _ = fd.signal(Signal::Kill);
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
        // The TempDir field removes the files after this.
    }
}

/// SIGTERM, up to 10 s to exit, then SIGKILL; always reaped.
fn stop_child(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    if let Ok(fd) = PidFd::open(child.id() as i32) {
        let _ = fd.signal(Signal::Term);
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Processes whose environment holds the entry `needle` exactly (those this user may read).
pub fn processes_with_env(needle: &[u8]) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle))
        })
        .collect()
}

/// This machine as slurmd sees it (`slurmd -C`: name, CPUs, sockets, cores), with its memory
/// a little below the total so that the node is not refused for reporting less.
fn node_line() -> Result<String, String> {
    let slurmd = find("slurmd").ok_or("slurmd not found")?;
    let o = Command::new(slurmd)
        .arg("-C")
        .env("SLURM_CONF", "/nonexistent")
        .output()
        .map_err(|e| format!("slurmd -C: {e}"))?;
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("NodeName="))
        .ok_or_else(|| format!("slurmd -C printed no node: {text}"))?;
    Ok(line
        .split_whitespace()
        .map(|w| match w.strip_prefix("RealMemory=") {
            Some(mb) => {
                let mb: u64 = mb.parse().unwrap_or(1024);
                format!("RealMemory={}", mb.saturating_sub(512).max(256))
            }
            None => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" "))
}

fn set_mode(p: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("chmod {}: {e}", p.display()))
}

/// The last lines of a log, or why it cannot be read.
fn tail(p: &Path) -> String {
    match std::fs::read_to_string(p) {
        Ok(s) => {
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(30)..].join("\n")
        }
        Err(e) => format!("({e})"),
    }
}
