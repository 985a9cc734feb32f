//! The answer rules (spec §4) and the plan-review decision.
//!
//! A provider's answer either meets every rule, or it is a `BAD_ANSWER` naming the rule and
//! the question, and nothing changes. An intent never changes the answer's shape: a
//! plan-review answer is approved exactly when `selected == [intent.approve]`.
//!
//! The items may come in any order (each names its question); what is stored, and what
//! the outcome carries, is the answer in the request's question order
//! ([`in_question_order`]). dsh's checking host rejects another order; dshq does not,
//! because the order carries no meaning once every item names its question, and a human
//! giving `--question` flags should not have to recite the request's order. Every way in
//! (CLI flags, `--answers`, answer files, the screen) is stored through the one store
//! function that applies it.

use std::collections::HashSet;

use super::error::{err, Code, UserQuestionError};
use super::types::{Answer, AnswerItem, Decision, Question};

/// Parse an Answer document; serde failures are `BAD_ANSWER` with serde's message.
pub fn parse_answer(bytes: &[u8]) -> Result<Answer, UserQuestionError> {
    super::syntax::parse_json::<Answer>(bytes)
        .map_err(|e| err(Code::BadAnswer, format!("invalid answer: {e}")))
}

/// Check `answer` against the request's `questions`; on success return each question's
/// plan-review decision (in question order; `None` for questions without the intent).
pub fn check_answer(
    questions: &[Question],
    answer: &Answer,
) -> Result<Vec<Option<Decision>>, UserQuestionError> {
    let mut seen = HashSet::new();
    for item in &answer.answers {
        if !questions.iter().any(|q| q.id == item.id) {
            return Err(err(
                Code::BadAnswer,
                format!(
                    "answer for unknown question {:?}: the request has no such question",
                    item.id
                ),
            ));
        }
        if !seen.insert(item.id.as_str()) {
            return Err(err(
                Code::BadAnswer,
                format!(
                    "question {:?} is answered twice: give exactly one answer per question",
                    item.id
                ),
            ));
        }
    }
    let mut decisions = Vec::with_capacity(questions.len());
    for q in questions {
        let Some(item) = answer.answers.iter().find(|a| a.id == q.id) else {
            return Err(err(
                Code::BadAnswer,
                format!(
                    "question {:?} has no answer: give exactly one answer per question (skip with `selected: []`)",
                    q.id
                ),
            ));
        };
        check_item(q, item)?;
        let d = decision(q, item);
        super::edit::check_edit(q, item, d)?;
        decisions.push(d);
    }
    Ok(decisions)
}

/// `answer` with its items in the order of `questions` (the order it is stored and
/// published in). Call it on an answer that passed [`check_answer`]; an item naming no
/// question (which that rejects) would go last.
pub fn in_question_order(questions: &[Question], answer: &Answer) -> Answer {
    let mut answers = answer.answers.clone();
    answers.sort_by_key(|a| {
        questions
            .iter()
            .position(|q| q.id == a.id)
            .unwrap_or(usize::MAX)
    });
    Answer { answers }
}

/// The rules for one question's answer.
pub fn check_item(q: &Question, item: &AnswerItem) -> Result<(), UserQuestionError> {
    // Whatever surface built the answer (a file, a form, an MCP elicitation): no text in
    // dshq may hold U+0000 (`syntax::writes_nul`).
    let texts = [item.custom.as_deref(), item.edited.as_deref()];
    if texts.iter().flatten().any(|t| t.contains('\0')) {
        return Err(err(
            Code::BadAnswer,
            format!(
                "question {:?}: the text holds U+0000, which no text in dshq may hold",
                q.id
            ),
        ));
    }
    let mut labels = HashSet::new();
    for label in &item.selected {
        if !labels.insert(label.as_str()) {
            return Err(err(
                Code::BadAnswer,
                format!("question {:?}: label {label:?} is selected twice", q.id),
            ));
        }
        if !q.has_label(label) {
            return Err(err(
                Code::BadAnswer,
                format!(
                    "question {:?}: {label:?} is not one of its options (put free text in `custom`)",
                    q.id
                ),
            ));
        }
    }
    if let Some(custom) = &item.custom {
        if custom.trim().is_empty() {
            return Err(err(
                Code::BadAnswer,
                format!(
                    "question {:?}: `custom` is blank; omit it to skip or give text",
                    q.id
                ),
            ));
        }
    }
    if !q.is_multi() {
        if item.selected.len() > 1 {
            return Err(err(
                Code::BadAnswer,
                format!(
                    "question {:?} is single-select but {} labels are selected",
                    q.id,
                    item.selected.len()
                ),
            ));
        }
        if item.custom.is_some() && !item.selected.is_empty() {
            return Err(err(
                Code::BadAnswer,
                format!(
                    "question {:?} is single-select: `custom` overrides the selection, so leave `selected` empty when giving `custom`",
                    q.id
                ),
            ));
        }
    }
    Ok(())
}

/// The plan-review decision for one answered question, or `None` without the intent.
pub fn decision(q: &Question, item: &AnswerItem) -> Option<Decision> {
    let approve = q.plan_review_approve()?;
    if item.selected.len() == 1 && item.selected[0] == approve {
        Some(Decision::Approved)
    } else {
        Some(Decision::Declined)
    }
}

/// The reviewer's feedback on a declined plan review: when the request-level `decision` is
/// `declined`, the `custom` text of the one plan-review question's answer. What every face
/// calls the feedback (the outcome's `feedback`, the packages' `PlanDeclined`, the Claude
/// Code hook's deny reason) is this, read once.
pub fn feedback(
    questions: &[crate::protocol::types::Question],
    answer: &crate::protocol::types::Answer,
    decision: Option<Decision>,
) -> Option<String> {
    if decision != Some(Decision::Declined) {
        return None;
    }
    let plan = questions
        .iter()
        .find(|q| q.plan_review_approve().is_some())?;
    answer
        .answers
        .iter()
        .find(|a| a.id == plan.id)
        .and_then(|a| a.custom.clone())
}

/// The request-level decision of the outcome document: the decision of its one plan-review
/// question, or `None` when it has none or several (each is then recorded per question).
pub fn request_decision(decisions: &[Option<Decision>]) -> Option<Decision> {
    let mut it = decisions.iter().flatten();
    match (it.next(), it.next()) {
        (Some(d), None) => Some(*d),
        _ => None,
    }
}
