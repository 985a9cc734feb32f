//! Claude Code's hook contract, pure: the `PreToolUse` event a hook reads on stdin, the
//! dshq request an `AskUserQuestion` or `ExitPlanMode` call becomes, and the decision the
//! hook prints once the request has an outcome (or has none yet).
//!
//! The event is read as Claude Code's hooks reference documents it: the common fields
//! `session_id`, `transcript_path`, `cwd`, `permission_mode`, `hook_event_name`, and for
//! tool events `tool_name`, `tool_input` and `tool_use_id`. Fields this hook does not use
//! are ignored (Claude Code adds fields over time); the ones it uses are checked, and a
//! missing or mistyped one is a `BAD_REQUEST` naming it. The output is the documented
//! `hookSpecificOutput` with `permissionDecision` (`allow`, `deny`, `ask` or `defer`),
//! `permissionDecisionReason`, and with every `allow` an `updatedInput`: the tool's own
//! input with, for `AskUserQuestion`, the `answers` (each key a question's text, each value
//! the selected label, several joined with ", ", or the free text), and for `ExitPlanMode`
//! the `plan` the reviewer approved (edited or not). Claude Code's hook contract wants the
//! `updatedInput` of these two tools with an `allow` in a headless `-p` run: `allow` alone
//! does not let such a run go on, and an approved plan that was edited must reach Claude
//! as edited, or Claude would carry out its own plan, not the one approved.

use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::protocol::{Code, Decision, Outcome, UserQuestionError};

/// The event name this hook answers.
pub const PRE_TOOL_USE: &str = "PreToolUse";
/// Claude's tool that asks the user questions.
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";
/// Claude's tool that ends plan mode, asking the user to approve the plan.
pub const EXIT_PLAN_MODE: &str = "ExitPlanMode";
/// The plan review's approving label.
pub const APPROVE: &str = "Approve";
/// The plan review's other label.
pub const KEEP_PLANNING: &str = "Keep planning";
/// The plan review's question id.
pub const PLAN_ID: &str = "plan";

/// The fields of a hook event this hook reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    /// `PreToolUse` (the only one handled).
    pub hook_event_name: String,
    /// The Claude Code session.
    pub session_id: String,
    /// The tool called.
    pub tool_name: String,
    /// Its input, as the model gave it.
    pub tool_input: Value,
    /// The tool call's id (`toolu_...`), stable when a deferred call is resumed.
    pub tool_use_id: String,
    /// The session's working directory (where `claude --resume` finds the session).
    #[serde(default)]
    pub cwd: Option<String>,
}

fn bad(message: impl Into<String>) -> UserQuestionError {
    UserQuestionError::new(Code::BadRequest, message)
}

/// Parse a hook event; every problem is a `BAD_REQUEST` saying what is wrong.
pub fn parse(bytes: &[u8]) -> Result<Event, UserQuestionError> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(bad(
            "no hook event on stdin (Claude Code writes the event as JSON there)",
        ));
    }
    let event: Event = serde_json::from_slice(bytes)
        .map_err(|e| bad(format!("not a Claude Code hook event: {e}")))?;
    if event.session_id.is_empty() || event.tool_use_id.is_empty() {
        return Err(bad(
            "the event's session_id and tool_use_id must not be empty",
        ));
    }
    Ok(event)
}

/// The dshq request id of a tool call: `cc-` and 32 hex digits of the SHA-256 of the
/// session id and the tool use id. The same call (a deferred one, resumed) always has the
/// same id, so asking again finds the request and its answer.
pub fn request_id(event: &Event) -> String {
    let mut h = Sha256::new();
    h.update(event.session_id.as_bytes());
    h.update([0]);
    h.update(event.tool_use_id.as_bytes());
    let digest = h.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("cc-{hex}")
}

/// What Claude Code is told about a tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Run it, with this input in place of the model's (the answers), if any.
    Allow(Option<Value>),
    /// Do not run it; the reason goes to the model.
    Deny(String),
    /// Let Claude Code ask the user itself (an interactive session).
    Ask(String),
    /// Pause the call: a headless (`-p`) run ends and `claude -p --resume` picks it up.
    Defer(String),
}

impl Verdict {
    /// The hook's stdout: the `hookSpecificOutput` document.
    pub fn to_json(&self) -> Value {
        let (decision, reason, input) = match self {
            Verdict::Allow(input) => ("allow", None, input.as_ref()),
            Verdict::Deny(r) => ("deny", Some(r), None),
            Verdict::Ask(r) => ("ask", Some(r), None),
            Verdict::Defer(r) => ("defer", Some(r), None),
        };
        let mut out = Map::new();
        out.insert("hookEventName".into(), json!(PRE_TOOL_USE));
        out.insert("permissionDecision".into(), json!(decision));
        if let Some(r) = reason {
            out.insert("permissionDecisionReason".into(), json!(r));
        }
        if let Some(i) = input {
            out.insert("updatedInput".into(), i.clone());
        }
        json!({ "hookSpecificOutput": out })
    }
}

/// The questions of an `AskUserQuestion` input as the model wrote them.
#[derive(Debug, Deserialize)]
struct AskInput {
    questions: Vec<AskQuestion>,
}

#[derive(Debug, Deserialize)]
struct AskQuestion {
    question: String,
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    options: Option<Vec<AskOption>>,
    #[serde(default, rename = "multiSelect", alias = "multi_select")]
    multi_select: bool,
}

#[derive(Debug, Deserialize)]
struct AskOption {
    label: String,
    #[serde(default)]
    description: Option<String>,
}

/// The meta every request of this hook carries: where the call came from, for the
/// reviewer and for `dshq claude-code resume`.
fn meta(event: &Event) -> Value {
    json!({"claudeCode": {
        "sessionId": event.session_id,
        "toolUseId": event.tool_use_id,
        "tool": event.tool_name,
        "cwd": event.cwd,
    }})
}

/// The id of the `i`-th question (0-based) of an `AskUserQuestion` request.
fn question_id(i: usize) -> String {
    format!("q{}", i + 1)
}

/// The dshq request of an `AskUserQuestion` call: one dshq question per question of the
/// tool (the vocabularies agree: question, header, options with label and description,
/// multiSelect), ids `q1`, `q2`, ... in order.
pub fn ask_request(event: &Event, context: &str) -> Result<Value, UserQuestionError> {
    let input: AskInput = serde_json::from_value(event.tool_input.clone())
        .map_err(|e| bad(format!("AskUserQuestion's tool_input: {e}")))?;
    let questions: Vec<Value> = input
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let mut out = Map::new();
            out.insert("id".into(), json!(question_id(i)));
            out.insert("question".into(), json!(q.question));
            if let Some(h) = &q.header {
                out.insert("header".into(), json!(h));
            }
            if let Some(opts) = &q.options {
                let opts: Vec<Value> = opts
                    .iter()
                    .map(|o| match &o.description {
                        Some(d) => json!({"label": o.label, "description": d}),
                        None => json!({"label": o.label}),
                    })
                    .collect();
                out.insert("options".into(), Value::Array(opts));
            }
            if q.multi_select {
                out.insert("multiSelect".into(), json!(true));
            }
            Value::Object(out)
        })
        .collect();
    Ok(json!({
        "id": request_id(event),
        "context": context,
        "questions": questions,
        "meta": meta(event),
    }))
}

/// The plan of an `ExitPlanMode` call: `tool_input.plan`.
pub fn plan_text(event: &Event) -> Option<&str> {
    event.tool_input.get("plan").and_then(Value::as_str)
}

/// The plan file an `ExitPlanMode` call names (`tool_input.planFilePath`), if any.
pub fn plan_file(event: &Event) -> Option<&str> {
    event.tool_input.get("planFilePath").and_then(Value::as_str)
}

/// The dshq plan-review request of an `ExitPlanMode` call with this plan.
pub fn plan_request(event: &Event, plan: &str, context: &str) -> Value {
    json!({
        "id": request_id(event),
        "context": context,
        "questions": [{
            "id": PLAN_ID,
            "header": "Plan",
            "question": "Claude has a plan and asks to leave plan mode. Approve it?",
            "detail": plan,
            "options": [
                {"label": APPROVE, "description": "Claude leaves plan mode and carries out the plan"},
                {"label": KEEP_PLANNING, "description": "Claude stays in plan mode; your text is its feedback"},
            ],
            "intent": {"kind": "plan-review", "approve": APPROVE},
        }],
        "meta": meta(event),
    })
}

/// The reason given to the model when a request ended without an answer.
fn unanswered(e: &UserQuestionError) -> String {
    format!(
        "The user did not answer ({}: {}). Continue without this answer.",
        e.code, e.message
    )
}

/// The verdict on an `AskUserQuestion` call whose request has `outcome`: allow with the
/// tool's own input plus `answers` (a skipped question has none), or deny when the
/// request ended without an answer.
pub fn ask_verdict(event: &Event, outcome: &Outcome) -> Verdict {
    let answered = match outcome {
        Outcome::Answered(a) => a,
        Outcome::Error(e) => return Verdict::Deny(unanswered(&e.error)),
    };
    let texts: Vec<&str> = event
        .tool_input
        .get("questions")
        .and_then(Value::as_array)
        .map(|qs| {
            qs.iter()
                .map(|q| q.get("question").and_then(Value::as_str).unwrap_or(""))
                .collect()
        })
        .unwrap_or_default();
    let mut answers = Map::new();
    for (i, text) in texts.iter().enumerate() {
        let Some(item) = answered
            .answer
            .answers
            .iter()
            .find(|a| a.id == question_id(i))
        else {
            continue;
        };
        let mut parts: Vec<&str> = item.selected.iter().map(String::as_str).collect();
        parts.extend(item.custom.as_deref());
        if !parts.is_empty() {
            answers.insert((*text).to_string(), json!(parts.join(", ")));
        }
    }
    let mut input = match &event.tool_input {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    input.insert("answers".into(), Value::Object(answers));
    Verdict::Allow(Some(Value::Object(input)))
}

/// The verdict on an `ExitPlanMode` call whose review of `plan` has `outcome`: approved
/// → allow with the tool's input carrying the plan the reviewer approved (as edited, when
/// they edited it); declined → deny with the reviewer's feedback as the reason, so the
/// model keeps planning; ended without an answer, or with no decision at all → deny
/// saying so. A gate fails closed: only an approval lets the plan run.
pub fn plan_verdict(event: &Event, plan: &str, outcome: &Outcome) -> Verdict {
    let answered = match outcome {
        Outcome::Answered(a) => a,
        Outcome::Error(e) => return Verdict::Deny(unanswered(&e.error)),
    };
    match answered.decision {
        Some(Decision::Approved) => {
            let approved =
                crate::protocol::edit::approved_text(answered.edited.as_ref(), PLAN_ID, plan);
            let mut input = match &event.tool_input {
                Value::Object(m) => m.clone(),
                _ => Map::new(),
            };
            input.insert("plan".into(), json!(approved));
            Verdict::Allow(Some(Value::Object(input)))
        }
        Some(Decision::Declined) => Verdict::Deny(match &answered.feedback {
            Some(f) => format!("The reviewer declined the plan. Their feedback: {f}"),
            None => "The reviewer declined the plan without feedback. Keep planning.".to_string(),
        }),
        None => Verdict::Deny(
            "The review ended without a decision on the plan. Keep planning.".to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(tool: &str, input: Value) -> Event {
        parse(
            json!({
                "session_id": "s-1", "transcript_path": "/t.jsonl", "cwd": "/work",
                "permission_mode": "default", "hook_event_name": "PreToolUse",
                "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1"
            })
            .to_string()
            .as_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn the_id_depends_on_session_and_tool_use_only() {
        let a = event("AskUserQuestion", json!({"questions": []}));
        let mut b = event("ExitPlanMode", json!({"plan": "x"}));
        assert_eq!(request_id(&a), request_id(&b));
        assert!(request_id(&a).starts_with("cc-") && request_id(&a).len() == 35);
        b.tool_use_id = "toolu_2".into();
        assert_ne!(request_id(&a), request_id(&b));
        crate::protocol::check::check_id("id", &request_id(&a)).unwrap();
    }

    #[test]
    fn malformed_events_are_bad_requests_naming_the_problem() {
        for (input, says) in [
            ("", "no hook event"),
            ("{", "not a Claude Code hook event"),
            (r#"{"hook_event_name":"PreToolUse"}"#, "missing field"),
        ] {
            let e = parse(input.as_bytes()).unwrap_err();
            assert_eq!(e.code, Code::BadRequest);
            assert!(e.message.contains(says), "{input}: {}", e.message);
        }
        let e = ask_request(
            &event("AskUserQuestion", json!({"questions": "x"})),
            "default",
        )
        .unwrap_err();
        assert!(
            e.message.contains("AskUserQuestion's tool_input"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_decision_renders_as_hook_specific_output() {
        assert_eq!(
            Verdict::Defer("later".into()).to_json(),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "defer", "permissionDecisionReason": "later"}})
        );
        assert_eq!(
            Verdict::Allow(None).to_json(),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})
        );
    }
}
