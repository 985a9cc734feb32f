//! `dshq claim ID|--next`: reserve a request for the live lease.

use super::{require_lease, Ctx};
use crate::app;
use crate::error::{Error, Result};
use crate::output::{emit, show_text};
use crate::views::RequestView;

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
    let mut store = ctx.store()?;
    let row = match &a.id {
        Some(id) => app::provide::claim(&mut store, &token, id)?,
        None if a.next => app::provide::claim_next(&mut store, &token)?,
        None => return Err(Error::Usage("give a request id or --next".into())),
    };
    let view = RequestView::from_row(&row);
    emit(ctx.json, &view, || show_text(&view));
    Ok(())
}
