//! `dshq events ID`: the full trail of one request.

use super::Ctx;
use crate::app;
use crate::clock::rfc3339;
use crate::error::Result;
use crate::output::{emit, table};

/// Arguments of `dshq events`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The request id.
    pub id: String,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let mut store = ctx.stored_store()?;
    let list = app::audit::events(&mut *store, &a.id)?;
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
