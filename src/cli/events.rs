//! `dshq events ID`: the full trail of one request; `--deliveries`: its notifications in
//! the deliveries outbox, with their ids and retry state.

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
    /// Show the request's deliveries (webhooks, mails, Slack messages) instead: their ids,
    /// events, channels, attempts, state and last error.
    #[arg(long)]
    pub deliveries: bool,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let mut store = ctx.stored_store()?;
    if a.deliveries {
        let list = store.deliveries(&a.id)?;
        emit(ctx.json, &list, || {
            table(
                &[
                    "DELIVERY",
                    "EVENT",
                    "CONTEXT",
                    "CHANNEL",
                    "ATTEMPTS",
                    "STATE",
                    "LAST ERROR",
                ],
                list.iter()
                    .map(|d| {
                        vec![
                            d.id.clone(),
                            d.kind.clone(),
                            d.context.clone(),
                            d.channel.as_str().to_string(),
                            d.attempts.to_string(),
                            match d.delivered_ms {
                                Some(t) => format!("delivered {}", rfc3339(t)),
                                None => format!("pending, next {}", rfc3339(d.next_ms)),
                            },
                            crate::text::one_line(d.last_error.as_deref().unwrap_or(""))
                                .into_owned(),
                        ]
                    })
                    .collect(),
            )
        });
        return Ok(());
    }
    let list = app::audit::events(&mut store, &a.id)?;
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
