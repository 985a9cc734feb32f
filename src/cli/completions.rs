//! `dshq completions SHELL` and `dshq man`: generated from the clap definition, so they
//! never drift from the real flags.

use super::Ctx;
use crate::error::{Error, Result};

/// Arguments of `dshq completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// bash, zsh, fish, powershell or elvish.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Print the completion script.
pub fn run(_ctx: &Ctx, a: Args) -> Result<()> {
    let mut cmd = super::command();
    clap_complete::generate(a.shell, &mut cmd, "dshq", &mut std::io::stdout());
    Ok(())
}

/// Print the man page (roff) for `dshq`.
pub fn man(_ctx: &Ctx) -> Result<()> {
    let cmd = super::command();
    clap_mangen::Man::new(cmd)
        .render(&mut std::io::stdout())
        .map_err(|e| Error::io("stdout", e))
}
