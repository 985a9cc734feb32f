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
    /// Only this context (repeat for several).
    #[arg(long, value_name = "C")]
    pub context: Vec<String>,
    /// Only requests asked by this agent id.
    #[arg(long, value_name = "A")]
    pub agent: Option<String>,
    /// Only requests with a question of this intent.
    #[arg(long, value_parser = super::closed_set(super::INTENTS, |s| s))]
    pub intent: Option<&'static str>,
    /// Only requests with a question containing TEXT (ignoring ASCII case).
    #[arg(long, value_name = "TEXT")]
    pub grep: Option<String>,
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
            contexts: a.context,
            agent: a.agent,
            intent: a.intent.map(str::to_string),
            grep: a.grep,
            limit: Some(a.limit),
            oldest_first: a.oldest_first,
            source: None,
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
