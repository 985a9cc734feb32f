//! Output to a terminal: the JSON documents of [`crate::views`] printed for `--json`, and
//! human text (tables, a request shown, an outcome). Command logic builds the views;
//! nothing here touches the database, and nothing here is served over the network.
//!
//! Human text carries asker-supplied strings (questions, labels, meta, lineage, provider
//! names, raw rejected input) to a person's terminal, so every such string goes through
//! [`crate::text`]: [`table`] escapes every cell, [`ellipsize`] escapes before it
//! shortens, the renderers here escape each field, and [`emit`] escapes whatever human
//! text reaches it as a last line of defence. JSON output stays exact (serde escapes
//! controls there, and a program wants the bytes that were sent).

use std::io::Write;

use comfy_table::{presets, ContentArrangement, Table};
use serde::Serialize;

use crate::views::{RequestSummary, RequestView};

use crate::clock::{human_ms, rfc3339, Millis};
use crate::protocol::Outcome;
use crate::store::Status;
use crate::text::{multi_line, one_line};

/// Print `value` as one JSON document on stdout.
pub fn print_json<T: Serialize + ?Sized>(value: &T) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, value);
    let _ = writeln!(out);
}

/// Print `value` as JSON when `json`, else the human text.
pub fn emit<T: Serialize + ?Sized>(json: bool, value: &T, human: impl FnOnce() -> String) {
    if json {
        print_json(value);
    } else {
        // Every renderer escapes its fields; this catches one that forgot (line breaks
        // are kept, so a table is not reflowed).
        let text = human();
        let text = multi_line(&text);
        if !text.is_empty() {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{text}");
            if !text.ends_with('\n') {
                let _ = writeln!(out);
            }
        }
    }
}

/// A plain table (no borders) for a terminal. Every cell is made safe for one line
/// ([`one_line`]): a cell can neither hold a control sequence nor break its row.
pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    fit_table(header, rows, &Layout::default(), &[], |_| None)
}

/// How a table is laid out for its reader: a terminal gets its width, relative times and
/// (unless turned off) colour; a pipe gets every column whole and absolute times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    /// The terminal's width in columns: no line is wider. `None`: as wide as it needs.
    pub width: Option<u16>,
    /// Now: times are shown relative to it ("3m ago", "in 2h"). `None`: RFC 3339.
    pub now: Option<Millis>,
    /// Paint the status column.
    pub color: bool,
}

impl Layout {
    /// A time as this layout shows it.
    pub fn time(&self, ms: Millis) -> String {
        match self.now {
            Some(now) => relative(ms, now),
            None => rfc3339(ms),
        }
    }
}

/// `ms` relative to `now` in one coarse unit: "3m ago", "in 2h", "just now".
pub fn relative(ms: Millis, now: Millis) -> String {
    let d = (now - ms).abs() / 1000;
    if d < 1 {
        return "just now".into();
    }
    let unit = match d {
        0..60 => format!("{d}s"),
        60..3600 => format!("{}m", d / 60),
        3600..172_800 => format!("{}h", d / 3600),
        _ => format!("{}d", d / 86_400),
    };
    if ms <= now {
        format!("{unit} ago")
    } else {
        format!("in {unit}")
    }
}

/// The colour of a status word: open requests stand out, final ones by how they ended.
pub fn status_color(status: Status) -> comfy_table::Color {
    use comfy_table::Color;
    match status {
        Status::Pending => Color::Yellow,
        Status::Claimed => Color::Cyan,
        Status::Answered => Color::Green,
        Status::Cancelled | Status::Aborted | Status::Expired => Color::DarkGrey,
        Status::Rejected => Color::Red,
    }
}

/// The narrowest the first column to give way gets while others can still give way.
const MIN_SHRUNK: u16 = 24;

/// A table laid out for `layout`: every cell escaped, one line a row. With a width, the
/// columns in `shrink` give way in that order (the question first), each cut with an
/// ellipsis, while every other column keeps its content width; only if all of them
/// together are not enough does every column give way. `paint((column, row))` may colour
/// a cell (used only when `layout.color`).
pub fn fit_table(
    header: &[&str],
    rows: Vec<Vec<String>>,
    layout: &Layout,
    shrink: &[usize],
    paint: impl Fn((usize, usize)) -> Option<comfy_table::Color>,
) -> String {
    // `free`: how many of `shrink` may give way; `None`: every column.
    let render = |free: Option<usize>| {
        let mut t = Table::new();
        let mut head = comfy_table::Row::from(header.iter().copied());
        head.max_height(1);
        t.load_preset(presets::NOTHING).set_header(head);
        if layout.color {
            t.enforce_styling();
        } else {
            t.force_no_tty();
        }
        match layout.width {
            Some(w) => {
                t.set_content_arrangement(ContentArrangement::Dynamic)
                    // One more than the terminal: the leading pad column is trimmed below.
                    .set_width(w.saturating_add(1))
                    .set_truncation_indicator("…");
            }
            None => {
                t.set_content_arrangement(ContentArrangement::Disabled);
            }
        }
        for (ri, r) in rows.iter().enumerate() {
            let mut row = comfy_table::Row::from(r.iter().enumerate().map(|(ci, c)| {
                let cell = comfy_table::Cell::new(one_line(c));
                match paint((ci, ri)).filter(|_| layout.color) {
                    Some(color) => cell.fg(color),
                    None => cell,
                }
            }));
            row.max_height(1);
            t.add_row(row);
        }
        if let (Some(free), Some(_)) = (free, layout.width) {
            for (i, col) in t.column_iter_mut().enumerate() {
                if !shrink[..free].contains(&i) {
                    col.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
                } else if Some(&i) == shrink.first() {
                    // The first to give way still keeps a readable start; below that the
                    // next columns give way too.
                    col.set_constraint(comfy_table::ColumnConstraint::LowerBoundary(
                        // comfy-table's bounds include the two padding spaces.
                        comfy_table::Width::Fixed(MIN_SHRUNK + 2),
                    ));
                } else {
                    // The others keep at least their heading.
                    let head = display_width(header.get(i).copied().unwrap_or_default());
                    col.set_constraint(comfy_table::ColumnConstraint::LowerBoundary(
                        comfy_table::Width::Fixed(u16::try_from(head + 2).unwrap_or(u16::MAX)),
                    ));
                }
            }
        }
        // comfy-table pads the first column with a space; trim each line's trailing
        // spaces.
        t.to_string()
            .lines()
            .map(|l| {
                l.trim_end()
                    .strip_prefix(' ')
                    .unwrap_or(l.trim_end())
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let Some(w) = layout.width else {
        return render(Some(0));
    };
    let fits = |s: &String| s.lines().all(|l| display_width(l) <= usize::from(w));
    (1..=shrink.len())
        .map(|free| render(Some(free)))
        .find(fits)
        .unwrap_or_else(|| render(None))
}

/// The columns a line takes on a terminal (colour escapes take none).
pub fn display_width(line: &str) -> usize {
    let mut n = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ ... final byte in @..~
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        n += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
    }
    n
}

/// Make `s` safe for one line ([`one_line`]), then shorten it to `n` characters with an
/// ellipsis.
pub fn ellipsize(s: &str, n: usize) -> String {
    let line = one_line(s);
    if line.chars().count() <= n {
        line.into_owned()
    } else {
        let mut t: String = line.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// `3m ago` style age of a time.
pub fn age(ms: Millis, now: Millis) -> String {
    format!("{} ago", human_ms(((now - ms) / 1000) * 1000))
}

/// Human text of a list.
pub fn list_text(rows: &[RequestSummary], layout: &Layout) -> String {
    if rows.is_empty() {
        return "no requests\n".into();
    }
    // A deadline column only when some request has one.
    let deadlines = rows.iter().any(|r| r.deadline_ms.is_some());
    let mut header = vec!["ID", "CONTEXT", "STATUS", "CREATED"];
    if deadlines {
        header.push("DEADLINE");
    }
    header.extend(["AGENT", "PROVIDER", "QUESTION"]);
    let question = header.len() - 1;
    // The question gives way first, then who asked and answered, then the context.
    let shrink = [question, question - 2, question - 1, 1];
    let body = rows
        .iter()
        .map(|r| {
            let status = match (&r.error_code, &r.decision, &r.quorum) {
                (Some(c), _, _) if r.status != Status::Answered => {
                    format!("{} ({c})", r.status.as_str())
                }
                (_, Some(d), _) => format!("{} ({})", r.status.as_str(), d.as_str()),
                // A quorum's progress while it is open: `pending (1/2 votes)`.
                (_, _, Some(q)) if r.status.is_open() => {
                    format!(
                        "{} ({}/{} votes)",
                        r.status.as_str(),
                        q.agreeing,
                        q.approvals
                    )
                }
                _ => r.status.as_str().to_string(),
            };
            let mut q = r.question.clone().unwrap_or_default();
            if r.questions > 1 {
                q = format!("{q} (+{})", r.questions - 1);
            }
            let mut row = vec![
                r.id.clone().unwrap_or_else(|| "-".into()),
                r.context.clone(),
                status,
                layout.time(r.created_ms),
            ];
            if deadlines {
                // A final request's deadline no longer matters.
                row.push(match r.deadline_ms {
                    Some(d) if !r.status.is_final() => layout.time(d),
                    _ => "-".into(),
                });
            }
            row.extend([
                r.agent.clone().unwrap_or_else(|| "-".into()),
                r.provider.clone().unwrap_or_else(|| "-".into()),
                // Whole on a pipe; a terminal's width decides (the table cuts it).
                if layout.width.is_some() {
                    one_line(&q).into_owned()
                } else {
                    ellipsize(&q, 50)
                },
            ]);
            row
        })
        .collect();
    fit_table(&header, body, layout, &shrink, |(c, r)| {
        (c == 2).then(|| status_color(rows[r].status))
    })
}

/// Human text of one request.
pub fn show_text(v: &RequestView) -> String {
    let mut s = String::new();
    push_heading(&mut s, v);
    if let Some(q) = &v.quorum {
        push_quorum(&mut s, v, q);
    }
    if let Some(meta) = &v.meta {
        push_meta(&mut s, meta);
    }
    for (i, q) in v.questions.iter().enumerate() {
        push_question(&mut s, v, i, q);
    }
    if let Some(Outcome::Error(e)) = &v.outcome {
        s.push_str(&format!(
            "\nerror    {}: {}\n",
            e.error.code,
            one_line(&e.error.message)
        ));
    }
    if let Some(raw) = &v.raw {
        s.push_str(&format!("\ninput    {}\n", ellipsize(raw, 200)));
    }
    s
}

/// The request's lines: its id, status, context, agent, source, times, claim and ending.
fn push_heading(s: &mut String, v: &RequestView) {
    let id = v.id.as_deref().unwrap_or("-");
    s.push_str(&format!("request  {}\n", one_line(id)));
    s.push_str(&format!("status   {}\n", v.status.as_str()));
    s.push_str(&format!("context  {}\n", one_line(&v.context)));
    if let Some(a) = &v.agent {
        s.push_str(&format!(
            "agent    {} (instance {})",
            one_line(&a.id),
            one_line(&a.instance)
        ));
        if let Some(l) = &a.lineage {
            s.push_str(&format!(", lineage {}", one_line(l)));
        }
        s.push('\n');
    }
    s.push_str(&format!("source   {}\n", one_line(&v.source)));
    s.push_str(&format!("created  {}\n", v.created_at));
    if let Some(d) = &v.deadline {
        s.push_str(&format!("deadline {d}\n"));
    }
    if let Some(c) = &v.claimed_by {
        s.push_str(&format!("claimed  by {}\n", one_line(c)));
    }
    if let Some(f) = &v.finished_at {
        // A final request says who ended it and when; an abort (the asker or its
        // deadline) and a rejection have no provider.
        // A delegate's answer: "by dave for alice".
        let for_whom = match &v.outcome {
            Some(Outcome::Answered(a)) => a.on_behalf_of.as_deref(),
            _ => None,
        }
        .map(|p| format!(" for {}", one_line(p)))
        .unwrap_or_default();
        match (&v.provider, v.status) {
            (Some(p), Status::Answered | Status::Cancelled) => s.push_str(&format!(
                "{:<8} by {}{for_whom} at {f}\n",
                v.status.as_str(),
                one_line(p)
            )),
            _ => s.push_str(&format!("{:<8} at {f}\n", v.status.as_str())),
        }
    }
}

/// The quorum's progress, each vote, and who approved an answered request.
fn push_quorum(s: &mut String, v: &RequestView, q: &crate::core::quorum::QuorumView) {
    s.push_str(&format!(
        "quorum   {} agree; {} matching vote(s) needed{}, decline: {} (set by the {})\n",
        q.progress(),
        q.approvals,
        q.group
            .as_deref()
            .map(|g| format!(" from group {}", one_line(g)))
            .unwrap_or_default(),
        q.decline,
        q.by
    ));
    for vote in &q.votes {
        s.push_str(&format!(
            "vote     {} at {}: {}{}\n",
            one_line(&vote.who()),
            vote.at,
            vote_answer_text(&vote.answer),
            vote.decision
                .map(|d| format!(" ({})", d.as_str()))
                .unwrap_or_default()
        ));
    }
    if let Some(Outcome::Answered(a)) = &v.outcome {
        if let Some(approvers) = &a.approvers {
            let names: Vec<String> = approvers.iter().map(|p| one_line(p).into_owned()).collect();
            s.push_str(&format!("approved by {}\n", names.join(", ")));
        }
    }
}

/// The asker's `meta`, whole and pretty-printed.
fn push_meta(s: &mut String, meta: &serde_json::Map<String, serde_json::Value>) {
    // Whole and pretty-printed, one JSON line a terminal line. serde_json escapes C0
    // controls but passes C1 and bidi controls through: each line is escaped.
    let json =
        serde_json::to_string_pretty(&serde_json::Value::Object(meta.clone())).unwrap_or_default();
    for (i, line) in json.lines().enumerate() {
        let lead = if i == 0 { "meta    " } else { "        " };
        s.push_str(&format!("{lead} {}\n", one_line(line)));
    }
}

/// Question `i` (0-based): its text, detail and options, and how it was answered.
fn push_question(s: &mut String, v: &RequestView, i: usize, q: &crate::views::QuestionView) {
    s.push('\n');
    let q0 = &q.question;
    if let Some(h) = &q0.header {
        s.push_str(&format!("[{}] ", one_line(h)));
    }
    s.push_str(&format!(
        "{}. {} (id {}{}{})\n",
        i + 1,
        one_line(&q0.question),
        one_line(&q0.id),
        if q0.is_multi() { ", multi-select" } else { "" },
        if q0.plan_review_approve().is_some() {
            ", plan-review"
        } else {
            ""
        }
    ));
    if let Some(d) = &q0.detail {
        for line in multi_line(d).lines() {
            s.push_str(&format!("   | {line}\n"));
        }
    }
    for o in q0.options() {
        let mark = match &q.selected {
            Some(sel) if sel.contains(&o.label) => "[x]",
            Some(_) => "[ ]",
            None => "-",
        };
        let approve = if q0.plan_review_approve() == Some(o.label.as_str()) {
            " (approves)"
        } else {
            ""
        };
        let label = one_line(&o.label);
        match &o.description {
            Some(desc) => s.push_str(&format!("   {mark} {label}{approve}: {}\n", one_line(desc))),
            None => s.push_str(&format!("   {mark} {label}{approve}\n")),
        }
    }
    if let Some(c) = &q.custom {
        s.push_str(&format!("   custom: {}\n", one_line(c)));
    }
    // Edit-then-approve: the recorded diff of what the reviewer changed.
    let edit = match &v.outcome {
        Some(Outcome::Answered(a)) => a.edited.as_ref().and_then(|e| e.get(&q0.id)),
        _ => None,
    };
    if q.selected.as_ref().is_some_and(|s| s.is_empty()) && q.custom.is_none() && edit.is_none() {
        s.push_str("   (skipped)\n");
    }
    if let Some(d) = q.decision {
        s.push_str(&format!("   decision: {}\n", d.as_str()));
    }
    if let Some(e) = edit {
        s.push_str("   approved as edited; the changes to the proposal:\n");
        for line in e.diff.lines() {
            s.push_str(&format!("     {}\n", one_line(line)));
        }
    }
}

/// Human text of an outcome.
/// What a vote answered, on one line: `q1: Approve; q2: custom: text`.
fn vote_answer_text(answer: &serde_json::Value) -> String {
    let Ok(a) = serde_json::from_value::<crate::protocol::Answer>(answer.clone()) else {
        return one_line(&answer.to_string()).into_owned();
    };
    a.answers
        .iter()
        .map(|item| {
            let mut parts: Vec<String> = item
                .selected
                .iter()
                .map(|l| one_line(l).into_owned())
                .collect();
            if let Some(c) = &item.custom {
                parts.push(format!("custom: {}", one_line(c)));
            }
            if parts.is_empty() {
                parts.push("(skipped)".into());
            }
            format!("{}: {}", one_line(&item.id), parts.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A recorded vote that left its request open, for people.
pub fn voted_text(v: &crate::store::Voted) -> String {
    format!(
        "{} voted by {}: open, {}\n",
        one_line(&v.id),
        one_line(&v.voter),
        one_line(&v.quorum.summary())
    )
}

/// An outcome, for people.
pub fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Answered(a) => {
            let mut s = format!("{} answered", one_line(&a.id));
            if let Some(p) = &a.provider {
                s.push_str(&format!(" by {}", one_line(p)));
            }
            if let Some(p) = &a.on_behalf_of {
                s.push_str(&format!(" for {}", one_line(p)));
            }
            if let Some(d) = a.decision {
                s.push_str(&format!(" ({})", d.as_str()));
            }
            s.push('\n');
            if let Some(approvers) = &a.approvers {
                let names: Vec<String> =
                    approvers.iter().map(|p| one_line(p).into_owned()).collect();
                s.push_str(&format!("  approvers: {}\n", names.join(", ")));
            }
            for item in &a.answer.answers {
                let mut parts: Vec<String> = item
                    .selected
                    .iter()
                    .map(|l| one_line(l).into_owned())
                    .collect();
                if let Some(c) = &item.custom {
                    parts.push(format!("custom: {}", one_line(c)));
                }
                if item.edited.is_some() {
                    parts.push("edited".into());
                }
                if parts.is_empty() {
                    parts.push("(skipped)".into());
                }
                s.push_str(&format!("  {}: {}\n", one_line(&item.id), parts.join(", ")));
            }
            // Edit-then-approve: what changed, as the unified diff the store recorded
            // (asker and reviewer text: control characters made visible).
            for (qid, e) in a.edited.iter().flatten() {
                s.push_str(&format!("  {} as edited:\n", one_line(qid)));
                for line in e.diff.lines() {
                    s.push_str(&format!("    {}\n", one_line(line)));
                }
            }
            s
        }
        Outcome::Error(e) => format!(
            "{} {}: {}\n",
            one_line(&e.id),
            e.error.code,
            one_line(&e.error.message)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_use_one_coarse_unit() {
        let now = 10 * 86_400_000;
        assert_eq!(relative(now, now), "just now");
        assert_eq!(relative(now - 42_000, now), "42s ago");
        assert_eq!(relative(now - 3 * 60_000 - 5_000, now), "3m ago");
        assert_eq!(relative(now + 2 * 3_600_000 + 1, now), "in 2h");
        assert_eq!(relative(now - 3 * 86_400_000, now), "3d ago");
    }

    #[test]
    fn a_fitted_table_is_no_wider_than_its_terminal() {
        let rows = vec![vec![
            "r1".to_string(),
            "pending".to_string(),
            "a question far too long for this terminal, which must be cut".to_string(),
        ]];
        let layout = Layout {
            width: Some(40),
            now: None,
            color: true,
        };
        let t = fit_table(
            &["ID", "STATUS", "QUESTION"],
            rows,
            &layout,
            &[2],
            |(c, _)| (c == 1).then_some(comfy_table::Color::Yellow),
        );
        assert!(t.contains('\u{1b}'), "{t:?}");
        assert!(t.contains('…'), "{t}");
        assert!(t.lines().all(|l| display_width(l) <= 40), "{t}");
        assert!(t.contains("r1") && t.contains("pending"), "{t}");
    }
}
