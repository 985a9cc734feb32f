//! Quorum (issue 30): M-of-N approval of a request. Pure: the policy a config file gives
//! ([`Policy`]), the quorum a request is held to ([`Required`], fixed at acceptance),
//! who may vote ([`Required::may_vote`]) and what the votes decide ([`Required::verdict`]).
//!
//! Why fixed at acceptance: the quorum a request was asked under is part of the record (it
//! is in the `accepted` event and the row, and `audit verify` compares the two), so a
//! config edited later changes no request already asked, and every host of a shared store
//! judges the votes of a request by the same rule whatever its own config says. A named
//! group is resolved then too: its members are copied into the record.
//!
//! Identities are the event log's actors ([`crate::core::audit::Actor`]): `provider:NAME`
//! (a terminal or CLI lease), `web:NAME` (a web token on the page or the HTTP API),
//! `mcp:CLIENT`. The asker's identities are its agent id and the name its request came in
//! under (`web:NAME` for a web token, `mcp:CLIENT` over MCP's stdio); they are compared with
//! a voter's by NAME, across faces, because one person can reach several faces under one
//! name, and a two-person rule must not be met by one person on two faces.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::core::audit::{Actor, Source};
use crate::protocol::types::{Decision, DeclineRule, Quorum};

/// The quorum policy of a config file: named groups of reviewers, and the quorum each
/// context requires (which wins over the asker's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Group name → its members (actor strings: `web:alice`, `provider:bob`, `mcp:claude`).
    pub groups: BTreeMap<String, Vec<String>>,
    /// Context → the quorum every request of it is held to.
    pub contexts: BTreeMap<String, Quorum>,
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
    /// The group's members when the request was accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<String>>,
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
    /// The group has fewer members than approvals.
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
    /// The voter is the asker (by name, on any face).
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
    /// Who voted (actor string).
    pub voter: String,
    /// The answer voted for (canonical JSON, question order).
    pub answer: String,
    /// The request-level decision that answer makes, if any.
    pub decision: Option<Decision>,
    /// When (ms).
    pub at_ms: i64,
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
        let members = match &q.group {
            None => None,
            Some(g) => {
                let m = self
                    .groups
                    .get(g)
                    .ok_or_else(|| PolicyError::UnknownGroup(g.clone()))?;
                if m.len() < q.approvals as usize {
                    return Err(PolicyError::GroupTooSmall {
                        group: g.clone(),
                        members: m.len(),
                        approvals: q.approvals,
                    });
                }
                Some(m.clone())
            }
        };
        Ok(Some(Required {
            approvals: q.approvals,
            group: q.group.clone(),
            members,
            decline: q.decline.unwrap_or_default(),
            by,
        }))
    }
}

/// The names an asker is known by: its agent id, and the name of the web token or MCP
/// client its request came in under (`source`). A request from `dshq ask` or an inbox
/// file without an agent has none: nobody is excluded as its asker.
pub fn asker_names(agent_id: Option<&str>, source: &str) -> Vec<String> {
    let mut names: Vec<String> = agent_id.map(str::to_string).into_iter().collect();
    if let Some(Source::WebToken(n) | Source::Mcp(n)) = Source::parse(source) {
        names.push(n);
    }
    names
}

/// The name part of a voter identity (`web:alice` → `alice`), for an authenticated kind.
fn voter_name(voter: &Actor) -> Option<&str> {
    match voter {
        Actor::Provider(n) | Actor::Web(n) | Actor::Mcp(n) | Actor::Mail(n) => Some(n),
        Actor::Slack { reviewer, .. } => Some(reviewer),
        _ => None,
    }
}

impl Required {
    /// Whether `voter` may vote on a request asked by `askers` ([`asker_names`]).
    pub fn may_vote(&self, voter: &Actor, askers: &[String]) -> Result<(), Refusal> {
        let name = voter_name(voter).ok_or(Refusal::Unauthenticated)?;
        if askers.iter().any(|a| a == name) {
            return Err(Refusal::OwnRequest);
        }
        if let (Some(group), Some(members)) = (&self.group, &self.members) {
            let id = voter.identity();
            if !members.iter().any(|m| *m == id) {
                return Err(Refusal::NotInGroup(group.clone()));
            }
        }
        Ok(())
    }

    /// What `votes` (in the order they were cast, one per voter) decide. Under
    /// [`DeclineRule::Veto`] the first decline ends it; otherwise the first answer that
    /// `approvals` voters gave wins, and they are its approvers.
    pub fn verdict(&self, votes: &[Vote]) -> Verdict {
        let mut tally: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for v in votes {
            if self.decline == DeclineRule::Veto && v.decision == Some(Decision::Declined) {
                return Verdict::Vetoed {
                    answer: v.answer.clone(),
                    voter: v.voter.clone(),
                };
            }
            let voters = tally.entry(v.answer.as_str()).or_default();
            voters.push(&v.voter);
            if voters.len() >= self.approvals as usize {
                return Verdict::Met {
                    answer: v.answer.clone(),
                    approvers: voters.iter().map(|s| s.to_string()).collect(),
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

/// One vote as a face shows it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoteView {
    /// Who voted (`web:NAME`, `provider:NAME`, `mcp:CLIENT`).
    pub voter: String,
    /// The answer voted for (an answer as the dsh vocabulary writes it).
    #[schemars(with = "crate::protocol::types::Answer")]
    pub answer: serde_json::Value,
    /// The request-level decision of that answer, if it makes one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// When (RFC 3339).
    pub at: String,
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
    /// The votes so far, in the order they were cast.
    pub votes: Vec<VoteView>,
}

impl QuorumView {
    /// The view of a request's quorum and votes (`None` without a quorum).
    pub fn of(required: &Required, votes: &[Vote]) -> QuorumView {
        QuorumView {
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
                    answer: serde_json::from_str(&v.answer)
                        .unwrap_or_else(|_| serde_json::Value::String(v.answer.clone())),
                    decision: v.decision,
                    at: crate::clock::rfc3339(v.at_ms),
                })
                .collect(),
        }
    }

    /// One line for people: `1 vote(s), 2 matching needed (web:alice), decline: veto`.
    pub fn summary(&self) -> String {
        let voters: Vec<&str> = self.votes.iter().map(|v| v.voter.as_str()).collect();
        let mut s = format!(
            "{} vote(s), {} matching needed",
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
            answer: answer.into(),
            decision,
            at_ms: 0,
        }
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
    fn the_asker_never_votes_on_any_face_and_only_members_vote() {
        let r = Policy::default()
            .required("x", Some(&q(2, None, None)))
            .unwrap()
            .unwrap();
        let askers = asker_names(Some("bot"), "web:alice");
        assert_eq!(askers, ["bot", "alice"]);
        for own in [
            Actor::Web("alice".into()),
            Actor::Provider("alice".into()),
            Actor::Mcp("bot".into()),
        ] {
            assert_eq!(r.may_vote(&own, &askers), Err(Refusal::OwnRequest));
        }
        assert_eq!(r.may_vote(&Actor::Web("bob".into()), &askers), Ok(()));
        assert_eq!(
            r.may_vote(&Actor::Cli, &askers),
            Err(Refusal::Unauthenticated)
        );
        let mut p = Policy::default();
        p.groups.insert("ops".into(), vec!["web:bob".into()]);
        let g = p
            .required("x", Some(&q(1, Some("ops"), None)))
            .unwrap()
            .unwrap();
        assert_eq!(g.may_vote(&Actor::Web("bob".into()), &[]), Ok(()));
        assert_eq!(
            g.may_vote(&Actor::Provider("bob".into()), &[]),
            Err(Refusal::NotInGroup("ops".into()))
        );
        // A Slack reviewer is a member as `slack:NAME`, from any Slack account mapped to
        // them; the asker's name refuses them as it does on every face.
        let mut p = Policy::default();
        p.groups.insert("ops".into(), vec!["slack:carol".into()]);
        let g = p
            .required("x", Some(&q(1, Some("ops"), None)))
            .unwrap()
            .unwrap();
        let carol = |user: &str| Actor::Slack {
            reviewer: "carol".into(),
            user: user.into(),
        };
        assert_eq!(g.may_vote(&carol("U1"), &[]), Ok(()));
        assert_eq!(g.may_vote(&carol("U2"), &[]), Ok(()));
        assert_eq!(carol("U1").identity(), carol("U2").identity());
        assert_eq!(
            g.may_vote(&Actor::Web("carol".into()), &[]),
            Err(Refusal::NotInGroup("ops".into()))
        );
        assert_eq!(
            g.may_vote(&carol("U1"), &["carol".into()]),
            Err(Refusal::OwnRequest)
        );
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
