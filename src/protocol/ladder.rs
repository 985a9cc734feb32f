//! The deadline ladder: an extension of the request (`ladder`) that says what
//! happens while nobody answers: a reminder, an escalation (optionally to another
//! context), and an expiry that ends the request with its own code (`ASK_EXPIRED`,
//! "nobody answered"), or, only when the asker declared it (`onExpire: "default"`), answers
//! it with the asker's default, attributed to policy and never to a person.
//!
//! Why a separate type and not more fields on [`Request`](super::Request): the dsh
//! vocabulary stays as it is (a request without `ladder` is exactly today's), and what the
//! ladder adds is checked here, purely, once: [`resolve`] turns the asker's relative
//! durations into absolute times ([`Rungs`]) at acceptance, which is what the store keeps
//! and the sweep climbs.
//!
//! How it meets `deadline`/`timeout`: those stay the asker's hard end (`ASK_ABORTED`). A
//! rung at or after the deadline could never run (the deadline ends the request first),
//! so such a ladder is refused at acceptance (`BAD_REQUEST`) rather than silently ignored.

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use super::answer::check_answer;
use super::error::{err, Code, UserQuestionError};
use super::syntax::check_id;
use super::types::{Answer, Question};

pub use super::types::{Ladder, OnExpire};

/// One rung of a ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// A reminder.
    Remind,
    /// An escalation.
    Escalate,
    /// The expiry (always the last).
    Expire,
}

/// A ladder resolved at acceptance: the times its rungs fall due (unix milliseconds), as
/// the store keeps it (`requests.ladder`) and the `accepted` event records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rungs {
    /// When the reminder falls due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_ms: Option<i64>,
    /// When the escalation falls due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_ms: Option<i64>,
    /// The context an escalation moves the request to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_to: Option<String>,
    /// When the expiry falls due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_ms: Option<i64>,
    /// What expiry does.
    #[serde(default)]
    pub on_expire: OnExpire,
    /// The default answer (only with `onExpire: "default"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Answer>,
}

impl Rungs {
    /// The rungs present, in the order they run, with their due times.
    pub fn steps(&self) -> Vec<(Rung, i64)> {
        [
            (Rung::Remind, self.remind_ms),
            (Rung::Escalate, self.escalate_ms),
            (Rung::Expire, self.expire_ms),
        ]
        .into_iter()
        .filter_map(|(r, t)| t.map(|t| (r, t)))
        .collect()
    }

    /// The rung after `done` rungs have run, with its due time.
    pub fn next(&self, done: usize) -> Option<(Rung, i64)> {
        self.steps().get(done).copied()
    }

    /// The stored form (canonical JSON).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("rungs always serialize")
    }

    /// Parse the stored form.
    pub fn parse(s: &str) -> Option<Rungs> {
        serde_json::from_str(s).ok()
    }
}

fn after(
    field: &str,
    value: Option<&str>,
    accepted: Timestamp,
) -> Result<Option<i64>, UserQuestionError> {
    let Some(v) = value else { return Ok(None) };
    let bad = |why: String| {
        err(
            Code::BadRequest,
            format!("`ladder.{field}` {v:?} is not a duration such as \"30m\": {why}"),
        )
    };
    let dur = humantime::parse_duration(v).map_err(|e| bad(e.to_string()))?;
    if dur.is_zero() {
        return Err(bad("it must be longer than zero".into()));
    }
    let span = SignedDuration::try_from(dur).map_err(|_| bad("it is too long".into()))?;
    let at = accepted
        .checked_add(span)
        .map_err(|_| bad("it is too long".into()))?;
    Ok(Some(at.as_millisecond()))
}

/// Check the asker's `ladder` against the request (its `questions`, its `context`, its
/// absolute `deadline`) and resolve it at `accepted`. Every mistake is `BAD_REQUEST`
/// naming the field: a ladder with no rung, a duration that does not parse, rungs out of
/// order, a rung at or after the deadline, `escalateTo` without `escalateAfter` or naming
/// the request's own context, `onExpire: "default"` without `expireAfter` or `default`, a
/// `default` that is never used, and a `default` the answer rules refuse.
pub fn resolve(
    ladder: &Ladder,
    questions: &[Question],
    context: &str,
    deadline: Option<Timestamp>,
    accepted: Timestamp,
) -> Result<Rungs, UserQuestionError> {
    let bad = |m: String| err(Code::BadRequest, m);
    let remind_ms = after("remindAfter", ladder.remind_after.as_deref(), accepted)?;
    let escalate_ms = after("escalateAfter", ladder.escalate_after.as_deref(), accepted)?;
    let expire_ms = after("expireAfter", ladder.expire_after.as_deref(), accepted)?;
    let on_expire = ladder.on_expire.unwrap_or_default();
    let rungs = Rungs {
        remind_ms,
        escalate_ms,
        escalate_to: ladder.escalate_to.clone(),
        expire_ms,
        on_expire,
        default: ladder.default.clone(),
    };
    let steps = rungs.steps();
    if steps.is_empty() {
        return Err(bad(
            "`ladder` has no rung: give `remindAfter`, `escalateAfter` or `expireAfter`".into(),
        ));
    }
    if steps.windows(2).any(|w| w[0].1 >= w[1].1) {
        return Err(bad(
            "`ladder` rungs must come in order: remindAfter < escalateAfter < expireAfter".into(),
        ));
    }
    if let Some(d) = deadline {
        let d = d.as_millisecond();
        if steps.iter().any(|(_, t)| *t >= d) {
            return Err(bad(
                "a `ladder` rung falls at or after the request's deadline, which ends it first; \
                 shorten the rung or drop the deadline"
                    .into(),
            ));
        }
    }
    if let Some(to) = &ladder.escalate_to {
        check_id("ladder.escalateTo", to)?;
        if escalate_ms.is_none() {
            return Err(bad(
                "`ladder.escalateTo` needs `ladder.escalateAfter`".into()
            ));
        }
        if to == context {
            return Err(bad(format!(
                "`ladder.escalateTo` {to:?} is the request's own context"
            )));
        }
    }
    match (on_expire, &ladder.default) {
        (OnExpire::Default, None) => {
            return Err(bad(
                "`ladder.onExpire` is \"default\" but no `ladder.default` answer is given".into(),
            ))
        }
        (OnExpire::Default, Some(_)) if expire_ms.is_none() => {
            return Err(bad(
                "`ladder.onExpire` is \"default\" but no `ladder.expireAfter` says when".into(),
            ))
        }
        (OnExpire::Fail, Some(_)) => {
            return Err(bad(
                "`ladder.default` is given but `ladder.onExpire` is not \"default\": \
                 nothing is chosen for a person unless declared"
                    .into(),
            ))
        }
        (OnExpire::Default, Some(a)) => {
            check_answer(questions, a).map_err(|e| {
                bad(format!(
                    "`ladder.default` is not a valid answer: {}",
                    e.message
                ))
            })?;
        }
        (OnExpire::Fail, None) => {}
    }
    Ok(rungs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q() -> Vec<Question> {
        serde_json::from_str(
            r#"[{"id":"q","question":"Ship?","options":[{"label":"yes"},{"label":"no"}]}]"#,
        )
        .unwrap()
    }

    fn ladder(json: &str) -> Ladder {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn resolves_relative_rungs_in_order() {
        let t = Timestamp::from_second(1_000).unwrap();
        let r = resolve(
            &ladder(r#"{"remindAfter":"1m","escalateAfter":"2m","escalateTo":"oncall","expireAfter":"3m"}"#),
            &q(),
            "default",
            None,
            t,
        )
        .unwrap();
        assert_eq!(
            r.steps(),
            vec![
                (Rung::Remind, 1_060_000),
                (Rung::Escalate, 1_120_000),
                (Rung::Expire, 1_180_000)
            ]
        );
        assert_eq!(r.next(3), None);
        assert_eq!(Rungs::parse(&r.to_json()), Some(r));
    }

    #[test]
    fn refuses_what_would_decide_silently_or_never_run() {
        let t = Timestamp::from_second(1_000).unwrap();
        for (json, deadline, says) in [
            (r#"{}"#, None, "no rung"),
            (r#"{"remindAfter":"soon"}"#, None, "remindAfter"),
            (r#"{"remindAfter":"0s"}"#, None, "longer than zero"),
            (
                r#"{"remindAfter":"2m","expireAfter":"1m"}"#,
                None,
                "in order",
            ),
            (r#"{"expireAfter":"1h"}"#, Some(1_060), "deadline"),
            (r#"{"escalateTo":"x","expireAfter":"1m"}"#, None, "needs"),
            (
                r#"{"escalateAfter":"1m","escalateTo":"default"}"#,
                None,
                "own context",
            ),
            (
                r#"{"expireAfter":"1m","onExpire":"default"}"#,
                None,
                "no `ladder.default`",
            ),
            (
                r#"{"expireAfter":"1m","default":{"answers":[{"id":"q","selected":["yes"]}]}}"#,
                None,
                "unless declared",
            ),
            (
                r#"{"expireAfter":"1m","onExpire":"default","default":{"answers":[{"id":"q","selected":["maybe"]}]}}"#,
                None,
                "not a valid answer",
            ),
        ] {
            let d = deadline.map(|s| Timestamp::from_second(s).unwrap());
            let e = resolve(&ladder(json), &q(), "default", d, t).unwrap_err();
            assert_eq!(e.code, Code::BadRequest, "{json}");
            assert!(e.message.contains(says), "{json}: {}", e.message);
        }
    }
}

/// The asker's ladder under a context's ladder policy (the operator's, from the daemon's
/// `--context-ladder`), resolved at `accepted`: the asker's fields win, field by field; each
/// rung of the policy the asker did not set is added when the ladder stays valid with it
/// (in order, before the deadline), and left out otherwise, so a policy never makes a
/// request refused. A policy chooses nothing for a person: its `onExpire` and `default`
/// are never used. The asker's own ladder is judged alone first: its mistakes are its own.
pub fn resolve_with_policy(
    asker: Option<&Ladder>,
    policy: &Ladder,
    questions: &[Question],
    context: &str,
    deadline: Option<Timestamp>,
    accepted: Timestamp,
) -> Result<Option<Rungs>, UserQuestionError> {
    if let Some(a) = asker {
        resolve(a, questions, context, deadline, accepted)?;
    }
    let mut merged = asker.cloned().unwrap_or(Ladder {
        remind_after: None,
        escalate_after: None,
        escalate_to: None,
        expire_after: None,
        on_expire: None,
        default: None,
    });
    let fits = |l: &Ladder| resolve(l, questions, context, deadline, accepted).is_ok();
    if merged.remind_after.is_none() && policy.remind_after.is_some() {
        let mut c = merged.clone();
        c.remind_after = policy.remind_after.clone();
        if fits(&c) {
            merged = c;
        }
    }
    if merged.escalate_after.is_none() && policy.escalate_after.is_some() {
        let mut c = merged.clone();
        c.escalate_after = policy.escalate_after.clone();
        c.escalate_to = policy.escalate_to.clone().filter(|to| to != context);
        if fits(&c) {
            merged = c;
        }
    }
    if merged.expire_after.is_none() && policy.expire_after.is_some() {
        let mut c = merged.clone();
        c.expire_after = policy.expire_after.clone();
        if fits(&c) {
            merged = c;
        }
    }
    let any = merged.remind_after.is_some()
        || merged.escalate_after.is_some()
        || merged.expire_after.is_some();
    if !any {
        return Ok(None);
    }
    resolve(&merged, questions, context, deadline, accepted).map(Some)
}

/// Parse one `--context-ladder` item, `CONTEXT:FIELD=VALUE` (FIELD one of `remindAfter`,
/// `escalateAfter`, `escalateTo`, `expireAfter`), into `policies` (one ladder per context).
pub fn parse_policy_item(
    item: &str,
    policies: &mut std::collections::BTreeMap<String, Ladder>,
) -> Result<(), String> {
    let (context, rest) = item
        .split_once(':')
        .ok_or_else(|| format!("{item:?}: give CONTEXT:FIELD=VALUE, such as ops:remindAfter=1h"))?;
    let (field, value) = rest
        .split_once('=')
        .ok_or_else(|| format!("{item:?}: give CONTEXT:FIELD=VALUE, such as ops:remindAfter=1h"))?;
    if !super::syntax::is_valid_id(context) {
        return Err(format!("{context:?} is not a context id"));
    }
    let l = policies.entry(context.to_string()).or_insert(Ladder {
        remind_after: None,
        escalate_after: None,
        escalate_to: None,
        expire_after: None,
        on_expire: None,
        default: None,
    });
    let duration = |v: &str| -> Result<Option<String>, String> {
        humantime::parse_duration(v)
            .map_err(|e| format!("{item:?}: {v:?} is not a duration such as \"30m\": {e}"))?;
        Ok(Some(v.to_string()))
    };
    match field {
        "remindAfter" => l.remind_after = duration(value)?,
        "escalateAfter" => l.escalate_after = duration(value)?,
        "expireAfter" => l.expire_after = duration(value)?,
        "escalateTo" => {
            if !super::syntax::is_valid_id(value) {
                return Err(format!("{item:?}: {value:?} is not a context id"));
            }
            l.escalate_to = Some(value.to_string());
        }
        other => {
            return Err(format!(
                "{item:?}: {other:?} is not a policy field (remindAfter, escalateAfter, \
                 escalateTo, expireAfter; a policy never chooses an answer)"
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod policy_tests {
    use super::*;

    fn q() -> Vec<Question> {
        serde_json::from_str(r#"[{"id":"q","question":"Ship?","options":[{"label":"yes"}]}]"#)
            .unwrap()
    }

    fn policy() -> Ladder {
        let mut m = std::collections::BTreeMap::new();
        for i in [
            "ops:remindAfter=1m",
            "ops:escalateAfter=2m",
            "ops:escalateTo=oncall",
            "ops:expireAfter=3m",
        ] {
            parse_policy_item(i, &mut m).unwrap();
        }
        m.remove("ops").unwrap()
    }

    #[test]
    fn the_asker_wins_field_by_field_and_a_policy_never_refuses() {
        let t = Timestamp::from_second(1_000).unwrap();
        let p = policy();
        let r = resolve_with_policy(None, &p, &q(), "ops", None, t)
            .unwrap()
            .unwrap();
        assert_eq!(r.steps().len(), 3);
        assert_eq!(r.escalate_to.as_deref(), Some("oncall"));
        // The asker's expiry (with its default) wins; the policy's reminder is added, its
        // escalation too (2m < 10m).
        let asker: Ladder = serde_json::from_str(
            r#"{"expireAfter":"10m","onExpire":"default","default":{"answers":[{"id":"q","selected":["yes"]}]}}"#,
        )
        .unwrap();
        let r = resolve_with_policy(Some(&asker), &p, &q(), "ops", None, t)
            .unwrap()
            .unwrap();
        assert_eq!(r.expire_ms, Some(1_600_000));
        assert_eq!(r.remind_ms, Some(1_060_000));
        assert_eq!(r.on_expire, OnExpire::Default);
        // A deadline at 90 s: the policy's later rungs are left out, not refused.
        let d = Timestamp::from_second(1_090).unwrap();
        let r = resolve_with_policy(None, &p, &q(), "ops", Some(d), t)
            .unwrap()
            .unwrap();
        assert_eq!(r.steps(), vec![(Rung::Remind, 1_060_000)]);
        // The asker's own mistake is still its own.
        let bad: Ladder = serde_json::from_str(r#"{"remindAfter":"soon"}"#).unwrap();
        assert!(resolve_with_policy(Some(&bad), &p, &q(), "ops", None, t).is_err());
        // A policy field that would choose for a person does not exist.
        let mut m = std::collections::BTreeMap::new();
        assert!(parse_policy_item("ops:onExpire=default", &mut m)
            .unwrap_err()
            .contains("never chooses"));
        assert!(parse_policy_item("ops:remindAfter=soon", &mut m).is_err());
        assert!(parse_policy_item("remindAfter=1m", &mut m).is_err());
    }
}
