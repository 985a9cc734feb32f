//! The lease statements ([`crate::store::driver::leases`]) in SQLite: SQL and row mapping
//! only; the rules are [`crate::store::queue::leases`].

use rusqlite::{params, Connection, OptionalExtension};

use super::tx::{Sql, SqlRead};
use crate::clock::Millis;
use crate::core::audit::EventKind;
use crate::core::lifecycle::LeaseEnd;
use crate::error::Result;
use crate::store::driver::leases::{HeldLease, LeaseInfoRow, LeaseRow, NewLease, UnendedLease};
use crate::store::driver::{LeaseReads, LeaseStatements};

const INFO_SQL: &str = "SELECT l.lease_id, l.context, l.name, l.generation, l.created_ms, l.heartbeat_ms,
        l.expires_ms, l.ended_ms, l.end_reason,
        (SELECT COUNT(*) FROM requests r WHERE r.status = 'claimed' AND r.claimed_lease = l.lease_id)
 FROM leases l";

fn info_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<LeaseInfoRow> {
    Ok(LeaseInfoRow {
        lease_id: r.get(0)?,
        context: r.get(1)?,
        name: r.get(2)?,
        generation: r.get(3)?,
        created_ms: r.get(4)?,
        heartbeat_ms: r.get(5)?,
        expires_ms: r.get(6)?,
        ended_ms: r.get(7)?,
        end_reason: r.get(8)?,
        claimed: r.get(9)?,
    })
}

fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE)
}

impl LeaseReads for SqlRead<'_> {
    fn lease_by_id(&mut self, lease_id: i64) -> Result<Option<LeaseRow>> {
        Ok(self
            .0
            .query_row(
                "SELECT lease_id, context, name, generation, secret_sha256, ttl_ms, expires_ms, end_reason
                 FROM leases WHERE lease_id = ?1",
                [lease_id],
                |r| {
                    Ok(LeaseRow {
                        lease_id: r.get(0)?,
                        context: r.get(1)?,
                        name: r.get(2)?,
                        generation: r.get(3)?,
                        digest: r.get(4)?,
                        ttl_ms: r.get(5)?,
                        expires_ms: r.get(6)?,
                        end_reason: r.get(7)?,
                    })
                },
            )
            .optional()?)
    }

    fn lease_revoked_event_data(&mut self, lease_id: i64) -> Result<Option<String>> {
        Ok(self
            .0
            .query_row(
                "SELECT data FROM events WHERE lease_id = ?1 AND kind = ?2 AND request_id IS NULL",
                params![lease_id, EventKind::LeaseRevoked.as_str()],
                |r| r.get(0),
            )
            .optional()?)
    }

    fn live_lease_exists(&mut self, context: &str, now: Millis) -> Result<bool> {
        Ok(self
            .0
            .prepare_cached(
                "SELECT 1 FROM leases WHERE context = ?1 AND ended_ms IS NULL AND expires_ms >= ?2",
            )?
            .exists(params![context, now])?)
    }

    fn lease_info(&mut self, lease_id: i64) -> Result<Option<LeaseInfoRow>> {
        Ok(self
            .0
            .query_row(
                &format!("{INFO_SQL} WHERE l.lease_id = ?1"),
                [lease_id],
                info_row,
            )
            .optional()?)
    }

    fn unended_lease_infos(&mut self, context: Option<&str>) -> Result<Vec<LeaseInfoRow>> {
        let mut stmt = self.0.prepare(&format!(
            "{INFO_SQL} WHERE l.ended_ms IS NULL AND (?1 IS NULL OR l.context = ?1) ORDER BY l.context"
        ))?;
        let rows = stmt.query_map([context], info_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl LeaseStatements for Sql<'_, '_> {
    fn unended_lease_of_context(&mut self, context: &str) -> Result<Option<UnendedLease>> {
        Ok(self
            .0
            .query_row(
                "SELECT lease_id, name, generation, created_ms, expires_ms, host_label, host_idle_ms
                 FROM leases WHERE context = ?1 AND ended_ms IS NULL",
                [context],
                |r| {
                    Ok(UnendedLease {
                        lease_id: r.get(0)?,
                        name: r.get(1)?,
                        generation: r.get(2)?,
                        created_ms: r.get(3)?,
                        expires_ms: r.get(4)?,
                        host_label: r.get(5)?,
                        host_idle_ms: r.get(6)?,
                    })
                },
            )
            .optional()?)
    }

    fn next_lease_generation(&mut self, context: &str) -> Result<i64> {
        Ok(self.0.query_row(
            "SELECT COALESCE(MAX(generation), 0) + 1 FROM leases WHERE context = ?1",
            [context],
            |r| r.get(0),
        )?)
    }

    fn insert_lease_if_none_unended(&mut self, l: &NewLease<'_>) -> Result<Option<i64>> {
        let inserted = self.0.execute(
            "INSERT INTO leases (context, name, generation, secret_sha256, ttl_ms, created_ms, heartbeat_ms, expires_ms,
                                 host_id, host_label, host_idle_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9, ?10)",
            params![
                l.context,
                l.name,
                l.generation,
                l.digest,
                l.ttl_ms,
                l.now,
                l.expires_ms,
                l.host.map(|h| h.0),
                l.host.map(|h| h.1),
                l.host.map(|h| h.2)
            ],
        );
        match inserted {
            Ok(_) => Ok(Some(self.0.last_insert_rowid())),
            Err(e) if is_unique_violation(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn extend_lease_if_live(
        &mut self,
        lease_id: i64,
        generation: i64,
        now: Millis,
        expires_ms: Millis,
    ) -> Result<bool> {
        let n = self.0.execute(
            "UPDATE leases SET heartbeat_ms = ?1, expires_ms = ?2
             WHERE lease_id = ?3 AND generation = ?4 AND ended_ms IS NULL AND expires_ms >= ?1",
            params![now, expires_ms, lease_id, generation],
        )?;
        Ok(n == 1)
    }

    fn end_lease_if_unended(
        &mut self,
        lease_id: i64,
        now: Millis,
        reason: LeaseEnd,
    ) -> Result<bool> {
        let n = self.0.execute(
            "UPDATE leases SET ended_ms = ?1, end_reason = ?2 WHERE lease_id = ?3 AND ended_ms IS NULL",
            params![now, reason.as_str(), lease_id],
        )?;
        Ok(n == 1)
    }

    fn unclaim_requests_of_lease(&mut self, lease_id: i64) -> Result<Vec<String>> {
        let ids: Vec<String> = {
            let mut stmt = self.0.prepare_cached(
                "SELECT id FROM requests INDEXED BY requests_claimed WHERE status = 'claimed' AND claimed_lease = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map([lease_id], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        self.0.execute(
            "UPDATE requests SET status = 'pending', claimed_lease = NULL, claimed_ms = NULL
             WHERE seq IN (SELECT seq FROM requests INDEXED BY requests_claimed WHERE status = 'claimed' AND claimed_lease = ?1)",
            [lease_id],
        )?;
        Ok(ids)
    }

    fn unended_leases_expired_before(&mut self, now: Millis) -> Result<Vec<(i64, String)>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT lease_id, name FROM leases WHERE ended_ms IS NULL AND expires_ms < ?1 ORDER BY lease_id",
        )?;
        let rows = stmt.query_map([now], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn unended_leases_of_host(&mut self, host_id: &str) -> Result<Vec<HeldLease>> {
        let mut stmt = self.0.prepare(
            "SELECT lease_id, context, name, generation FROM leases
             WHERE ended_ms IS NULL AND host_id = ?1 ORDER BY lease_id",
        )?;
        let rows = stmt.query_map([host_id], |r| {
            Ok(HeldLease {
                lease_id: r.get(0)?,
                context: r.get(1)?,
                name: r.get(2)?,
                generation: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// Whether a provider is live in `context` at `now` (for this driver's own modules, which
/// have a connection rather than a statements type).
pub fn live_in(conn: &Connection, context: &str, now: Millis) -> Result<bool> {
    SqlRead(conn).live_lease_exists(context, now)
}
