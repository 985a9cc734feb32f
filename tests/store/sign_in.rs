//! A sign-in through the identity provider on the record, as conformance scenarios: one
//! `signed-in` event per sign-in, naming no request, chained like the rest: the chain and
//! the record check still verify, and no request row comes of it. The quorum groups its
//! claims decided are the person's until their next sign-in replaces them, and a group
//! sign-ins fill admits such a member to vote on a request asked before they signed in.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::json;

use dshq::core::audit::Actor;
use dshq::core::quorum::Policy;
use dshq::protocol::error::Code;
use dshq::protocol::Quorum;
use dshq::store::{LeaseRef, Store};

use crate::lifecycle::row;
use crate::quorum::{ask_value, ask_with, code, finished, voted};
use crate::scenarios::{pick, TestClock};

/// Two sign-ins: two events, the head moves, the chain verifies, nothing else changes.
pub fn a_sign_in_is_one_chained_event(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let before = store.verify(&[]).unwrap();
    let head = store.events_head().unwrap();
    let alice = Actor::Oidc {
        person: "alice".into(),
        subject: "alice@corp.example".into(),
    };
    let data = json!({"person": "alice", "claims": {"groups": ["dshq-reviewers"]},
                      "decided": {"role": "reviewer", "contexts": null}});
    store.record_sign_in(&alice, &[], data.clone()).unwrap();
    clock.advance(1_000);
    store.record_sign_in(&alice, &[], data).unwrap();
    assert_ne!(store.events_head().unwrap(), head);
    let after = store.verify(&[]).unwrap();
    assert_eq!(after.broken, None, "{after:?}");
    assert_eq!(after.events, before.events + 2);
    assert_eq!(
        after.requests, before.requests,
        "no request row comes of it"
    );
}

fn oidc(person: &str, subject: &str) -> Actor {
    Actor::Oidc {
        person: person.into(),
        subject: subject.into(),
    }
}

fn sign_in(store: &mut Store, who: &Actor, groups: &[&str]) {
    let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    store
        .record_sign_in(who, &groups, json!({"decided": {"quorumGroups": groups}}))
        .unwrap();
}

/// A group an `[[oidc.rule]]` names (`release`, listing only bob) holds a request of
/// two approvals asked before anyone signed in. carol may not vote until a sign-in puts
/// her in the group, then her vote counts and its event says by which sign-in; dave's
/// sign-in names no group and he is refused; a later sign-in without the claim takes the
/// membership away. A group no rule names (`ops`) admits no sign-in. The chain verifies.
pub fn a_sign_ins_groups_admit_its_person_to_a_quorum_of_that_group(
    new: impl Fn(&TestClock) -> Store,
) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let mut groups = BTreeMap::new();
    groups.insert("release".to_string(), vec!["web:bob".to_string()]);
    groups.insert("ops".to_string(), vec!["web:bob".to_string()]);
    let mut contexts = BTreeMap::new();
    contexts.insert(
        "ctx".to_string(),
        Quorum {
            approvals: 2,
            group: Some("release".into()),
            decline: None,
        },
    );
    store.set_quorum_policy(Arc::new(Policy {
        groups,
        contexts,
        sign_in_groups: BTreeSet::from(["release".to_string()]),
        ..Policy::default()
    }));
    // One listed member and two approvals: accepted, as sign-ins may fill the group.
    ask_with(&mut store, "p", json!(null), "asker").unwrap();
    let q = row(&mut store, "p").required_quorum().unwrap();
    assert!(q.joins_by_sign_in, "{q:?}");
    assert_eq!(q.members.as_deref(), Some(&["bob".to_string()][..]));

    let carol = oidc("carol", "u-3");
    let as_carol = LeaseRef::Voter(carol.clone());
    assert_eq!(
        code(store.answer(&as_carol, "p", &pick("Postgres"))),
        Code::NotInGroup,
        "no sign-in yet"
    );
    clock.advance(1_000);
    sign_in(&mut store, &carol, &["release"]);
    let mine = store.sign_in_groups("carol").unwrap();
    assert_eq!(
        mine.iter()
            .map(|g| (g.quorum_group.as_str(), g.subject.as_str()))
            .collect::<Vec<_>>(),
        [("release", "u-3")]
    );
    clock.advance(1_000);
    let v = voted(store.answer(&as_carol, "p", &pick("Postgres")).unwrap());
    assert_eq!(v.quorum.progress(), "1/2");

    // dave's claims named no group; a sign-in is no membership by itself.
    let dave = oidc("dave", "u-4");
    sign_in(&mut store, &dave, &[]);
    assert_eq!(
        code(store.answer(&LeaseRef::Voter(dave), "p", &pick("Postgres"))),
        Code::NotInGroup
    );
    // carol signs in again without the claim: she is out (her vote cast stays).
    sign_in(&mut store, &carol, &[]);
    assert!(store.sign_in_groups("carol").unwrap().is_empty());
    ask_with(&mut store, "p2", json!(null), "asker").unwrap();
    assert_eq!(
        code(store.answer(&as_carol, "p2", &pick("Postgres"))),
        Code::NotInGroup,
        "her latest sign-in decides"
    );

    // erin joins, and the listed bob: the quorum is met by the two.
    let erin = oidc("erin", "u-5");
    sign_in(&mut store, &erin, &["release", "ops"]);
    let bob = LeaseRef::Voter(Actor::Web("bob".into()));
    voted(store.answer(&bob, "p2", &pick("Postgres")).unwrap());
    clock.advance(1_000);
    let a = finished(
        store
            .answer(&LeaseRef::Voter(erin.clone()), "p2", &pick("Postgres"))
            .unwrap(),
    );
    assert_eq!(
        a.approvers.as_deref(),
        Some(&["web:bob".to_string(), "oidc:erin@u-5".to_string()][..])
    );
    let joined: Vec<serde_json::Value> = store
        .events("p2")
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "voted")
        .map(|e| e.data["joined"].clone())
        .collect();
    assert_eq!(joined[0], json!(null), "bob is a listed member");
    assert_eq!(joined[1]["group"], "release");
    assert_eq!(joined[1]["subject"], "u-5");

    // A group no rule names: its listed members only, whatever a sign-in said.
    let other = json!({
        "id": "o", "context": "other",
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}],
        "quorum": {"approvals": 1, "group": "ops"},
    });
    ask_value(&mut store, other, "asker").unwrap();
    assert_eq!(
        code(store.answer(&LeaseRef::Voter(erin), "o", &pick("Postgres"))),
        Code::NotInGroup
    );
    assert!(
        !row(&mut store, "o")
            .required_quorum()
            .unwrap()
            .joins_by_sign_in
    );
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}
