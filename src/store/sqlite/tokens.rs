//! Web tokens: the rows behind `dshq token` and the HTTP API's bearer check. The token is
//! never stored; the row keeps a lookup key (to find it) and the token's hash (which the
//! application compares in constant time).

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::clock::Millis;
use crate::core::access::Role;
use crate::error::{Error, Result};
use crate::store::{TokenCredential, WebToken};

const COLUMNS: &str = "name, role, context, created_ms, revoked_ms, hash";

fn token(r: &Row<'_>) -> rusqlite::Result<TokenCredential> {
    let role: String = r.get(1)?;
    let role = Role::parse(&role).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            1,
            rusqlite::types::Type::Text,
            format!("unknown role {role:?}").into(),
        )
    })?;
    Ok(TokenCredential {
        token: WebToken {
            name: r.get(0)?,
            role,
            context: r.get(2)?,
            created_ms: r.get(3)?,
            revoked_ms: r.get(4)?,
        },
        hash: r.get(5)?,
    })
}

/// Insert a token; a taken name is `Error::Invalid`.
pub fn create(
    conn: &Connection,
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
    let taken: bool = conn
        .prepare_cached("SELECT 1 FROM web_tokens WHERE name = ?1")?
        .exists([name])?;
    if taken {
        return Err(Error::Invalid(format!(
            "a token named {name:?} exists already (revoked tokens keep their name); choose another --name"
        )));
    }
    conn.prepare_cached(
        "INSERT INTO web_tokens (name, role, context, lookup, hash, created_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![name, role.as_str(), context, lookup, hash, now])?;
    Ok(WebToken {
        name: name.to_string(),
        role,
        context: context.map(str::to_string),
        created_ms: now,
        revoked_ms: None,
    })
}

/// Every token by name.
pub fn list(conn: &Connection) -> Result<Vec<WebToken>> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM web_tokens ORDER BY name"))?;
    let rows = stmt
        .query_map([], token)?
        .map(|r| r.map(|c| c.token))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Revoke by name: `false` when revoked already.
pub fn revoke(conn: &Connection, name: &str, now: Millis) -> Result<bool> {
    let revoked: Option<Option<Millis>> = conn
        .prepare_cached("SELECT revoked_ms FROM web_tokens WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?;
    match revoked {
        None => Err(Error::TokenNotFound(name.to_string())),
        Some(Some(_)) => Ok(false),
        Some(None) => {
            conn.prepare_cached("UPDATE web_tokens SET revoked_ms = ?1 WHERE name = ?2")?
                .execute(params![now, name])?;
            Ok(true)
        }
    }
}

/// The token with this lookup key.
pub fn by_lookup(conn: &Connection, lookup: &str) -> Result<Option<TokenCredential>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM web_tokens WHERE lookup = ?1"
        ))?
        .query_row([lookup], token)
        .optional()?)
}
