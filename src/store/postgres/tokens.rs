//! Web tokens: the rows behind `dshq token` and the HTTP API's bearer check, as in the
//! SQLite backend (`store::sqlite::tokens`). The token is never stored; the row keeps a
//! lookup key (to find it) and the token's hash (which the application compares in
//! constant time).
//!
//! `create` and `revoke` run inside a write transaction (under the write lock), so the
//! "is the name taken" read and the insert cannot race another host; `list` and
//! `by_lookup` are plain reads on a client or inside a transaction.

use postgres::{GenericClient, Row, Transaction};

use crate::clock::Millis;
use crate::core::access::Role;
use crate::error::{Error, Result};
use crate::store::{TokenCredential, WebToken};

const COLUMNS: &str = "name, role, context, created_ms, revoked_ms, hash";

fn token(r: &Row) -> Result<TokenCredential> {
    let role: String = r.try_get(1)?;
    // A role the CHECK constraint lets through but this dshq does not know: refuse the
    // row rather than guess its rights.
    let role = Role::parse(&role).ok_or_else(|| {
        Error::Invalid(format!(
            "the web token row has an unknown role {role:?} (written by a newer dshq?)"
        ))
    })?;
    Ok(TokenCredential {
        token: WebToken {
            name: r.try_get(0)?,
            role,
            context: r.try_get(2)?,
            created_ms: r.try_get(3)?,
            revoked_ms: r.try_get(4)?,
        },
        hash: r.try_get(5)?,
    })
}

/// Insert a token; a taken name is `Error::Invalid`.
pub fn create(
    tx: &mut Transaction<'_>,
    name: &str,
    role: Role,
    context: Option<&str>,
    lookup: &str,
    hash: &[u8],
    now: Millis,
) -> Result<WebToken> {
    if name.trim().is_empty() {
        return Err(Error::Invalid("a token's name must not be empty".into()));
    }
    let taken = tx
        .query_opt("SELECT 1 FROM web_tokens WHERE name = $1", &[&name])?
        .is_some();
    if taken {
        return Err(Error::Invalid(format!(
            "a token named {name:?} exists already (revoked tokens keep their name); choose another --name"
        )));
    }
    tx.execute(
        "INSERT INTO web_tokens (name, role, context, lookup, hash, created_ms)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[&name, &role.as_str(), &context, &lookup, &hash, &now],
    )?;
    Ok(WebToken {
        name: name.to_string(),
        role,
        context: context.map(str::to_string),
        created_ms: now,
        revoked_ms: None,
    })
}

/// Every token by name (revoked ones included).
pub fn list(c: &mut impl GenericClient) -> Result<Vec<WebToken>> {
    // `COLLATE "C"`: byte order, as SQLite's default BINARY collation sorts.
    c.query(
        &format!("SELECT {COLUMNS} FROM web_tokens ORDER BY name COLLATE \"C\""),
        &[],
    )?
    .iter()
    .map(|r| token(r).map(|c| c.token))
    .collect()
}

/// Revoke by name: `false` when revoked already, `Error::TokenNotFound` when none.
pub fn revoke(tx: &mut Transaction<'_>, name: &str, now: Millis) -> Result<bool> {
    let revoked: Option<Option<Millis>> = tx
        .query_opt(
            "SELECT revoked_ms FROM web_tokens WHERE name = $1 FOR UPDATE",
            &[&name],
        )?
        .map(|r| r.try_get(0))
        .transpose()?;
    match revoked {
        None => Err(Error::TokenNotFound(name.to_string())),
        Some(Some(_)) => Ok(false),
        Some(None) => {
            tx.execute(
                "UPDATE web_tokens SET revoked_ms = $1 WHERE name = $2",
                &[&now, &name],
            )?;
            Ok(true)
        }
    }
}

/// The token with this lookup key, revoked or not.
pub fn by_lookup(c: &mut impl GenericClient, lookup: &str) -> Result<Option<TokenCredential>> {
    c.query_opt(
        &format!("SELECT {COLUMNS} FROM web_tokens WHERE lookup = $1"),
        &[&lookup],
    )?
    .as_ref()
    .map(token)
    .transpose()
}
