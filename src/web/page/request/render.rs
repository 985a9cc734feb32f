//! One request's HTML, as maud templates: its facts, its quorum's votes, how it ended,
//! each question's form, the edit box and its diff, and the summary of an answer. Every
//! asker's and reviewer's text goes in through [`crate::html`]'s rule.

use super::super::layout::coarse;
use super::form::Entered;
use crate::clock::{now_ms, rfc3339};
use crate::html::{html, markup, urlencode, Block, Line, Markup};
use crate::protocol::{edit, review, Answer, AnswerItem, Question, Request};
use crate::store::RequestRow;

/// The request's facts: context, agent, source, status, times, who answered, its meta.
pub(super) fn meta(row: &RequestRow, req: &Request) -> Markup {
    let now = now_ms();
    html! {
        dl.meta {
            dt { "Context" } dd { (Line(&row.context)) }
            dt { "Agent" } dd {
                @match (&row.agent_id, &row.agent_lineage) {
                    (Some(a), Some(l)) => { (Line(a)) " " span.dim { "(" (Line(l)) ")" } }
                    (Some(a), None) => { (Line(a)) }
                    _ => { span.dim { "none" } }
                }
            }
            dt { "From" } dd { (Line(&row.source)) }
            dt { "Status" } dd { span class={ "status " (row.status.as_str()) } { (row.status.as_str()) } }
            dt { "Asked" } dd {
                (Line(&rfc3339(row.created_ms))) " "
                span.dim { "(" (coarse(now - row.created_ms)) " ago)" }
            }
            @if let Some(d) = row.deadline_ms {
                dt { "Deadline" } dd {
                    (Line(&rfc3339(d))) " "
                    span.dim { "(" @if d > now { "in " (coarse(d - now)) } @else { "overdue" } ")" }
                }
            }
            @if let Some(p) = &row.provider { dt { "Answered by" } dd { (Line(p)) } }
            @if let Some(m) = &req.meta {
                dt { "Meta" } dd { pre.plain { (Block(&serde_json::to_string_pretty(m).unwrap_or_default())) } }
            }
        }
    }
}

/// A request with a quorum: the rule, every vote so far (each voter's answer, escaped
/// like any asker or reviewer text) and, once answered, its approvers.
pub(super) fn quorum(row: &RequestRow, req: &Request) -> Markup {
    let Some(q) = row.quorum_view() else {
        return html! {};
    };
    let decline = if q.decline == "veto" {
        "vetoes"
    } else {
        "is a vote"
    };
    html! {
        section #quorum .quorum {
            p {
                strong.progress { (Line(&q.progress())) } " agree. Needs " strong { (q.approvals) }
                " matching vote(s) from distinct persons"
                @if let Some(g) = q.group.as_deref() { " of group " code { (Line(g)) } }
                "; a decline " (decline) " (set by the " (Line(&q.by)) "). The asker's own vote never counts, and one person votes once, from any face."
            }
            @if q.votes.is_empty() {
                p.dim { "No votes yet." }
            } @else {
                ol.votes {
                    @for v in &q.votes {
                        @let answer = serde_json::from_value::<Answer>(v.answer.clone()).ok();
                        li.vote {
                            strong { (Line(&v.voter)) }
                            @if let Some(p) = v.person.as_deref() { " (" (Line(p)) ")" }
                            ": "
                            @if let Some(a) = answer {
                                @for (k, (q, item)) in req.questions.iter().zip(&a.answers).enumerate() {
                                    @if k > 0 { "; " }
                                    (choice(q, item)) (edited(q, item))
                                }
                            }
                            @if let Some(d) = v.decision { " (" (d.as_str()) ")" }
                            " " span.dim { (Line(&v.at)) }
                        }
                    }
                }
            }
            @if let Some(approvers) = row.parsed_approvers() {
                p.approvers {
                    "Approved by "
                    @for (k, a) in approvers.iter().enumerate() { @if k > 0 { ", " } (Line(a)) }
                }
            }
        }
    }
}

/// What a final request ended with: the answer given, or the error.
pub(super) fn outcome(row: &RequestRow, req: &Request) -> Markup {
    if let Some(a) = row.parsed_answer() {
        return html! {
            section.flash.good {
                p { "Answered" @if let Some(p) = &row.provider { " by " strong { (Line(p)) } } ":" }
                (summary(req, &a.answers))
            }
        };
    }
    html! {
        @if let (Some(code), msg) = (&row.error_code, &row.error_message) {
            p.flash.bad { span.code { (Line(code)) } " " (Line(msg.as_deref().unwrap_or(""))) }
        }
    }
}

/// The summary of an answer, question by question (the confirm page, a final request).
pub(super) fn summary(req: &Request, answers: &[AnswerItem]) -> Markup {
    html! {
        ol.summary {
            @for (q, a) in req.questions.iter().zip(answers) {
                li {
                    p.question { (Block(&q.question)) }
                    p.sending { (choice(q, a)) }
                    (edited(q, a))
                }
            }
        }
    }
}

/// A question's header chip, its text, and its detail (a plan rendered safely).
fn question_head(i: usize, q: &Question) -> Markup {
    html! {
        @if let Some(hd) = &q.header { p.header { span.chip { (Line(hd)) } } }
        h2.question id={ "q" (i) "-text" } { (Block(&q.question)) }
        @if let Some(d) = &q.detail {
            @if q.plan_review_approve().is_some() {
                div.plan aria-label="the plan" { (markup(super::super::markdown::render(d))) }
            } @else {
                div.detail { (Block(d)) }
            }
        }
    }
}

fn option_label(label: &str, desc: Option<&str>) -> Markup {
    html! {
        span.label { (Line(label)) }
        @if let Some(d) = desc { " " span.desc { (Block(d)) } }
    }
}

/// One question's part of the form: radios or checkboxes as the question says, "Other"
/// free text, the edit box where the question allows an edit, skip. `entered` (a form
/// that came back) keeps what the reviewer entered and flags the problem at its question.
pub(super) fn question_form(
    i: usize,
    q: &Question,
    enabled: bool,
    entered: Option<Entered<'_>>,
) -> Markup {
    let problem = entered.and_then(|e| (e.problem.question == Some(i)).then_some(e.problem));
    let name = format!("q{i}");
    let skip = format!("{name}.skip");
    let plan = q.plan_review_approve().is_some();
    html! {
        fieldset class={ "q" @if problem.is_some() { " invalid" } } data-q=(i) disabled[!enabled]
            aria-describedby=[problem.map(|_| format!("q{i}-problem"))] {
            (question_head(i, q))
            @if let Some(p) = problem {
                p.flash.bad.problem id={ "q" (i) "-problem" } role="alert" {
                    span.code { (p.error.code.as_str()) } " " (Line(&p.error.message))
                }
            }
            @if review::choices(q).is_some() {
                (plan_choices(&name, q, entered))
            } @else if q.options().is_empty() {
                label.other { "Your answer " textarea name={ (name) ".other" } rows="3" { (other_text(&name, entered)) } }
            } @else {
                (options(&name, q, entered))
            }
            @if q.allows_edit() { (edit_box(i, q, entered)) }
            label.skip {
                input type="checkbox" name=(skip) value="1" checked[entered.is_some_and(|e| e.has(&skip, "1"))];
                " Skip this question"
                @if plan { " (records a decline without feedback)" }
            }
        }
    }
}

/// What the reviewer wrote in a question's "Other" (or feedback) box, when the form came
/// back.
fn other_text(name: &str, entered: Option<Entered<'_>>) -> String {
    entered
        .map(|e| e.value(&format!("{name}.other")))
        .unwrap_or_default()
}

/// A plan review's choices, in [`review::choices`]' order with its default checked, and
/// the feedback box.
fn plan_choices(name: &str, q: &Question, entered: Option<Entered<'_>>) -> Markup {
    let Some(plan) = review::choices(q) else {
        return html! {};
    };
    html! {
        div.options {
            @for (k, choice) in plan.choices.iter().enumerate() {
                @let key = k + 1;
                @let value = match choice {
                    review::Choice::Option { index, .. } => format!("o{index}"),
                    review::Choice::DeclineWithFeedback => "decline".to_string(),
                };
                @let on = match entered {
                    Some(e) => e.has(name, &value),
                    None => k == plan.default,
                };
                @let input = html! { input type="radio" name=(name) value=(value) data-key=(key) checked[on]; };
                @match choice {
                    review::Choice::Option { option, approves, .. } => {
                        label class={ "opt " @if *approves { "approve" } @else { "declines" } } {
                            kbd { (key) } " " (input)
                            (option_label(&option.label, option.description.as_deref()))
                            @if *approves { " " span.chip.good { "approves" } } @else { " " span.dim { "(declines)" } }
                        }
                    }
                    review::Choice::DeclineWithFeedback => {
                        label.opt.decline { kbd { (key) } " " (input) (review::DECLINE_WITH_FEEDBACK) }
                    }
                }
            }
        }
        label.other {
            "Feedback (sent with a decline) "
            textarea name={ (name) ".other" } rows="3" { (other_text(name, entered)) }
        }
    }
}

/// A question's options (radios, or checkboxes for a multi-select) and its "Other".
fn options(name: &str, q: &Question, entered: Option<Entered<'_>>) -> Markup {
    let ty = if q.is_multi() { "checkbox" } else { "radio" };
    let has = |v: &str| entered.is_some_and(|e| e.has(name, v));
    html! {
        p.dim { @if q.is_multi() { "Pick any number." } @else { "Pick one." } }
        div.options {
            @for (k, o) in q.options().iter().enumerate() {
                @let value = format!("o{k}");
                label.opt {
                    kbd { (k + 1) } " "
                    input type=(ty) name=(name) value=(value) data-key=(k + 1) checked[has(&value)];
                    " " (option_label(&o.label, o.description.as_deref()))
                }
            }
        }
        label.other {
            @if q.is_multi() {
                "Other (added to what you tick) "
            } @else {
                input type="radio" name=(name) value="other" checked[has("other")];
                " Other: "
            }
            input type="text" name={ (name) ".other" } size="40" value=(other_text(name, entered));
        }
    }
}

/// Edit-then-approve: the proposal in a box the reviewer may edit (closed until opened;
/// open when the form comes back with an edit in it). Nothing here is an edit until the
/// text differs from the proposal ([`edit::as_edit`]); the summary page shows the diff.
/// (The line break after `<textarea>` is the one HTML drops, so a proposal that starts
/// with one keeps it.)
fn edit_box(i: usize, q: &Question, entered: Option<Entered<'_>>) -> Markup {
    let name = format!("q{i}.edit");
    let proposed = q.detail.as_deref().unwrap_or_default();
    let kept =
        entered.and_then(|e| super::super::session::field(e.fields, &name).map(str::to_string));
    let changed = kept
        .as_deref()
        .is_some_and(|t| edit::as_edit(proposed, t).is_some());
    let (what, how) = if q.plan_review_approve().is_some() {
        (
            "Edit the plan before approving",
            "Sent with Approve only: the plan is approved as you edit it, and the next page shows the changes before anything is sent.",
        )
    } else {
        (
            "Edit the proposal",
            "The proposal is approved as you edit it (your answer above is optional then); the next page shows the changes before anything is sent.",
        )
    };
    html! {
        details.edit open[changed] {
            summary { (what) }
            p.dim { (how) }
            textarea name=(name) rows="12" aria-label=(what) { "\n" (kept.as_deref().unwrap_or(proposed)) }
        }
    }
}

/// A unified diff (asker and reviewer text: escaped, control characters made visible),
/// each line marked as added, removed, a hunk's head or context.
fn diff(diff: &str) -> Markup {
    let class = |line: &str| {
        if line.starts_with("+++") || line.starts_with("---") {
            "head"
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else if line.starts_with("@@") {
            "hunk"
        } else {
            "ctx"
        }
    };
    html! {
        pre.diff aria-label="the changes" {
            @for line in diff.lines() { span class=(class(line)) { (Line(line)) } "\n" }
        }
    }
}

/// An answer's edit of the proposal, when it has one: said so, with the diff.
fn edited(q: &Question, a: &AnswerItem) -> Markup {
    html! {
        @if let Some(approved) = &a.edited {
            p.edited { strong { "as edited" } ": the changes to the proposal" }
            (diff(&edit::edited(q, approved).diff))
        }
    }
}

/// What an answer item picks or says, for a person.
fn choice(q: &Question, a: &AnswerItem) -> Markup {
    if a.is_skip() && a.edited.is_none() {
        return html! { span.dim { "skipped" } };
    }
    if a.edited.is_some() && a.selected.is_empty() && a.custom.is_none() {
        return html! { strong.approve { "APPROVE" } " (the proposal, edited)" };
    }
    if let Some(approve) = q.plan_review_approve() {
        let approved = a.selected.len() == 1 && a.selected[0] == approve;
        return html! {
            @if approved {
                strong.approve { "APPROVE" } " (" (Line(approve)) ")"
            } @else {
                strong.decline { "DECLINE" }
                @for s in &a.selected { ", picked " q { (Line(s)) } }
            }
            @if let Some(c) = &a.custom { ", feedback: " q.pre { (Block(c)) } }
        };
    }
    html! {
        @for (k, s) in a.selected.iter().enumerate() { @if k > 0 { " + " } q { (Line(s)) } }
        @if let Some(c) = &a.custom {
            @if !a.selected.is_empty() { " and " }
            "Other: " q.pre { (Block(c)) }
        }
    }
}

/// The page's title: the first question (or the id).
pub(super) fn title_of(row: &RequestRow, req: &Request) -> String {
    req.questions
        .first()
        .map(|q| q.question.clone())
        .unwrap_or_else(|| row.id.clone().unwrap_or_default())
}

/// The crumbs at the top of the request's pages.
pub(super) fn crumbs(id: &str, last: Option<&str>) -> Markup {
    html! {
        p.crumbs {
            a href="/" { "Queue" } " / "
            @match last {
                None => code { (Line(id)) },
                Some(l) => { a href={ "/r/" (urlencode(id)) } { (Line(id)) } " / " (l) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Status;

    fn req(json: serde_json::Value) -> Request {
        serde_json::from_value(json).unwrap()
    }

    /// The votes section escapes what the asker wrote (labels, custom text) and what a
    /// reviewer's name is, and lists every vote and the approvers.
    #[test]
    fn the_votes_are_shown_escaped() {
        let r = req(serde_json::json!({"questions": [
            {"id": "q", "question": "pick", "options": [{"label": "<script>x</script>"}]}
        ], "quorum": {"approvals": 2}}));
        let q = crate::core::quorum::Policy::default()
            .required("default", r.quorum.as_deref())
            .unwrap()
            .unwrap();
        let answer = serde_json::json!({"answers": [{"id": "q", "selected": ["<script>x</script>"],
                                                     "custom": "<img src=x onerror=1>"}]});
        let votes = serde_json::json!([
            {"voter": "web:<b>bob</b>", "answer": answer.to_string(), "decision": null, "atMs": 0},
            {"voter": "provider:carol", "answer": answer.to_string(), "decision": null, "atMs": 1}
        ]);
        let row = RequestRow {
            seq: 1,
            id: Some("x".into()),
            context: "default".into(),
            status: Status::Answered,
            agent_id: None,
            agent_instance: None,
            agent_lineage: None,
            body: r.to_json(),
            source: "cli".into(),
            deadline_ms: None,
            created_ms: 0,
            claimed_lease: None,
            claimed_by: None,
            claimed_ms: None,
            finished_ms: Some(2),
            answer: Some(answer.to_string()),
            decision: None,
            provider: None,
            error_code: None,
            error_message: None,
            ladder: None,
            ladder_done: 0,
            decided_by: None,
            on_behalf_of: None,
            edits: None,
            quorum: Some(q.to_json()),
            approvers: Some(r#"["web:<b>bob</b>","provider:carol"]"#.into()),
            votes: Some(votes.to_string()),
        };
        let h = quorum(&row, &r).into_string();
        assert!(
            !h.contains("<script>") && !h.contains("<img") && !h.contains("<b>"),
            "{h}"
        );
        assert!(h.contains("&lt;script&gt;"), "{h}");
        assert_eq!(h.matches("<li class=\"vote\">").count(), 2, "{h}");
        assert!(
            h.contains("Approved by web:&lt;b&gt;bob&lt;/b&gt;, provider:carol"),
            "{h}"
        );
        assert!(h.contains("Needs <strong>2</strong>"), "{h}");
        let mut plain = row.clone();
        plain.quorum = None;
        assert_eq!(quorum(&plain, &r).into_string(), "");
    }
}
