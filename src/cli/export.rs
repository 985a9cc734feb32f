//! `dshq export`: everything as NDJSON for archiving elsewhere. Each line is an object
//! with a `type` (`request`, `event`, `lease`, `agent`) and the row's columns.

use std::io::Write;

use rusqlite::types::ValueRef;

use super::Ctx;
use crate::error::{Error, Result};

/// Arguments of `dshq export`.
#[derive(Debug, clap::Args)]
pub struct Args {}

fn dump(conn: &rusqlite::Connection, kind: &str, sql: &str, out: &mut impl Write) -> Result<u64> {
    let mut stmt = conn.prepare(sql)?;
    let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
    let mut rows = stmt.query([])?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        let mut obj = serde_json::Map::new();
        obj.insert("type".into(), kind.into());
        for (i, name) in names.iter().enumerate() {
            let v = match r.get_ref(i)? {
                ValueRef::Null => serde_json::Value::Null,
                ValueRef::Integer(x) => x.into(),
                ValueRef::Real(x) => x.into(),
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
                ValueRef::Blob(b) => crate::store::events::hex(b).into(),
            };
            obj.insert(name.clone(), v);
        }
        serde_json::to_writer(&mut *out, &obj).map_err(|e| Error::io("stdout", e.into()))?;
        out.write_all(b"\n").map_err(|e| Error::io("stdout", e))?;
        n += 1;
    }
    Ok(n)
}

/// Run it.
pub fn run(ctx: &Ctx, _a: Args) -> Result<()> {
    // What is stored, as stored: no view at now (the archive is the record).
    let mut conn = ctx.stored_db()?;
    // One read transaction: a consistent snapshot even while the daemon writes.
    let tx = conn.transaction()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    dump(
        &tx,
        "request",
        "SELECT * FROM requests ORDER BY seq",
        &mut out,
    )?;
    dump(
        &tx,
        "question",
        "SELECT * FROM questions ORDER BY request_seq, idx",
        &mut out,
    )?;
    dump(
        &tx,
        "lease",
        "SELECT lease_id, context, name, generation, ttl_ms, created_ms, heartbeat_ms, expires_ms, ended_ms, end_reason FROM leases ORDER BY lease_id",
        &mut out,
    )?;
    dump(
        &tx,
        "agent",
        "SELECT * FROM agents ORDER BY entered_ms",
        &mut out,
    )?;
    dump(&tx, "event", "SELECT * FROM events ORDER BY seq", &mut out)?;
    out.flush().map_err(|e| Error::io("stdout", e))?;
    Ok(())
}
