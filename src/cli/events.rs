//! `dshq events ID`: the full trail of one request.

use super::Ctx;
use crate::clock::rfc3339;
use crate::error::{Error, Result};
use crate::output::{emit, table};
use crate::store::{events, requests};

/// Arguments of `dshq events`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The request id.
    pub id: String,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let conn = ctx.stored_db()?;
    let list = events::for_request(&conn, &a.id)?;
    if list.is_empty() && requests::get_any(&conn, &a.id)?.is_none() {
        return Err(Error::NotFound(a.id));
    }
    emit(ctx.json, &list, || {
        table(
            &["SEQ", "AT", "EVENT", "ACTOR", "DETAILS"],
            list.iter()
                .map(|e| {
                    vec![
                        e.seq.to_string(),
                        rfc3339(e.at_ms),
                        e.kind.clone(),
                        e.actor.clone(),
                        if e.data.as_object().is_some_and(|o| o.is_empty()) {
                            String::new()
                        } else {
                            e.data.to_string()
                        },
                    ]
                })
                .collect(),
        )
    });
    Ok(())
}
