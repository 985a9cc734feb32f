//! Away notices on PostgreSQL ([`crate::store::driver::DelegationStatements`],
//! [`crate::store::driver::DelegationReads`]), as on SQLite: the rule is
//! [`crate::store::queue::delegation`]; here are the SQL and the row mapping.

use postgres::{GenericClient, Row};

use super::tx::{PgRead, Tx};
use crate::clock::Millis;
use crate::core::delegation::Away;
use crate::error::Result;
use crate::store::driver::delegation::{DelegationReads, DelegationStatements};

const COLUMNS: &str = "person, delegate, until_ms, set_ms, set_by";

fn away(r: &Row) -> Result<Away> {
    Ok(Away {
        person: r.try_get(0)?,
        delegate: r.try_get(1)?,
        until_ms: r.try_get(2)?,
        set_ms: r.try_get(3)?,
        set_by: r.try_get(4)?,
    })
}

fn all(c: &mut impl GenericClient) -> Result<Vec<Away>> {
    c.query(
        &format!("SELECT {COLUMNS} FROM delegations ORDER BY person"),
        &[],
    )?
    .iter()
    .map(away)
    .collect()
}

impl DelegationStatements for Tx<'_> {
    fn upsert_away(&mut self, a: &Away) -> Result<()> {
        // The table is its own: no request row it names needs to be sent first.
        self.tx.beside_held().execute(
            &format!(
                "INSERT INTO delegations ({COLUMNS}) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (person) DO UPDATE SET delegate = excluded.delegate,
                   until_ms = excluded.until_ms, set_ms = excluded.set_ms, set_by = excluded.set_by"
            ),
            &[&a.person, &a.delegate, &a.until_ms, &a.set_ms, &a.set_by],
        )?;
        Ok(())
    }

    fn delete_away(&mut self, person: &str) -> Result<Option<Away>> {
        self.tx
            .beside_held()
            .query_opt(
                &format!("DELETE FROM delegations WHERE person = $1 RETURNING {COLUMNS}"),
                &[&person],
            )?
            .as_ref()
            .map(away)
            .transpose()
    }

    fn delete_aways_ended(&mut self, now: Millis) -> Result<Vec<Away>> {
        let mut out = self
            .tx
            .beside_held()
            .query(
                &format!("DELETE FROM delegations WHERE until_ms <= $1 RETURNING {COLUMNS}"),
                &[&now],
            )?
            .iter()
            .map(away)
            .collect::<Result<Vec<_>>>()?;
        out.sort_by(|a, b| a.person.cmp(&b.person));
        Ok(out)
    }

    fn aways_in_write(&mut self) -> Result<Vec<Away>> {
        all(self.tx.beside_held())
    }

    fn live_token_roles(&mut self) -> Result<Vec<(String, String)>> {
        self.tx
            .beside_held()
            .query(
                "SELECT name, role FROM web_tokens WHERE revoked_ms IS NULL ORDER BY name",
                &[],
            )?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }
}

impl<C: GenericClient> DelegationReads for PgRead<'_, C> {
    fn aways(&mut self) -> Result<Vec<Away>> {
        all(self.0)
    }
}
