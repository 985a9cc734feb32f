//! `dshq audit verify`: walk the event log's hash chain and name the first event that was
//! changed, removed or reordered.

use serde::Serialize;

use super::Ctx;
use crate::error::{Error, Result};
use crate::output::emit;
use crate::protocol::Code;
use crate::store::events::{self, ChainBreak};

/// `dshq audit ...`
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Verify the event log's hash chain.
    Verify,
}

/// The verification report.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// Whether every event verified.
    pub ok: bool,
    /// Events read.
    pub events: i64,
    /// The newest event's seq and hash: keep them elsewhere to detect a truncated tail.
    pub head_seq: Option<i64>,
    /// The newest event's hash.
    pub head_hash: Option<String>,
    /// The first break, if any.
    pub first_break: Option<ChainBreak>,
}

/// Run it.
pub fn run(ctx: &Ctx, c: Command) -> Result<()> {
    match c {
        Command::Verify => {
            let conn = ctx.db()?;
            let (count, brk) = events::verify(&conn)?;
            let head: Option<(i64, String)> = conn
                .query_row(
                    "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .ok();
            let report = VerifyReport {
                ok: brk.is_none(),
                events: count,
                head_seq: head.as_ref().map(|h| h.0),
                head_hash: head.map(|h| h.1),
                first_break: brk.clone(),
            };
            match brk {
                None => {
                    emit(ctx.json, &report, || {
                        format!(
                            "ok: {} events verified; head {} {}\n",
                            report.events,
                            report.head_seq.unwrap_or(0),
                            report.head_hash.clone().unwrap_or_default()
                        )
                    });
                    Ok(())
                }
                Some(b) => Err(Error::question(
                    Code::AuditBroken,
                    format!("event {} does not verify: {}", b.seq, b.problem),
                )),
            }
        }
    }
}
