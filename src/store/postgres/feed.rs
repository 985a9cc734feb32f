//! The feeds' statements ([`crate::store::driver::FeedReads`]) on PostgreSQL, on any client: the
//! event log's reads ([`super::events`]) and, here, the requests the events are about and
//! the open queue (a write's reads are these on its transaction:
//! [`crate::store::driver::ReadsInside`]).

use postgres::types::ToSql;
use postgres::GenericClient;

use super::events;
use super::requests::{matches, row, rows, Matching, COLUMNS, FROM, WIDTH};
use super::tx::PgRead;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::types::ListFilter;

crate::store::driver::feed::feed_reads_by!([C: GenericClient] PgRead<'_, C>, events, super::feed);

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
