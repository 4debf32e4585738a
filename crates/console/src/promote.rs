//! A promotion session on the terminal: whether its program starts under the preload library,
//! each action as it happens (when asked), the daemon's notes, and one status line redrawn at
//! each interval while stderr is a terminal.

use std::io::IsTerminal;

use hugewise_mem::{Amount, Bytes};
use hugewise_report::views::promote as view;
use hugewise_results::promote::{Action, Interval};
use hugewise_rules::protocol::Preload;

/// A budget as the session's result names it: `2%`, `512 MiB`.
pub fn budget_label(a: Amount) -> String {
    match a {
        Amount::Bytes(Bytes(b)) => hugewise_report::fmt::bytes(b),
        Amount::Percent(p) => format!("{p}%"),
    }
}

/// Say whether `program` starts under the preload library (and within which `budget`), or
/// why not.
pub fn preload_note(program: &str, preload: &Result<Preload, String>, budget: &str) {
    match preload {
        Ok(p) => eprintln!(
            "hugewise promote: {program} starts under the preload library ({}): its allocations \
             of whole 2 MiB chunks are advised huge at first fault while the budget ({budget}) \
             has room",
            p.library.display(),
        ),
        Err(why) => eprintln!(
            "hugewise promote: {program} starts without the preload library: {why}; its memory \
             is given huge pages from outside only"
        ),
    }
}

/// What a session prints while it runs, on stderr.
pub struct Live {
    /// stderr is a terminal: the status line is drawn.
    terminal: bool,
    /// Every action is printed.
    actions: bool,
}

impl Live {
    /// Live output, printing every action when `actions`.
    pub fn new(actions: bool) -> Live {
        Live {
            terminal: std::io::stderr().is_terminal(),
            actions,
        }
    }

    /// An action, when they are asked for.
    pub fn action(&self, act: &Action) {
        if self.actions {
            eprintln!("{}", view::action_line(act));
        }
    }

    /// An interval of the daemon: its notes above the status line, once, then the status line
    /// rewritten in place.
    pub fn interval(&self, iv: &Interval) {
        for note in &iv.notes {
            if self.terminal {
                eprint!("\r\x1b[2K");
            }
            eprintln!("hugewise promote: {note}");
        }
        if let Some(c) = &iv.compaction {
            if self.terminal {
                eprint!("\r\x1b[2K");
            }
            eprintln!("hugewise promote: {}", view::compaction_line(c));
        }
        if self.terminal {
            eprint!("\r\x1b[2K{}", view::interval_line(iv));
        }
    }

    /// The session ended: a drawn status line is ended (`daemon`: there was one).
    pub fn finish(&self, daemon: bool) {
        if self.terminal && daemon {
            eprintln!();
        }
    }
}
