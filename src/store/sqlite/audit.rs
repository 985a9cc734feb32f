//! `audit verify`'s SQLite side: the file's own integrity check, and the reads behind the
//! record check. The event log is the record: every request row and its questions must be
//! what the log says happened to it. [`check_records`] reads the rows, questions and
//! events into the backend-neutral structs and hands them to
//! [`crate::store::records::check_rows`], the check itself, shared with PostgreSQL (its
//! docs say what is compared and how older events are read); only rusqlite stays here.

use std::collections::HashMap;

use rusqlite::Connection;

use super::events;
use super::requests::{self, ListFilter};
use crate::error::Result;
pub use crate::store::records::RecordBreak;
use crate::store::records::{check_rows, QuestionRow};

/// SQLite's own check of the file: `None` when it says ok, else its first complaint.
pub fn integrity(conn: &Connection) -> Result<Option<String>> {
    let mut stmt = conn.prepare("PRAGMA integrity_check")?;
    let first: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .take(5)
        .collect::<rusqlite::Result<_>>()?;
    if first.len() == 1 && first[0] == "ok" {
        Ok(None)
    } else {
        Ok(Some(first.join("; ")))
    }
}

/// Compare every request row and its questions with the log. Returns the number of rows
/// checked and the first disagreement.
pub fn check_records(conn: &Connection) -> Result<(i64, Option<RecordBreak>)> {
    let rows = requests::list(
        conn,
        &ListFilter {
            oldest_first: true,
            ..Default::default()
        },
    )?;
    let all = events::all(conn)?;
    let mut questions: HashMap<i64, Vec<QuestionRow>> = HashMap::new();
    {
        let mut stmt = conn.prepare(
            "SELECT request_seq, idx, qid, question, header, detail, multi_select, intent_kind,
                    intent_approve, options, selected, custom, decision
             FROM questions ORDER BY request_seq, idx",
        )?;
        let mut rs = stmt.query([])?;
        while let Some(r) = rs.next()? {
            questions.entry(r.get(0)?).or_default().push(QuestionRow {
                idx: r.get(1)?,
                qid: r.get(2)?,
                question: r.get(3)?,
                header: r.get(4)?,
                detail: r.get(5)?,
                multi_select: r.get(6)?,
                intent_kind: r.get(7)?,
                intent_approve: r.get(8)?,
                options: r.get(9)?,
                selected: r.get(10)?,
                custom: r.get(11)?,
                decision: r.get(12)?,
            });
        }
    }
    // `require_provider` is not in `RequestRow` (nothing but export reads it), yet it is
    // part of what was asked: it must be what the body the digest pins says.
    let require_provider: HashMap<i64, bool> = conn
        .prepare("SELECT seq, require_provider FROM requests")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(check_rows(&rows, &all, questions, &require_provider))
}
