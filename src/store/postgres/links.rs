//! Mail links' statements on PostgreSQL ([`crate::store::driver::LinkStatements`],
//! [`crate::store::driver::LinkReads`]), as SQLite's: the rule is
//! [`crate::store::queue::links`]. Two racing sends through one link: the second insert
//! waits for the first's commit and then inserts nothing, so it is `LINK_USED`.

use postgres::GenericClient;

use super::tx::{PgRead, Tx};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::links::{LinkReads, LinkStatements, LinkUse};

impl LinkStatements for Tx<'_> {
    fn insert_link_use_if_unused(&mut self, link: &LinkUse, now: Millis) -> Result<bool> {
        let n = self.tx.execute(
            "INSERT INTO mail_links_used (link_id, request_id, recipient, used_ms)
             VALUES ($1, $2, $3, $4) ON CONFLICT (link_id) DO NOTHING",
            &[&link.link_id, &link.request_id, &link.recipient, &now],
        )?;
        Ok(n == 1)
    }
}

impl<C: GenericClient> LinkReads for PgRead<'_, C> {
    fn link_used(&mut self, link_id: &str) -> Result<bool> {
        Ok(self
            .0
            .query_opt(
                "SELECT 1 FROM mail_links_used WHERE link_id = $1",
                &[&link_id],
            )?
            .is_some())
    }
}
