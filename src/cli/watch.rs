//! `dshq watch [--context C]`: follow new requests as they are accepted.
//!
//! On a terminal each request is one readable line; piped, or with `--json`, each is one
//! line of JSON (NDJSON: the same document as `dshq --json show ID`), for notification
//! scripts. This is the one command whose `--json` output is a stream rather than a
//! single document.
//!
//! It reads the database, not the inbox, so it sees every accepted request however it
//! arrived, and it needs no daemon. New requests are found by `seq` above the last one
//! seen ([`crate::app::feed::NewRequests`]). The loop sleeps until the database directory
//! changes (a notify watch; every commit writes a file there) or, at the latest, a 500 ms
//! tick — a missed or coalesced event costs latency, never a request — and then does one
//! indexed read.

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::interactive::style::{one_line, Style};
use super::Ctx;
use crate::app::{self, feed::NewRequests};
use crate::clock::rfc3339;
use crate::error::Result;
use crate::hooks::request_json;
use crate::output::ellipsize;
use crate::store::{RequestRow, Status};

/// The longest the loop sleeps without a file-system event.
const TICK: Duration = Duration::from_millis(500);

/// Arguments of `dshq watch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only requests of this context.
    #[arg(long, value_name = "C")]
    pub context: Option<String>,
    /// First show the requests already open (pending or claimed), then follow.
    #[arg(long)]
    pub pending: bool,
    /// Exit after this many requests.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
}

/// One readable line for a terminal.
fn line(row: &RequestRow, style: &Style) -> String {
    let req = row.request();
    let questions = req.as_ref().map(|r| r.questions.as_slice()).unwrap_or(&[]);
    let mut q = questions
        .first()
        .map(|q| q.question.clone())
        .unwrap_or_default();
    if questions.len() > 1 {
        q = format!("{q} (+{})", questions.len() - 1);
    }
    let mut tags = Vec::new();
    if questions.iter().any(|q| q.plan_review_approve().is_some()) {
        tags.push("plan-review".to_string());
    }
    if let Some(a) = &row.agent_id {
        tags.push(format!("agent {a}"));
    }
    if row.status.is_final() || row.status == Status::Claimed {
        tags.push(row.status.as_str().to_string());
    }
    let mut s = format!(
        "{}  {}  {}  {}",
        style.dim(&rfc3339(row.created_ms)),
        style.accent(row.id.as_deref().unwrap_or("-")),
        style.dim(&format!("[{}]", row.context)),
        ellipsize(&one_line(&q), 80)
    );
    if !tags.is_empty() {
        s.push_str(&format!(
            "  {}",
            style.dim(&format!("({})", tags.join(", ")))
        ));
    }
    s
}

/// Run it until interrupted, `--count` is reached, or stdout closes.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let mut store = ctx.stored_store()?;
    let store = &mut *store;
    if let Some(c) = &a.context {
        crate::protocol::check::check_id("context", c)?;
    }
    let json = ctx.json || !std::io::stdout().is_terminal();
    let style = ctx.color.for_stdout();

    // Wake on any change in the root directory (the database's WAL); a tick otherwise.
    let (tx, rx) = mpsc::channel::<()>();
    let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(ev) = &res {
            if matches!(ev.kind, notify::EventKind::Access(_)) {
                return;
            }
        }
        let _ = tx.send(());
    })
    .and_then(|mut w| {
        w.watch(ctx.root.dir(), RecursiveMode::NonRecursive)
            .map(|_| w)
    });
    if let Err(e) = &watcher {
        tracing::warn!(error = %e, "no file-system events; polling every {TICK:?}");
    }

    let mut seen = NewRequests::from_now(store)?;
    let mut shown: u64 = 0;
    let mut out = std::io::stdout().lock();
    let mut emit = |row: &RequestRow| -> Result<bool> {
        let text = if json {
            request_json(row)
        } else {
            line(row, &style)
        };
        if writeln!(out, "{text}").and_then(|_| out.flush()).is_err() {
            // The reader went away (a closed pipe): stop quietly.
            return Ok(false);
        }
        shown += 1;
        Ok(a.count.is_none_or(|n| shown < n))
    };
    if a.count == Some(0) {
        return Ok(());
    }
    if a.pending {
        for row in app::feed::open_upto(store, a.context.as_deref(), seen.after())? {
            if !emit(&row)? {
                return Ok(());
            }
        }
    }
    if !json {
        eprintln!(
            "{}",
            style.dim(&format!(
                "watching for new requests in {} (Ctrl-C to stop)",
                a.context
                    .as_deref()
                    .map_or("every context".to_string(), |c| format!("context {c}"))
            ))
        );
    }
    loop {
        for row in seen.all(store)? {
            if a.context.as_deref().is_some_and(|c| c != row.context) {
                continue;
            }
            if !emit(&row)? {
                return Ok(());
            }
        }
        match rx.recv_timeout(TICK) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => {}
            // No watcher: the tick alone.
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(TICK),
        }
        // One read serves every event queued meanwhile.
        while rx.try_recv().is_ok() {}
    }
}
