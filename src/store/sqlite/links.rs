//! Mail links' statements on SQLite ([`crate::store::driver::LinkStatements`],
//! [`crate::store::driver::LinkReads`]): the rule is [`crate::store::queue::links`].

use rusqlite::params;

use super::tx::{Sql, SqlRead};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::links::{LinkReads, LinkStatements, LinkUse};

impl LinkStatements for Sql<'_, '_> {
    fn insert_link_use_if_unused(&mut self, link: &LinkUse, now: Millis) -> Result<bool> {
        let n = self
            .0
            .prepare_cached(
                "INSERT OR IGNORE INTO mail_links_used (link_id, request_id, recipient, used_ms)
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![link.link_id, link.request_id, link.recipient, now])?;
        Ok(n == 1)
    }
}

impl LinkReads for SqlRead<'_> {
    fn link_used(&mut self, link_id: &str) -> Result<bool> {
        Ok(self
            .0
            .prepare_cached("SELECT 1 FROM mail_links_used WHERE link_id = ?1")?
            .exists([link_id])?)
    }
}
