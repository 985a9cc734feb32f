//! `dshq validate FILE...`: check question files offline with the same code as ingestion.
//!
//! No daemon and no database: the registry check (`CALLER_NOT_LIVE`, `DELEGATED_CALLER`),
//! `NO_PROVIDER` and `DUPLICATE_ID` need the database and are left to acceptance.
//!
//! Each verdict carries the `requestDigest` the outcome of that file will carry (whenever
//! the file parses as a request, valid or not), so an asker can learn the digest to
//! compare with without computing it.

use std::path::PathBuf;

use serde::Serialize;

use super::Ctx;
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::files::inbox::{validate_file, Valid};
use crate::output::emit;
use crate::protocol::{Code, UserQuestionError};

/// Arguments of `dshq validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Request files (`NAME.json`) or abort files (`ID.abort`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Size limit in bytes, as the daemon's `--max-bytes`.
    #[arg(long, default_value_t = crate::protocol::check::DEFAULT_MAX_REQUEST_BYTES)]
    pub max_bytes: u64,
}

/// One file's verdict.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// The file as given.
    pub file: String,
    /// Whether ingestion would accept it (registry and provider aside).
    pub ok: bool,
    /// The request id (or the id an abort file names).
    pub id: Option<String>,
    /// `request` or `abort`, when valid.
    pub kind: Option<&'static str>,
    /// The error, when invalid.
    pub error: Option<UserQuestionError>,
    /// `sha256:HEX` of the canonical request, when the file parses as a request.
    pub request_digest: Option<String>,
}

/// The digest of the request in `path`, when it is a readable `.json` file that parses as
/// one (read with the same bounded, no-symlink read as the checks).
fn digest_of(path: &std::path::Path, max_bytes: u64) -> Option<String> {
    if path.extension().is_none_or(|e| e != "json") {
        return None;
    }
    let bytes = crate::files::safe_read::read_limited(path, max_bytes).ok()?;
    crate::protocol::check::parse_request(&bytes)
        .ok()
        .map(|r| crate::protocol::digest::request_digest(&r))
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let now = now_ms();
    let verdicts: Vec<Verdict> = a
        .files
        .iter()
        .map(|f| {
            let file = f.display().to_string();
            match validate_file(f, a.max_bytes, now) {
                Ok(Valid::Request(id)) => Verdict {
                    file,
                    ok: true,
                    id: Some(id),
                    kind: Some("request"),
                    error: None,
                    request_digest: digest_of(f, a.max_bytes),
                },
                Ok(Valid::Abort(id)) => Verdict {
                    file,
                    ok: true,
                    id: Some(id),
                    kind: Some("abort"),
                    error: None,
                    request_digest: None,
                },
                Err(e) => Verdict {
                    file,
                    ok: false,
                    id: None,
                    kind: None,
                    error: Some(e),
                    request_digest: digest_of(f, a.max_bytes),
                },
            }
        })
        .collect();
    let failed = verdicts.iter().filter(|v| !v.ok).count();
    emit(ctx.json, &verdicts, || {
        let mut s = String::new();
        for v in &verdicts {
            match &v.error {
                None => s.push_str(&format!(
                    "ok      {} ({} {}{})\n",
                    crate::text::one_line(&v.file),
                    v.kind.unwrap_or(""),
                    v.id.as_deref().unwrap_or(""),
                    v.request_digest
                        .as_deref()
                        .map(|d| format!(" {d}"))
                        .unwrap_or_default()
                )),
                Some(e) => s.push_str(&format!(
                    "{:<7} {}: {}\n",
                    "FAIL",
                    crate::text::one_line(&v.file),
                    crate::text::one_line(&e.to_string())
                )),
            }
        }
        s
    });
    if failed > 0 {
        // The verdicts are the output; the exit status says some failed.
        return Err(Error::Ended(UserQuestionError::new(
            verdicts
                .iter()
                .find_map(|v| v.error.as_ref().map(|e| e.code))
                .unwrap_or(Code::BadRequest),
            format!("{failed} of {} files would be rejected", verdicts.len()),
        )));
    }
    Ok(())
}
