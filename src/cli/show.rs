//! `dshq show ID`: one request with its questions, state and outcome.

use super::Ctx;
use crate::app;
use crate::error::{Error, Result};
use crate::output::{emit, show_text};
use crate::views::RequestView;

/// Arguments of `dshq show`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The request id.
    pub id: String,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let mut store = ctx.read_store()?;
    let row = app::feed::show(&mut store, &a.id)?.ok_or_else(|| Error::NotFound(a.id.clone()))?;
    drop(store); // End the view before printing (see `list`).
    let view = RequestView::from_row(&row);
    emit(ctx.json, &view, || show_text(&view));
    Ok(())
}
