//! Web tokens: create (the token is shown once and never stored), list, revoke, and
//! authenticate a presented bearer token.
//!
//! A token is `dshq_` and 64 lowercase hex digits (32 bytes from the OS random source).
//! Its first 16 hex digits are its lookup key, stored in clear to find the row; the row
//! keeps the SHA-256 of the whole token, and the presented token's hash is compared with
//! it in constant time (`subtle`), so neither a timing nor a read of the database gives
//! a usable token away. A wrong, malformed or revoked token is the same
//! [`Error::Unauthorized`]: the caller learns nothing about which.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::core::access::Role;
use crate::error::{Error, Result};
use crate::store::{Store, WebToken};

/// The prefix of every token (so a leaked one is recognisable to secret scanners).
pub const PREFIX: &str = "dshq_";
const SECRET_HEX: usize = 64;
const LOOKUP_HEX: usize = 16;

/// A token just created: its record and the token itself (shown once).
#[derive(Debug, Clone)]
pub struct Created {
    /// The record.
    pub record: WebToken,
    /// The token. Not stored anywhere; print it once.
    pub token: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// The lookup key of a well-formed token; `None` for anything else.
fn lookup_of(token: &str) -> Option<&str> {
    let secret = token.strip_prefix(PREFIX)?;
    let well_formed = secret.len() == SECRET_HEX
        && secret
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    well_formed.then(|| &secret[..LOOKUP_HEX])
}

/// Create a token with `role` (bound to `context` when given), named `name` or a
/// generated `ROLE-HEX` name.
pub fn create(
    store: &mut Store,
    role: Role,
    name: Option<&str>,
    context: Option<&str>,
) -> Result<Created> {
    let mut secret = [0u8; 32];
    getrandom::getrandom(&mut secret)
        .map_err(|e| Error::io("the OS random source", std::io::Error::other(e.to_string())))?;
    let token = format!("{PREFIX}{}", hex(&secret));
    let lookup = lookup_of(&token).expect("a fresh token is well formed");
    let name = match name {
        Some(n) => n.to_string(),
        None => format!("{}-{}", role.as_str(), &hex(&Sha256::digest(secret))[..8]),
    };
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(Error::Invalid(format!(
            "token name {:?}: use 1 to 64 letters, digits, '-', '_' or '.'",
            crate::text::for_log(&name)
        )));
    }
    let record = store.token_create(&name, role, context, lookup, &hash(&token))?;
    Ok(Created { record, token })
}

/// The live token record of a presented bearer token, or [`Error::Unauthorized`].
pub fn authenticate(store: &mut Store, presented: &str) -> Result<WebToken> {
    let Some(lookup) = lookup_of(presented) else {
        return Err(Error::Unauthorized);
    };
    let Some(cred) = store.token_credential(lookup)? else {
        return Err(Error::Unauthorized);
    };
    let equal: bool = hash(presented).ct_eq(&cred.hash).into();
    if !equal || cred.token.revoked_ms.is_some() {
        return Err(Error::Unauthorized);
    }
    Ok(cred.token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;

    #[test]
    fn a_token_authenticates_until_revoked_and_nothing_else_does() {
        let mut store: crate::store::Store = SqliteStore::in_memory().unwrap().into();
        let c = create(&mut store, Role::Reviewer, Some("alice"), Some("ci")).unwrap();
        assert_eq!(c.record.name, "alice");
        let t = authenticate(&mut store, &c.token).unwrap();
        assert_eq!((t.role, t.context.as_deref()), (Role::Reviewer, Some("ci")));
        // Same lookup key, other secret: refused.
        let mut forged = c.token.clone();
        let last = forged.pop().unwrap();
        forged.push(if last == '0' { '1' } else { '0' });
        assert!(matches!(
            authenticate(&mut store, &forged),
            Err(Error::Unauthorized)
        ));
        for bad in ["", "dshq_", "Bearer x", &c.token.to_uppercase()] {
            assert!(matches!(
                authenticate(&mut store, bad),
                Err(Error::Unauthorized)
            ));
        }
        assert!(create(&mut store, Role::Asker, Some("alice"), None).is_err());
        assert!(create(&mut store, Role::Asker, Some("a b"), None).is_err());
        assert!(store.token_revoke("alice").unwrap());
        assert!(!store.token_revoke("alice").unwrap());
        assert!(matches!(
            authenticate(&mut store, &c.token),
            Err(Error::Unauthorized)
        ));
        assert!(matches!(
            store.token_revoke("bob"),
            Err(Error::TokenNotFound(_))
        ));
        let listed = store.tokens().unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].revoked_ms.is_some());
    }
}
