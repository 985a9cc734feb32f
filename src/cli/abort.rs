//! `dshq abort ID`: the asker aborts a request (`ASK_ABORTED`). No lease is needed.

use super::Ctx;
use crate::app;
use crate::core::audit::Actor;
use crate::error::Result;

/// Arguments of `dshq abort`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The request id.
    pub id: String,
    /// Why (recorded in the outcome message).
    #[arg(long)]
    pub reason: Option<String>,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let mut store = ctx.store()?;
    let finished = app::ask::abort(
        &mut store,
        &ctx.root,
        &a.id,
        a.reason.as_deref(),
        &Actor::Asker,
    )?;
    super::answer::publish(ctx, &finished);
    Ok(())
}
