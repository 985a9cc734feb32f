//! `dshq abort ID`: the asker aborts a request (`ASK_ABORTED`). No lease is needed.

use super::Ctx;
use crate::error::Result;
use crate::store::{self, requests};

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
    let mut conn = ctx.db()?;
    let outcome = store::write_now(&mut conn, |tx, now| {
        requests::abort(tx, &a.id, a.reason.as_deref(), "asker", now)
    })?;
    super::answer::publish(ctx, &mut conn, &outcome);
    Ok(())
}
