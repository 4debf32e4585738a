//! `hugewise sys`: this machine's huge-page state.

use anyhow::Context;
use clap::Args;
use hugewise_report::views;
use hugewise_sys::machine;
use hugewise_sys::proc::ProcFs;
use hugewise_sys::sysfs::SysFs;

use crate::cli::args::Output;

/// `hugewise sys`.
#[derive(Debug, Args)]
pub struct SysArgs {
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// Read the machine's state and print it.
pub fn run(a: SysArgs) -> anyhow::Result<()> {
    let r = machine::gather(&ProcFs::default(), &SysFs::default())
        .context("reading the machine's huge-page state")?;
    a.output.emit(r, views::machine::machine)
}
