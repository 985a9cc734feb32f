//! Time: end what fell due, and publish what that finished.

use crate::error::Result;
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
        super::publish_pending(store, root)?;
    }
    Ok(swept)
}
