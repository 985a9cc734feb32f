//! `dshq export`: everything, for archiving elsewhere. Each record is an object with a
//! `type` (`request`, `question`, `lease`, `agent`, `event`) and the row's columns, named
//! in camelCase like every other document dshq prints (`created_ms` is `createdMs`).
//!
//! Plain `export` streams NDJSON, one record a line, so an archive of any size never has
//! to fit in memory. `--json` promises exactly one document on stdout, so there the same
//! records come as one JSON array.
//!
//! `--receipts` exports the signed receipt of every final request instead, for an auditor:
//! one receipt a line, each exactly its compact canonical bytes, so the file verifies with
//! `dshq receipt verify FILE --key PUB` as it is.

use std::io::Write;

use super::Ctx;
use crate::app;
use crate::error::{Error, Result};

/// Arguments of `dshq export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Instead of the records, the signed receipt of every final request, one a line
    /// (each line verifies with `dshq receipt verify`; `--json`: one JSON array).
    #[arg(long)]
    pub receipts: bool,
}

/// Where records go: a line each (NDJSON), or elements of one JSON array.
struct Sink<W: Write> {
    out: W,
    array: bool,
    first: bool,
}

impl<W: Write> Sink<W> {
    fn record(&mut self, obj: &serde_json::Map<String, serde_json::Value>) -> Result<()> {
        let io = |e: std::io::Error| Error::io("stdout", e);
        if self.array {
            self.out
                .write_all(if self.first { b"[" } else { b"," })
                .map_err(io)?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, obj).map_err(|e| Error::io("stdout", e.into()))?;
        if !self.array {
            self.out.write_all(b"\n").map_err(io)?;
        }
        Ok(())
    }

    fn receipt(&mut self, r: &crate::protocol::receipt::Receipt) -> Result<()> {
        let io = |e: std::io::Error| Error::io("stdout", e);
        if self.array {
            self.out
                .write_all(if self.first { b"[" } else { b"," })
                .map_err(io)?;
            serde_json::to_writer(&mut self.out, r).map_err(|e| Error::io("stdout", e.into()))?;
        } else {
            self.out
                .write_all(crate::receipt::seal::to_line(r).as_bytes())
                .map_err(io)?;
        }
        self.first = false;
        Ok(())
    }

    fn finish(mut self) -> Result<()> {
        let io = |e: std::io::Error| Error::io("stdout", e);
        if self.array {
            self.out
                .write_all(if self.first { b"[]\n" } else { b"]\n" })
                .map_err(io)?;
        }
        self.out.flush().map_err(io)
    }
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    // What is stored, as stored: no view at now (the archive is the record).
    let mut store = ctx.stored_store()?;
    let stdout = std::io::stdout();
    let mut out = Sink {
        out: std::io::BufWriter::new(stdout.lock()),
        array: ctx.json,
        first: true,
    };
    if a.receipts {
        app::receipts::all(&mut store, &ctx.root, &mut |r| out.receipt(r))?;
    } else {
        store.export(&mut |_, record| out.record(&record))?;
    }
    out.finish()
}
