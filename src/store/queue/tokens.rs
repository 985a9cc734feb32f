//! Web tokens, written once over [`TokenStatements`](crate::store::driver::tokens::TokenStatements) and [`TokenReads`]: what `dshq token
//! create`, `list` and `revoke` may do, and what the HTTP API's bearer check reads. The
//! token itself is never stored; the row keeps a lookup key (to find it) and the token's
//! hash (which the application compares in constant time).
//!
//! `create` and `revoke` run inside a write transaction (under the write lock), so the
//! "is the name taken" read and the insert cannot race another writer.

use crate::clock::Millis;
use crate::core::access::Role;
use crate::error::{Error, Result};
use crate::store::driver::tokens::{TokenReads, TokenRecord};
use crate::store::driver::Statements;
use crate::store::types::{TokenCredential, WebToken};

/// The row as a credential. A role the database lets through but this dshq does not know
/// (a newer one wrote it) is refused rather than given guessed rights.
fn credential(r: TokenRecord) -> Result<TokenCredential> {
    let role = Role::parse(&r.role).ok_or_else(|| {
        Error::Invalid(format!(
            "the web token row has an unknown role {:?} (written by a newer dshq?)",
            r.role
        ))
    })?;
    Ok(TokenCredential {
        token: WebToken {
            name: r.name,
            role,
            context: r.context,
            created_ms: r.created_ms,
            revoked_ms: r.revoked_ms,
        },
        hash: r.hash,
    })
}

/// Create a token at `now`; an empty or taken name (revoked tokens keep theirs) is
/// `Error::Invalid`.
pub fn create(
    db: &mut dyn Statements,
    now: Millis,
    name: &str,
    role: Role,
    context: Option<&str>,
    lookup: &str,
    hash: &[u8],
) -> Result<WebToken> {
    if name.trim().is_empty() {
        return Err(Error::Invalid("a token's name must not be empty".into()));
    }
    if db.token_name_taken(name)? {
        return Err(Error::Invalid(format!(
            "a token named {name:?} exists already (revoked tokens keep their name); choose another --name"
        )));
    }
    db.insert_token(name, role.as_str(), context, lookup, hash, now)?;
    Ok(WebToken {
        name: name.to_string(),
        role,
        context: context.map(str::to_string),
        created_ms: now,
        revoked_ms: None,
    })
}

/// Revoke by name at `now`: `false` when revoked already, `Error::TokenNotFound` when
/// there is none.
pub fn revoke(db: &mut dyn Statements, now: Millis, name: &str) -> Result<bool> {
    match db.token_revoked_ms_for_update(name)? {
        None => Err(Error::TokenNotFound(name.to_string())),
        Some(Some(_)) => Ok(false),
        Some(None) => {
            db.set_token_revoked(name, now)?;
            Ok(true)
        }
    }
}

/// Every token by name (revoked ones included), in byte order.
pub fn list(db: &mut dyn TokenReads) -> Result<Vec<WebToken>> {
    db.all_tokens_by_name()?
        .into_iter()
        .map(|r| credential(r).map(|c| c.token))
        .collect()
}

/// The token with this lookup key, revoked or not.
pub fn by_lookup(db: &mut dyn TokenReads, lookup: &str) -> Result<Option<TokenCredential>> {
    db.token_by_lookup(lookup)?.map(credential).transpose()
}
