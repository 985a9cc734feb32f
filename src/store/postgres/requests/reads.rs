//! Reads: one request by id, lists (`show`, `list`, `wait`), and the feeds.

use postgres::types::{ToSql, Type};
use postgres::GenericClient;

use super::row::{row, rows, COLUMNS, FROM, WIDTH};
use crate::core::lifecycle::{RequestRow, Status};
use crate::error::Result;
use crate::store::types::ListFilter;

/// The accepted request with `id` (not a rejection), if any.
pub fn get(c: &mut impl GenericClient, id: &str) -> Result<Option<RequestRow>> {
    c.query_typed_opt(
        &format!("SELECT {COLUMNS} FROM {FROM} WHERE r.id = $1 AND r.status <> 'rejected'"),
        &[(&id, Type::TEXT)],
    )?
    .as_ref()
    .map(row)
    .transpose()
}

/// The request with `id`, or else its newest rejection.
pub fn get_any(c: &mut impl GenericClient, id: &str) -> Result<Option<RequestRow>> {
    if let Some(r) = get(c, id)? {
        return Ok(Some(r));
    }
    c.query_opt(
        &format!("SELECT {COLUMNS} FROM {FROM} WHERE r.id = $1 ORDER BY r.seq DESC LIMIT 1"),
        &[&id],
    )?
    .as_ref()
    .map(row)
    .transpose()
}

/// ASCII lower case in SQL (SQLite's `lower()` folds ASCII only; PostgreSQL's follows the
/// collation, so it is spelled out to match exactly).
fn ascii_lower(expr: &str) -> String {
    format!("translate({expr}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')")
}

/// The request filters of a [`ListFilter`] but its status, on parameters `$n..$n+4`:
/// the contexts (a text array), the agent, the intent kind, the text, the source.
fn matches(n: usize) -> String {
    let (ctx, agent, intent, grep, source) = (n, n + 1, n + 2, n + 3, n + 4);
    format!(
        "(${ctx}::text[] IS NULL OR r.context = ANY(${ctx}::text[]))
       AND (${agent}::text IS NULL OR r.agent_id = ${agent}::text)
       AND (${intent}::text IS NULL OR EXISTS (SELECT 1 FROM questions q
                                  WHERE q.request_seq = r.seq AND q.intent_kind = ${intent}::text))
       AND (${grep}::text IS NULL OR EXISTS (SELECT 1 FROM questions q
                                  WHERE q.request_seq = r.seq
                                    AND strpos({}, {}) > 0))
       AND (${source}::text IS NULL OR r.source = ${source}::text)",
        ascii_lower("q.question"),
        ascii_lower(&format!("${grep}::text"))
    )
}

/// The values of [`matches`]' parameters.
struct Matching {
    contexts: Option<Vec<String>>,
    agent: Option<String>,
    intent: Option<String>,
    grep: Option<String>,
    source: Option<String>,
}

impl Matching {
    fn of(f: &ListFilter) -> Matching {
        Matching {
            contexts: (!f.contexts.is_empty()).then(|| f.contexts.clone()),
            agent: f.agent.clone(),
            intent: f.intent.clone(),
            grep: f.grep.clone(),
            source: f.source.clone(),
        }
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 5] {
        [
            &self.contexts,
            &self.agent,
            &self.intent,
            &self.grep,
            &self.source,
        ]
    }
}

/// The accepted requests that the events in `(after, upto]` of `kinds` (stored names)
/// are about, as `(event position, request)`, matching `f`'s request filters.
pub fn event_requests(
    c: &mut impl GenericClient,
    after: i64,
    upto: i64,
    kinds: &[&str],
    f: &ListFilter,
) -> Result<Vec<(i64, RequestRow)>> {
    let m = Matching::of(f);
    let kinds: Vec<&str> = kinds.to_vec();
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&after, &upto, &kinds];
    params.extend(m.params());
    let found = c.query(
        &format!(
            "SELECT {COLUMNS}, e.seq FROM events e
               JOIN requests r ON r.id = e.request_id AND r.status <> 'rejected'
               LEFT JOIN leases l ON l.lease_id = r.claimed_lease
             WHERE e.seq > $1 AND e.seq <= $2 AND e.kind = ANY($3::text[]) AND {}
             ORDER BY e.seq",
            matches(4)
        ),
        &params,
    )?;
    found
        .iter()
        .map(|r| Ok((r.try_get(WIDTH)?, row(r)?)))
        .collect()
}

/// Requests, newest first (or oldest first), filtered in the query.
pub fn list(c: &mut impl GenericClient, f: &ListFilter) -> Result<Vec<RequestRow>> {
    let order = if f.oldest_first { "ASC" } else { "DESC" };
    let m = Matching::of(f);
    let status = f.status.map(Status::as_str);
    // SQLite's `LIMIT -1` (any negative) is no limit; so is PostgreSQL's `LIMIT NULL`.
    let limit = f.limit.filter(|l| *l >= 0);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&status, &limit];
    params.extend(m.params());
    rows(&c.query(
        &format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE ($1::text IS NULL OR r.status = $1::text) AND {}
             ORDER BY r.seq {order} LIMIT $2",
            matches(3)
        ),
        &params,
    )?)
}

/// The open requests of `context` (every context for `None`), oldest first.
pub fn open_requests(c: &mut impl GenericClient, context: Option<&str>) -> Result<Vec<RequestRow>> {
    rows(&c.query(
        &format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE r.status IN ('pending', 'claimed')
               AND ($1::text IS NULL OR r.context = $1::text)
             ORDER BY r.seq"
        ),
        &[&context],
    )?)
}

/// The open requests among `ids` (every open request for `None`), by id.
pub fn open_ids(c: &mut impl GenericClient, ids: Option<&[&str]>) -> Result<Vec<String>> {
    let found = match ids {
        None => c.query(
            "SELECT id FROM requests WHERE status IN ('pending', 'claimed') AND id IS NOT NULL
             ORDER BY seq",
            &[],
        )?,
        Some(ids) => {
            let ids: Vec<&str> = ids.to_vec();
            let open = c.query(
                "SELECT id FROM requests WHERE id = ANY($1::text[]) AND status IN ('pending', 'claimed')",
                &[&ids],
            )?;
            let open: std::collections::HashSet<String> = open
                .iter()
                .map(|r| r.try_get(0))
                .collect::<std::result::Result<_, _>>()?;
            // In the order given, as SQLite checks them one by one.
            return Ok(ids
                .iter()
                .filter(|i| open.contains(**i))
                .map(|i| i.to_string())
                .collect());
        }
    };
    found.iter().map(|r| Ok(r.try_get(0)?)).collect()
}
