//! A program running under hugewise: one line on a terminal, redrawn at each reading, of its
//! processes, live allocations and their backing; cleared when it ends.

use hugewise_exec::run::Tick;
use hugewise_report::fmt;

use crate::progress::Mode;

/// The live line of a running program (shown on a terminal only).
pub struct Live {
    on: bool,
}

impl Live {
    /// A live line if `mode` is a terminal.
    pub fn new(mode: Mode) -> Live {
        Live {
            on: mode == Mode::Terminal,
        }
    }

    /// Redraw the line with reading `t` (once an allocation is alive).
    pub fn show(&self, t: &Tick) {
        if self.on && t.live > 0 {
            eprint!("\r\x1b[2K{}", line(t));
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}

/// `  12.5s  2 process(es), 40 allocation(s) alive, 1.2 GiB resident, 1 GiB in huge pages`.
fn line(t: &Tick) -> String {
    format!(
        "{:>6.1}s  {} process(es), {} allocation(s) alive, {} resident, {} in huge pages",
        t.elapsed.as_secs_f64(),
        t.processes,
        t.live,
        fmt::bytes(t.resident_bytes),
        fmt::bytes(t.huge_bytes),
    )
}
