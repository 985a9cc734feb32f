//! `dshq show ID`: one request with its questions, state and outcome.

use super::Ctx;
use crate::error::{Error, Result};
use crate::output::{emit, show_text, RequestView};
use crate::store::requests;

/// Arguments of `dshq show`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The request id.
    pub id: String,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let conn = ctx.read_db()?;
    let row = requests::get_any(&conn, &a.id)?.ok_or_else(|| Error::NotFound(a.id.clone()))?;
    drop(conn); // End the view before printing (see `list`).
    let view = RequestView::from_row(&row);
    emit(ctx.json, &view, || show_text(&view));
    Ok(())
}
