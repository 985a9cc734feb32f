//! Away notices on SQLite ([`crate::store::driver::DelegationStatements`],
//! [`crate::store::driver::DelegationReads`]): the rule is
//! [`crate::store::queue::delegation`]; here are the SQL and the row mapping.

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::tx::{Sql, SqlRead};
use crate::clock::Millis;
use crate::core::delegation::Away;
use crate::error::Result;
use crate::store::driver::delegation::{DelegationReads, DelegationStatements};

const COLUMNS: &str = "person, delegate, until_ms, set_ms, set_by";

fn away(r: &Row<'_>) -> rusqlite::Result<Away> {
    Ok(Away {
        person: r.get(0)?,
        delegate: r.get(1)?,
        until_ms: r.get(2)?,
        set_ms: r.get(3)?,
        set_by: r.get(4)?,
    })
}

fn all(c: &Connection) -> Result<Vec<Away>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM delegations ORDER BY person"
    ))?;
    let rows = stmt.query_map([], away)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

impl DelegationStatements for Sql<'_, '_> {
    fn upsert_away(&mut self, a: &Away) -> Result<()> {
        self.0
            .prepare_cached(&format!(
                "INSERT INTO delegations ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (person) DO UPDATE SET delegate = excluded.delegate,
                   until_ms = excluded.until_ms, set_ms = excluded.set_ms, set_by = excluded.set_by"
            ))?
            .execute(params![
                a.person, a.delegate, a.until_ms, a.set_ms, a.set_by
            ])?;
        Ok(())
    }

    fn delete_away(&mut self, person: &str) -> Result<Option<Away>> {
        Ok(self
            .0
            .prepare_cached(&format!(
                "DELETE FROM delegations WHERE person = ?1 RETURNING {COLUMNS}"
            ))?
            .query_row([person], away)
            .optional()?)
    }

    fn delete_aways_ended(&mut self, now: Millis) -> Result<Vec<Away>> {
        let mut stmt = self.0.prepare_cached(&format!(
            "DELETE FROM delegations WHERE until_ms <= ?1 RETURNING {COLUMNS}"
        ))?;
        let rows = stmt.query_map([now], away)?;
        let mut out: Vec<Away> = rows.collect::<rusqlite::Result<_>>()?;
        out.sort_by(|a, b| a.person.cmp(&b.person));
        Ok(out)
    }

    fn aways_in_write(&mut self) -> Result<Vec<Away>> {
        all(self.0)
    }

    fn live_token_roles(&mut self) -> Result<Vec<(String, String)>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT name, role FROM web_tokens WHERE revoked_ms IS NULL ORDER BY name",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl DelegationReads for SqlRead<'_> {
    fn aways(&mut self) -> Result<Vec<Away>> {
        all(self.0)
    }
}
