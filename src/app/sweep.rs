//! Time: end what fell due (and publish what that finished), and when next to look.

use crate::clock::Millis;
use crate::error::Result;
use crate::files::outbox;
use crate::root::Root;
use crate::store::{Store, Swept};

/// Sweep what fell due and publish the outcomes it finished (aborted deadlines, expired
/// ladders).
pub fn sweep(store: &mut Store, root: &Root) -> Result<Option<Swept>> {
    let swept = store.sweep()?;
    if swept
        .as_ref()
        .is_some_and(|s| !s.aborted.is_empty() || !s.expired.is_empty())
    {
        outbox::flush(root, store)?;
    }
    Ok(swept)
}

/// Sweep without publishing (a read command presenting the store as it is now).
pub fn sweep_quietly(store: &mut Store) -> Result<Option<Swept>> {
    store.sweep()
}

/// The earliest future time something falls due.
pub fn next_due(store: &mut Store) -> Result<Option<Millis>> {
    store.next_due()
}
