//! `dshq list`: requests, newest first (or oldest), filtered in the store's query.

use super::Ctx;
use crate::app;
use crate::error::Result;
use crate::output::{list_text, print_json, RequestSummary};
use crate::store::{ListFilter, Status};

/// Arguments of `dshq list`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this status.
    #[arg(long, value_parser = super::closed_set(<Status as strum::VariantArray>::VARIANTS, Status::as_str))]
    pub status: Option<Status>,
    /// Context, agent, intent and text.
    #[command(flatten)]
    pub filters: super::filter::Filters,
    /// Oldest first (default: newest first).
    #[arg(long)]
    pub oldest_first: bool,
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
            limit: Some(a.limit),
            oldest_first: a.oldest_first,
            source: None,
            ..a.filters.to_filter()?
        },
    )?;
    // End the view (its uncommitted sweep holds the write lock) before printing to a
    // reader that may be slow.
    drop(store);
    let view: Vec<RequestSummary> = rows.iter().map(RequestSummary::from_row).collect();
    if ctx.json {
        print_json(&view);
    } else {
        // Not through `emit`: its last-line escaping would escape the status colour;
        // `list_text` escapes every cell itself (`fit_table`).
        let text = list_text(&view, &ctx.layout());
        println!("{}", text.trim_end_matches('\n'));
    }
    Ok(())
}
