//! Web tokens' statements on PostgreSQL ([`crate::store::driver::TokenStatements`],
//! [`crate::store::driver::TokenReads`]): the rules are [`crate::store::queue::tokens`], as
//! on SQLite; here are the SQL and the row mapping. The list sorts as SQLite's (byte
//! order), and a revocation locks its row (`FOR UPDATE`).

use postgres::{GenericClient, Row};

use super::tx::{PgRead, Tx};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::tokens::{TokenReads, TokenRecord, TokenStatements};

const COLUMNS: &str = "name, role, context, created_ms, revoked_ms, hash";

fn record(r: &Row) -> Result<TokenRecord> {
    Ok(TokenRecord {
        name: r.try_get(0)?,
        role: r.try_get(1)?,
        context: r.try_get(2)?,
        created_ms: r.try_get(3)?,
        revoked_ms: r.try_get(4)?,
        hash: r.try_get(5)?,
    })
}

impl TokenStatements for Tx<'_> {
    fn token_name_taken(&mut self, name: &str) -> Result<bool> {
        Ok(self
            .tx
            .query_opt("SELECT 1 FROM web_tokens WHERE name = $1", &[&name])?
            .is_some())
    }

    fn insert_token(
        &mut self,
        name: &str,
        role: &str,
        context: Option<&str>,
        lookup: &str,
        hash: &[u8],
        created_ms: Millis,
    ) -> Result<()> {
        self.tx.execute(
            "INSERT INTO web_tokens (name, role, context, lookup, hash, created_ms)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[&name, &role, &context, &lookup, &hash, &created_ms],
        )?;
        Ok(())
    }

    fn token_revoked_ms_for_update(&mut self, name: &str) -> Result<Option<Option<Millis>>> {
        self.tx
            .query_opt(
                "SELECT revoked_ms FROM web_tokens WHERE name = $1 FOR UPDATE",
                &[&name],
            )?
            .map(|r| r.try_get(0))
            .transpose()
            .map_err(Into::into)
    }

    fn set_token_revoked(&mut self, name: &str, revoked_ms: Millis) -> Result<()> {
        self.tx.execute(
            "UPDATE web_tokens SET revoked_ms = $1 WHERE name = $2",
            &[&revoked_ms, &name],
        )?;
        Ok(())
    }
}

impl<C: GenericClient> TokenReads for PgRead<'_, C> {
    fn all_tokens_by_name(&mut self) -> Result<Vec<TokenRecord>> {
        // `COLLATE "C"`: byte order, as SQLite's default BINARY collation sorts.
        self.0
            .query(
                &format!("SELECT {COLUMNS} FROM web_tokens ORDER BY name COLLATE \"C\""),
                &[],
            )?
            .iter()
            .map(record)
            .collect()
    }

    fn token_by_lookup(&mut self, lookup: &str) -> Result<Option<TokenRecord>> {
        self.0
            .query_opt(
                &format!("SELECT {COLUMNS} FROM web_tokens WHERE lookup = $1"),
                &[&lookup],
            )?
            .as_ref()
            .map(record)
            .transpose()
    }
}
