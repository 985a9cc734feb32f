//! `dshq claim ID|--next`: reserve a request for the live lease.

use super::{require_lease, Ctx};
use crate::error::{Error, Result};
use crate::output::{emit, show_text, RequestView};
use crate::store::{self, leases, requests};

/// Arguments of `dshq claim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The request id.
    #[arg(required_unless_present = "next", conflicts_with = "next")]
    pub id: Option<String>,
    /// Claim the oldest pending request of the lease's context.
    #[arg(long)]
    pub next: bool,
    /// The provider lease token.
    #[arg(long, env = "DSHQ_LEASE", hide_env_values = true)]
    pub lease: Option<String>,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let token = require_lease(a.lease)?;
    let mut conn = ctx.db()?;
    let row = store::write_now(&mut conn, |tx, now| {
        let lease = leases::authenticate(tx, &token, now)?;
        match &a.id {
            Some(id) => requests::claim(tx, &lease, id, now),
            None if a.next => requests::claim_next(tx, &lease, now),
            None => Err(Error::Usage("give a request id or --next".into())),
        }
    })?;
    let view = RequestView::from_row(&row);
    emit(ctx.json, &view, || show_text(&view));
    Ok(())
}
