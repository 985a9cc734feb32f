//! `dshq list`: requests, newest first.

use super::Ctx;
use crate::app;
use crate::error::Result;
use crate::output::{emit, list_text, RequestSummary};
use crate::store::{ListFilter, Status};

/// Arguments of `dshq list`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this status.
    #[arg(long, value_parser = super::closed_set(<Status as strum::VariantArray>::VARIANTS, Status::as_str))]
    pub status: Option<Status>,
    /// Only this context.
    #[arg(long)]
    pub context: Option<String>,
    /// At most this many requests.
    #[arg(long, default_value_t = 100)]
    pub limit: i64,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let status = a.status;
    let mut store = ctx.read_store()?;
    let rows = app::feed::list(
        &mut *store,
        &ListFilter {
            status,
            context: a.context,
            limit: Some(a.limit),
            oldest_first: false,
        },
    )?;
    // End the view (its uncommitted sweep holds the write lock) before printing to a
    // reader that may be slow.
    drop(store);
    let view: Vec<RequestSummary> = rows.iter().map(RequestSummary::from_row).collect();
    emit(ctx.json, &view, || list_text(&view));
    Ok(())
}
