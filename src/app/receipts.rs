//! The receipt use-cases: sign the receipt of one final request (`dshq receipt ID`), of
//! each outcome the outbox writes, and of every final request (`dshq export
//! --receipts`). Each reads the store (the request's row and its events: no write, no
//! new table) and signs with the root's key ([`crate::receipt::key`]).
//!
//! Which key signs: the key of the root the command or daemon runs on. On a shared
//! PostgreSQL store each host has its own root, so its own key unless the operator copies
//! one `receipt.key` to every host (as `audit.key` is copied); a receipt names the key
//! that signed it (`signer`), and a verifier trusts the public keys it was given (`dshq
//! receipt key` on each host), one or several.

use std::sync::Arc;

use crate::core::lifecycle::RequestRow;
use crate::error::{Error, Result};
use crate::protocol::receipt::Receipt;
use crate::protocol::{Code, Outcome};
use crate::receipt::{build, seal, ReceiptKey};
use crate::root::Root;
use crate::store::{ListFilter, Store};

/// The root's signing key (created on first use, like `audit.key`).
pub fn key(root: &Root) -> Result<Arc<ReceiptKey>> {
    crate::receipt::key::load_or_create(root.dir())
}

/// The signed receipt of the final request row `row`, checked against its events.
pub fn of_row(store: &mut Store, key: &ReceiptKey, row: &RequestRow) -> Result<Receipt> {
    let id = row.id.clone().unwrap_or_default();
    if row.status.is_open() {
        return Err(Error::RequestOpen {
            id,
            status: row.status.as_str().into(),
        });
    }
    let events = store.events(&id)?;
    let unsigned = build::unsigned(row, &events).map_err(|u| {
        Error::question(
            Code::AuditBroken,
            format!(
                "request {id:?}: {}; no receipt is signed for a row its event log does not \
                 attest (run `dshq audit verify`)",
                u.0
            ),
        )
    })?;
    Ok(seal::seal(unsigned, key))
}

/// The signed receipt of request `id` (the accepted request, else its newest rejection):
/// `NOT_FOUND`, `REQUEST_OPEN` while it is open, `AUDIT_BROKEN` when its row and events
/// disagree.
pub fn of_request(store: &mut Store, root: &Root, id: &str) -> Result<Receipt> {
    let row = store
        .get_any(id)?
        .ok_or_else(|| Error::NotFound(id.to_string()))?;
    if row.status.is_open() {
        return Err(Error::RequestOpen {
            id: id.to_string(),
            status: row.status.as_str().into(),
        });
    }
    let key = key(root)?;
    of_row(store, &key, &row)
}

/// The outcome `outcome` of the request row at `row_seq` (from the outbox), carrying its
/// receipt. A receipt that cannot be made (the key cannot be read or created, the row
/// and its events disagree) is logged and left out: the asker still gets its outcome.
pub fn attach(store: &mut Store, root: &Root, row_seq: i64, outcome: Outcome) -> Outcome {
    let made = (|| -> Result<Option<Receipt>> {
        let Some(row) = store.get_any(outcome.id())? else {
            return Ok(None);
        };
        // The outbox may be writing an older rejection of an id reused since; its
        // receipt is then not the one `get_any` finds.
        if row.seq != row_seq {
            return Ok(None);
        }
        let key = key(root)?;
        of_row(store, &key, &row).map(Some)
    })();
    match made {
        Ok(receipt) => outcome.with_receipt(receipt),
        Err(e) => {
            tracing::warn!(
                id = %crate::text::for_log(outcome.id()),
                error = %crate::text::for_log(&e.to_string()),
                "the outcome is written without a receipt"
            );
            outcome
        }
    }
}

/// Call `each` with the signed receipt of every final request (every final row with an
/// id, oldest first: a rejected attempt under an id reused since included). Returns how
/// many. The first row that cannot be attested ends it with `AUDIT_BROKEN`.
pub fn all(
    store: &mut Store,
    root: &Root,
    each: &mut dyn FnMut(&Receipt) -> Result<()>,
) -> Result<u64> {
    let rows = store.list(&ListFilter {
        oldest_first: true,
        ..Default::default()
    })?;
    let key = key(root)?;
    let mut n = 0;
    for row in rows
        .iter()
        .filter(|r| r.status.is_final() && r.id.is_some())
    {
        each(&of_row(store, &key, row)?)?;
        n += 1;
    }
    Ok(n)
}
