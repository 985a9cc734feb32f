//! The answer form's fields: what the reviewer entered (kept when the form comes back),
//! and the answer they describe, refused with the rule it breaks at the question it is
//! about before anything is shown to confirm.

use axum::response::Response;

use super::super::session::{field, form_fields, Viewer};
use crate::core::access::Action;
use crate::protocol::{edit, Answer, AnswerItem, Code, Question, Request, UserQuestionError};

/// What the reviewer entered in a form that could not be sent: shown again as it was,
/// with the problem flagged at its question.
#[derive(Clone, Copy)]
pub(super) struct Entered<'a> {
    pub(super) fields: &'a [(String, String)],
    pub(super) problem: &'a FormError,
}

impl Entered<'_> {
    pub(super) fn has(&self, name: &str, value: &str) -> bool {
        self.fields.iter().any(|(k, v)| k == name && v == value)
    }

    pub(super) fn value(&self, name: &str) -> String {
        field(self.fields, name).unwrap_or("").to_string()
    }
}

/// Why a form cannot become an answer: the rule it breaks, and the question it is about
/// (when it is about one).
#[derive(Debug)]
pub(super) struct FormError {
    pub(super) question: Option<usize>,
    pub(super) error: UserQuestionError,
}

/// The answer the form describes.
pub(super) fn answer_of(req: &Request, fields: &[(String, String)]) -> Result<Answer, FormError> {
    let answers = req
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| Entries::of(i, q, fields).item())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Answer { answers })
}

/// What the form holds for question `i`.
struct Entries<'a> {
    i: usize,
    q: &'a Question,
    /// The values of its radios or checkboxes (`o0`, `other`, `decline`).
    picks: Vec<&'a str>,
    /// Its "Other" or feedback text, when not blank.
    other: Option<String>,
    skip: bool,
    /// The proposal as edited, when it differs from the asker's.
    edited: Option<String>,
}

impl<'a> Entries<'a> {
    fn of(i: usize, q: &'a Question, fields: &'a [(String, String)]) -> Entries<'a> {
        let name = format!("q{i}");
        Entries {
            i,
            q,
            picks: fields
                .iter()
                .filter(|(k, _)| *k == name)
                .map(|(_, v)| v.as_str())
                .collect(),
            other: field(fields, &format!("{name}.other"))
                // A textarea sends CRLF line breaks (HTML's form encoding); store LF.
                .map(|s| s.replace("\r\n", "\n").trim_end().to_string())
                .filter(|s| !s.trim().is_empty()),
            skip: field(fields, &format!("{name}.skip")).is_some(),
            edited: field(fields, &format!("{name}.edit"))
                .filter(|_| q.allows_edit())
                .and_then(|t| edit::as_edit(q.detail.as_deref().unwrap_or_default(), t)),
        }
    }

    /// The answer item, or the rule the entries break.
    fn item(self) -> Result<AnswerItem, FormError> {
        if self.skip {
            self.skipped()
        } else if let Some(approve) = self.q.plan_review_approve() {
            self.plan(approve)
        } else if self.q.options().is_empty() {
            match &self.other {
                Some(_) => Ok(self.answer(Vec::new(), self.other.clone())),
                None if self.edited.is_some() => Ok(self.answer(Vec::new(), None)),
                None => Err(self.bad("write an answer (or tick Skip)")),
            }
        } else if self.q.is_multi() {
            let selected = self
                .picks
                .iter()
                .map(|v| self.label(v))
                .collect::<Result<Vec<_>, _>>()?;
            if selected.is_empty() && self.other.is_none() {
                return Err(self.bad("tick something, write Other (or tick Skip)"));
            }
            Ok(self.answer(selected, self.other.clone()))
        } else {
            self.single()
        }
    }

    fn answer(&self, selected: Vec<String>, custom: Option<String>) -> AnswerItem {
        AnswerItem {
            id: self.q.id.clone(),
            selected,
            custom,
            edited: self.edited.clone(),
        }
    }

    /// `BAD_ANSWER` at this question.
    fn bad(&self, why: &str) -> FormError {
        FormError {
            question: Some(self.i),
            error: UserQuestionError::new(
                Code::BadAnswer,
                format!("question {}: {why}", self.i + 1),
            ),
        }
    }

    /// The label of option value `v` (`o1`).
    fn label(&self, v: &str) -> Result<String, FormError> {
        v.strip_prefix('o')
            .and_then(|k| k.parse::<usize>().ok())
            .and_then(|k| self.q.options().get(k))
            .map(|o| o.label.clone())
            .ok_or_else(|| self.bad(&format!("no such option {v:?}")))
    }

    fn skipped(&self) -> Result<AnswerItem, FormError> {
        if self.edited.is_some() {
            return Err(
                self.bad("Skip is ticked, and the proposal is edited; undo the edit to skip")
            );
        }
        if !self.picks.is_empty() || self.other.is_some() {
            return Err(
                self.bad("Skip is ticked, and something is picked or written too; choose one")
            );
        }
        Ok(self.answer(Vec::new(), None))
    }

    /// A plan review: approve (maybe as edited), or decline with feedback.
    fn plan(&self, approve: &str) -> Result<AnswerItem, FormError> {
        let declines = match self.picks.as_slice() {
            [v] => self.label(v).ok().as_deref() != Some(approve),
            _ => true,
        };
        if declines && self.edited.is_some() {
            return Err(FormError {
                question: Some(self.i),
                error: UserQuestionError::new(
                    Code::EditNotAllowed,
                    format!(
                        "question {}: an edited plan is sent with {approve:?} only; pick it, or undo the edit to decline",
                        self.i + 1
                    ),
                ),
            });
        }
        match self.picks.as_slice() {
            [] | ["decline"] => match &self.other {
                Some(_) => Ok(self.answer(Vec::new(), self.other.clone())),
                None => Err(self.bad("pick Approve, or write feedback to decline (or tick Skip)")),
            },
            [v] => {
                let l = self.label(v)?;
                // A single choice carries no text (the answer rules: text replaces the
                // choice), so feedback goes with "Decline with feedback" alone; refuse
                // here rather than drop the text or send what Send refuses.
                if self.other.is_some() {
                    return Err(self.bad(&format!(
                        "feedback is sent with \"Decline with feedback\"; pick that, or clear the feedback to send {l:?}"
                    )));
                }
                Ok(self.answer(vec![l], None))
            }
            _ => Err(self.bad("pick one")),
        }
    }

    /// One pick of the options, or "Other".
    fn single(&self) -> Result<AnswerItem, FormError> {
        match self.picks.as_slice() {
            ["other"] | [] if self.other.is_some() => {
                Ok(self.answer(Vec::new(), self.other.clone()))
            }
            ["other"] => Err(self.bad("Other is picked but empty")),
            [] => Err(self.bad("pick one, write Other (or tick Skip)")),
            [v] => Ok(self.answer(vec![self.label(v)?], None)),
            _ => Err(self.bad("pick one")),
        }
    }
}

/// The fields of a form that answers: parsed, its CSRF token checked, and the viewer's
/// role allowed to answer (what the summary and the send both require first).
// The error is the page to show (built once, returned at once).
#[allow(clippy::result_large_err)]
pub(super) fn answering_form(
    viewer: &Viewer,
    bytes: &[u8],
) -> Result<Vec<(String, String)>, Response> {
    let fields = form_fields(bytes).map_err(|e| viewer.error(e))?;
    viewer.check_csrf(field(&fields, "csrf"))?;
    viewer
        .caller
        .require(Action::Answer)
        .map_err(|e| viewer.error(e))?;
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(json: serde_json::Value) -> Request {
        serde_json::from_value(json).unwrap()
    }

    fn f(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn forms_become_answers() {
        let r = req(serde_json::json!({"questions": [
            {"id": "a", "question": "one?", "options": [{"label": "x"}, {"label": "y"}]},
            {"id": "b", "question": "many?", "multiSelect": true, "options": [{"label": "x"}, {"label": "y"}]},
            {"id": "p", "question": "plan?", "detail": "# p", "options": [{"label": "Go"}],
             "intent": {"kind": "plan-review", "approve": "Go"}},
            {"id": "t", "question": "free?"}
        ]}));
        let a = answer_of(
            &r,
            &f(&[
                ("q0", "o1"),
                ("q1", "o0"),
                ("q1", "o1"),
                ("q1.other", "z"),
                ("q2", "o0"),
                ("q3.skip", "1"),
            ]),
        )
        .unwrap();
        assert_eq!(a.answers[0].selected, vec!["y"]);
        assert_eq!(a.answers[1].selected, vec!["x", "y"]);
        assert_eq!(a.answers[1].custom.as_deref(), Some("z"));
        assert_eq!(a.answers[2].selected, vec!["Go"]);
        assert!(a.answers[3].is_skip());
        // Feedback without a pick declines; nothing at all is refused.
        let a = answer_of(
            &r,
            &f(&[
                ("q0.other", "mine"),
                ("q1", "o0"),
                ("q2.other", "no"),
                ("q3.other", "t"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (a.answers[0].selected.len(), a.answers[0].custom.as_deref()),
            (0, Some("mine"))
        );
        assert_eq!(
            (a.answers[2].selected.len(), a.answers[2].custom.as_deref()),
            (0, Some("no"))
        );
        assert!(answer_of(&r, &f(&[("q1", "o0"), ("q2", "o0"), ("q3.skip", "1")])).is_err());
        assert!(answer_of(
            &r,
            &f(&[("q0", "o9"), ("q1", "o0"), ("q2", "o0"), ("q3.skip", "1")])
        )
        .is_err());
    }

    #[test]
    fn a_plan_choice_with_feedback_is_refused_before_the_summary_not_at_send() {
        let r = req(serde_json::json!({"questions": [
            {"id": "p", "question": "plan?", "detail": "# p",
             "options": [{"label": "Go"}, {"label": "Revise"}],
             "intent": {"kind": "plan-review", "approve": "Go"}}
        ]}));
        // Every answer the page builds satisfies the rules Send applies.
        for pick in ["o0", "o1"] {
            let e = answer_of(&r, &f(&[("q0", pick), ("q0.other", "rename X first")])).unwrap_err();
            assert_eq!(e.question, Some(0));
            assert_eq!(e.error.code, Code::BadAnswer);
            assert!(
                e.error.message.contains("Decline with feedback"),
                "{}",
                e.error.message
            );
            let a = answer_of(&r, &f(&[("q0", pick)])).unwrap();
            assert!(crate::protocol::answer::check_answer(&r.questions, &a).is_ok());
        }
        let a = answer_of(&r, &f(&[("q0", "decline"), ("q0.other", "rename X first")])).unwrap();
        assert!(crate::protocol::answer::check_answer(&r.questions, &a).is_ok());
    }
}
