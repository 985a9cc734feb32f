//! `dshq cancel ID`: the human cancels a request (`ASK_CANCELLED`), with the live lease
//! (or a transient one taken for this command).

use super::{answer::with_lease, Ctx};
use crate::error::Result;
use crate::store::{self, requests};

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
    let mut conn = ctx.db()?;
    let outcome = store::write_now(&mut conn, |tx, now| {
        with_lease(
            tx,
            &a.id,
            a.lease.as_deref(),
            a.name.as_deref(),
            now,
            |tx, lease| requests::cancel(tx, lease, &a.id, a.reason.as_deref(), now),
        )
    })?;
    super::answer::publish(ctx, &mut conn, &outcome);
    Ok(())
}
