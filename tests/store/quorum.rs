//! Quorum as conformance scenarios, through the [`Store`] trait only: a vote
//! per reviewer, the asker's own vote refused, the same reviewer counted once, the
//! request answered exactly once when the quorum is met with every approver named, a
//! decline that vetoes (or counts as a vote), a context's policy that wins over the
//! asker's, a group that restricts who votes, and `audit verify` passing after.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use dshq::core::audit::{Actor, Source};
use dshq::core::quorum::Policy;
use dshq::protocol::error::Code;
use dshq::protocol::{Answer, AnswerItem, Decision, Outcome, Quorum, Request};
use dshq::store::{Answered, AskInput, Asked, LeaseRef, Status, Store};

use crate::lifecycle::{kinds, row};
use crate::scenarios::{pick, TestClock};

const TTL: i64 = 600_000;

/// A one-question request (`db`) in `ctx` with `quorum`, asked by the web token `asker`.
pub(crate) fn ask_with(
    store: &mut Store,
    id: &str,
    quorum: Value,
    asker: &str,
) -> Result<(), Code> {
    ask_value(
        store,
        json!({
            "id": id,
            "context": "ctx",
            "questions": [{"id": "db", "question": "Which database?",
                           "options": [{"label": "Postgres"}, {"label": "SQLite"}]}],
            "quorum": quorum,
        }),
        asker,
    )
}

pub(crate) fn ask_value(store: &mut Store, mut v: Value, asker: &str) -> Result<(), Code> {
    if v["quorum"].is_null() {
        v.as_object_mut().unwrap().remove("quorum");
    }
    let request: Request = serde_json::from_value(v).unwrap();
    let input = AskInput {
        request: Ok(request),
        fallback_id: None,
        salvaged: (None, None),
        raw: String::new(),
        source: Source::WebToken(asker.into()),
        actor: Actor::Web(asker.into()),
    };
    match store.ask(input).unwrap() {
        Asked::Accepted(a) => {
            assert_eq!(a.status, Status::Pending);
            Ok(())
        }
        Asked::Rejected { error, .. } => Err(error.code),
    }
}

/// A plan review (`plan`, approve label `Approve`) in `ctx` with `quorum`.
fn ask_plan(store: &mut Store, id: &str, quorum: Value) {
    ask_value(
        store,
        json!({
            "id": id,
            "context": "ctx",
            "questions": [{"id": "plan", "question": "Ship it?", "detail": "the plan",
                           "options": [{"label": "Approve"}, {"label": "Revise"}],
                           "intent": {"kind": "plan-review", "approve": "Approve"}}],
            "quorum": quorum,
        }),
        "asker",
    )
    .unwrap();
}

fn plan(label: &str) -> Answer {
    Answer {
        answers: vec![AnswerItem {
            id: "plan".into(),
            selected: vec![label.into()],
            custom: None,
            edited: None,
        }],
    }
}

/// `who` acting through the host's lease `token` (the page, the API, MCP).
fn web(token: &str, who: &str) -> LeaseRef {
    LeaseRef::OnBehalf {
        token: token.into(),
        actor: Actor::Web(who.into()),
    }
}

fn vote(store: &mut Store, who: &LeaseRef, id: &str, a: &Answer) -> dshq::Result<Answered> {
    store.answer(who, id, a)
}

pub(crate) fn code<T: std::fmt::Debug>(r: dshq::Result<T>) -> Code {
    r.expect_err("refused").to_user_error().code
}

pub(crate) fn voted(p: Answered) -> Box<dshq::store::Voted> {
    match p {
        Answered::Voted(v) => v,
        other => panic!("expected a vote that leaves the request open: {other:?}"),
    }
}

pub(crate) fn finished(p: Answered) -> dshq::protocol::AnsweredOutcome {
    match p {
        Answered::Finished(Outcome::Answered(a)) => a,
        other => panic!("expected the answer: {other:?}"),
    }
}

/// 2 of 3: the asker's own vote is refused (`OWN_REQUEST`, on any face: its web token's
/// name as a provider too), a reviewer voting twice is counted once (another answer is
/// `ALREADY_VOTED`), and the second distinct reviewer, on another face (a CLI provider
/// lease), meets the quorum: answered once, with both approvers; a later vote is
/// `REQUEST_FINAL`. The chain records each vote, and `audit verify` passes.
pub fn quorum_two_of_three_is_met_once_by_distinct_reviewers(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask_with(&mut store, "q", json!({"approvals": 2}), "alice").unwrap();
    assert!(row(&mut store, "q").required_quorum().is_some());
    let (host, _) = store.register("ctx", "host", TTL).unwrap();

    clock.advance(1);
    assert_eq!(
        code(vote(
            &mut store,
            &web(&host.lease, "alice"),
            "q",
            &pick("Postgres")
        )),
        Code::OwnRequest
    );
    let v = voted(vote(&mut store, &web(&host.lease, "bob"), "q", &pick("Postgres")).unwrap());
    assert_eq!(v.voter, "web:bob");
    assert_eq!(v.quorum.approvals, 2);
    assert_eq!(v.quorum.votes.len(), 1);
    clock.advance(1);
    // The same reviewer again: counted once, nothing recorded.
    let again = voted(vote(&mut store, &web(&host.lease, "bob"), "q", &pick("Postgres")).unwrap());
    assert_eq!(again.quorum.votes.len(), 1);
    assert_eq!(
        code(vote(
            &mut store,
            &web(&host.lease, "bob"),
            "q",
            &pick("SQLite")
        )),
        Code::AlreadyVoted
    );
    let r = row(&mut store, "q");
    assert_eq!(r.status, Status::Pending, "a vote does not claim");
    assert_eq!(r.parsed_votes().len(), 1);
    assert_eq!(kinds(&mut store, "q"), ["accepted", "voted"]);

    // Another face: the host lets the context go, a CLI reviewer takes a lease.
    assert!(store.release(&host.lease).unwrap());
    let (cli, _) = store.register("ctx", "alice", TTL).unwrap();
    clock.advance(1);
    assert_eq!(
        code(vote(
            &mut store,
            &LeaseRef::Token(cli.lease.clone()),
            "q",
            &pick("Postgres")
        )),
        Code::OwnRequest,
        "the asker's name as a provider is the asker"
    );
    assert!(store.release(&cli.lease).unwrap());
    let carol = LeaseRef::Transient {
        name: "carol".into(),
        ttl_ms: TTL,
    };
    // A different answer is a vote for that answer: no quorum yet.
    let v = voted(vote(&mut store, &carol, "q", &pick("SQLite")).unwrap());
    assert_eq!(v.quorum.votes.len(), 2);
    let (dan, _) = store.register("ctx", "dan", TTL).unwrap();
    clock.advance(1);
    let a = finished(
        vote(
            &mut store,
            &LeaseRef::Token(dan.lease.clone()),
            "q",
            &pick("Postgres"),
        )
        .unwrap(),
    );
    assert_eq!(a.answer, pick("Postgres"));
    assert_eq!(
        a.approvers.as_deref(),
        Some(&["web:bob".to_string(), "provider:dan".to_string()][..])
    );
    assert_eq!(a.provider.as_deref(), Some("dan"));
    let r = row(&mut store, "q");
    assert_eq!(r.status, Status::Answered);
    assert_eq!(
        kinds(&mut store, "q"),
        ["accepted", "voted", "voted", "voted", "answered"]
    );
    let outcome = r.outcome().unwrap();
    let json = serde_json::to_value(&outcome).unwrap();
    assert_eq!(json["approvers"], json!(["web:bob", "provider:dan"]));
    assert_eq!(
        code(vote(
            &mut store,
            &LeaseRef::Token(dan.lease.clone()),
            "q",
            &pick("Postgres")
        )),
        Code::RequestFinal
    );
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}

/// A decline vetoes by default: the first declining vote answers the request with that
/// decline, naming its voter. Under `decline: "vote"` a decline is one vote among others.
pub fn quorum_a_decline_vetoes_unless_it_is_a_vote(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask_plan(&mut store, "veto", json!({"approvals": 2}));
    ask_plan(
        &mut store,
        "count",
        json!({"approvals": 2, "decline": "vote"}),
    );
    let (host, _) = store.register("ctx", "host", TTL).unwrap();
    clock.advance(1);
    voted(
        vote(
            &mut store,
            &web(&host.lease, "bob"),
            "veto",
            &plan("Approve"),
        )
        .unwrap(),
    );
    let a = finished(
        vote(
            &mut store,
            &web(&host.lease, "carol"),
            "veto",
            &plan("Revise"),
        )
        .unwrap(),
    );
    assert_eq!(a.decision, Some(Decision::Declined));
    assert_eq!(a.approvers.as_deref(), Some(&["web:carol".to_string()][..]));

    let v = voted(
        vote(
            &mut store,
            &web(&host.lease, "carol"),
            "count",
            &plan("Revise"),
        )
        .unwrap(),
    );
    assert_eq!(v.quorum.decline, "vote");
    assert_eq!(v.quorum.votes[0].decision, Some(Decision::Declined));
    voted(
        vote(
            &mut store,
            &web(&host.lease, "bob"),
            "count",
            &plan("Approve"),
        )
        .unwrap(),
    );
    let a = finished(
        vote(
            &mut store,
            &web(&host.lease, "dan"),
            "count",
            &plan("Approve"),
        )
        .unwrap(),
    );
    assert_eq!(a.decision, Some(Decision::Approved));
    assert_eq!(
        a.approvers.as_deref(),
        Some(&["web:bob".to_string(), "web:dan".to_string()][..])
    );
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}

/// A context's policy wins over the asker's quorum, and its group restricts who votes
/// (`NOT_IN_GROUP`); an asker's group the config does not define is refused at the ask
/// (`BAD_REQUEST`). A request without a quorum is answered by one reviewer, as before.
pub fn quorum_the_policy_wins_and_a_group_restricts_the_voters(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let mut groups = BTreeMap::new();
    groups.insert(
        "ops".to_string(),
        vec!["web:bob".to_string(), "provider:carol".to_string()],
    );
    let mut contexts = BTreeMap::new();
    contexts.insert(
        "ctx".to_string(),
        Quorum {
            approvals: 2,
            group: Some("ops".into()),
            decline: None,
        },
    );
    store.set_quorum_policy(Arc::new(Policy {
        groups,
        contexts,
        people: Default::default(),
        ..Default::default()
    }));
    // The asker asked for one approval: the policy's two of group ops win.
    ask_with(&mut store, "p", json!({"approvals": 1}), "alice").unwrap();
    let q = row(&mut store, "p").required_quorum().unwrap();
    assert_eq!((q.approvals, q.group.as_deref()), (2, Some("ops")));
    let (host, _) = store.register("ctx", "host", TTL).unwrap();
    assert_eq!(
        code(vote(
            &mut store,
            &web(&host.lease, "mallory"),
            "p",
            &pick("Postgres")
        )),
        Code::NotInGroup
    );
    voted(vote(&mut store, &web(&host.lease, "bob"), "p", &pick("Postgres")).unwrap());
    assert!(store.release(&host.lease).unwrap());
    let carol = LeaseRef::Transient {
        name: "carol".into(),
        ttl_ms: TTL,
    };
    let a = finished(vote(&mut store, &carol, "p", &pick("Postgres")).unwrap());
    assert_eq!(a.approvers.unwrap().len(), 2);

    // Outside the policy's context: the asker's quorum, and its group must exist.
    let mut v = json!({
        "id": "g", "context": "other",
        "questions": [{"id": "db", "question": "?", "options": [{"label": "Postgres"}]}],
        "quorum": {"approvals": 1, "group": "nobody"},
    });
    assert_eq!(
        ask_value(&mut store, v.clone(), "alice"),
        Err(Code::BadRequest)
    );
    v["id"] = json!("plain");
    v.as_object_mut().unwrap().remove("quorum");
    ask_value(&mut store, v, "alice").unwrap();
    let bob = LeaseRef::Transient {
        name: "bob".into(),
        ttl_ms: TTL,
    };
    let o = finished(vote(&mut store, &bob, "plain", &pick("Postgres")).unwrap());
    assert_eq!(o.approvers, None, "no quorum: answered as before");
    assert_eq!(kinds(&mut store, "plain"), ["accepted", "answered"]);
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}

/// `audit verify` catches what quorum adds to the record when it is edited in place
/// (SQLite, with its record triggers dropped, as a forger with the file would): a vote's
/// answer, a vote removed or inserted, the approvers, the quorum a request is held to.
#[test]
fn quorum_audit_verify_catches_forged_votes_approvers_and_quorum() {
    let forged = pick("SQLite").to_json();
    let cases: Vec<(String, &str)> = vec![
        (
            format!("UPDATE votes SET answer = '{forged}' WHERE voter = 'web:bob'"),
            "answer of \"web:bob\"'s vote",
        ),
        (
            "DELETE FROM votes WHERE voter = 'web:bob'".into(),
            "has no votes row",
        ),
        (
            "INSERT INTO votes (request_seq, voter, answer, decision, lease_id, created_ms)
             SELECT request_seq, 'web:mallory', answer, decision, lease_id, created_ms FROM votes
             WHERE voter = 'web:bob'"
                .into(),
            "no voted event",
        ),
        (
            "UPDATE requests SET approvers = '[\"web:mallory\",\"web:bob\"]' WHERE id = 'q'".into(),
            "approvers",
        ),
        (
            "UPDATE requests SET quorum = NULL WHERE id = 'q'".into(),
            "quorum",
        ),
        (
            "UPDATE votes SET person = 'mallory' WHERE voter = 'web:bob'".into(),
            "person of \"web:bob\"'s vote",
        ),
    ];
    for (sql, what) in cases {
        let clock = TestClock::new();
        let mut store = crate::drivers::sqlite(&clock);
        ask_with(&mut store, "q", json!({"approvals": 2}), "alice").unwrap();
        let (host, _) = store.register("ctx", "host", TTL).unwrap();
        clock.advance(1);
        voted(vote(&mut store, &web(&host.lease, "bob"), "q", &pick("Postgres")).unwrap());
        clock.advance(1);
        finished(
            vote(
                &mut store,
                &web(&host.lease, "carol"),
                "q",
                &pick("Postgres"),
            )
            .unwrap(),
        );
        assert_eq!(store.verify(&[]).unwrap().broken, None);
        let conn = crate::drivers::sqlite_connection(&mut store);
        conn.execute_batch(
            "DROP TRIGGER votes_record_fixed; DROP TRIGGER votes_no_delete;
             DROP TRIGGER requests_quorum_fixed; DROP TRIGGER requests_approvers_fixed;
             DROP TRIGGER requests_final_fixed;",
        )
        .unwrap();
        conn.execute(&sql, []).unwrap();
        let broken = store.verify(&[]).unwrap().broken;
        let text = broken.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(
            broken.is_some() && text.contains(what),
            "{sql}: {what:?} in {text}"
        );
    }
}

/// A Slack reviewer votes as the reviewer, not the Slack account: the same
/// reviewer pressing from two Slack accounts mapped to them is one voter; another reviewer
/// meets the quorum, the approvers name the reviewers (`slack:NAME`), the events the
/// accounts; `audit verify` passes.
pub fn quorum_counts_a_slack_reviewer_once_whichever_account(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask_with(&mut store, "s", json!({"approvals": 2}), "asker").unwrap();
    let (host, _) = store.register("ctx", "host", TTL).unwrap();
    let slack = |reviewer: &str, user: &str| LeaseRef::OnBehalf {
        token: host.lease.clone(),
        actor: Actor::Slack {
            reviewer: reviewer.into(),
            user: user.into(),
        },
    };
    clock.advance(1);
    let v = voted(vote(&mut store, &slack("carol", "U0C1"), "s", &pick("SQLite")).unwrap());
    assert_eq!(v.voter, "slack:carol");
    clock.advance(1);
    let again = voted(vote(&mut store, &slack("carol", "U0C2"), "s", &pick("SQLite")).unwrap());
    assert_eq!(again.quorum.votes.len(), 1, "one reviewer, one vote");
    clock.advance(1);
    let a = finished(vote(&mut store, &slack("dave", "U0D1"), "s", &pick("SQLite")).unwrap());
    assert_eq!(
        a.approvers.as_deref(),
        Some(&["slack:carol".to_string(), "slack:dave".to_string()][..])
    );
    let actors: Vec<String> = store
        .events("s")
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "voted")
        .map(|e| e.actor)
        .collect();
    assert_eq!(actors, ["slack:carol@U0C1", "slack:dave@U0D1"]);
    let v = store.verify(&[]).unwrap();
    assert_eq!(v.broken, None, "{v:?}");
}

/// A quorum counts persons, not faces: `provider:bob` (a one-shot CLI vote) and
/// `web:bob` are one person, so bob's second vote through the page is `ALREADY_VOTED`
/// (same answer or not); the people directory links a mail address to the asker, whose
/// vote through a mail link is `OWN_REQUEST`; votes take no lease, so a terminal holding
/// the context keeps nobody from voting; carol's Slack press meets the quorum with
/// the votes (identity and person) in the outcome; `audit verify` passes.
pub fn quorum_counts_persons_not_faces(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let people = dshq::core::people::People::new(
        vec![("alice".into(), vec!["mail:alice@example.com".into()])],
        &BTreeMap::new(),
    )
    .unwrap();
    store.set_quorum_policy(Arc::new(Policy {
        people,
        ..Policy::default()
    }));
    ask_with(&mut store, "p", json!({"approvals": 2}), "alice").unwrap();
    // A terminal reviewer holds the context: a vote needs no lease, so none is refused.
    let (_terminal, _) = store.register("ctx", "terminal", TTL).unwrap();
    clock.advance(1);
    let cli_bob = LeaseRef::Transient {
        name: "bob".into(),
        ttl_ms: TTL,
    };
    let v = voted(vote(&mut store, &cli_bob, "p", &pick("Postgres")).unwrap());
    assert_eq!(v.voter, "provider:bob");
    assert_eq!(v.quorum.votes[0].person.as_deref(), Some("bob"));
    assert_eq!(v.quorum.progress(), "1/2");
    clock.advance(1);
    let web_bob = LeaseRef::Voter(Actor::Web("bob".into()));
    for answer in ["Postgres", "SQLite"] {
        assert_eq!(
            code(vote(&mut store, &web_bob, "p", &pick(answer))),
            Code::AlreadyVoted,
            "bob through the page, {answer}"
        );
    }
    // bob's own face again with the same answer: counted once (a replay), not refused.
    let again = voted(vote(&mut store, &cli_bob, "p", &pick("Postgres")).unwrap());
    assert_eq!(again.quorum.votes.len(), 1);
    let mail_alice = LeaseRef::Voter(Actor::Mail("alice@example.com".into()));
    assert_eq!(
        code(vote(&mut store, &mail_alice, "p", &pick("Postgres"))),
        Code::OwnRequest,
        "the asker's mail address is the asker"
    );
    assert_eq!(kinds(&mut store, "p"), ["accepted", "voted"]);
    clock.advance(1);
    let slack_carol = LeaseRef::Voter(Actor::Slack {
        reviewer: "carol".into(),
        user: "U0C1".into(),
    });
    let a = finished(vote(&mut store, &slack_carol, "p", &pick("Postgres")).unwrap());
    assert_eq!(
        a.approvers.as_deref(),
        Some(&["provider:bob".to_string(), "slack:carol".to_string()][..])
    );
    let votes = a.votes.expect("the outcome names every vote");
    let who: Vec<(String, Option<String>)> = votes
        .iter()
        .map(|v| (v.voter.clone(), v.person.clone()))
        .collect();
    assert_eq!(
        who,
        [
            ("provider:bob".to_string(), Some("bob".to_string())),
            ("slack:carol".to_string(), Some("carol".to_string()))
        ]
    );
    let r = row(&mut store, "p");
    assert_eq!((r.status, r.claimed_lease), (Status::Answered, None));
    let voted_events: Vec<Value> = store
        .events("p")
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "voted")
        .map(|e| e.data)
        .collect();
    assert_eq!(voted_events[0]["person"], "bob");
    assert_eq!(voted_events[1]["person"], "carol");
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}
