//! `dshq list`: requests, newest first (or oldest), filtered in the store's query; by
//! default the open ones (pending and claimed), as the page's queue shows them.

use super::Ctx;
use crate::app;
use crate::error::Result;
use crate::output::{list_text, print_json};
use crate::store::{ListFilter, Status};
use crate::views::RequestSummary;

/// Arguments of `dshq list`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this status (default: the open requests, pending and claimed).
    #[arg(long, value_parser = super::closed_set(<Status as strum::VariantArray>::VARIANTS, Status::as_str))]
    pub status: Option<Status>,
    /// Every request, finished and rejected ones included.
    #[arg(long, conflicts_with = "status")]
    pub all: bool,
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
    // What a reviewer needs by default is what is still open, as on the page: a finished
    // request, or an attempt rejected under the id of a live one, only when asked.
    let statuses: &[Status] = match (a.status, a.all) {
        (Some(s), _) => &[s],
        (None, true) => &[],
        (None, false) => Status::OPEN,
    };
    let mut store = ctx.read_store()?;
    let rows = app::feed::list_in(
        &mut store,
        statuses,
        &ListFilter {
            limit: Some(a.limit),
            oldest_first: a.oldest_first,
            source: None,
            ..a.filters.to_filter()?
        },
    )?;
    let open_only = a.status.is_none() && !a.all;
    // End the view (its uncommitted sweep holds the write lock) before printing to a
    // reader that may be slow.
    drop(store);
    let view: Vec<RequestSummary> = rows.iter().map(RequestSummary::from_row).collect();
    if ctx.json {
        print_json(&view);
    } else {
        // Not through `emit`: its last-line escaping would escape the status colour;
        // `list_text` escapes every cell itself (`fit_table`).
        if view.is_empty() && open_only {
            println!("no open requests (--all shows every request)");
            return Ok(());
        }
        let text = list_text(&view, &ctx.layout());
        println!("{}", text.trim_end_matches('\n'));
    }
    Ok(())
}
