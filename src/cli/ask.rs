//! `dshq ask FILE|-`: submit a request, optionally waiting for its outcome.

use std::path::PathBuf;
use std::time::Duration;

use super::{parse_wait_timeout, wait, Ctx};
use crate::error::{Error, Result};
use crate::files::{outbox, safe_read};
use crate::output::emit;
use crate::protocol::check::{parse_request, DEFAULT_MAX_REQUEST_BYTES};
use crate::store::{self, requests};

/// Arguments of `dshq ask`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The request JSON file, or `-` for stdin.
    pub file: PathBuf,
    /// Wait for the outcome and print it.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up after this long (WAIT_TIMEOUT).
    #[arg(long, value_parser = parse_wait_timeout, requires = "wait")]
    pub timeout: Option<Duration>,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let bytes = safe_read::read_arg(&a.file, DEFAULT_MAX_REQUEST_BYTES).map_err(|e| match e {
        safe_read::ReadError::Io(io) => Error::io(&a.file, io),
        other => Error::question(
            crate::protocol::Code::BadRequest,
            format!("{}: {other}", a.file.display()),
        ),
    })?;
    let mut conn = ctx.db()?;
    let raw = String::from_utf8_lossy(&bytes).into_owned();
    let result = parse_request(&bytes)
        .map_err(Error::Question)
        .and_then(|req| {
            store::write_now(&mut conn, |tx, now| {
                requests::accept(tx, req, None, "cli", now)
            })
        });
    let accepted = match result {
        Ok(a) => a,
        Err(Error::Question(e)) => {
            // Kept for the audit, and as an outcome when the id is known and free.
            let (id, context) = crate::protocol::check::salvage_id_context(&bytes);
            let rej = requests::Rejection {
                id: id.as_deref(),
                context: context.as_deref(),
                body: &raw,
                source: "cli",
            };
            store::write_now(&mut conn, |tx, now| {
                requests::record_rejection(tx, &rej, &e, now)
            })?;
            outbox::flush(&ctx.root, &mut conn)?;
            return Err(Error::Question(e));
        }
        Err(other) => return Err(other),
    };
    if accepted.replaced_rejection {
        outbox::remove_stale(&ctx.root, &accepted.id);
    }
    outbox::flush(&ctx.root, &mut conn)?;
    if a.wait {
        drop(conn);
        return wait::wait_and_print(ctx, &accepted.id, a.timeout);
    }
    emit(ctx.json, &accepted, || {
        if accepted.new {
            format!("{}\n", accepted.id)
        } else {
            eprintln!(
                "request {} was already accepted (same content)",
                accepted.id
            );
            format!("{}\n", accepted.id)
        }
    });
    Ok(())
}
