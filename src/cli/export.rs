//! `dshq export`: everything, for archiving elsewhere. Each record is an object with a
//! `type` (`request`, `question`, `lease`, `agent`, `event`) and the row's columns, named
//! in camelCase like every other document dshq prints (`created_ms` is `createdMs`).
//!
//! Plain `export` streams NDJSON, one record a line, so an archive of any size never has
//! to fit in memory. `--json` promises exactly one document on stdout, so there the same
//! records come as one JSON array.

use std::io::Write;

use rusqlite::types::ValueRef;

use super::Ctx;
use crate::error::{Error, Result};

/// Arguments of `dshq export`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// `snake_case` column name to the camelCase key every dshq document uses.
fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Where records go: a line each (NDJSON), or elements of one JSON array.
struct Sink<W: Write> {
    out: W,
    array: bool,
    first: bool,
}

impl<W: Write> Sink<W> {
    fn record(&mut self, obj: &serde_json::Map<String, serde_json::Value>) -> Result<()> {
        let io = |e: std::io::Error| Error::io("stdout", e);
        if self.array {
            self.out
                .write_all(if self.first { b"[" } else { b"," })
                .map_err(io)?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, obj).map_err(|e| Error::io("stdout", e.into()))?;
        if !self.array {
            self.out.write_all(b"\n").map_err(io)?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<()> {
        let io = |e: std::io::Error| Error::io("stdout", e);
        if self.array {
            self.out
                .write_all(if self.first { b"[]\n" } else { b"]\n" })
                .map_err(io)?;
        }
        self.out.flush().map_err(io)
    }
}

fn dump<W: Write>(
    conn: &rusqlite::Connection,
    kind: &str,
    sql: &str,
    out: &mut Sink<W>,
) -> Result<u64> {
    let mut stmt = conn.prepare(sql)?;
    let names: Vec<String> = stmt.column_names().iter().map(|s| camel(s)).collect();
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
        out.record(&obj)?;
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
    let mut out = Sink {
        out: std::io::BufWriter::new(stdout.lock()),
        array: ctx.json,
        first: true,
    };
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
    out.finish()
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_become_camel_case() {
        assert_eq!(super::camel("created_ms"), "createdMs");
        assert_eq!(super::camel("request_seq"), "requestSeq");
        assert_eq!(super::camel("seq"), "seq");
    }
}
