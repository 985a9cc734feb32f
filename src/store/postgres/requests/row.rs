//! Row mapping: the columns of a request row and how they read into a [`RequestRow`].

use postgres::{GenericClient, Row};

use crate::core::lifecycle::{RequestRow, Status};
use crate::error::Result;
use crate::protocol::types::Decision;

pub(in crate::store::postgres) const COLUMNS: &str = "r.seq, r.id, r.context, r.status, r.agent_id, r.agent_instance, r.agent_lineage, r.body,
    r.source, r.deadline_ms, r.created_ms, r.claimed_lease, l.name, r.claimed_ms, r.finished_ms, r.answer,
    r.decision, r.provider, r.error_code, r.error_message, r.ladder, r.ladder_done, r.decided_by,
    r.edits, r.quorum, r.approvers,
    CASE WHEN r.quorum IS NULL THEN NULL ELSE (
        SELECT COALESCE(json_agg(json_build_object('voter', v.voter, 'person', v.person, 'answer', v.answer,
                                                   'decision', v.decision, 'atMs', v.created_ms)
                                 ORDER BY v.created_ms, v.voter), '[]')::text
        FROM votes v WHERE v.request_seq = r.seq) END";
pub(in crate::store::postgres) const FROM: &str =
    "requests r LEFT JOIN leases l ON l.lease_id = r.claimed_lease";

/// How many columns [`COLUMNS`] has (a query may select more after them).
pub(in crate::store::postgres) const WIDTH: usize = 27;

pub(in crate::store::postgres) fn row(r: &Row) -> Result<RequestRow> {
    let status: String = r.try_get(3)?;
    let decision: Option<String> = r.try_get(16)?;
    Ok(RequestRow {
        seq: r.try_get(0)?,
        id: r.try_get(1)?,
        context: r.try_get(2)?,
        // A status the CHECK constraint refuses cannot be stored; an unknown one reads
        // as rejected, as SQLite's row mapping does, and then fails the record check.
        status: Status::parse(&status).unwrap_or(Status::Rejected),
        agent_id: r.try_get(4)?,
        agent_instance: r.try_get(5)?,
        agent_lineage: r.try_get(6)?,
        body: r.try_get(7)?,
        source: r.try_get(8)?,
        deadline_ms: r.try_get(9)?,
        created_ms: r.try_get(10)?,
        claimed_lease: r.try_get(11)?,
        claimed_by: r.try_get(12)?,
        claimed_ms: r.try_get(13)?,
        finished_ms: r.try_get(14)?,
        answer: r.try_get(15)?,
        decision: decision.as_deref().and_then(Decision::parse),
        provider: r.try_get(17)?,
        error_code: r.try_get(18)?,
        error_message: r.try_get(19)?,
        ladder: r.try_get(20)?,
        ladder_done: r.try_get(21)?,
        decided_by: r.try_get(22)?,
        edits: r.try_get(23)?,
        quorum: r.try_get(24)?,
        approvers: r.try_get(25)?,
        votes: r.try_get(26)?,
    })
}

/// Every row of `rows` mapped.
pub(in crate::store::postgres) fn rows(rows: &[Row]) -> Result<Vec<RequestRow>> {
    rows.iter().map(row).collect()
}

/// Every request row, oldest first (what the audit's record check reads).
pub(crate) fn all_oldest_first(c: &mut impl GenericClient) -> Result<Vec<RequestRow>> {
    rows(&c.query(&format!("SELECT {COLUMNS} FROM {FROM} ORDER BY r.seq"), &[])?)
}
