//! Delegation while a reviewer is away: "away until T, delegate D". Pure: what an away
//! notice is ([`Away`]), the checks a new one must pass ([`check`]), who a request's
//! reviewers hand their requests to now ([`delegates_of`]) and whether an answer made "for"
//! someone is one their delegation allows ([`Away::holds_for`]).
//!
//! Why a person, not an identity: a reviewer is away as a person (on every face at once),
//! and the delegate answers as the person they are, on whichever face they use; the record
//! then says "D for P" (the identity that answered, the person it answered for).
//!
//! Why no chains: a delegate who is away themselves, or a person others delegate to going
//! away, would make "D for P" ambiguous (who answers for whom, and a quorum could be met
//! by one person answering for two through a third). Both are refused at the set.
//!
//! Why the end is checked at use: an away notice holds while `now < until`; nothing needs
//! a timer to be right. The sweep removes the ones past their end and records that they
//! ended, for the record's sake only.

use serde::Serialize;

/// One person's away notice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Away {
    /// The person who is away.
    pub person: String,
    /// The person who answers for them meanwhile.
    pub delegate: String,
    /// When it ends (ms since the epoch): it holds while `now < until_ms`.
    pub until_ms: i64,
    /// When it was set.
    pub set_ms: i64,
    /// Who set it (an actor as recorded: `web:alice`, `cli`).
    pub set_by: String,
}

/// Why an away notice is refused (each its own stable code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The end is not in the future.
    Past,
    /// The delegate is the person.
    ToSelf,
    /// The delegate is away themselves, or the person is someone's delegate.
    Chain(String),
    /// The delegate is no reviewer the directory or the web tokens know.
    UnknownDelegate,
}

/// What is known of a would-be delegate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// A person who may answer: listed in the people directory, or the person of a live
    /// web token with a reviewer's role.
    Reviewer,
    /// Known, but only as someone who may not answer (an asker's or auditor's token).
    NotReviewer,
    /// Nowhere.
    Unknown,
}

impl Away {
    /// Whether it holds at `now`.
    pub fn holds(&self, now: i64) -> bool {
        now < self.until_ms
    }

    /// Whether `delegate` may answer for this away person at `now`.
    pub fn holds_for(&self, delegate: &str, now: i64) -> bool {
        self.holds(now) && self.delegate == delegate
    }
}

/// Parse an away notice's end as written by a person: an RFC 3339 time, or a duration
/// from `now` (`8h`, `3d`). The reason when it is neither.
pub fn parse_until(s: &str, now: i64) -> Result<i64, String> {
    let s = s.trim();
    if let Ok(d) = humantime::parse_duration(s) {
        return Ok(now.saturating_add(crate::clock::duration_ms(d)));
    }
    s.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .map_err(|_| format!("{s:?}: give an RFC 3339 time or a duration such as 8h"))
}

/// Check a new away notice of `person` handing to `delegate` until `until_ms`, at `now`,
/// given the notices that hold now (`holding`, the person's own among them or not: a new
/// one replaces it) and what is known of the delegate.
pub fn check(
    person: &str,
    delegate: &str,
    until_ms: i64,
    now: i64,
    holding: &[Away],
    known: Known,
) -> Result<(), Refused> {
    if until_ms <= now {
        return Err(Refused::Past);
    }
    if person == delegate {
        return Err(Refused::ToSelf);
    }
    if known != Known::Reviewer {
        return Err(Refused::UnknownDelegate);
    }
    let holding = holding.iter().filter(|a| a.holds(now));
    for a in holding {
        if a.person == delegate {
            return Err(Refused::Chain(format!(
                "{delegate:?} is away themselves (until {}), handing to {:?}",
                crate::clock::rfc3339(a.until_ms),
                a.delegate
            )));
        }
        if a.delegate == person && a.person != person {
            return Err(Refused::Chain(format!(
                "{person:?} is the delegate of {:?} until {}: a delegate cannot hand on what was handed to them",
                a.person,
                crate::clock::rfc3339(a.until_ms)
            )));
        }
    }
    Ok(())
}

/// The delegates of `persons` at `now`: for each person in `persons` away now, their
/// delegate (once each, in the order met, none already in `persons`).
pub fn delegates_of(persons: &[String], holding: &[Away], now: i64) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in persons {
        for a in holding.iter().filter(|a| &a.person == p && a.holds(now)) {
            if !persons.contains(&a.delegate) && !out.contains(&a.delegate) {
                out.push(a.delegate.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn away(p: &str, d: &str, until: i64) -> Away {
        Away {
            person: p.into(),
            delegate: d.into(),
            until_ms: until,
            set_ms: 0,
            set_by: "cli".into(),
        }
    }

    #[test]
    fn each_bad_notice_has_its_refusal() {
        let r = Known::Reviewer;
        assert_eq!(check("alice", "dave", 10, 10, &[], r), Err(Refused::Past));
        assert_eq!(
            check("alice", "alice", 20, 10, &[], r),
            Err(Refused::ToSelf)
        );
        assert_eq!(
            check("alice", "dave", 20, 10, &[], Known::NotReviewer),
            Err(Refused::UnknownDelegate)
        );
        assert_eq!(
            check("alice", "dave", 20, 10, &[], Known::Unknown),
            Err(Refused::UnknownDelegate)
        );
        // P -> D while D -> E: refused; E -> P then P -> D: refused.
        let held = [away("dave", "erin", 30)];
        assert!(matches!(
            check("alice", "dave", 20, 10, &held, r),
            Err(Refused::Chain(_))
        ));
        let held = [away("erin", "alice", 30)];
        assert!(matches!(
            check("alice", "dave", 20, 10, &held, r),
            Err(Refused::Chain(_))
        ));
        // One that ended is no chain; the person's own is replaced.
        let held = [away("dave", "erin", 5), away("alice", "bob", 30)];
        assert_eq!(check("alice", "dave", 20, 10, &held, r), Ok(()));
    }

    #[test]
    fn an_end_is_a_time_or_a_duration_from_now() {
        assert_eq!(parse_until("8h", 1_000), Ok(1_000 + 8 * 3_600_000));
        assert_eq!(parse_until("1970-01-01T00:00:02Z", 0), Ok(2_000));
        assert!(parse_until("soon", 0).is_err());
    }

    #[test]
    fn it_holds_until_its_end() {
        let a = away("alice", "dave", 20);
        assert!(a.holds_for("dave", 19));
        assert!(!a.holds_for("dave", 20));
        assert!(!a.holds_for("erin", 19));
        let held = [a, away("bob", "alice", 30)];
        assert_eq!(delegates_of(&["alice".into()], &held, 10), ["dave"]);
        assert!(delegates_of(&["alice".into()], &held, 25).is_empty());
        // A delegate already among the persons is not added again.
        assert!(delegates_of(&["bob".into(), "alice".into()], &held, 10)
            .iter()
            .all(|d| d == "dave"));
    }
}
