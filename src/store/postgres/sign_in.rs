//! The quorum groups of sign-ins on PostgreSQL ([`crate::store::driver::SignInStatements`],
//! [`crate::store::driver::SignInReads`]), as on SQLite: the rule is
//! [`crate::store::queue::sign_in`]; here are the SQL and the row mapping.

use postgres::{GenericClient, Row};

use super::tx::{PgRead, Tx};
use crate::error::Result;
use crate::store::driver::sign_in::{SignInGroup, SignInReads, SignInStatements};

const COLUMNS: &str = "person, quorum_group, subject, signed_in_ms";

fn group(r: &Row) -> Result<SignInGroup> {
    Ok(SignInGroup {
        person: r.try_get(0)?,
        quorum_group: r.try_get(1)?,
        subject: r.try_get(2)?,
        signed_in_ms: r.try_get(3)?,
    })
}

// The table names no request row: its statements need none of the held rows sent first.
impl SignInStatements for Tx<'_> {
    fn delete_sign_in_groups_of_person(&mut self, person: &str) -> Result<u64> {
        Ok(self
            .tx
            .beside_held()
            .execute("DELETE FROM sign_in_groups WHERE person = $1", &[&person])?)
    }

    fn upsert_sign_in_group(&mut self, g: &SignInGroup) -> Result<()> {
        // Two hosts' sign-ins of one person at once must not fail on the key.
        self.tx.beside_held().execute(
            &format!(
                "INSERT INTO sign_in_groups ({COLUMNS}) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (person, quorum_group) DO UPDATE SET subject = excluded.subject,
                   signed_in_ms = excluded.signed_in_ms"
            ),
            &[&g.person, &g.quorum_group, &g.subject, &g.signed_in_ms],
        )?;
        Ok(())
    }

    fn sign_in_group_of_person(
        &mut self,
        person: &str,
        quorum_group: &str,
    ) -> Result<Option<SignInGroup>> {
        self.tx
            .beside_held()
            .query_opt(
                &format!(
                    "SELECT {COLUMNS} FROM sign_in_groups WHERE person = $1 AND quorum_group = $2"
                ),
                &[&person, &quorum_group],
            )?
            .as_ref()
            .map(group)
            .transpose()
    }
}

impl<C: GenericClient> SignInReads for PgRead<'_, C> {
    fn sign_in_groups_of_person(&mut self, person: &str) -> Result<Vec<SignInGroup>> {
        self.0
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM sign_in_groups WHERE person = $1 ORDER BY quorum_group"
                ),
                &[&person],
            )?
            .iter()
            .map(group)
            .collect()
    }
}
