//! What a reviewer is offered for a plan review, in one order with one default, for
//! every face that shows one (the web page and the terminal screen).
//!
//! The choices are the asker's options in the asker's order (each one either approves,
//! the intent's `approve` label, or declines), then "Decline with feedback". A number key
//! means the same choice on both faces. The default, what a form starts with checked and
//! where the terminal's cursor starts, is "Decline with feedback": never Approve, so an
//! approval is always a deliberate pick, and a held Enter can only open the feedback box.

use super::{Question, QuestionOption};

/// One choice of a plan review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice<'a> {
    /// One of the asker's options (`index` into the question's options).
    Option {
        /// Its position among the question's options.
        index: usize,
        /// The option.
        option: &'a QuestionOption,
        /// Whether picking it approves (it is the intent's approve label).
        approves: bool,
    },
    /// Decline, with the reviewer's feedback as the answer's custom text.
    DeclineWithFeedback,
}

/// The label of [`Choice::DeclineWithFeedback`] on every face.
pub const DECLINE_WITH_FEEDBACK: &str = "Decline with feedback";

/// A plan review's choices and the one chosen by default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choices<'a> {
    /// In the order shown.
    pub choices: Vec<Choice<'a>>,
    /// The index (into `choices`) chosen before the reviewer does anything.
    pub default: usize,
}

/// The choices of `q` when it is a plan review (its approve label among its options).
pub fn choices(q: &Question) -> Option<Choices<'_>> {
    let approve = q.plan_review_approve().filter(|a| q.has_label(a))?;
    let mut choices: Vec<Choice<'_>> = q
        .options()
        .iter()
        .enumerate()
        .map(|(index, option)| Choice::Option {
            index,
            option,
            approves: option.label == approve,
        })
        .collect();
    choices.push(Choice::DeclineWithFeedback);
    let default = choices.len() - 1;
    Some(Choices { choices, default })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_asker_order_then_feedback_which_is_the_default() {
        let q: Question = serde_json::from_value(serde_json::json!({
            "id": "p", "question": "plan?", "detail": "x",
            "options": [{"label": "Revise"}, {"label": "Ship it"}],
            "intent": {"kind": "plan-review", "approve": "Ship it"}
        }))
        .unwrap();
        let c = choices(&q).unwrap();
        assert_eq!(c.choices.len(), 3);
        assert!(matches!(
            c.choices[0],
            Choice::Option {
                index: 0,
                approves: false,
                ..
            }
        ));
        assert!(matches!(
            c.choices[1],
            Choice::Option {
                index: 1,
                approves: true,
                ..
            }
        ));
        assert_eq!(c.choices[c.default], Choice::DeclineWithFeedback);
        let mut plain = q.clone();
        plain.intent = None;
        assert!(choices(&plain).is_none());
    }
}
