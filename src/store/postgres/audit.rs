//! `audit verify`'s reads on PostgreSQL ([`crate::store::driver::AuditReads`]): the checks
//! and their order are [`crate::store::queue::audit`], the same as SQLite's, so a chain
//! copied from one backend verifies on the other unchanged; here are the SQL, the row
//! mapping, and the snapshot.
//!
//! What differs from SQLite: there is no `PRAGMA integrity_check` to run first. PostgreSQL
//! has no built-in equivalent (`amcheck` is an extension a dshq user may not be allowed
//! to install, and it checks indexes, not the record), so this driver reports no storage
//! check: the chain and the record checks are what the audit relies on, on either
//! backend. The key is the one in the root given at connect (every host of one PostgreSQL
//! store holds the same key).
//!
//! [`verify`] runs in the caller's transaction, which must be `REPEATABLE READ READ ONLY`
//! so that every check sees one snapshot while other hosts write ([`verify_snapshot`]
//! opens such a transaction on a client).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use postgres::{Client, GenericClient, IsolationLevel, Transaction};

use super::events;
use super::tx::PgRead;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::anchor::Anchor;
use crate::store::calls::Verified;
use crate::store::driver::audit::{AuditReads, StoredEvent};
use crate::store::queue;
use crate::store::records::QuestionRow;

/// Open a `REPEATABLE READ READ ONLY` transaction on `client` and [`verify`] in it.
pub fn verify_snapshot(
    client: &mut Client,
    root: Option<&Path>,
    anchors: &[(PathBuf, Anchor)],
) -> Result<Verified> {
    let mut tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let v = verify(&mut tx, root, anchors)?;
    tx.commit()?;
    Ok(v)
}

/// Verify the record in the caller's transaction (`REPEATABLE READ READ ONLY`, for one
/// snapshot), keyed with the key in `root` ([`queue::audit::verify`]).
pub fn verify(
    tx: &mut Transaction<'_>,
    root: Option<&Path>,
    anchors: &[(PathBuf, Anchor)],
) -> Result<Verified> {
    queue::audit::verify(&mut PgRead(tx), root, anchors)
}

impl<C: GenericClient> AuditReads for PgRead<'_, C> {
    fn storage_check_failure(&mut self) -> Result<Option<String>> {
        // None to run (see the module docs).
        Ok(None)
    }

    fn count_prune_guard_rows(&mut self) -> Result<i64> {
        Ok(self
            .0
            .query_one("SELECT COUNT(*) FROM prune_guard", &[])?
            .try_get(0)?)
    }

    fn oldest_event_seq(&mut self) -> Result<Option<i64>> {
        Ok(self
            .0
            .query_one("SELECT MIN(seq) FROM events", &[])?
            .try_get(0)?)
    }

    fn newest_checkpoint_data(&mut self) -> Result<Option<serde_json::Value>> {
        events::newest_checkpoint_data(self.0)
    }

    fn all_stored_events(&mut self) -> Result<Vec<StoredEvent>> {
        self.0
            .query(
                "SELECT seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash
                 FROM events ORDER BY seq",
                &[],
            )?
            .iter()
            .map(|r| {
                let data: String = r.try_get(7)?;
                Ok(StoredEvent {
                    event: events::row_to_event(r)?,
                    data,
                })
            })
            .collect()
    }

    fn event_hash_at(&mut self, seq: i64) -> Result<Option<String>> {
        Ok(self
            .0
            .query_opt("SELECT hash FROM events WHERE seq = $1", &[&seq])?
            .map(|r| r.try_get(0))
            .transpose()?)
    }

    fn newest_event_seq(&mut self) -> Result<i64> {
        events::head(self.0)
    }

    fn all_requests_oldest_first(&mut self) -> Result<Vec<RequestRow>> {
        super::requests::all_oldest_first(self.0)
    }

    fn all_questions(&mut self) -> Result<Vec<(i64, QuestionRow)>> {
        self.0
            .query(
                "SELECT request_seq, idx, qid, question, header, detail, multi_select, intent_kind,
                        intent_approve, options, selected, custom, decision
                 FROM questions ORDER BY request_seq, idx",
                &[],
            )?
            .iter()
            .map(|r| {
                Ok((
                    r.try_get(0)?,
                    QuestionRow {
                        idx: r.try_get(1)?,
                        qid: r.try_get(2)?,
                        question: r.try_get(3)?,
                        header: r.try_get(4)?,
                        detail: r.try_get(5)?,
                        multi_select: r.try_get(6)?,
                        intent_kind: r.try_get(7)?,
                        intent_approve: r.try_get(8)?,
                        options: r.try_get(9)?,
                        selected: r.try_get(10)?,
                        custom: r.try_get(11)?,
                        decision: r.try_get(12)?,
                    },
                ))
            })
            .collect()
    }

    fn require_provider_by_row(&mut self) -> Result<HashMap<i64, bool>> {
        self.0
            .query("SELECT seq, require_provider FROM requests", &[])?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }

    fn all_votes(&mut self) -> Result<Vec<(i64, crate::core::quorum::Vote)>> {
        self.0
            .query(
                "SELECT request_seq, voter, answer, decision, created_ms, person, for_person FROM votes
                 ORDER BY request_seq, created_ms, voter",
                &[],
            )?
            .iter()
            .map(|r| {
                let decision: Option<String> = r.try_get(3)?;
                Ok((
                    r.try_get(0)?,
                    crate::core::quorum::Vote {
                        voter: r.try_get(1)?,
                        person: r.try_get(5)?,
                        answer: r.try_get(2)?,
                        decision: decision
                            .as_deref()
                            .and_then(crate::protocol::Decision::parse),
                        at_ms: r.try_get(3 + 1)?,
                        for_person: r.try_get(6)?,
                    },
                ))
            })
            .collect()
    }
}
