//! The hugewise binary: parse arguments, call the libraries, print, map to an exit code.
//!
//! [`cli`] holds one file per command: its arguments, help text and a handler that builds a
//! library's config and calls it. [`signals`] is what handlers share and does not import
//! `cli`; what a command prints, while it works and when it ends, is `hugewise_console`'s.
#![forbid(unsafe_code)]

mod cli;
mod signals;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use cli::args::UsageError;
use cli::{Cli, Command};
use hugewise_console::emit;
use hugewise_console::progress::Mode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command, Mode::detect(cli.no_progress)) {
        Ok(code) => ExitCode::from(signals::exit_code(code)),
        Err(e) if emit::closed_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(u) = e.chain().find_map(|c| c.downcast_ref::<UsageError>()) {
                // A command-line mistake found after parsing: clap's message and exit code 2.
                Cli::command()
                    .error(clap::error::ErrorKind::ArgumentConflict, &u.0)
                    .exit()
            }
            emit::failure(e.as_ref());
            ExitCode::from(signals::exit_code(1))
        }
    }
}

/// Run one command; returns the exit code.
fn run(command: Command, progress: Mode) -> anyhow::Result<u8> {
    let done = match command {
        // These run a program or a shaped machine, which decides the exit code.
        Command::Env(cmd) => return cli::env::run(cmd, progress),
        Command::Promote(a) => return cli::promote::run(a),
        Command::Exec(a) => return cli::exec::run(a, progress),
        Command::Profile(a) => return cli::profile::run(a, progress),
        Command::Study(a) => return cli::study::run(a, progress),
        Command::Sys(a) => cli::sys::run(a),
        Command::Faultlat(a) => cli::faultlat::run(a, progress),
        Command::Run(a) => cli::run::run(a, progress),
        Command::Trace(a) => cli::trace::run(a, progress),
        Command::Sim(a) => cli::sim::run(a, progress),
        Command::Report(a) => cli::report::run(&a),
        Command::Graph(cmd) => cli::graph::run(cmd, progress),
        Command::Bench(cmd) => cli::bench::run(cmd, progress),
        Command::Worker => cli::worker::run(progress),
    };
    done.map(|()| 0)
}
