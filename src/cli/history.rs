//! `dshq history`: the audit of who asked what, who answered, when, and what was decided.

use std::io::IsTerminal;

use super::Ctx;
use crate::clock::{human_ms, now_ms, Millis};
use crate::error::{Error, Result};
use crate::output::{ellipsize, fit_table, print_json, status_color, Layout};
use crate::protocol::{Code, Decision};
use crate::store::Status;
use crate::store::{HistoryFilter, HistoryQuestion, HistoryRow};

/// Output formats of `history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns (the default on a terminal).
    Table,
    /// One JSON array.
    Json,
    /// One JSON object per line (the default when piped).
    Ndjson,
    /// RFC 4180 CSV with a header; `questions` holds JSON.
    Csv,
}

/// Arguments of `dshq history`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only requests from this agent id.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only this context (repeat for several).
    #[arg(long, value_name = "C")]
    pub context: Vec<String>,
    /// Only requests answered or cancelled by this provider.
    #[arg(long)]
    pub provider: Option<String>,
    /// Only this status.
    #[arg(long, value_parser = super::closed_set(<Status as strum::VariantArray>::VARIANTS, Status::as_str))]
    pub status: Option<Status>,
    /// Only this error code (e.g. ASK_CANCELLED, BAD_INTENT).
    #[arg(long, value_parser = super::closed_set(crate::protocol::error::ALL_CODES, Code::as_str))]
    pub code: Option<Code>,
    /// Only requests with a question of this intent (plan-review).
    #[arg(long)]
    pub intent: Option<String>,
    /// Only requests with a plan-review question approved or declined.
    #[arg(long, value_parser = super::closed_set(<Decision as strum::VariantArray>::VARIANTS, Decision::as_str))]
    pub decision: Option<Decision>,
    /// Created at or after: a duration back from now (7d, 2h) or an RFC 3339 time.
    #[arg(long)]
    pub since: Option<String>,
    /// Created before: a duration back from now or an RFC 3339 time.
    #[arg(long)]
    pub until: Option<String>,
    /// Only requests with a question whose text contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub grep: Option<String>,
    /// At most this many rows, newest first (0: no limit).
    #[arg(long, default_value_t = 1000)]
    pub limit: i64,
    /// Output format (default: table on a terminal, ndjson otherwise; json with --json).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
}

/// Parse `7d` (that long before `now`) or an RFC 3339 time into milliseconds.
pub fn parse_time(flag: &str, s: &str, now: Millis) -> Result<Millis> {
    if let Ok(d) = humantime::parse_duration(s) {
        return Ok(now - crate::clock::duration_ms(d));
    }
    s.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .map_err(|_| {
            Error::Usage(format!(
                "--{flag} {s:?}: give a duration such as 7d or an RFC 3339 time"
            ))
        })
}

/// Build the filter from the flags.
pub fn filter(a: &Args, now: Millis) -> Result<HistoryFilter> {
    Ok(HistoryFilter {
        agent: a.agent.clone(),
        contexts: a.context.clone(),
        provider: a.provider.clone(),
        status: a.status,
        code: a.code.map(|c| c.as_str().to_string()),
        intent: a.intent.clone(),
        decision: a.decision,
        since: a
            .since
            .as_deref()
            .map(|s| parse_time("since", s, now))
            .transpose()?,
        until: a
            .until
            .as_deref()
            .map(|s| parse_time("until", s, now))
            .transpose()?,
        grep: a.grep.clone(),
        limit: (a.limit > 0).then_some(a.limit),
    })
}

/// Render rows as CSV (RFC 4180 quoting of commas, quotes and newlines).
pub fn to_csv(rows: &[HistoryRow]) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let io = |e: csv::Error| Error::io("csv", std::io::Error::other(e));
    w.write_record([
        "id",
        "context",
        "agent",
        "lineage",
        "createdAt",
        "finishedAt",
        "waitMs",
        "status",
        "code",
        "decision",
        "provider",
        "questions",
        "votes",
    ])
    .map_err(io)?;
    for r in rows {
        w.write_record([
            r.id.clone().unwrap_or_default(),
            r.context.clone(),
            r.agent.clone().unwrap_or_default(),
            r.lineage.clone().unwrap_or_default(),
            r.created_at.clone(),
            r.finished_at.clone().unwrap_or_default(),
            r.wait_ms.to_string(),
            r.status.as_str().to_string(),
            r.code.clone().unwrap_or_default(),
            r.decision
                .map(|d| d.as_str().to_string())
                .unwrap_or_default(),
            r.provider.clone().unwrap_or_default(),
            serde_json::to_string(&r.questions).expect("questions serialize"),
            if r.votes.is_empty() {
                String::new()
            } else {
                serde_json::to_string(&r.votes).expect("votes serialize")
            },
        ])
        .map_err(io)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| Error::io("csv", std::io::Error::other(e.to_string())))?;
    Ok(String::from_utf8(bytes).expect("csv of UTF-8 strings is UTF-8"))
}

/// The question a table row shows: the one the filter matched (`--intent`, `--decision`,
/// `--grep`, in that order), else the first; `(+N)` counts the others of the batch.
fn headline(r: &HistoryRow, f: &HistoryFilter, cut: bool) -> String {
    let matches = |q: &HistoryQuestion| {
        f.intent
            .as_ref()
            .is_none_or(|i| q.intent.as_ref() == Some(i))
            && f.decision.is_none_or(|d| q.decision == Some(d))
            && f.grep.as_ref().is_none_or(|g| {
                q.question
                    .to_ascii_lowercase()
                    .contains(&g.to_ascii_lowercase())
            })
    };
    let Some(q) = r
        .questions
        .iter()
        .find(|q| matches(q))
        .or(r.questions.first())
    else {
        return String::new();
    };
    let more = r.questions.len() - 1;
    // Cut here for a pipe; on a terminal the table cuts it to the width.
    let text = if cut {
        ellipsize(&q.question, 40)
    } else {
        crate::text::one_line(&q.question).into_owned()
    };
    if more > 0 {
        format!("{text} (+{more})")
    } else {
        text
    }
}

fn table_text(rows: &[HistoryRow], f: &HistoryFilter, layout: &Layout) -> String {
    if rows.is_empty() {
        return "no matching requests\n".into();
    }
    // The row carries its time as RFC 3339; a terminal shows it relative to now.
    let created = |r: &HistoryRow| match r.created_at.parse::<jiff::Timestamp>() {
        Ok(t) => layout.time(t.as_millisecond()),
        Err(_) => r.created_at.clone(),
    };
    fit_table(
        &[
            "ID", "CONTEXT", "AGENT", "CREATED", "WAIT", "STATUS", "DECISION", "PROVIDER",
            "QUESTION",
        ],
        rows.iter()
            .map(|r| {
                let status = match &r.code {
                    Some(c) => format!("{} ({c})", r.status.as_str()),
                    None => r.status.as_str().to_string(),
                };
                let agent = match (&r.agent, &r.lineage) {
                    (Some(a), Some(l)) => ellipsize(&format!("{a} ({l})"), 40),
                    (Some(a), None) => a.clone(),
                    _ => "-".into(),
                };
                vec![
                    r.id.clone().unwrap_or_else(|| "-".into()),
                    r.context.clone(),
                    agent,
                    created(r),
                    human_ms(r.wait_ms),
                    status,
                    r.decision
                        .map(|d| d.as_str().to_string())
                        .unwrap_or_else(|| "-".into()),
                    // A quorum's voters, each as the person and the face they used.
                    if r.votes.is_empty() {
                        r.provider.clone().unwrap_or_else(|| "-".into())
                    } else {
                        r.votes
                            .iter()
                            .map(|v| match &v.person {
                                Some(p) => format!("{p} via {}", v.voter),
                                None => v.voter.clone(),
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                    headline(r, f, layout.width.is_none()),
                ]
            })
            .collect(),
        layout,
        // The question, then the agent, provider and context give way.
        &[8, 2, 7, 1],
        |(c, r)| (c == 5).then(|| status_color(rows[r].status)),
    )
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    if ctx.json && a.format.is_some_and(|f| f != Format::Json) {
        return Err(Error::Usage(
            "--json prints one JSON document: drop --format, or give --format json".into(),
        ));
    }
    let now = now_ms();
    let f = filter(&a, now)?;
    let mut store = ctx.stored_store()?;
    let rows = crate::app::audit::history(&mut store, &f)?;
    let format = a.format.unwrap_or(if ctx.json {
        Format::Json
    } else if std::io::stdout().is_terminal() {
        Format::Table
    } else {
        Format::Ndjson
    });
    match format {
        Format::Json => print_json(&rows),
        Format::Ndjson => {
            let mut s = String::new();
            for r in &rows {
                s.push_str(&serde_json::to_string(r).expect("rows serialize"));
                s.push('\n');
            }
            print!("{s}");
        }
        Format::Csv => print!("{}", to_csv(&rows)?),
        Format::Table => println!("{}", table_text(&rows, &f, &ctx.layout())),
    }
    Ok(())
}
