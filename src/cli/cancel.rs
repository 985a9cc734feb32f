//! `dshq cancel ID`: the human cancels a request (`ASK_CANCELLED`), with the live lease
//! (or a transient one taken for this command).

use super::{answer::acting, Ctx};
use crate::app;
use crate::error::Result;

/// Arguments of `dshq cancel`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The request id.
    pub id: String,
    /// Why (recorded in the outcome message).
    #[arg(long)]
    pub reason: Option<String>,
    /// The provider lease token; without it a transient lease is taken and released.
    #[arg(long, env = "DSHQ_LEASE", hide_env_values = true)]
    pub lease: Option<String>,
    /// Provider name for a transient lease (default $USER).
    #[arg(long)]
    pub name: Option<String>,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let mut store = ctx.store()?;
    let who = acting(a.lease.as_deref(), a.name.as_deref());
    let finished = app::provide::cancel(
        &mut store,
        Some(&ctx.root),
        &a.id,
        &who,
        a.reason.as_deref(),
    )?;
    super::answer::publish(ctx, &finished);
    Ok(())
}
