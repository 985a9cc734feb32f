//! `dshq export` and the loading of a copy (`Store::import`) for PostgreSQL.
//!
//! The export is the SQLite backend's, record for record and field for field: the same
//! record types in the same order (requests, questions, leases, agents, events), the
//! same camelCase fields in SQLite's column order, and the same values — the BOOLEAN
//! flags (`requireProvider`, `outboxPending`, `multiSelect`) are printed as the numbers
//! 0 and 1, as SQLite stores and prints them. So the export of one history is the same
//! JSON from either backend, and a copy moves between them. Two things an export never
//! carries: a lease's secret hash (the tokens are credentials) and, of PostgreSQL's own
//! columns, `requests.origin` (which host's daemon publishes a row's outcome is routing,
//! not record; a copy's rows belong to the store that loads them).
//!
//! [`import`] loads such an export into an *empty* store in the caller's transaction,
//! every row exactly as exported (positions, times, the chain's hashes), so that
//! `audit verify` passes on the copy with the same `audit.key`. Since the export omits
//! lease secrets, each lease gets a random secret hash: no token of the original works
//! on the copy (its providers register anew). The rows are inserted as they come; the
//! foreign keys are `DEFERRABLE INITIALLY DEFERRED` (a request names a lease that comes
//! later in the export) and checked at the commit. The identities (`requests.seq`,
//! `leases.lease_id`) are moved past the loaded values afterwards.
//!
//! The one ordering SQLite leaves open is agents entered in the same millisecond: SQLite
//! orders them as its sorter does, PostgreSQL by id and instance (byte order).

use postgres::types::ToSql;
use postgres::{GenericClient, Row, Transaction};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::store::calls::{ExportSink, Record};
use crate::store::export::camel;

/// How a column reads and prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// BIGINT: a JSON number.
    Int,
    /// BOOLEAN: the JSON number 0 or 1, as SQLite prints its flags.
    Flag,
    /// TEXT: a JSON string.
    Text,
}

use Kind::{Flag, Int, Text};

/// One exported table: its record type, its table, its columns in SQLite's order, and
/// the order of its rows.
struct Table {
    kind: &'static str,
    table: &'static str,
    columns: &'static [(&'static str, Kind)],
    order: &'static str,
}

const TABLES: &[Table] = &[
    Table {
        kind: "request",
        table: "requests",
        columns: &[
            ("seq", Int),
            ("id", Text),
            ("context", Text),
            ("status", Text),
            ("agent_id", Text),
            ("agent_instance", Text),
            ("agent_lineage", Text),
            ("body", Text),
            ("source", Text),
            ("require_provider", Flag),
            ("deadline_ms", Int),
            ("created_ms", Int),
            ("claimed_lease", Int),
            ("claimed_ms", Int),
            ("finished_ms", Int),
            ("answer", Text),
            ("decision", Text),
            ("provider", Text),
            ("error_code", Text),
            ("error_message", Text),
            ("outbox_pending", Flag),
            ("quorum", Text),
            ("approvers", Text),
            ("ladder", Text),
            ("ladder_done", Int),
            ("ladder_due_ms", Int),
            ("decided_by", Text),
            // SQLite's migration 0012 (edit-then-approve) appends it after the rest.
            ("edits", Text),
            // SQLite's migration 0018 (delegation) appends it after the rest.
            ("on_behalf_of", Text),
        ],
        order: "seq",
    },
    Table {
        kind: "question",
        table: "questions",
        columns: &[
            ("request_seq", Int),
            ("idx", Int),
            ("qid", Text),
            ("question", Text),
            ("header", Text),
            ("detail", Text),
            ("multi_select", Flag),
            ("intent_kind", Text),
            ("intent_approve", Text),
            ("options", Text),
            ("selected", Text),
            ("custom", Text),
            ("decision", Text),
        ],
        order: "request_seq, idx",
    },
    Table {
        kind: "lease",
        table: "leases",
        columns: &[
            ("lease_id", Int),
            ("context", Text),
            ("name", Text),
            ("generation", Int),
            ("ttl_ms", Int),
            ("created_ms", Int),
            ("heartbeat_ms", Int),
            ("expires_ms", Int),
            ("ended_ms", Int),
            ("end_reason", Text),
        ],
        order: "lease_id",
    },
    Table {
        kind: "agent",
        table: "agents",
        columns: &[
            ("agent_id", Text),
            ("instance", Text),
            ("owner_id", Text),
            ("owner_instance", Text),
            ("lineage", Text),
            ("ttl_ms", Int),
            ("entered_ms", Int),
            ("heartbeat_ms", Int),
            ("expires_ms", Int),
            ("ended_ms", Int),
            ("end_reason", Text),
        ],
        order: "entered_ms, agent_id COLLATE \"C\", instance COLLATE \"C\"",
    },
    Table {
        kind: "vote",
        table: "votes",
        columns: &[
            ("request_seq", Int),
            ("voter", Text),
            ("answer", Text),
            ("decision", Text),
            ("lease_id", Int),
            ("created_ms", Int),
            ("person", Text),
            ("for_person", Text),
        ],
        order: "request_seq, created_ms, voter COLLATE \"C\"",
    },
    Table {
        kind: "event",
        table: "events",
        columns: &[
            ("seq", Int),
            ("at_ms", Int),
            ("kind", Text),
            ("request_id", Text),
            ("lease_id", Int),
            ("agent_id", Text),
            ("actor", Text),
            ("data", Text),
            ("prev_hash", Text),
            ("hash", Text),
        ],
        order: "seq",
    },
];

/// The columns (table, column) that an export written before their migration lacks:
/// such a record loads them as NULL (what the migration gave every existing row).
const ADDED_LATER: &[(&str, &str)] = &[
    ("requests", "edits"),
    ("requests", "quorum"),
    ("requests", "approvers"),
    ("votes", "person"),
];

fn column_list(t: &Table) -> String {
    t.columns
        .iter()
        .map(|(c, _)| *c)
        .collect::<Vec<_>>()
        .join(", ")
}

fn value(r: &Row, i: usize, kind: Kind) -> Result<Value> {
    Ok(match kind {
        Int => r
            .try_get::<_, Option<i64>>(i)?
            .map_or(Value::Null, Value::from),
        Flag => r
            .try_get::<_, Option<bool>>(i)?
            .map_or(Value::Null, |b| Value::from(i64::from(b))),
        Text => r
            .try_get::<_, Option<String>>(i)?
            .map_or(Value::Null, Value::from),
    })
}

/// Every record in the caller's transaction (open it `REPEATABLE READ READ ONLY`: one
/// snapshot even while other hosts write), as `(type, fields)` in a stable order.
pub fn export(tx: &mut Transaction<'_>, sink: ExportSink<'_>) -> Result<()> {
    for t in TABLES {
        dump(tx, t, "", &[], sink)?;
    }
    Ok(())
}

/// The records of one table (`kind`: `request`, `question` or `event`) whose `column` is
/// at most `upto`, in the export's format and order (the prune's export,
/// [`super::prune`]).
pub fn export_upto(
    tx: &mut Transaction<'_>,
    kind: &str,
    column: &str,
    upto: i64,
    sink: ExportSink<'_>,
) -> Result<()> {
    let t = TABLES
        .iter()
        .find(|t| t.kind == kind)
        .ok_or_else(|| Error::Invalid(format!("no {kind} records")))?;
    dump(tx, t, &format!(" WHERE {column} <= $1"), &[&upto], sink)
}

/// Send the rows of `t` that `filter` (a `WHERE` clause over `params`, or nothing) keeps
/// to `sink` as records, in the table's order. A portal, so a large table streams
/// instead of being held in memory at once.
fn dump(
    tx: &mut Transaction<'_>,
    t: &Table,
    filter: &str,
    params: &[&(dyn ToSql + Sync)],
    sink: ExportSink<'_>,
) -> Result<()> {
    let names: Vec<String> = t.columns.iter().map(|(c, _)| camel(c)).collect();
    let sql = format!(
        "SELECT {} FROM {}{filter} ORDER BY {}",
        column_list(t),
        t.table,
        t.order
    );
    let stmt = tx.prepare(&sql)?;
    let portal = tx.bind(&stmt, params)?;
    loop {
        let rows = tx.query_portal(&portal, 1_000)?;
        if rows.is_empty() {
            break;
        }
        for r in &rows {
            let mut obj = Map::new();
            obj.insert("type".into(), t.kind.into());
            for (i, (name, (_, kind))) in names.iter().zip(t.columns).enumerate() {
                obj.insert(name.clone(), value(r, i, *kind)?);
            }
            sink(t.kind, obj)?;
        }
    }
    Ok(())
}

/// A field's value as the column's parameter.
fn param(kind: Kind, rtype: &str, field: &str, v: Option<&Value>) -> Result<Box<dyn ToSql + Sync>> {
    let bad = |what: &str| {
        Error::Invalid(format!(
            "a {rtype} record's {field} is {what}, not what an export writes"
        ))
    };
    let v = v.ok_or_else(|| {
        Error::Invalid(format!(
            "a {rtype} record has no {field} (not a dshq export, or from another version)"
        ))
    })?;
    Ok(match (kind, v) {
        (Int, Value::Null) => Box::new(None::<i64>),
        (Int, Value::Number(n)) => Box::new(Some(n.as_i64().ok_or_else(|| bad("not an integer"))?)),
        (Flag, Value::Number(n)) => Box::new(match n.as_i64() {
            Some(0) => false,
            Some(1) => true,
            _ => return Err(bad("neither 0 nor 1")),
        }),
        (Flag, Value::Bool(b)) => Box::new(*b),
        (Text, Value::Null) => Box::new(None::<String>),
        (Text, Value::String(s)) => Box::new(Some(s.clone())),
        (_, other) => {
            return Err(bad(match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "an array",
                Value::Object(_) => "an object",
            }))
        }
    })
}

/// Whether any exported table has a row.
fn is_empty(c: &mut impl GenericClient) -> Result<bool> {
    let any = TABLES
        .iter()
        .map(|t| format!("EXISTS (SELECT 1 FROM {})", t.table))
        .collect::<Vec<_>>()
        .join(" OR ");
    let r = c.query_one(&format!("SELECT {any}"), &[])?;
    Ok(!r.try_get::<_, bool>(0)?)
}

/// A random stand-in for a lease's secret hash: no token hashes to it.
fn random_secret() -> Result<Vec<u8>> {
    let mut secret = [0u8; 32];
    getrandom::getrandom(&mut secret)
        .map_err(|e| Error::Invalid(format!("no randomness for the copied leases: {e}")))?;
    Ok(secret.to_vec())
}

/// Load an export into this store, which must be empty (`Error::Invalid` otherwise), in
/// the caller's transaction. The rows are recorded as asked from `origin` (this store's
/// root: its daemon publishes their outcomes). Returns how many records were loaded.
pub fn import(
    tx: &mut Transaction<'_>,
    origin: Option<&str>,
    records: &mut dyn Iterator<Item = Result<Record>>,
) -> Result<u64> {
    if !is_empty(tx)? {
        return Err(Error::Invalid(
            "the store is not empty: a copy loads only into an empty store".into(),
        ));
    }
    let mut stmts = Vec::with_capacity(TABLES.len());
    for t in TABLES {
        let mut cols = column_list(t);
        let mut n = t.columns.len();
        match t.table {
            "requests" => {
                cols.push_str(", origin");
                n += 1;
            }
            "leases" => {
                cols.push_str(", secret_sha256");
                n += 1;
            }
            _ => {}
        }
        let params = (1..=n).map(|i| format!("${i}")).collect::<Vec<_>>();
        let sql = format!(
            "INSERT INTO {} ({cols}) VALUES ({})",
            t.table,
            params.join(", ")
        );
        stmts.push(tx.prepare(&sql)?);
    }
    let names: Vec<Vec<String>> = TABLES
        .iter()
        .map(|t| t.columns.iter().map(|(c, _)| camel(c)).collect())
        .collect();
    let origin = origin.map(str::to_string);
    let mut loaded = 0u64;
    for record in records {
        let (rtype, fields) = record?;
        let Some(ti) = TABLES.iter().position(|t| t.kind == rtype) else {
            return Err(Error::Invalid(format!(
                "record {}: unknown record type {rtype:?}",
                loaded + 1
            )));
        };
        let t = &TABLES[ti];
        if fields.get("type").is_some_and(|k| k != rtype.as_str()) {
            return Err(Error::Invalid(format!(
                "record {}: a {rtype} record says it is a {}",
                loaded + 1,
                fields["type"]
            )));
        }
        if let Some(extra) = fields
            .keys()
            .find(|k| *k != "type" && !names[ti].contains(k))
        {
            return Err(Error::Invalid(format!(
                "record {}: a {rtype} record has a field {extra:?} this dshq does not know",
                loaded + 1
            )));
        }
        let mut args: Vec<Box<dyn ToSql + Sync>> = Vec::with_capacity(t.columns.len() + 1);
        for (name, (column, kind)) in names[ti].iter().zip(t.columns) {
            let v = match fields.get(name) {
                // A column a later migration added: an export from before it has none.
                None if ADDED_LATER.contains(&(t.table, column)) => Some(&Value::Null),
                v => v,
            };
            args.push(param(*kind, &rtype, name, v)?)
        }
        match t.table {
            "requests" => args.push(Box::new(origin.clone())),
            "leases" => args.push(Box::new(random_secret()?)),
            _ => {}
        }
        let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|b| &**b).collect();
        tx.execute(&stmts[ti], &refs)?;
        loaded += 1;
    }
    // The next request and lease take the positions after the copy's.
    for (table, column) in [("requests", "seq"), ("leases", "lease_id")] {
        tx.execute(
            &format!(
                "SELECT setval(pg_get_serial_sequence('{table}', '{column}'),
                               COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)"
            ),
            &[],
        )?;
    }
    Ok(loaded)
}
