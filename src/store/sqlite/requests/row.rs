//! Row mapping: the columns of a request row and how they read into a [`RequestRow`].

use crate::core::lifecycle::{RequestRow, Status};
use crate::protocol::types::Decision;

pub(in crate::store::sqlite) const COLUMNS: &str = "r.seq, r.id, r.context, r.status, r.agent_id, r.agent_instance, r.agent_lineage, r.body,
    r.source, r.deadline_ms, r.created_ms, r.claimed_lease, l.name, r.claimed_ms, r.finished_ms, r.answer,
    r.decision, r.provider, r.error_code, r.error_message, r.ladder, r.ladder_done, r.decided_by,
    r.edits, r.quorum, r.approvers,
    CASE WHEN r.quorum IS NULL THEN NULL ELSE (
        SELECT json_group_array(json_object('voter', v.voter, 'person', v.person, 'answer', v.answer,
                                            'decision', v.decision, 'atMs', v.created_ms))
        FROM (SELECT * FROM votes WHERE request_seq = r.seq ORDER BY created_ms, voter) v) END";
/// How many columns [`COLUMNS`] has (a query may select more after them).
pub(in crate::store::sqlite) const WIDTH: usize = 27;

pub(in crate::store::sqlite) const FROM: &str =
    "requests r LEFT JOIN leases l ON l.lease_id = r.claimed_lease";

pub(in crate::store::sqlite) fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RequestRow> {
    let status: String = r.get(3)?;
    let decision: Option<String> = r.get(16)?;
    Ok(RequestRow {
        seq: r.get(0)?,
        id: r.get(1)?,
        context: r.get(2)?,
        status: Status::parse(&status).unwrap_or(Status::Rejected),
        agent_id: r.get(4)?,
        agent_instance: r.get(5)?,
        agent_lineage: r.get(6)?,
        body: r.get(7)?,
        source: r.get(8)?,
        deadline_ms: r.get(9)?,
        created_ms: r.get(10)?,
        claimed_lease: r.get(11)?,
        claimed_by: r.get(12)?,
        claimed_ms: r.get(13)?,
        finished_ms: r.get(14)?,
        answer: r.get(15)?,
        decision: decision.as_deref().and_then(Decision::parse),
        provider: r.get(17)?,
        error_code: r.get(18)?,
        error_message: r.get(19)?,
        ladder: r.get(20)?,
        ladder_done: r.get(21)?,
        decided_by: r.get(22)?,
        edits: r.get(23)?,
        quorum: r.get(24)?,
        approvers: r.get(25)?,
        votes: r.get(26)?,
    })
}
