//! `dshq ask FILE|-`: submit a request, optionally waiting for its outcome.
//!
//! The request id is the JSON `id`; else, as in the inbox, the file name without `.json`;
//! else (stdin, which dsh's requests are: they carry no id) a generated one, `ask-` and 32
//! lowercase hex digits from the OS random source, printed like any other id. The result
//! carries `requestDigest`, which the outcome document carries too: the way to tell this
//! request's outcome from that of another request once under the same id.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::{parse_wait_timeout, wait, Ctx};
use crate::app;
use crate::core::audit::{Actor, Source};
use crate::error::{Error, Result};
use crate::files::safe_read;
use crate::output::emit;
use crate::protocol::check::{parse_request, DEFAULT_MAX_REQUEST_BYTES};
use crate::protocol::continued::{self, Pending};
use crate::protocol::digest::request_digest;
use crate::store::{self, Accepted};

/// Arguments of `dshq ask`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The request JSON file, or `-` for stdin. Without an `id` in the JSON the id is the
    /// file name without `.json`; from stdin, a generated `ask-HEX` id (printed).
    pub file: PathBuf,
    /// Wait for the outcome and print it (the id and how to answer it go to stderr first).
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up after this long (WAIT_TIMEOUT). For a request on a tool call
    /// (`wait.callId`), the window is this, else the request's `wait.timeoutMs`, and its
    /// closing prints the pending document (dsh 0.2's `{pending: true, callId}`) instead.
    #[arg(long, value_parser = parse_wait_timeout, requires = "wait")]
    pub timeout: Option<Duration>,
}

/// What `ask` prints: the acceptance and the digest of the request.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Asked<'a> {
    #[serde(flatten)]
    accepted: &'a Accepted,
    /// `sha256:HEX` of the canonical request, as in its outcome document.
    request_digest: &'a str,
}

/// The id of a request without one: the file name without `.json`, or a fresh id for stdin.
pub fn fallback_id(file: &Path) -> String {
    if file.as_os_str() == "-" {
        return crate::app::ask::generated_id();
    }
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.strip_suffix(".json") {
        Some(stem) => stem.to_string(),
        None => name,
    }
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
    let mut store = ctx.store()?;
    let asked = app::ask::ask(
        &mut store,
        &ctx.root,
        app::ask::Ask {
            bytes: &bytes,
            fallback_id: Some(fallback_id(&a.file)),
            // A generated id names nothing the asker knows: no outcome file under it.
            outcome_under_fallback: a.file.as_os_str() != "-",
            source: Source::Cli,
            actor: Actor::Cli,
            own_only: false,
        },
    )?;
    let accepted = match asked {
        store::Asked::Accepted(a) => a,
        store::Asked::Rejected { error, .. } => return Err(Error::Question(error)),
    };
    let request = parse_request(&bytes).expect("an accepted request was parsed");
    let digest = request_digest(&request);
    if !accepted.new {
        eprintln!(
            "request {} was already accepted (same content)",
            accepted.id
        );
    }
    if a.wait {
        drop(store);
        // stderr, so stdout stays the outcome (one document with --json).
        eprintln!(
            "waiting for the answer to request {id} ({digest}); answer it with: dshq answer {id}",
            id = accepted.id
        );
        let Some(call) = &request.wait else {
            return wait::wait_and_print(ctx, &accepted.id, a.timeout);
        };
        // A request on a tool call: the window's closing is pending, not a failure.
        let window = a.timeout.or_else(|| continued::window(call));
        return match wait::wait_and_print(ctx, &accepted.id, window) {
            Err(Error::WaitTimeout { .. }) => {
                let pending = Pending::new(&accepted.id, &call.call_id, Some(digest));
                emit(ctx.json, &pending, || {
                    format!("pending (call {})\n{}\n", pending.call_id, pending.message)
                });
                Ok(())
            }
            other => other,
        };
    }
    let asked = Asked {
        accepted: &accepted,
        request_digest: &digest,
    };
    emit(ctx.json, &asked, || {
        eprintln!("request digest {digest}");
        format!("{}\n", accepted.id)
    });
    Ok(())
}
