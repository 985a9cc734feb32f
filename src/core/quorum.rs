//! Quorum: M-of-N approval of a request. Pure: the policy a config file gives
//! ([`Policy`]), the quorum a request is held to ([`Required`], fixed at acceptance),
//! who may vote ([`Required::may_vote`]) and what the votes decide ([`Required::verdict`]).
//!
//! Why fixed at acceptance: the quorum a request was asked under is part of the record (it
//! is in the `accepted` event and the row, and `audit verify` compares the two), so a
//! config edited later changes no request already asked, and every host of a shared store
//! judges the votes of a request by the same rule whatever its own config says. A named
//! group is resolved then too: its members are copied into the record, as persons.
//!
//! A group an `[[oidc.rule]]` names is also joined by signing in: the claims at a person's
//! sign-in decide their groups, which the store keeps per person (replaced at each
//! sign-in, each one a `signed-in` event). Such a group is recorded at acceptance as
//! joinable ([`Required::joins_by_sign_in`]), and its members are then resolved when a
//! vote is cast: the members copied at acceptance, and whoever's latest sign-in put them
//! in the group. Someone who signs in with the group's claim after the request was asked
//! can vote on it, as a team expects; someone whose last sign-in dropped the claim cannot.
//!
//! A quorum counts **persons** ([`crate::core::people`]): a voter is the identity its face
//! authenticated (`provider:NAME`, `web:NAME`, `mcp:CLIENT`, `slack:REVIEWER`,
//! `mail:ADDRESS`) and the person that identity belongs to (the people directory's entry,
//! else the name after the face). The asker is excluded as a person, a group's members are
//! persons, and one person is one voter whichever faces they vote from: a two-person rule
//! must not be met by one person on two faces.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::core::people::People;
use crate::protocol::types::{Decision, DeclineRule, Quorum};

pub use crate::protocol::types::VoteView;

/// The quorum policy of a config file: named groups of reviewers, the quorum each
/// context requires (which wins over the asker's), and the people directory that says
/// which person each identity is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Group name → its members as written: persons (`alice`) or identities standing for
    /// theirs (`web:alice`, `mail:bob@example.com`).
    pub groups: BTreeMap<String, Vec<String>>,
    /// Context → the quorum every request of it is held to.
    pub contexts: BTreeMap<String, Quorum>,
    /// The people directory (`[people]`, with the Slack users of `[slack.users]`).
    pub people: People,
    /// The groups a sign-in through the identity provider may put a reviewer in (those an
    /// `[[oidc.rule]]` names in `quorum-groups`).
    pub sign_in_groups: BTreeSet<String>,
}

/// Where a request's quorum came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuorumBy {
    /// The asker's `quorum` field.
    Asker,
    /// The context's policy in the config file (it wins over the asker's).
    Policy,
}

/// The quorum a request is held to, as recorded at acceptance (the row's `quorum` column
/// and the `accepted` event's `quorum`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Required {
    /// Distinct reviewers that must give the same answer.
    pub approvals: u32,
    /// The group voters must belong to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The group's members when the request was accepted: persons (a request recorded
    /// before persons holds identities, each standing for its person).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<String>>,
    /// Whether a reviewer whose latest sign-in through the identity provider put them in
    /// the group is a member too, resolved when they vote (the config's rules named the
    /// group when the request was accepted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub joins_by_sign_in: bool,
    /// What a decline does.
    pub decline: DeclineRule,
    /// Who set it.
    pub by: QuorumBy,
}

/// Why a quorum cannot be required (the ask is refused with `BAD_REQUEST`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The quorum names a group the config file does not define.
    #[error("quorum group {0:?} is not defined in the config file's [groups]")]
    UnknownGroup(String),
    /// A member is neither a person nor an identity.
    #[error("quorum group {group:?}: {why}")]
    BadMember {
        /// The group.
        group: String,
        /// Why.
        why: String,
    },
    /// The group has fewer members (persons) than approvals.
    #[error("quorum group {group:?} has {members} member(s), fewer than the {approvals} approvals asked")]
    GroupTooSmall {
        /// The group.
        group: String,
        /// Its size.
        members: usize,
        /// The approvals asked.
        approvals: u32,
    },
}

/// Why a reviewer's vote is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The voter is the asker (the same person, on any face).
    OwnRequest,
    /// The voter is not a member of the quorum's group.
    NotInGroup(String),
    /// The voter is no authenticated reviewer identity (not a provider, web or MCP actor).
    Unauthenticated,
}

/// One recorded vote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Vote {
    /// The identity that voted (`web:alice`, `provider:bob`, `slack:carol`).
    pub voter: String,
    /// The person it belongs to (`None` for a vote recorded before persons: its identity
    /// then stands for its person).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// The answer voted for (canonical JSON, question order).
    pub answer: String,
    /// The request-level decision that answer makes, if any.
    pub decision: Option<Decision>,
    /// When (ms).
    pub at_ms: i64,
    /// The away person this vote was cast for by their delegate (`person`), if any: it
    /// occupies both of them ([`Vote::occupies`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_person: Option<String>,
}

/// What a request's votes decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not yet: the quorum is not met.
    Open,
    /// `approvers` gave `answer` and they are enough.
    Met {
        /// The winning answer (canonical JSON).
        answer: String,
        /// Who gave it, in vote order.
        approvers: Vec<String>,
    },
    /// A decline vetoed the request (under [`DeclineRule::Veto`]).
    Vetoed {
        /// The declining answer (canonical JSON).
        answer: String,
        /// Who declined.
        voter: String,
    },
}

impl Policy {
    /// The quorum a request of `context` is held to: the context's policy when it has one
    /// (it wins), else the asker's `asked`; `None` for neither.
    pub fn required(
        &self,
        context: &str,
        asked: Option<&Quorum>,
    ) -> Result<Option<Required>, PolicyError> {
        let (q, by) = match (self.contexts.get(context), asked) {
            (Some(p), _) => (p, QuorumBy::Policy),
            (None, Some(a)) => (a, QuorumBy::Asker),
            (None, None) => return Ok(None),
        };
        let joins_by_sign_in = q
            .group
            .as_ref()
            .is_some_and(|g| self.sign_in_groups.contains(g));
        let members = match &q.group {
            None => None,
            Some(g) => {
                let written = self
                    .groups
                    .get(g)
                    .ok_or_else(|| PolicyError::UnknownGroup(g.clone()))?;
                let mut persons: Vec<String> = Vec::new();
                for m in written {
                    let p = self
                        .people
                        .member(m)
                        .map_err(|why| PolicyError::BadMember {
                            group: g.clone(),
                            why,
                        })?;
                    if !persons.contains(&p) {
                        persons.push(p);
                    }
                }
                // A group sign-ins fill may be short now: its members join when they vote.
                if persons.len() < q.approvals as usize && !joins_by_sign_in {
                    return Err(PolicyError::GroupTooSmall {
                        group: g.clone(),
                        members: persons.len(),
                        approvals: q.approvals,
                    });
                }
                Some(persons)
            }
        };
        Ok(Some(Required {
            approvals: q.approvals,
            group: q.group.clone(),
            members,
            joins_by_sign_in,
            decline: q.decline.unwrap_or_default(),
            by,
        }))
    }
}

impl Vote {
    /// The person this vote counts for (its identity, for a vote recorded before persons).
    pub fn person_key(&self) -> &str {
        self.person.as_deref().unwrap_or(&self.voter)
    }

    /// Whether this vote occupies `person`: it is theirs, or it was cast for them by their
    /// delegate. A vote by D for P occupies both D and P, so a quorum is never met by a
    /// person and their delegate alone, and a later vote by either is `ALREADY_VOTED`.
    pub fn occupies(&self, person: &str) -> bool {
        self.person_key() == person || self.for_person.as_deref() == Some(person)
    }

    /// Whether this vote and `other` occupy a person in common.
    pub fn overlaps(&self, other: &Vote) -> bool {
        self.occupies(other.person_key())
            || other
                .for_person
                .as_deref()
                .is_some_and(|p| self.occupies(p))
    }
}

impl Required {
    /// Whether `person` may vote on a request whose asker is `askers` (persons, see
    /// [`People::askers`]); `people` resolves the recorded members (persons, or, for a
    /// request recorded before persons, identities standing for theirs). `signed_in` is
    /// whether the person's latest sign-in put them in the group (it counts only for a
    /// group [`Required::joins_by_sign_in`]). `Ok(true)` when that is what made them a
    /// member.
    pub fn may_vote(
        &self,
        person: &str,
        askers: &[String],
        people: &People,
        signed_in: bool,
    ) -> Result<bool, Refusal> {
        if askers.iter().any(|a| a == person) {
            return Err(Refusal::OwnRequest);
        }
        if let (Some(group), Some(members)) = (&self.group, &self.members) {
            let member = |m: &String| people.member(m).is_ok_and(|p| p == person);
            if members.iter().any(member) {
                return Ok(false);
            }
            if self.joins_by_sign_in && signed_in {
                return Ok(true);
            }
            return Err(Refusal::NotInGroup(group.clone()));
        }
        Ok(false)
    }

    /// What `votes` (in the order they were cast, one per voter) decide. Under
    /// [`DeclineRule::Veto`] the first decline ends it; otherwise the first answer that
    /// `approvals` voters gave wins, and they are its approvers.
    pub fn verdict(&self, votes: &[Vote]) -> Verdict {
        let mut tally: BTreeMap<&str, Vec<&Vote>> = BTreeMap::new();
        for v in votes {
            if self.decline == DeclineRule::Veto && v.decision == Some(Decision::Declined) {
                return Verdict::Vetoed {
                    answer: v.answer.clone(),
                    voter: v.voter.clone(),
                };
            }
            let voters = tally.entry(v.answer.as_str()).or_default();
            // One person is one voter, and a delegate's vote for an away person counts for
            // one of the two (a second vote is refused before it is recorded; this keeps
            // the count right whatever the rows say).
            if !voters.iter().any(|w| w.overlaps(v)) {
                voters.push(v);
            }
            if voters.len() >= self.approvals as usize {
                return Verdict::Met {
                    answer: v.answer.clone(),
                    approvers: voters.iter().map(|w| w.voter.clone()).collect(),
                };
            }
        }
        Verdict::Open
    }

    /// The JSON recorded in the row and the `accepted` event.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a quorum always serializes")
    }

    /// Parse the recorded JSON.
    pub fn parse(s: &str) -> Option<Required> {
        serde_json::from_str(s).ok()
    }
}

/// Where a request with a quorum stands: the rule and the votes so far (what every face
/// shows of a partial vote).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuorumView {
    /// Distinct reviewers that must give the same answer.
    pub approvals: u32,
    /// The group voters must belong to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// `veto` or `vote`.
    pub decline: String,
    /// `asker` or `policy`.
    pub by: String,
    /// How many persons agree on the answer most of them gave so far: the quorum is met
    /// when this reaches `approvals` (`1/2` on the faces).
    pub agreeing: u32,
    /// The votes so far, in the order they were cast.
    pub votes: Vec<VoteView>,
}

impl QuorumView {
    /// The view of a request's quorum and votes (`None` without a quorum).
    pub fn of(required: &Required, votes: &[Vote]) -> QuorumView {
        let mut tally: BTreeMap<&str, Vec<&Vote>> = BTreeMap::new();
        for v in votes {
            let persons = tally.entry(v.answer.as_str()).or_default();
            if !persons.iter().any(|w| w.overlaps(v)) {
                persons.push(v);
            }
        }
        let agreeing = tally.values().map(Vec::len).max().unwrap_or(0) as u32;
        QuorumView {
            agreeing,
            approvals: required.approvals,
            group: required.group.clone(),
            decline: required.decline.as_str().into(),
            by: match required.by {
                QuorumBy::Asker => "asker".into(),
                QuorumBy::Policy => "policy".into(),
            },
            votes: votes
                .iter()
                .map(|v| VoteView {
                    voter: v.voter.clone(),
                    person: v.person.clone(),
                    answer: serde_json::from_str(&v.answer)
                        .unwrap_or_else(|_| serde_json::Value::String(v.answer.clone())),
                    decision: v.decision,
                    at: crate::clock::rfc3339(v.at_ms),
                    on_behalf_of: v.for_person.clone(),
                })
                .collect(),
        }
    }

    /// The progress as the faces print it: `1/2`.
    pub fn progress(&self) -> String {
        format!("{}/{}", self.agreeing, self.approvals)
    }

    /// One line for people: `1/2: 1 vote(s), 2 matching needed (alice via web:alice),
    /// decline: veto`.
    pub fn summary(&self) -> String {
        let voters: Vec<String> = self.votes.iter().map(VoteView::who).collect();
        let mut s = format!(
            "{}: {} vote(s), {} matching needed",
            self.progress(),
            self.votes.len(),
            self.approvals
        );
        if !voters.is_empty() {
            s.push_str(&format!(" ({})", voters.join(", ")));
        }
        if let Some(g) = &self.group {
            s.push_str(&format!(", group {g}"));
        }
        s.push_str(&format!(", decline: {}", self.decline));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::audit::Actor;

    fn q(approvals: u32, group: Option<&str>, decline: Option<DeclineRule>) -> Quorum {
        Quorum {
            approvals,
            group: group.map(str::to_string),
            decline,
        }
    }

    fn vote(voter: &str, answer: &str, decision: Option<Decision>) -> Vote {
        Vote {
            voter: voter.into(),
            person: voter.split_once(':').map(|(_, n)| n.to_string()),
            answer: answer.into(),
            decision,
            at_ms: 0,
            for_person: None,
        }
    }

    #[test]
    fn a_person_and_their_delegate_never_meet_a_quorum_alone() {
        let r = Policy::default()
            .required("c", Some(&q(2, None, None)))
            .unwrap()
            .unwrap();
        let mut for_alice = vote("web:dave", "A", None);
        for_alice.for_person = Some("alice".into());
        // Dave for Alice, then Alice (or Dave again): one person's worth.
        for other in ["web:alice", "provider:dave"] {
            let votes = [for_alice.clone(), vote(other, "A", None)];
            assert_eq!(r.verdict(&votes), Verdict::Open, "{other}");
            assert_eq!(QuorumView::of(&r, &votes).agreeing, 1);
        }
        // With a third person it is met.
        let votes = [for_alice, vote("web:bob", "A", None)];
        assert!(matches!(r.verdict(&votes), Verdict::Met { .. }));
    }

    #[test]
    fn the_context_policy_wins_over_the_asker() {
        let mut p = Policy::default();
        let asked = q(1, None, None);
        let r = p.required("x", Some(&asked)).unwrap().unwrap();
        assert_eq!((r.approvals, r.by), (1, QuorumBy::Asker));
        p.contexts
            .insert("x".into(), q(3, None, Some(DeclineRule::Vote)));
        let r = p.required("x", Some(&asked)).unwrap().unwrap();
        assert_eq!(
            (r.approvals, r.by, r.decline),
            (3, QuorumBy::Policy, DeclineRule::Vote)
        );
        assert_eq!(p.required("y", None).unwrap(), None);
    }

    #[test]
    fn a_group_must_exist_and_be_large_enough() {
        let mut p = Policy::default();
        assert_eq!(
            p.required("x", Some(&q(2, Some("ops"), None))),
            Err(PolicyError::UnknownGroup("ops".into()))
        );
        p.groups.insert("ops".into(), vec!["web:a".into()]);
        assert!(matches!(
            p.required("x", Some(&q(2, Some("ops"), None))),
            Err(PolicyError::GroupTooSmall { .. })
        ));
        p.groups
            .insert("ops".into(), vec!["web:a".into(), "provider:b".into()]);
        let r = p.required("x", Some(&q(2, Some("ops"), None))).unwrap();
        assert_eq!(r.unwrap().members.unwrap().len(), 2);
    }

    #[test]
    fn the_asker_never_votes_as_any_face_and_only_members_vote() {
        let people = People::default();
        let r = Policy::default()
            .required("x", Some(&q(2, None, None)))
            .unwrap()
            .unwrap();
        let askers = people.askers(Some("bot"), "web:alice");
        assert_eq!(askers, ["bot", "alice"]);
        for own in [
            Actor::Web("alice".into()),
            Actor::Provider("alice".into()),
            Actor::Mcp("bot".into()),
        ] {
            let (_, person) = people.of_actor(&own).unwrap();
            assert_eq!(
                r.may_vote(&person, &askers, &people, false),
                Err(Refusal::OwnRequest)
            );
        }
        assert_eq!(r.may_vote("bob", &askers, &people, false), Ok(false));
        // A group is of persons: bob's web token and his CLI name are one member.
        let mut p = Policy::default();
        p.groups.insert("ops".into(), vec!["web:bob".into()]);
        let g = p
            .required("x", Some(&q(1, Some("ops"), None)))
            .unwrap()
            .unwrap();
        assert_eq!(g.members.as_deref(), Some(&["bob".to_string()][..]));
        assert_eq!(g.may_vote("bob", &[], &people, false), Ok(false));
        assert_eq!(
            g.may_vote("mallory", &[], &people, true),
            Err(Refusal::NotInGroup("ops".into()))
        );
        // A request recorded before persons holds identities: each stands for its person.
        let mut old = g.clone();
        old.members = Some(vec!["slack:carol".into(), "mail:dave@example.com".into()]);
        assert_eq!(old.may_vote("carol", &[], &people, false), Ok(false));
        let linked = People::new(
            vec![("dave".into(), vec!["mail:dave@example.com".into()])],
            &BTreeMap::new(),
        )
        .unwrap();
        assert_eq!(old.may_vote("dave", &[], &linked, false), Ok(false));
        assert!(old.may_vote("dave", &[], &people, false).is_err());
    }

    #[test]
    fn a_group_sign_ins_fill_admits_whom_their_latest_sign_in_put_in_it() {
        let people = People::default();
        let mut p = Policy::default();
        p.groups.insert("release".into(), vec!["web:bob".into()]);
        p.sign_in_groups.insert("release".into());
        // Short of listed members: members join when they vote.
        let g = p
            .required("x", Some(&q(2, Some("release"), None)))
            .unwrap()
            .unwrap();
        assert!(g.joins_by_sign_in);
        assert_eq!(g.may_vote("bob", &[], &people, false), Ok(false));
        assert_eq!(g.may_vote("carol", &[], &people, true), Ok(true));
        assert_eq!(
            g.may_vote("carol", &[], &people, false),
            Err(Refusal::NotInGroup("release".into()))
        );
        // The asker is refused whatever their sign-in says.
        assert_eq!(
            g.may_vote("carol", &["carol".into()], &people, true),
            Err(Refusal::OwnRequest)
        );
        // Recorded with the request: a group no rule names admits no sign-in.
        assert!(g.to_json().contains("\"joinsBySignIn\":true"));
        let mut plain = g.clone();
        plain.joins_by_sign_in = false;
        assert!(!plain.to_json().contains("joinsBySignIn"));
        assert_eq!(Required::parse(&plain.to_json()), Some(plain.clone()));
        assert_eq!(
            plain.may_vote("carol", &[], &people, true),
            Err(Refusal::NotInGroup("release".into()))
        );
        p.sign_in_groups.clear();
        assert!(matches!(
            p.required("x", Some(&q(2, Some("release"), None))),
            Err(PolicyError::GroupTooSmall { .. })
        ));
    }

    #[test]
    fn one_person_on_two_faces_is_one_voter() {
        let r = Policy::default()
            .required("x", Some(&q(2, None, None)))
            .unwrap()
            .unwrap();
        let ok = Some(Decision::Approved);
        // provider:bob and web:bob are one person: never two approvals.
        assert_eq!(
            r.verdict(&[vote("provider:bob", "A", ok), vote("web:bob", "A", ok)]),
            Verdict::Open
        );
        let view = QuorumView::of(
            &r,
            &[vote("provider:bob", "A", ok), vote("web:bob", "A", ok)],
        );
        assert_eq!(view.progress(), "1/2");
    }

    #[test]
    fn votes_count_for_the_same_answer_and_a_decline_vetoes_by_default() {
        let r = Policy::default()
            .required("x", Some(&q(2, None, None)))
            .unwrap()
            .unwrap();
        let ok = Some(Decision::Approved);
        assert_eq!(r.verdict(&[vote("web:a", "A", ok)]), Verdict::Open);
        assert_eq!(
            r.verdict(&[vote("web:a", "A", ok), vote("web:b", "B", None)]),
            Verdict::Open
        );
        assert_eq!(
            r.verdict(&[
                vote("web:a", "A", ok),
                vote("web:b", "B", None),
                vote("web:c", "A", ok)
            ]),
            Verdict::Met {
                answer: "A".into(),
                approvers: vec!["web:a".into(), "web:c".into()]
            }
        );
        let no = Some(Decision::Declined);
        assert_eq!(
            r.verdict(&[vote("web:a", "A", ok), vote("web:b", "N", no)]),
            Verdict::Vetoed {
                answer: "N".into(),
                voter: "web:b".into()
            }
        );
        let mut votes_rule = r.clone();
        votes_rule.decline = DeclineRule::Vote;
        assert_eq!(
            votes_rule.verdict(&[vote("web:a", "A", ok), vote("web:b", "N", no)]),
            Verdict::Open
        );
    }
}
