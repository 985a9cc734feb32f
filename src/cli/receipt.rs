//! `dshq receipt`: signed decision receipts.
//!
//! - `dshq receipt ID` prints the receipt of a final request (`REQUEST_OPEN` while it is
//!   pending or claimed), exactly the bytes `receipt verify` checks.
//! - `dshq receipt key` prints this root's public key (`ed25519:HEX`), creating the key
//!   on first use.
//! - `dshq receipt verify FILE --key PUB [--id ID] [--digest sha256:HEX]` checks a receipt
//!   offline: no root, no database, no environment. FILE is a receipt, an outcome file
//!   carrying one, or the lines of `dshq export --receipts`.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use super::Ctx;
use crate::app;
use crate::error::{Error, Result};
use crate::receipt::{seal, verify, Expect, PublicKey};

/// Arguments of `dshq receipt`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    /// `key` or `verify` (a request named `key` or `verify`: `dshq receipt -- ID`).
    #[command(subcommand)]
    pub command: Option<Sub>,
    /// The id of a final request: print its signed receipt.
    #[arg(value_name = "ID", required = true)]
    pub id: Option<String>,
}

/// The subcommands of `dshq receipt`.
#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// Print this host's public receipt key (`ed25519:HEX`), creating the key
    /// (`receipt.key`, mode 0600, beside `audit.key`) if the root has none.
    Key,
    /// Verify a receipt offline, without any root or database.
    Verify(VerifyArgs),
}

/// Arguments of `dshq receipt verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The file: a receipt (`dshq receipt ID`), an outcome file carrying one
    /// (`outbox/ID.json`), or the lines of `dshq export --receipts`; `-` for stdin.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// A trusted public key: `ed25519:HEX` as `dshq receipt key` prints it, or a file
    /// holding that. Repeat it to trust several hosts' keys.
    #[arg(long = "key", value_name = "PUB", required = true)]
    pub keys: Vec<String>,
    /// The receipt must be of the request with this id (`RECEIPT_MISMATCH` otherwise).
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// The receipt must be of the request with this digest, `sha256:HEX` as the asker
    /// computed it of what it asked (`RECEIPT_MISMATCH` otherwise).
    #[arg(long, value_name = "sha256:HEX")]
    pub digest: Option<String>,
}

impl Args {
    /// Whether this run needs no root at all (`verify`).
    pub fn is_offline(&self) -> bool {
        matches!(self.command, Some(Sub::Verify(_)))
    }
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    match (a.command, a.id) {
        (Some(Sub::Key), _) => key(ctx),
        (Some(Sub::Verify(v)), _) => verify_file(ctx, v),
        (None, Some(id)) => print_receipt(ctx, &id),
        (None, None) => Err(Error::Usage(
            "give a request id, `key` or `verify FILE --key PUB`".into(),
        )),
    }
}

fn print_receipt(ctx: &Ctx, id: &str) -> Result<()> {
    // As stored (no view at now): a receipt signs what the log recorded.
    let mut store = ctx.stored_store()?;
    let stored = app::receipts::of_request(&mut store, &ctx.root, id);
    drop(store);
    let receipt = match stored {
        // Open as stored: its deadline (or a ladder's expiry) may have passed with no
        // daemon to sweep it, and `show` (a view at now) already says it ended. Sweep it
        // for real, as any write would, so the two agree and the end is in the log to sign.
        Err(Error::RequestOpen { .. }) => {
            let mut store = ctx.store()?;
            app::sweep::sweep(&mut store, &ctx.root)?;
            app::receipts::of_request(&mut store, &ctx.root, id)?
        }
        other => other?,
    };
    let text = seal::to_file(&receipt);
    let stdout = std::io::stdout();
    // The receipt's bytes are what verifies, so they go out unchanged, except to a
    // terminal when asker text in it holds controls JSON leaves as they are (C1, bidi):
    // shown escaped there, and said so (redirect to a file to keep the receipt).
    let shown = crate::text::multi_line(&text);
    if stdout.is_terminal() && shown != text {
        eprintln!(
            "note: the receipt holds control characters, shown escaped here; redirect it to \
             a file to keep the exact bytes that verify"
        );
    }
    let out = if stdout.is_terminal() { &*shown } else { &text };
    let mut lock = stdout.lock();
    lock.write_all(out.as_bytes())
        .and_then(|()| lock.flush())
        .map_err(|e| Error::io("stdout", e))
}

fn key(ctx: &Ctx) -> Result<()> {
    ctx.root.require_existing()?;
    let key = app::receipts::key(&ctx.root)?;
    let public = key.public().to_string();
    crate::output::emit(ctx.json, &serde_json::json!({ "key": public }), || {
        format!("{public}\n")
    });
    Ok(())
}

/// A `--key` value: the key itself, or a file holding it.
fn trusted_key(given: &str) -> Result<PublicKey> {
    if let Some(k) = PublicKey::parse(given.trim()) {
        return Ok(k);
    }
    let from_file = std::fs::read_to_string(given)
        .ok()
        .and_then(|t| PublicKey::parse(t.trim()));
    from_file.ok_or_else(|| {
        Error::Usage(format!(
            "--key {}: neither a public key (`ed25519:` and 64 lowercase hex digits, as \
             `dshq receipt key` prints it) nor a file holding one",
            crate::text::one_line(given)
        ))
    })
}

fn verify_file(ctx: &Ctx, v: VerifyArgs) -> Result<()> {
    let keys = v
        .keys
        .iter()
        .map(|k| trusted_key(k))
        .collect::<Result<Vec<_>>>()?;
    let bytes = if v.file.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| Error::io("stdin", e))?;
        b
    } else {
        std::fs::read(&v.file).map_err(|e| Error::io(&v.file, e))?
    };
    let single = serde_json::from_slice::<serde_json::Value>(&bytes).is_ok();
    if (v.id.is_some() || v.digest.is_some()) && !single {
        return Err(Error::Usage(
            "--id and --digest bind one receipt; this file is not one document (verify the \
             lines of an export without them)"
                .into(),
        ));
    }
    let expect = Expect {
        keys,
        id: v.id,
        digest: v.digest,
    };
    let verified = verify::verify(&bytes, &expect)?;
    let report = serde_json::json!({
        "verified": true,
        "holder": verified.holder,
        "receipts": verified.receipts.iter().map(|r| serde_json::json!({
            "id": r.id,
            "status": r.status,
            "requestDigest": r.request_digest,
            "signer": r.signer,
            "chain": r.chain,
        })).collect::<Vec<_>>(),
    });
    crate::output::emit(ctx.json, &report, || match verified.receipts.as_slice() {
        [r] => format!(
            "verified: the receipt of request {} ({}, {}), signed by {}, final event {} in \
             the chain\n",
            crate::text::one_line(&r.id),
            r.status,
            r.request_digest.as_deref().unwrap_or("no digest"),
            r.signer,
            r.chain.seq
        ),
        many => format!("verified: {} receipts\n", many.len()),
    });
    Ok(())
}
