//! Edit-then-approve (a dshq extension of the answer rules): a reviewer may approve a
//! question's proposal as they edited it.
//!
//! The proposal is the question's `detail`: a plan review's plan, or, on a free-text
//! question the asker marked `editable: true`, the text the asker proposes (a commit
//! message, a reply to send, a config change). The reviewer's version rides on the answer
//! item as `edited` (an extension field: an answer without it is a dsh answer, checked by
//! dsh's rules unchanged). Where an edit is allowed:
//!
//! - a plan review, unless the asker set `editable: false`, and only with an approval
//!   (`selected == [intent.approve]`): a decline's words are feedback, in `custom`;
//! - a free-text question with `editable: true` (and a `detail`), with or without
//!   `custom` (a note beside the edit).
//!
//! Anywhere else an `edited` is `EDIT_NOT_ALLOWED`. A blank edit, or one identical to the
//! proposal, is `BAD_ANSWER` (it edits nothing: approve without `edited`).
//!
//! What is recorded for each edit ([`Edited`]) is the proposal, the approved text and a
//! unified diff between them, computed once here when the answer is given and stored as
//! it was computed: the record keeps the diff the reviewer saw, whatever a later diff
//! library would print.

use super::error::{err, Code, UserQuestionError};
use super::types::{Answer, AnswerItem, Decision, Edited, Edits, Question};

/// The header names of the diff's two sides.
pub const DIFF_HEADERS: (&str, &str) = ("proposed", "approved");

/// Check `item`'s `edited` against question `q`, whose answer decides `decision`.
pub fn check_edit(
    q: &Question,
    item: &AnswerItem,
    decision: Option<Decision>,
) -> Result<(), UserQuestionError> {
    let Some(text) = &item.edited else {
        return Ok(());
    };
    if !q.allows_edit() {
        let why = if q.plan_review_approve().is_some() {
            "the asker made this plan review `editable: false`".to_string()
        } else if q.options.is_some() {
            "an edit is for a plan review, or a free-text question the asker made `editable: true`"
                .to_string()
        } else {
            "the asker did not make this free-text question `editable: true`".to_string()
        };
        return Err(err(
            Code::EditNotAllowed,
            format!("question {:?} takes no edited text: {why}", q.id),
        ));
    }
    if let Some(approve) = q.plan_review_approve() {
        if decision != Some(Decision::Approved) {
            return Err(err(
                Code::EditNotAllowed,
                format!(
                    "question {:?}: an edited plan goes with an approval only (select exactly {approve:?}); put a decline's feedback in `custom`",
                    q.id
                ),
            ));
        }
    }
    if text.trim().is_empty() {
        return Err(err(
            Code::BadAnswer,
            format!(
                "question {:?}: `edited` is blank; omit it to approve the proposal as it is",
                q.id
            ),
        ));
    }
    if Some(text.as_str()) == q.detail.as_deref() {
        return Err(err(
            Code::BadAnswer,
            format!(
                "question {:?}: `edited` is the proposal unchanged; omit it to approve the proposal as it is",
                q.id
            ),
        ));
    }
    Ok(())
}

/// The unified diff from `proposed` to `approved` (line by line, three lines of context,
/// headers [`DIFF_HEADERS`]).
pub fn unified_diff(proposed: &str, approved: &str) -> String {
    similar::TextDiff::from_lines(proposed, approved)
        .unified_diff()
        .context_radius(3)
        .header(DIFF_HEADERS.0, DIFF_HEADERS.1)
        .to_string()
}

/// The edit of one question: its proposal, the approved text and their diff.
pub fn edited(q: &Question, approved: &str) -> Edited {
    let proposed = q.detail.clone().unwrap_or_default();
    Edited {
        diff: unified_diff(&proposed, approved),
        proposed,
        approved: approved.to_string(),
    }
}

/// The text the reviewer approved for question `qid` whose proposal was `proposed`: the
/// edited text when they approved it as edited, else the proposal as asked (the decision
/// document's rule, docs/protocol.md, "The decision document"). What a gate hands the
/// code it guards.
pub fn approved_text<'a>(edits: Option<&'a Edits>, qid: &str, proposed: &'a str) -> &'a str {
    edits
        .and_then(|e| e.get(qid))
        .map_or(proposed, |e| e.approved.as_str())
}

/// The edits an answer that passed [`super::answer::check_answer`] makes, by question id
/// (empty when it edits nothing).
pub fn edits(questions: &[Question], answer: &Answer) -> Edits {
    questions
        .iter()
        .filter_map(|q| {
            let item = answer.answers.iter().find(|a| a.id == q.id)?;
            let text = item.edited.as_deref()?;
            Some((q.id.clone(), edited(q, text)))
        })
        .collect()
}

/// The text a reviewer wrote in an editor or a file, as the edit of `proposed`: an
/// editor ends the file with a newline, so one final newline the proposal does not have
/// is not part of the edit.
pub fn from_editor(proposed: &str, text: &str) -> String {
    match text.strip_suffix('\n') {
        Some(t) if !proposed.ends_with('\n') => t.strip_suffix('\r').unwrap_or(t).to_string(),
        _ => text.to_string(),
    }
}

/// What a reviewer left in an edit box pre-filled with `proposed` (a page's textarea,
/// the screen's editor), as an edit: `None` when it is the proposal still (line breaks
/// as CRLF or LF, trailing blank space aside), else the text with LF line breaks and the
/// proposal's final newline, or lack of one, kept (a diff then shows only what the
/// reviewer changed). An emptied box is an empty edit (refused by the rules as blank).
pub fn as_edit(proposed: &str, text: &str) -> Option<String> {
    let text = text.replace("\r\n", "\n");
    let body = text.trim_end();
    if body == proposed.trim_end() {
        return None;
    }
    if body.is_empty() {
        // Emptied: kept as an (empty) edit, which the rules refuse, rather than taken
        // as the proposal unchanged, which would approve what the reviewer deleted.
        return Some(String::new());
    }
    let mut out = body.to_string();
    if proposed.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::types::Intent;

    fn plan(editable: Option<bool>) -> Question {
        Question {
            id: "plan".into(),
            question: "Approve?".into(),
            detail: Some("1. a\n2. b\n".into()),
            header: None,
            options: Some(vec![
                crate::protocol::QuestionOption {
                    label: "Approve".into(),
                    description: None,
                },
                crate::protocol::QuestionOption {
                    label: "Revise".into(),
                    description: None,
                },
            ]),
            multi_select: None,
            intent: Some(Intent {
                kind: "plan-review".into(),
                approve: "Approve".into(),
            }),
            editable,
        }
    }

    fn item(selected: &[&str], edited: Option<&str>) -> AnswerItem {
        AnswerItem {
            id: "plan".into(),
            selected: selected.iter().map(|s| s.to_string()).collect(),
            custom: None,
            edited: edited.map(str::to_string),
        }
    }

    #[test]
    fn an_approval_may_carry_an_edit_and_a_decline_may_not() {
        let q = plan(None);
        check_edit(
            &q,
            &item(&["Approve"], Some("1. a\n")),
            Some(Decision::Approved),
        )
        .unwrap();
        let e = check_edit(
            &q,
            &item(&["Revise"], Some("1. a\n")),
            Some(Decision::Declined),
        )
        .unwrap_err();
        assert_eq!(e.code, Code::EditNotAllowed);
        let e = check_edit(&plan(Some(false)), &item(&["Approve"], Some("x")), None).unwrap_err();
        assert_eq!(e.code, Code::EditNotAllowed);
    }

    #[test]
    fn a_blank_or_unchanged_edit_is_a_bad_answer() {
        let q = plan(None);
        for text in ["  \n", "1. a\n2. b\n"] {
            let e = check_edit(
                &q,
                &item(&["Approve"], Some(text)),
                Some(Decision::Approved),
            )
            .unwrap_err();
            assert_eq!(e.code, Code::BadAnswer, "{text:?}");
        }
    }

    #[test]
    fn the_diff_is_unified_with_named_sides() {
        let d = unified_diff("1. a\n2. b\n", "1. a\n2. c\n");
        assert_eq!(
            d,
            "--- proposed\n+++ approved\n@@ -1,2 +1,2 @@\n 1. a\n-2. b\n+2. c\n"
        );
    }

    #[test]
    fn an_unchanged_edit_box_is_no_edit() {
        assert_eq!(as_edit("a\nb\n", "a\r\nb\r\n"), None);
        assert_eq!(as_edit("a\nb\n", "a\nb"), None);
        assert_eq!(as_edit("a\nb\n", "a\r\nc"), Some("a\nc\n".into()));
        assert_eq!(as_edit("a", "a\nc\n\n"), Some("a\nc".into()));
        assert_eq!(as_edit("a", "  \n"), Some(String::new()));
    }

    #[test]
    fn an_editors_final_newline_is_not_an_edit() {
        assert_eq!(from_editor("plan", "plan\n"), "plan");
        assert_eq!(from_editor("plan\n", "plan\n"), "plan\n");
        assert_eq!(from_editor("plan", "plan\n\n"), "plan\n");
    }
}
