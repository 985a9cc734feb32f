//! `dshq token create|list|revoke`: the bearer tokens of the HTTP API (see
//! [`crate::app::tokens`]). The token is printed once, on stdout, and stored only hashed.

use serde::Serialize;

use super::Ctx;
use crate::app::tokens;
use crate::clock::rfc3339;
use crate::core::access::Role;
use crate::error::Result;
use crate::output::{emit, print_json, table};
use crate::store::WebToken;

/// `dshq token ...`
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Create a token for the HTTP API; prints it once (it is stored only hashed).
    Create {
        /// What it may do: asker (ask, read and abort its own requests), reviewer (also
        /// claim, answer, cancel, read all) or auditor (history, events, stats).
        #[arg(long, value_parser = super::closed_set(Role::ALL, Role::as_str))]
        role: Role,
        /// Its name, recorded as `web:NAME` for everything it does (default: ROLE-HEX).
        #[arg(long)]
        name: Option<String>,
        /// Bind it to one context: it asks, reads and answers only there.
        #[arg(long, value_name = "C")]
        context: Option<String>,
    },
    /// List the tokens (names, roles, contexts; never the tokens).
    List,
    /// Revoke a token by name; it stops working at once. Revoking twice is fine.
    Revoke {
        /// The token's name.
        name: String,
    },
}

/// `token create --json`.
#[derive(Debug, Serialize)]
struct CreatedView<'a> {
    token: &'a str,
    name: &'a str,
    role: &'a str,
    context: Option<&'a str>,
}

/// One row of `token list --json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenView<'a> {
    #[serde(flatten)]
    record: &'a WebToken,
    created_at: String,
    revoked_at: Option<String>,
}

/// `token revoke --json`.
#[derive(Debug, Serialize)]
struct RevokedView<'a> {
    name: &'a str,
    revoked: bool,
}

/// Run it.
pub fn run(ctx: &Ctx, c: Command) -> Result<()> {
    // Listing is a read: nothing is written, and a missing root is NO_ROOT.
    let mut store = if matches!(c, Command::List) {
        ctx.read_store()?
    } else {
        ctx.store()?
    };
    match c {
        Command::Create {
            role,
            name,
            context,
        } => {
            let created = tokens::create(&mut store, role, name.as_deref(), context.as_deref())?;
            drop(store);
            let r = &created.record;
            emit(
                ctx.json,
                &CreatedView {
                    token: &created.token,
                    name: &r.name,
                    role: r.role.as_str(),
                    context: r.context.as_deref(),
                },
                || {
                    eprintln!(
                        "token {:?} ({}) created; it is shown only now: keep it secret",
                        r.name, r.role
                    );
                    format!("{}\n", created.token)
                },
            );
        }
        Command::List => {
            let list = store.tokens()?;
            drop(store);
            let views: Vec<TokenView> = list
                .iter()
                .map(|t| TokenView {
                    record: t,
                    created_at: rfc3339(t.created_ms),
                    revoked_at: t.revoked_ms.map(rfc3339),
                })
                .collect();
            if ctx.json {
                print_json(&views);
            } else {
                let rows = views
                    .iter()
                    .map(|v| {
                        vec![
                            v.record.name.clone(),
                            v.record.role.to_string(),
                            v.record.context.clone().unwrap_or_else(|| "*".into()),
                            v.created_at.clone(),
                            v.revoked_at.clone().unwrap_or_default(),
                        ]
                    })
                    .collect();
                println!(
                    "{}",
                    table(&["NAME", "ROLE", "CONTEXT", "CREATED", "REVOKED"], rows)
                        .trim_end_matches('\n')
                );
            }
        }
        Command::Revoke { name } => {
            let revoked = store.token_revoke(&name)?;
            drop(store);
            emit(
                ctx.json,
                &RevokedView {
                    name: &name,
                    revoked,
                },
                || {
                    if revoked {
                        format!("token {name:?} revoked\n")
                    } else {
                        format!("token {name:?} was revoked already\n")
                    }
                },
            );
        }
    }
    Ok(())
}
