//! `dshq watch [FILTERS] [--events KIND,...]`: follow what happens to requests: accepted,
//! claimed, released, answered, cancelled, aborted.
//!
//! On a terminal each event is one readable line; piped, or with `--json`, each is one
//! line of JSON (NDJSON: the same document as `dshq --json show ID`, the request as it is
//! now, plus an `event` object: kind, time, position, actor), for notification scripts.
//! This is the one command whose `--json` output is a stream rather than a single
//! document.
//!
//! It reads the database's event log, not the inbox, so it sees every change however it
//! came about, and it needs no daemon. Events are found by position above the last one
//! read ([`crate::app::feed::RequestEvents`]), filtered in the store's query by the same
//! filters as `list`. The loop sleeps until the database directory
//! changes (a notify watch; every commit writes a file there) or, at the latest, a 500 ms
//! tick — a missed or coalesced event costs latency, never a request — and then does one
//! indexed read.

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::interactive::style::{one_line, Style};
use super::Ctx;
use crate::app::{self, feed::RequestEvents};
use crate::clock::rfc3339;
use crate::core::audit::EventKind;
use crate::error::Result;
use crate::hooks::request_json;
use crate::output::ellipsize;
use crate::store::{Event, ListFilter, RequestRow, Status};

/// The longest the loop sleeps without a file-system event.
const TICK: Duration = Duration::from_millis(500);

/// Arguments of `dshq watch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Context, agent, intent and text.
    #[command(flatten)]
    pub filters: super::filter::Filters,
    /// Only these events (comma-separated; default: all of them).
    #[arg(long, value_name = "KIND,...", value_delimiter = ',',
          value_parser = super::closed_set(app::feed::LIFECYCLE, EventKind::as_str))]
    pub events: Vec<EventKind>,
    /// First show the requests already open (pending or claimed), then follow.
    #[arg(long)]
    pub pending: bool,
    /// Exit after this many lines (open requests and events).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
}

/// One readable line for a terminal: when, what, which request, its question.
fn line(row: &RequestRow, event: Option<&Event>, style: &Style) -> String {
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
        tags.push(format!("agent {}", one_line(a)));
    }
    let (at, kind) = match event {
        Some(e) => {
            if e.event_kind() != Some(EventKind::Accepted) {
                tags.push(format!("by {}", one_line(&e.actor)));
            }
            (e.at_ms, one_line(&e.kind))
        }
        None => (row.created_ms, row.status.as_str().to_string()),
    };
    let kind = format!("{kind:<9}");
    let kind = match event.and_then(Event::event_kind) {
        Some(EventKind::Answered) => style.ok(&kind),
        Some(EventKind::Cancelled | EventKind::Aborted | EventKind::Released) => style.warn(&kind),
        _ => style.bold(&kind),
    };
    let mut s = format!(
        "{}  {}  {}  {}  {}",
        style.dim(&rfc3339(at)),
        kind,
        style.accent(&one_line(row.id.as_deref().unwrap_or("-"))),
        style.dim(&format!("[{}]", one_line(&row.context))),
        ellipsize(&q, 80)
    );
    if !tags.is_empty() {
        s.push_str(&format!(
            "  {}",
            style.dim(&format!("({})", tags.join(", ")))
        ));
    }
    s
}

/// One NDJSON line: the request as `show --json` prints it, with the event if any.
fn json_line(row: &RequestRow, event: Option<&Event>) -> String {
    let Some(e) = event else {
        return request_json(row);
    };
    let mut v = serde_json::to_value(crate::views::RequestView::from_row(row))
        .expect("a request view serializes");
    v["event"] = serde_json::json!({
        "kind": e.kind,
        "at": rfc3339(e.at_ms),
        "seq": e.seq,
        "actor": e.actor,
    });
    v.to_string()
}

/// Run it until interrupted, `--count` is reached, or stdout closes.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let mut store = ctx.stored_store()?;
    let store = &mut store;
    let filter = a.filters.to_filter()?;
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

    // The mark first: a request accepted while the open ones are read shows twice at
    // worst, never not at all.
    let mut feed = RequestEvents::from_now(store, &a.events, filter.clone())?;
    let mut shown: u64 = 0;
    let mut out = std::io::stdout().lock();
    let mut emit = |row: &RequestRow, event: Option<&Event>| -> Result<bool> {
        let text = if json {
            json_line(row, event)
        } else {
            line(row, event, &style)
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
        let mut open = Vec::new();
        for status in [Status::Pending, Status::Claimed] {
            open.extend(store.list(&ListFilter {
                status: Some(status),
                oldest_first: true,
                ..filter.clone()
            })?);
        }
        open.sort_by_key(|r| r.seq);
        for row in &open {
            if !emit(row, None)? {
                return Ok(());
            }
        }
    }
    if !json {
        let what = if a.filters.context.is_empty() {
            "every context".to_string()
        } else {
            format!("context {}", a.filters.context.join(", "))
        };
        eprintln!(
            "{}",
            style.dim(&format!(
                "watching for new requests in {what} and what happens to them (Ctrl-C to stop)"
            ))
        );
    }
    loop {
        for (event, row) in feed.all(store)? {
            if !emit(&row, Some(&event))? {
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
