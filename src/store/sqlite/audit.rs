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

#[cfg(test)]
mod tests {
    use rusqlite::Connection;
    use serde_json::json;

    use super::*;
    use crate::clock::Millis;
    use crate::protocol::types::{Answer, AnswerItem, Request};
    use crate::protocol::UserQuestionError;
    use crate::store::sqlite::{open_in_memory, requests, write};

    const T0: Millis = 1_780_000_000_000;

    fn req(id: &str) -> Request {
        serde_json::from_value(json!({
            "id": id,
            "questions": [
                {"id": "db", "question": "Which database?",
                 "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
                {"id": "plan", "question": "Approve?", "detail": "the plan",
                 "options": [{"label": "Revise"}, {"label": "Approve"}],
                 "intent": {"kind": "plan-review", "approve": "Approve"}}
            ]
        }))
        .unwrap()
    }

    fn answer() -> Answer {
        Answer {
            answers: vec![
                AnswerItem {
                    id: "db".into(),
                    selected: vec!["SQLite".into()],
                    custom: None,
                },
                AnswerItem {
                    id: "plan".into(),
                    selected: vec![],
                    custom: Some("add a rollback step".into()),
                },
            ],
        }
    }

    /// Every lifecycle: answered after a claim that expired, cancelled, aborted past its
    /// deadline, still claimed, pending, rejected.
    fn store() -> Connection {
        let mut conn = open_in_memory().unwrap();
        for (i, id) in ["a", "c", "x", "k", "p"].iter().enumerate() {
            let t = T0 + i as i64;
            write(&mut conn, t, |tx| {
                let mut r = req(id);
                if *id == "x" {
                    r.timeout = Some("1m".into());
                }
                requests::accept(tx, r, None, "cli", t)
            })
            .unwrap();
        }
        write(&mut conn, T0 + 10, |tx| {
            requests::record_rejection(
                tx,
                &requests::Rejection {
                    id: Some("bad"),
                    context: None,
                    body: "{not json",
                    source: "inbox:bad.json",
                    actor: None,
                },
                &UserQuestionError::new(crate::protocol::Code::BadRequest, "not JSON"),
                T0 + 10,
            )
        })
        .unwrap();
        let alice = write(&mut conn, T0 + 20, |tx| {
            crate::store::queue::leases::register(
                &mut crate::store::sqlite::sql::Sql(tx),
                T0 + 20,
                "default",
                "alice",
                1_000,
                None,
            )
        })
        .unwrap();
        write(&mut conn, T0 + 30, |tx| {
            let l = crate::store::queue::leases::authenticate(
                &mut crate::store::sqlite::sql::SqlRead(tx),
                &alice.lease,
                T0 + 30,
            )?;
            requests::claim(tx, &l, "a", T0 + 30)
        })
        .unwrap();
        // alice's lease expires: "a" goes back to pending; bob answers it.
        let bob = write(&mut conn, T0 + 5_000, |tx| {
            crate::store::queue::leases::register(
                &mut crate::store::sqlite::sql::Sql(tx),
                T0 + 5_000,
                "default",
                "bob",
                600_000,
                None,
            )
        })
        .unwrap();
        write(&mut conn, T0 + 6_000, |tx| {
            let l = crate::store::queue::leases::authenticate(
                &mut crate::store::sqlite::sql::SqlRead(tx),
                &bob.lease,
                T0 + 6_000,
            )?;
            requests::answer(tx, &l, "a", &answer(), T0 + 6_000)?;
            requests::cancel(tx, &l, "c", Some("not needed"), T0 + 6_000)?;
            requests::claim(tx, &l, "k", T0 + 6_000)
        })
        .unwrap();
        // The deadline of "x" passes.
        write(&mut conn, T0 + 120_000, |_| Ok(())).unwrap();
        conn
    }

    #[test]
    fn every_lifecycle_verifies() {
        let conn = store();
        assert_eq!(integrity(&conn).unwrap(), None);
        let statuses: Vec<String> = conn
            .prepare("SELECT status FROM requests ORDER BY seq")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            statuses,
            [
                "answered",
                "cancelled",
                "aborted",
                "claimed",
                "pending",
                "rejected"
            ]
        );
        assert_eq!(check_records(&conn).unwrap(), (6, None));
        assert_eq!(events::verify(&conn).unwrap().1, None);
    }

    #[test]
    fn each_forged_field_is_named() {
        let cases: &[(&str, &str, &str)] = &[
            ("UPDATE requests SET claimed_ms = claimed_ms + 1 WHERE id = 'a'", "a", "claimedAt"),
            ("UPDATE requests SET claimed_lease = 1 WHERE id = 'k'", "k", "claiming lease"),
            ("UPDATE requests SET status = 'pending', claimed_lease = NULL, claimed_ms = NULL WHERE id = 'k'", "k", "status"),
            ("UPDATE requests SET error_message = 'forged' WHERE id = 'c'", "c", "error message"),
            ("UPDATE requests SET deadline_ms = NULL WHERE id = 'x'", "x", "deadline"),
            ("UPDATE requests SET context = 'ops' WHERE id = 'p'", "p", "context"),
            ("UPDATE requests SET error_code = 'NO_PROVIDER' WHERE id = 'bad'", "bad", "error code"),
            ("UPDATE requests SET body = '{}' WHERE id = 'bad'", "bad", "digest"),
            ("UPDATE questions SET custom = 'forged' WHERE qid = 'plan' AND custom IS NOT NULL", "a", "custom text"),
            ("UPDATE questions SET selected = '[]' WHERE request_seq = (SELECT seq FROM requests WHERE id = 'p') AND idx = 0", "p", "carries an answer"),
            ("UPDATE questions SET options = '[{\"label\":\"Approve\"}]' WHERE qid = 'plan' AND request_seq = (SELECT seq FROM requests WHERE id = 'x')", "x", "options"),
            ("DELETE FROM questions WHERE idx = 1 AND request_seq = (SELECT seq FROM requests WHERE id = 'k')", "k", "question rows"),
        ];
        for (sql, id, what) in cases {
            let conn = store();
            conn.execute_batch(
                "DROP TRIGGER requests_record_fixed; DROP TRIGGER requests_final_fixed;
                 DROP TRIGGER requests_no_delete; DROP TRIGGER questions_record_fixed;
                 DROP TRIGGER questions_answer_fixed; DROP TRIGGER questions_no_delete;",
            )
            .unwrap();
            conn.execute(sql, []).unwrap();
            let b = check_records(&conn)
                .unwrap()
                .1
                .unwrap_or_else(|| panic!("{sql} not found"));
            assert_eq!(b.request.as_deref(), Some(*id), "{sql}: {b}");
            assert!(b.to_string().contains(what), "{sql}: {what:?} in {b}");
        }
    }
}
