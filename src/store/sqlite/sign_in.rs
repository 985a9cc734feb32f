//! The quorum groups of sign-ins on SQLite ([`crate::store::driver::SignInStatements`],
//! [`crate::store::driver::SignInReads`]): the rule is [`crate::store::queue::sign_in`];
//! here are the SQL and the row mapping.

use rusqlite::{params, OptionalExtension, Row};

use super::tx::{Sql, SqlRead};
use crate::error::Result;
use crate::store::driver::sign_in::{SignInGroup, SignInReads, SignInStatements};

const COLUMNS: &str = "person, quorum_group, subject, signed_in_ms";

fn group(r: &Row<'_>) -> rusqlite::Result<SignInGroup> {
    Ok(SignInGroup {
        person: r.get(0)?,
        quorum_group: r.get(1)?,
        subject: r.get(2)?,
        signed_in_ms: r.get(3)?,
    })
}

impl SignInStatements for Sql<'_, '_> {
    fn delete_sign_in_groups_of_person(&mut self, person: &str) -> Result<u64> {
        Ok(self
            .0
            .prepare_cached("DELETE FROM sign_in_groups WHERE person = ?1")?
            .execute([person])? as u64)
    }

    fn upsert_sign_in_group(&mut self, g: &SignInGroup) -> Result<()> {
        self.0
            .prepare_cached(&format!(
                "INSERT INTO sign_in_groups ({COLUMNS}) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (person, quorum_group) DO UPDATE SET subject = excluded.subject,
                   signed_in_ms = excluded.signed_in_ms"
            ))?
            .execute(params![g.person, g.quorum_group, g.subject, g.signed_in_ms])?;
        Ok(())
    }

    fn sign_in_group_of_person(
        &mut self,
        person: &str,
        quorum_group: &str,
    ) -> Result<Option<SignInGroup>> {
        Ok(self
            .0
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM sign_in_groups WHERE person = ?1 AND quorum_group = ?2"
            ))?
            .query_row([person, quorum_group], group)
            .optional()?)
    }
}

impl SignInReads for SqlRead<'_> {
    fn sign_in_groups_of_person(&mut self, person: &str) -> Result<Vec<SignInGroup>> {
        let mut stmt = self.0.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM sign_in_groups WHERE person = ?1 ORDER BY quorum_group"
        ))?;
        let rows = stmt.query_map([person], group)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
