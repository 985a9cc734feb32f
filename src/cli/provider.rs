//! `dshq provider register|heartbeat|release|revoke|status`: the provider lease.

use std::time::Duration;

use serde::Serialize;

use super::{default_provider_name, parse_lease_ttl, require_lease, Ctx};
use crate::app::session;
use crate::clock::rfc3339;
use crate::error::Result;
use crate::output::{emit, table};

/// `dshq provider ...`
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Register as the one live provider of a context; prints the lease token.
    Register {
        /// The provider's name, recorded as who answered.
        #[arg(long)]
        name: Option<String>,
        /// The context to answer for.
        #[arg(long, default_value = crate::protocol::DEFAULT_CONTEXT)]
        context: String,
        /// How long the lease lives without a heartbeat (1s to 24h).
        #[arg(long, default_value = "5m", value_parser = parse_lease_ttl)]
        ttl: Duration,
    },
    /// Extend the lease by its ttl.
    Heartbeat {
        /// The lease token.
        #[arg(long, env = "DSHQ_LEASE", hide_env_values = true)]
        lease: Option<String>,
    },
    /// End the lease; its claims go back to pending. Releasing twice is fine.
    Release {
        /// The lease token.
        #[arg(long, env = "DSHQ_LEASE", hide_env_values = true)]
        lease: Option<String>,
    },
    /// End another holder's live lease in a context on purpose (recorded in the event log
    /// with who and why); its claims go back to pending and the holder's token stops working.
    Revoke {
        /// The context whose live lease to end.
        #[arg(long, default_value = crate::protocol::DEFAULT_CONTEXT)]
        context: String,
        /// Why (recorded in the event log).
        #[arg(long)]
        reason: Option<String>,
        /// Who revokes, as recorded (default: $USER).
        #[arg(long)]
        name: Option<String>,
    },
    /// Show the live lease of each context (or of one context, or of one token).
    Status {
        /// Only this context.
        #[arg(long)]
        context: Option<String>,
        /// Show this lease (live or not).
        #[arg(long, env = "DSHQ_LEASE", hide_env_values = true)]
        lease: Option<String>,
    },
}

/// `provider heartbeat` result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatView {
    /// The context.
    pub context: String,
    /// The provider name.
    pub name: String,
    /// Generation.
    pub generation: i64,
    /// New expiry.
    pub expires_at: String,
}

/// `provider release` result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseView {
    /// False when it had already ended (not an error).
    pub released: bool,
}

/// Run it.
pub fn run(ctx: &Ctx, c: Command) -> Result<()> {
    // Listing is a read: a read-only store can be listed, and nothing is written.
    let mut store = if matches!(c, Command::Status { .. }) {
        ctx.read_store()?
    } else {
        ctx.store()?
    };
    match c {
        Command::Register { name, context, ttl } => {
            let name = name.unwrap_or_else(default_provider_name);
            let reg = session::register(&mut store, &context, &name, ttl)?;
            emit(ctx.json, &reg, || {
                eprintln!(
                    "registered {} in context {} (generation {}), expires {}; heartbeat before then",
                    crate::text::one_line(&reg.name),
                    reg.context,
                    reg.generation,
                    reg.expires_at
                );
                format!("{}\n", reg.lease)
            });
        }
        Command::Heartbeat { lease } => {
            let token = require_lease(lease)?;
            let l = store.heartbeat(&token)?;
            let v = HeartbeatView {
                context: l.context,
                name: l.name,
                generation: l.generation,
                expires_at: rfc3339(l.expires_ms),
            };
            emit(ctx.json, &v, || {
                format!("lease extended until {}\n", v.expires_at)
            });
        }
        Command::Release { lease } => {
            let token = require_lease(lease)?;
            let released = store.release(&token)?;
            let v = ReleaseView { released };
            emit(ctx.json, &v, || {
                if released {
                    "lease released\n".into()
                } else {
                    "lease had already ended\n".into()
                }
            });
        }
        Command::Revoke {
            context,
            reason,
            name,
        } => {
            let by = name.unwrap_or_else(default_provider_name);
            let v = store.revoke(&context, &by, reason.as_deref())?;
            emit(ctx.json, &v, || revoked_text(&v));
        }
        Command::Status { context, lease } => {
            let token = lease.filter(|l| !l.trim().is_empty());
            let list = session::status(&mut store, token.as_deref(), context.as_deref())?;
            drop(store); // End the view before printing (its sweep holds the write lock).
            emit(ctx.json, &list, || leases_table(&list));
        }
    }
    Ok(())
}

/// What `provider revoke` says of the lease it ended.
fn revoked_text(v: &crate::store::Revoked) -> String {
    let mut s = format!(
        "revoked {}'s lease in context {} (generation {})",
        crate::text::one_line(&v.name),
        v.context,
        v.generation
    );
    if !v.released.is_empty() {
        s.push_str(&format!(
            "; {} claimed request(s) back to pending",
            v.released.len()
        ));
    }
    s.push('\n');
    s
}

/// `provider status` as a table: one lease a row.
fn leases_table(list: &[crate::store::LeaseInfo]) -> String {
    if list.is_empty() {
        return "no provider lease\n".into();
    }
    table(
        &["CONTEXT", "PROVIDER", "GEN", "LIVE", "EXPIRES", "CLAIMED"],
        list.iter()
            .map(|l| {
                vec![
                    l.context.clone(),
                    l.name.clone(),
                    l.generation.to_string(),
                    if l.live {
                        "yes".into()
                    } else {
                        l.end_reason.clone().unwrap_or_else(|| "expired".into())
                    },
                    l.expires_at.clone(),
                    l.claimed.to_string(),
                ]
            })
            .collect(),
    )
}
