//! `dshq agent enter|heartbeat|exit|list`: the registry of who may ask.

use std::time::Duration;

use serde::Serialize;

use super::{parse_agent_ttl, Ctx};
use crate::app::agents;
use crate::error::Result;
use crate::output::{emit, table};

/// `dshq agent ...`
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Enter the registry; prints the new instance. Entering a live id again supersedes it.
    Enter {
        /// The agent id.
        #[arg(long)]
        id: String,
        /// The owning agent (must be live). Owned agents may not ask a human.
        #[arg(long)]
        owner: Option<String>,
        /// Where this agent came from (e.g. "resumed from session X"); audit only.
        #[arg(long)]
        lineage: Option<String>,
        /// End the entry unless it heartbeats within this long (1s to 30d).
        #[arg(long, value_parser = parse_agent_ttl)]
        ttl: Option<Duration>,
    },
    /// Renew an entry's ttl.
    Heartbeat {
        /// The agent id.
        #[arg(long)]
        id: String,
        /// The instance from `agent enter`.
        #[arg(long, env = "DSHQ_AGENT_INSTANCE")]
        instance: String,
    },
    /// Leave the registry, with every agent this one owns.
    Exit {
        /// The agent id.
        #[arg(long)]
        id: String,
        /// The instance from `agent enter`.
        #[arg(long, env = "DSHQ_AGENT_INSTANCE")]
        instance: String,
    },
    /// List the registry (live entries; --all for ended ones too).
    List {
        /// Include ended entries.
        #[arg(long)]
        all: bool,
    },
}

/// `agent exit` result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitView {
    /// Every agent that ended: this one and what it owned.
    pub ended: Vec<String>,
}

/// Run it.
pub fn run(ctx: &Ctx, c: Command) -> Result<()> {
    // Listing is a read: a read-only store can be listed, and nothing is written.
    let mut store = if matches!(c, Command::List { .. }) {
        ctx.read_store()?
    } else {
        ctx.store()?
    };
    match c {
        Command::Enter {
            id,
            owner,
            lineage,
            ttl,
        } => {
            let e = agents::enter(&mut store, &id, owner.as_deref(), lineage.as_deref(), ttl)?;
            emit(ctx.json, &e, || format!("{}\n", e.instance));
        }
        Command::Heartbeat { id, instance } => {
            let a = store.agent_heartbeat(&id, &instance)?;
            emit(ctx.json, &a, || match &a.expires_at {
                Some(e) => format!("agent {} live until {e}\n", a.id),
                None => format!("agent {} is live (no ttl)\n", a.id),
            });
        }
        Command::Exit { id, instance } => {
            let ended = store.agent_exit(&id, &instance)?;
            let v = ExitView { ended };
            emit(ctx.json, &v, || format!("ended {}\n", v.ended.join(", ")));
        }
        Command::List { all } => {
            let list = store.agents(!all)?;
            drop(store); // End the view before printing (its sweep holds the write lock).
            emit(ctx.json, &list, || {
                if list.is_empty() {
                    return "no agents\n".into();
                }
                table(
                    &[
                        "ID", "INSTANCE", "OWNER", "LINEAGE", "LIVE", "ENTERED", "EXPIRES",
                    ],
                    list.iter()
                        .map(|a| {
                            vec![
                                a.id.clone(),
                                a.instance.clone(),
                                a.owner.clone().unwrap_or_else(|| "-".into()),
                                a.lineage.clone().unwrap_or_else(|| "-".into()),
                                if a.live {
                                    "yes".into()
                                } else {
                                    a.end_reason.clone().unwrap_or_else(|| "no".into())
                                },
                                a.entered_at.clone(),
                                a.expires_at.clone().unwrap_or_else(|| "-".into()),
                            ]
                        })
                        .collect(),
                )
            });
        }
    }
    Ok(())
}
