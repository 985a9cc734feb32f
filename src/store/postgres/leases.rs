//! The lease statements ([`crate::store::driver::leases`]) in PostgreSQL: SQL and row
//! mapping only; the rules are [`crate::store::queue::leases`].
//!
//! The partial unique index `leases_live` backs the queue's duplicate check: an insert it
//! refuses is reported as such, not as an error.

use postgres::types::Type;
use postgres::{GenericClient, Row};

use super::tx::{PgRead, Tx};
use crate::clock::Millis;
use crate::core::audit::EventKind;
use crate::core::lifecycle::LeaseEnd;
use crate::error::Result;
use crate::store::driver::leases::{HeldLease, LeaseInfoRow, LeaseRow, NewLease, UnendedLease};
use crate::store::driver::{LeaseReads, LeaseStatements};

const INFO_SQL: &str = "SELECT l.lease_id, l.context, l.name, l.generation, l.created_ms, l.heartbeat_ms,
        l.expires_ms, l.ended_ms, l.end_reason,
        (SELECT COUNT(*) FROM requests r WHERE r.status = 'claimed' AND r.claimed_lease = l.lease_id)::bigint
 FROM leases l";

fn info_row(r: &Row) -> Result<LeaseInfoRow> {
    Ok(LeaseInfoRow {
        lease_id: r.try_get(0)?,
        context: r.try_get(1)?,
        name: r.try_get(2)?,
        generation: r.try_get(3)?,
        created_ms: r.try_get(4)?,
        heartbeat_ms: r.try_get(5)?,
        expires_ms: r.try_get(6)?,
        ended_ms: r.try_get(7)?,
        end_reason: r.try_get(8)?,
        claimed: r.try_get(9)?,
    })
}

impl<C: GenericClient> LeaseReads for PgRead<'_, C> {
    fn lease_by_id(&mut self, lease_id: i64) -> Result<Option<LeaseRow>> {
        let Some(r) = self.0.query_typed_opt(
            "SELECT lease_id, context, name, generation, secret_sha256, ttl_ms, expires_ms, end_reason
             FROM leases WHERE lease_id = $1",
            &[(&lease_id, Type::INT8)],
        )?
        else {
            return Ok(None);
        };
        Ok(Some(LeaseRow {
            lease_id: r.try_get(0)?,
            context: r.try_get(1)?,
            name: r.try_get(2)?,
            generation: r.try_get(3)?,
            digest: r.try_get(4)?,
            ttl_ms: r.try_get(5)?,
            expires_ms: r.try_get(6)?,
            end_reason: r.try_get(7)?,
        }))
    }

    fn lease_revoked_event_data(&mut self, lease_id: i64) -> Result<Option<String>> {
        match self.0.query_opt(
            "SELECT data FROM events WHERE lease_id = $1 AND kind = $2 AND request_id IS NULL",
            &[&lease_id, &EventKind::LeaseRevoked.as_str()],
        )? {
            Some(r) => Ok(Some(r.try_get(0)?)),
            None => Ok(None),
        }
    }

    fn live_lease_exists(&mut self, context: &str, now: Millis) -> Result<bool> {
        Ok(self
            .0
            .query_opt(
                "SELECT 1 FROM leases WHERE context = $1 AND ended_ms IS NULL AND expires_ms >= $2",
                &[&context, &now],
            )?
            .is_some())
    }

    fn lease_info(&mut self, lease_id: i64) -> Result<Option<LeaseInfoRow>> {
        self.0
            .query_opt(&format!("{INFO_SQL} WHERE l.lease_id = $1"), &[&lease_id])?
            .as_ref()
            .map(info_row)
            .transpose()
    }

    fn unended_lease_infos(&mut self, context: Option<&str>) -> Result<Vec<LeaseInfoRow>> {
        self.0
            .query(
                &format!(
                    "{INFO_SQL} WHERE l.ended_ms IS NULL AND ($1::text IS NULL OR l.context = $1)
                     ORDER BY l.context"
                ),
                &[&context],
            )?
            .iter()
            .map(info_row)
            .collect()
    }
}

impl LeaseStatements for Tx<'_> {
    fn unended_lease_of_context(&mut self, context: &str) -> Result<Option<UnendedLease>> {
        let Some(r) = self.tx.query_opt(
            "SELECT lease_id, name, generation, created_ms, expires_ms, host_label, host_idle_ms
             FROM leases WHERE context = $1 AND ended_ms IS NULL",
            &[&context],
        )?
        else {
            return Ok(None);
        };
        Ok(Some(UnendedLease {
            lease_id: r.try_get(0)?,
            name: r.try_get(1)?,
            generation: r.try_get(2)?,
            created_ms: r.try_get(3)?,
            expires_ms: r.try_get(4)?,
            host_label: r.try_get(5)?,
            host_idle_ms: r.try_get(6)?,
        }))
    }

    fn next_lease_generation(&mut self, context: &str) -> Result<i64> {
        Ok(self
            .tx
            .query_one(
                "SELECT (COALESCE(MAX(generation), 0) + 1)::bigint FROM leases WHERE context = $1",
                &[&context],
            )?
            .try_get(0)?)
    }

    fn insert_lease_if_none_unended(&mut self, l: &NewLease<'_>) -> Result<Option<i64>> {
        let inserted = self.tx.query_opt(
            // The id is the largest + 1, taken under the row-number lock, as SQLite numbers its
            // rows: an identity would leave a gap for every rolled-back registration (a
            // transient lease whose answer was refused), and the ids are in the tokens, the
            // events and the export.
            "INSERT INTO leases (lease_id, context, name, generation, secret_sha256, ttl_ms, created_ms, heartbeat_ms, expires_ms,
                                 host_id, host_label, host_idle_ms)
             VALUES ((SELECT COALESCE(MAX(lease_id), 0) + 1 FROM leases),
                     $1, $2, $3, $4, $5, $6, $6, $7, $8, $9, $10)
             ON CONFLICT (context) WHERE ended_ms IS NULL DO NOTHING RETURNING lease_id",
            &[
                &l.context,
                &l.name,
                &l.generation,
                &l.digest,
                &l.ttl_ms,
                &l.now,
                &l.expires_ms,
                &l.host.map(|h| h.0),
                &l.host.map(|h| h.1),
                &l.host.map(|h| h.2),
            ],
        );
        match inserted? {
            Some(r) => Ok(Some(r.try_get(0)?)),
            None => Ok(None),
        }
    }

    fn extend_lease_if_live(
        &mut self,
        lease_id: i64,
        generation: i64,
        now: Millis,
        expires_ms: Millis,
    ) -> Result<bool> {
        let n = self.tx.execute(
            "UPDATE leases SET heartbeat_ms = $1, expires_ms = $2
             WHERE lease_id = $3 AND generation = $4 AND ended_ms IS NULL AND expires_ms >= $1",
            &[&now, &expires_ms, &lease_id, &generation],
        )?;
        Ok(n == 1)
    }

    fn end_lease_if_unended(
        &mut self,
        lease_id: i64,
        now: Millis,
        reason: LeaseEnd,
    ) -> Result<bool> {
        let n = self.tx.execute(
            "UPDATE leases SET ended_ms = $1, end_reason = $2 WHERE lease_id = $3 AND ended_ms IS NULL",
            &[&now, &reason.as_str(), &lease_id],
        )?;
        Ok(n == 1)
    }

    fn unclaim_requests_of_lease(&mut self, lease_id: i64) -> Result<Vec<String>> {
        self.forget_id_rows();
        let mut released = self
            .tx
            .query(
                "UPDATE requests SET status = 'pending', claimed_lease = NULL, claimed_ms = NULL
                 WHERE status = 'claimed' AND claimed_lease = $1 RETURNING seq, id",
                &[&lease_id],
            )?
            .iter()
            .map(|r| Ok((r.try_get::<_, i64>(0)?, r.try_get::<_, String>(1)?)))
            .collect::<Result<Vec<_>>>()?;
        // In arrival order, as the statement promises.
        released.sort_by_key(|(seq, _)| *seq);
        Ok(released.into_iter().map(|(_, id)| id).collect())
    }

    fn unended_leases_expired_before(&mut self, now: Millis) -> Result<Vec<(i64, String)>> {
        self.tx
            .query(
                "SELECT lease_id, name FROM leases WHERE ended_ms IS NULL AND expires_ms < $1
                 ORDER BY lease_id",
                &[&now],
            )?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }

    fn unended_leases_of_host(&mut self, host_id: &str) -> Result<Vec<HeldLease>> {
        self.tx
            .query(
                "SELECT lease_id, context, name, generation FROM leases
                 WHERE ended_ms IS NULL AND host_id = $1 ORDER BY lease_id",
                &[&host_id],
            )?
            .iter()
            .map(|r| {
                Ok(HeldLease {
                    lease_id: r.try_get(0)?,
                    context: r.try_get(1)?,
                    name: r.try_get(2)?,
                    generation: r.try_get(3)?,
                })
            })
            .collect()
    }
}

/// Whether a provider is live in `context` at `now` (for this driver's own modules, which
/// have a client rather than a statements type).
pub fn live_in(c: &mut impl GenericClient, context: &str, now: Millis) -> Result<bool> {
    PgRead(c).live_lease_exists(context, now)
}
