//! `dshq export` on SQLite: every table's rows in one read transaction, each row as a
//! record of camelCase fields in the table's column order ([`camel`]), and the same dump of
//! a prefix for prune's export ([`dump_where`]). The record types and their order are the
//! PostgreSQL driver's ([`crate::store::postgres::export`]), so the export of one history
//! reads the same from either backend.

use rusqlite::{Connection, TransactionBehavior};

use super::events;
use crate::error::Result;
use crate::store::calls::ExportSink;
use crate::store::export::camel;

/// Every record, in one read transaction: a consistent snapshot even while the daemon
/// writes.
pub fn export(conn: &mut Connection, sink: ExportSink<'_>) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
    for (kind, sql) in [
            ("request", "SELECT * FROM requests ORDER BY seq"),
            (
                "question",
                "SELECT * FROM questions ORDER BY request_seq, idx",
            ),
            (
                "lease",
                "SELECT lease_id, context, name, generation, ttl_ms, created_ms, heartbeat_ms, expires_ms, ended_ms, end_reason FROM leases ORDER BY lease_id",
            ),
            ("agent", "SELECT * FROM agents ORDER BY entered_ms"),
            (
                "vote",
                "SELECT * FROM votes ORDER BY request_seq, created_ms, voter",
            ),
            ("event", "SELECT * FROM events ORDER BY seq"),
        ] {
            dump(&tx, kind, sql, sink)?;
        }
    Ok(())
}

fn dump(conn: &Connection, kind: &str, sql: &str, sink: ExportSink<'_>) -> Result<()> {
    dump_params(conn, kind, sql, [], sink)
}

/// [`dump`] of the rows `sql` selects with `?1` bound to `upto` (prune's export).
pub(super) fn dump_where(
    conn: &Connection,
    kind: &str,
    sql: &str,
    upto: i64,
    sink: ExportSink<'_>,
) -> Result<()> {
    dump_params(conn, kind, sql, [upto], sink)
}

fn dump_params<P: rusqlite::Params>(
    conn: &Connection,
    kind: &str,
    sql: &str,
    params: P,
    sink: ExportSink<'_>,
) -> Result<()> {
    use rusqlite::types::ValueRef;
    let mut stmt = conn.prepare(sql)?;
    let names: Vec<String> = stmt.column_names().iter().map(|s| camel(s)).collect();
    let mut rows = stmt.query(params)?;
    while let Some(r) = rows.next()? {
        let mut obj = serde_json::Map::new();
        obj.insert("type".into(), kind.into());
        for (i, name) in names.iter().enumerate() {
            let v = match r.get_ref(i)? {
                ValueRef::Null => serde_json::Value::Null,
                ValueRef::Integer(x) => x.into(),
                ValueRef::Real(x) => x.into(),
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
                ValueRef::Blob(b) => events::hex(b).into(),
            };
            obj.insert(name.clone(), v);
        }
        sink(kind, obj)?;
    }
    Ok(())
}
