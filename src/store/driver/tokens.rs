//! The statements of one concern. Web tokens: the rows behind `dshq token` and the HTTP
//! API's bearer check.
//!
//! See [`super`] for what a statement is and is not. The rules (a name must be given and
//! is never reused, revoking twice is no error but revoking none is, a role this dshq
//! does not know is refused) are [`crate::store::queue::tokens`].

use crate::clock::Millis;
use crate::error::Result;

/// A `web_tokens` row, as stored.
#[derive(Debug, Clone)]
pub struct TokenRecord {
    /// Its unique name.
    pub name: String,
    /// Its role, as stored.
    pub role: String,
    /// The one context it acts in, when bound to one.
    pub context: Option<String>,
    /// When it was created.
    pub created_ms: Millis,
    /// When it was revoked.
    pub revoked_ms: Option<Millis>,
    /// The token's hash.
    pub hash: Vec<u8>,
}

/// The statements this concern's queue rules need from a write transaction.
pub trait TokenStatements {
    /// Whether a token row (revoked or not) has `name`.
    fn token_name_taken(&mut self, name: &str) -> Result<bool>;

    /// Insert a token row.
    fn insert_token(
        &mut self,
        name: &str,
        role: &str,
        context: Option<&str>,
        lookup: &str,
        hash: &[u8],
        created_ms: Millis,
    ) -> Result<()>;

    /// The `revoked_ms` of the token named `name` (`None`: no such token), its row locked
    /// for this transaction where the database locks rows.
    fn token_revoked_ms_for_update(&mut self, name: &str) -> Result<Option<Option<Millis>>>;

    /// Set the `revoked_ms` of the token named `name`.
    fn set_token_revoked(&mut self, name: &str, revoked_ms: Millis) -> Result<()>;
}

/// The reads of the token rows, on a read connection.
pub trait TokenReads {
    /// Every token row, by name in byte order.
    fn all_tokens_by_name(&mut self) -> Result<Vec<TokenRecord>>;

    /// The token row with this lookup key.
    fn token_by_lookup(&mut self, lookup: &str) -> Result<Option<TokenRecord>>;
}
