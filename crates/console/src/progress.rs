//! Progress of a command's steps on stderr: on a terminal a spinner with the elapsed time
//! until a step's size is known, then a bar with its rate and ETA; off a terminal one plain
//! line per finished step with its rate, and for a long step a line with its count and what is
//! left at most every [`LINE_EVERY`] while its count moves; nothing with `--no-progress`.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Where progress goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Nowhere (`--no-progress`).
    Off,
    /// Redrawn bars and spinners (stderr is a terminal).
    Terminal,
    /// One line per finished step (stderr is a file or a pipe), and a line now and then while
    /// a long one moves.
    Lines,
}

/// Off a terminal, the shortest time between two lines of one step: a step that ends sooner
/// prints only its finishing line, and a benchmark of an hour piped to a log still says how far
/// it got: at most two lines a minute, when the step reports a count (a benchmark's after each
/// run).
pub const LINE_EVERY: Duration = Duration::from_secs(30);

impl Mode {
    /// The mode for this process's stderr.
    pub fn detect(no_progress: bool) -> Mode {
        if no_progress {
            Mode::Off
        } else if std::io::stderr().is_terminal() {
            Mode::Terminal
        } else {
            Mode::Lines
        }
    }
}

/// What a step counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes, shown in binary units.
    Bytes,
    /// Things named by the step (trials, samples, accesses).
    Items,
}

struct State {
    phase: String,
    unit: Unit,
    started: Instant,
    done: u64,
    total: u64,
    sized: bool,
    /// When the step last printed a line off a terminal (its start until then), and its count.
    said: (Instant, u64),
    /// The reader's pass over its input: a generator makes its edges twice (once to count
    /// degrees, once to place them), and each pass counts from 0 again.
    pass: u32,
}

/// The progress of one command, made of named steps (`loading`, then `trials`, ...).
pub struct Steps {
    mode: Mode,
    unit: Unit,
    bar: ProgressBar,
    state: Mutex<State>,
    /// A graph reader's bytes are watched (`with_reads`): the `loading` step ends with them.
    reads: std::sync::atomic::AtomicBool,
}

impl Steps {
    /// Start with step `phase`, whose size is not known yet.
    pub fn new(mode: Mode, phase: &str, unit: Unit) -> Steps {
        let bar = match mode {
            Mode::Terminal => {
                let b = ProgressBar::new_spinner();
                b.set_style(spinner_style());
                b.set_message(phase.to_string());
                b.enable_steady_tick(Duration::from_millis(120));
                b
            }
            Mode::Off | Mode::Lines => ProgressBar::hidden(),
        };
        Steps {
            mode,
            unit,
            bar,
            state: Mutex::new(State::starting(phase, unit)),
            reads: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain numbers: still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `done` of `total` (0: not known yet) in the current step.
    pub fn update(&self, done: u64, total: u64) {
        let mut s = self.state();
        self.set(&mut s, done, total);
    }

    /// `done` of `total` in `unit` in step `phase`, if it is still the current one (a reader
    /// watched from another thread may report after its step ended).
    pub fn count_in(&self, phase: &str, done: u64, total: u64, unit: Unit) {
        let mut s = self.state();
        if s.phase != phase || total == 0 {
            return;
        }
        if done < s.done && total == s.total {
            // A second pass over the same input (another file would have another size): its
            // clock starts again, or its time left would be carried from the passes before.
            let now = Instant::now();
            s.pass += 1;
            s.started = now;
            s.said = (now, 0);
            self.bar.reset_eta();
        }
        // The reader's step is named by what it reads (a generator's edges: `generating`),
        // known once it counts.
        self.bar.set_message(s.label());
        s.unit = unit;
        self.set(&mut s, done, total);
    }

    fn set(&self, s: &mut State, done: u64, total: u64) {
        s.done = done;
        if total > 0 {
            s.total = total;
        }
        if self.mode == Mode::Lines {
            let now = Instant::now();
            if done != s.said.1 && now.duration_since(s.said.0) >= LINE_EVERY {
                s.said = (now, done);
                eprintln!(
                    "{}",
                    moving_line(&s.label(), done, s.total, s.started.elapsed(), s.unit)
                );
            }
            return;
        }
        if self.mode != Mode::Terminal {
            return;
        }
        if total > 0 && !s.sized {
            s.sized = true;
            self.bar.set_style(bar_style(s.unit));
            self.bar.reset_eta();
        }
        if total > 0 {
            self.bar.set_length(total);
        }
        self.bar.set_position(done);
    }

    /// End the current step and start `phase`; nothing happens if it is the current one.
    pub fn phase(&self, phase: &str) {
        let mut s = self.state();
        if s.phase == phase {
            return;
        }
        self.line(&s);
        *s = State::starting(phase, self.unit);
        if self.mode == Mode::Terminal {
            self.bar.set_style(spinner_style());
            self.bar.set_message(phase.to_string());
            self.bar.set_length(0);
            self.bar.set_position(0);
            self.bar.reset_elapsed();
        }
    }

    /// Progress that ends the current step and counts `phase` from the first count.
    pub fn counting<'a>(&'a self, phase: &'static str) -> impl FnMut(u64, u64) + 'a {
        move |done, total| {
            self.phase(phase);
            self.update(done, total);
        }
    }

    /// End the last step.
    pub fn finish(&self) {
        let s = self.state();
        self.line(&s);
        self.bar.finish_and_clear();
    }

    /// The plain line of a finished step, off a terminal.
    fn line(&self, s: &State) {
        if self.mode != Mode::Lines {
            return;
        }
        let mut last;
        let s = if s.phase == READ_STEP && self.reads.load(std::sync::atomic::Ordering::Relaxed) {
            // The reader may have finished between two looks: its final count.
            let (read, total) = hugewise_graph::io::progress::bytes_read();
            last = State {
                phase: s.phase.clone(),
                started: s.started,
                pass: s.pass,
                ..State::default_for(s.unit)
            };
            if total > 0 {
                last.unit = read_unit();
                last.done = read;
            }
            &last
        } else {
            s
        };
        eprintln!(
            "{}",
            step_line(&s.label(), s.done, s.started.elapsed(), s.unit)
        );
    }
}

/// The step in which graphs are read.
const READ_STEP: &str = "loading";

/// What the graph reader counts: bytes of a file, or edges a generator made.
fn read_unit() -> Unit {
    if hugewise_graph::io::progress::counts_edges() {
        Unit::Items
    } else {
        Unit::Bytes
    }
}

impl State {
    fn starting(phase: &str, unit: Unit) -> State {
        let now = Instant::now();
        State {
            phase: phase.to_string(),
            unit,
            started: now,
            done: 0,
            total: 0,
            sized: false,
            said: (now, 0),
            pass: 1,
        }
    }

    /// The step's name, with its pass from the second on: `loading, pass 2`.
    fn label(&self) -> String {
        self.label_as(hugewise_graph::io::progress::counts_edges())
    }

    /// [`label`](Self::label), the reading step named `generating` when a generator makes
    /// the edges (`graph gen --graph kron:26` read "loading" for the six minutes it made
    /// them).
    fn label_as(&self, generating: bool) -> String {
        let name = if generating && self.phase == READ_STEP {
            "generating"
        } else {
            &self.phase
        };
        match self.pass {
            0 | 1 => name.to_string(),
            n => format!("{name}, pass {n}"),
        }
    }

    fn default_for(unit: Unit) -> State {
        State::starting("", unit)
    }
}

/// Run `f` (a command that loads a graph in its `loading` step) while another thread shows
/// the bytes its reader has read, with a rate, until the step ends.
pub fn with_reads<T>(steps: &Steps, f: impl FnOnce() -> T) -> T {
    use std::sync::atomic::{AtomicBool, Ordering};
    hugewise_graph::io::progress::reset();
    steps.reads.store(true, Ordering::Relaxed);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                let (read, total) = hugewise_graph::io::progress::bytes_read();
                steps.count_in(READ_STEP, read, total, read_unit());
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let out = f();
        done.store(true, Ordering::Relaxed);
        out
    })
}

impl hugewise_sim::Progress for Steps {
    fn update(&self, done: u64, total: u64) {
        Steps::update(self, done, total);
    }
}

/// `hugewise: trials: 5 in 1.20 s (4.2/s)`, or without a count `hugewise: loading: 0.82 s`.
pub fn step_line(phase: &str, done: u64, took: Duration, unit: Unit) -> String {
    let secs = took.as_secs_f64();
    if done == 0 {
        return format!("hugewise: {phase}: {secs:.2} s");
    }
    let rate = done as f64 / secs.max(1e-9);
    match unit {
        Unit::Bytes => format!(
            "hugewise: {phase}: {} in {secs:.2} s ({}/s)",
            hugewise_report::fmt::bytes(done),
            hugewise_report::fmt::bytes(rate as u64)
        ),
        Unit::Items => format!(
            "hugewise: {phase}: {done} in {secs:.2} s ({}/s)",
            count(rate)
        ),
    }
}

/// A long step's line off a terminal while it moves: `hugewise: runs: 3 of 24 after 10 min
/// 12 s, about 1 h 11 min left` (the rate so far carried to the end); without a known total,
/// the count and the time so far.
pub fn moving_line(phase: &str, done: u64, total: u64, took: Duration, unit: Unit) -> String {
    let what = |n: u64| match unit {
        Unit::Bytes => hugewise_report::fmt::bytes(n),
        Unit::Items => n.to_string(),
    };
    let secs = took.as_secs_f64();
    if total == 0 || done == 0 || done > total {
        return format!(
            "hugewise: {phase}: {} after {}",
            what(done),
            hugewise_report::fmt::duration(secs)
        );
    }
    let left = secs * (total - done) as f64 / done as f64;
    format!(
        "hugewise: {phase}: {} of {} after {}, about {} left",
        what(done),
        what(total),
        hugewise_report::fmt::duration(secs),
        hugewise_report::fmt::duration(left)
    )
}

/// A rate with a decimal suffix: 4.2, 310, 12.5 k, 98.1 M.
fn count(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.1} G", x / 1e9),
        x if x >= 1e6 => format!("{:.1} M", x / 1e6),
        x if x >= 1e4 => format!("{:.1} k", x / 1e3),
        x if x >= 100.0 => format!("{x:.0}"),
        x => format!("{x:.1}"),
    }
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg:>12} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar_style(unit: Unit) -> ProgressStyle {
    let template = match unit {
        Unit::Bytes => {
            "{msg:>12} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} ({elapsed})"
        }
        Unit::Items => "{msg:>12} [{bar:30}] {human_pos}/{human_len} {per_sec} ETA {eta} ({elapsed})",
    };
    ProgressStyle::with_template(template)
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_lines_give_the_rate() {
        let l = step_line("trials", 5, Duration::from_millis(1250), Unit::Items);
        assert_eq!(l, "hugewise: trials: 5 in 1.25 s (4.0/s)");
        let l = step_line("faulting", 1 << 30, Duration::from_secs(2), Unit::Bytes);
        assert_eq!(l, "hugewise: faulting: 1 GiB in 2.00 s (512 MiB/s)");
        let l = step_line("loading", 0, Duration::from_millis(820), Unit::Items);
        assert_eq!(l, "hugewise: loading: 0.82 s");
        assert_eq!(count(98_100_000.0), "98.1 M");
    }

    #[test]
    fn a_moving_step_says_how_far_it_got_and_what_is_left() {
        let l = moving_line("runs", 3, 24, Duration::from_secs(612), Unit::Items);
        assert_eq!(
            l,
            "hugewise: runs: 3 of 24 after 10 min 12 s, about 1 h 11 min left"
        );
        let l = moving_line("loading", 1 << 30, 0, Duration::from_secs(42), Unit::Bytes);
        assert_eq!(l, "hugewise: loading: 1 GiB after 42 s");
        let l = moving_line("runs", 5, 4, Duration::from_secs(7300), Unit::Items);
        assert_eq!(l, "hugewise: runs: 5 after 2 h 01 min");
    }

    #[test]
    fn off_a_terminal_a_step_speaks_only_after_its_quiet_time() {
        // A step just started: its count moves, but too soon for a line, and the time of its
        // last line stays where it was.
        let steps = Steps::new(Mode::Lines, "runs", Unit::Items);
        steps.update(1, 24);
        let s = steps.state();
        assert_eq!(s.said.1, 0);
        drop(s);
        // Back-date the step's last line past the quiet time: the next move prints and is
        // remembered; back-dated again, a count that does not move prints nothing.
        let Some(long_ago) = Instant::now().checked_sub(LINE_EVERY) else {
            // The monotonic clock began less than the quiet time ago: nothing to back-date to.
            return;
        };
        let back = |steps: &Steps| {
            let mut s = steps.state();
            s.said.0 = long_ago;
            s.said.0
        };
        let before = back(&steps);
        steps.update(2, 24);
        let s = steps.state();
        assert_eq!(s.said.1, 2);
        assert!(s.said.0 > before);
        drop(s);
        let before = back(&steps);
        steps.update(2, 24);
        assert_eq!(steps.state().said.0, before);
    }

    #[test]
    fn a_reader_whose_count_starts_again_is_on_its_next_pass_with_its_own_clock() {
        let steps = Steps::new(Mode::Lines, "loading", Unit::Items);
        steps.count_in("loading", 900, 1000, Unit::Items);
        assert_eq!(steps.state().label_as(false), "loading");
        assert_eq!(steps.state().label_as(true), "generating");
        // The first pass took a minute.
        let Some(long_ago) = Instant::now().checked_sub(Duration::from_secs(60)) else {
            return;
        };
        steps.state().started = long_ago;
        steps.count_in("loading", 50, 1000, Unit::Items);
        let s = steps.state();
        assert_eq!(s.pass, 2);
        assert_eq!(s.label_as(false), "loading, pass 2");
        assert_eq!(s.label_as(true), "generating, pass 2");
        assert!(s.started > long_ago, "the second pass has its own clock");
        assert_eq!((s.done, s.said.1), (50, 0));
        drop(s);
        // Moving forward again is the same pass; a count of another size is another input,
        // not a pass.
        steps.count_in("loading", 60, 1000, Unit::Items);
        assert_eq!(steps.state().pass, 2);
        steps.count_in("loading", 10, 4000, Unit::Items);
        assert_eq!(steps.state().pass, 2);
    }
}
