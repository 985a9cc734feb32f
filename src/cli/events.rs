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
                        crate::text::one_line(&e.actor).into_owned(),
                        // The data now carries answers and lineage: asker and provider
                        // text, which JSON escaping alone leaves with C1 and bidi controls.
                        if e.data.as_object().is_some_and(|o| o.is_empty()) {
                            String::new()
                        } else {
                            crate::text::one_line(&e.data.to_string()).into_owned()
                        },
                    ]
                })
                .collect(),
        )
    });
    Ok(())
}
