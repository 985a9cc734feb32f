//! Web tokens' statements on SQLite ([`crate::store::driver::TokenStatements`],
//! [`crate::store::driver::TokenReads`]): the rules are [`crate::store::queue::tokens`];
//! here are the SQL and the row mapping.

use rusqlite::{params, OptionalExtension, Row};

use super::tx::{Sql, SqlRead};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::tokens::{TokenReads, TokenRecord, TokenStatements};

const COLUMNS: &str = "name, role, context, created_ms, revoked_ms, hash";

fn record(r: &Row<'_>) -> rusqlite::Result<TokenRecord> {
    Ok(TokenRecord {
        name: r.get(0)?,
        role: r.get(1)?,
        context: r.get(2)?,
        created_ms: r.get(3)?,
        revoked_ms: r.get(4)?,
        hash: r.get(5)?,
    })
}

impl TokenStatements for Sql<'_, '_> {
    fn token_name_taken(&mut self, name: &str) -> Result<bool> {
        Ok(self
            .0
            .prepare_cached("SELECT 1 FROM web_tokens WHERE name = ?1")?
            .exists([name])?)
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
        self.0
            .prepare_cached(
                "INSERT INTO web_tokens (name, role, context, lookup, hash, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![name, role, context, lookup, hash, created_ms])?;
        Ok(())
    }

    fn token_revoked_ms_for_update(&mut self, name: &str) -> Result<Option<Option<Millis>>> {
        // The write transaction holds the database's one write lock already.
        Ok(self
            .0
            .prepare_cached("SELECT revoked_ms FROM web_tokens WHERE name = ?1")?
            .query_row([name], |r| r.get(0))
            .optional()?)
    }

    fn set_token_revoked(&mut self, name: &str, revoked_ms: Millis) -> Result<()> {
        self.0
            .prepare_cached("UPDATE web_tokens SET revoked_ms = ?1 WHERE name = ?2")?
            .execute(params![revoked_ms, name])?;
        Ok(())
    }
}

impl TokenReads for SqlRead<'_> {
    fn all_tokens_by_name(&mut self) -> Result<Vec<TokenRecord>> {
        let mut stmt = self
            .0
            .prepare_cached(&format!("SELECT {COLUMNS} FROM web_tokens ORDER BY name"))?;
        let rows = stmt.query_map([], record)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn token_by_lookup(&mut self, lookup: &str) -> Result<Option<TokenRecord>> {
        Ok(self
            .0
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM web_tokens WHERE lookup = ?1"
            ))?
            .query_row([lookup], record)
            .optional()?)
    }
}
