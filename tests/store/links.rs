//! Mail links as a conformance scenario, through the [`Store`] trait only: an
//! answer sent through a link records the link as used in the answer's transaction, so
//! the link answers once (`LINK_USED` after, changing nothing); an answer that is refused
//! leaves the link unused; a link answers its own request only, and only while the request
//! is in the context the link was mailed for (`WRONG_CONTEXT`); the answer is the
//! recipient's (`mail:ADDRESS`) in the event chain, which still verifies.

use dshq::core::audit::{Actor, Source};
use dshq::protocol::error::Code;
use dshq::protocol::Request;
use dshq::store::driver::links::LinkUse;
use dshq::store::{Answered, AskInput, Asked, LeaseRef, Status, Store};

use crate::lifecycle::{code, kinds, row};
use crate::scenarios::{pick, TestClock};

fn ask_simple(store: &mut Store, id: &str) {
    let v = serde_json::json!({
        "id": id,
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}],
    });
    let input = AskInput {
        raw: v.to_string(),
        request: Ok(serde_json::from_value::<Request>(v).unwrap()),
        fallback_id: None,
        salvaged: (None, None),
        source: Source::Cli,
        actor: Actor::Cli,
    };
    assert!(matches!(store.ask(input).unwrap(), Asked::Accepted(_)));
}

/// A link made now (after every request these tests ask before using it).
fn link(id: &str, request: &str) -> LinkUse {
    LinkUse {
        link_id: id.into(),
        request_id: request.into(),
        context: "default".into(),
        recipient: "alice@example.com".into(),
        issued_ms: dshq::clock::Millis::MAX,
        digest: None,
    }
}

pub fn a_mail_link_answers_once(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    for id in ["l1", "l2"] {
        ask_simple(&mut store, id);
    }
    let (reg, _) = store.register("default", "host", 600_000).unwrap();
    let by_mail = LeaseRef::OnBehalf {
        token: reg.lease.clone(),
        actor: Actor::Mail("alice@example.com".into()),
    };
    assert!(!store.link_used("k1").unwrap());

    // A refused answer leaves the link unused and changes nothing.
    let before = kinds(&mut store, "l1");
    let e = store.answer_by_link(&link("k1", "l1"), &by_mail, &pick("MySQL"));
    assert_eq!(code(e), Code::BadAnswer);
    assert!(!store.link_used("k1").unwrap());
    assert_eq!(kinds(&mut store, "l1"), before);

    // The answer, as the recipient, spends the link.
    match store
        .answer_by_link(&link("k1", "l1"), &by_mail, &pick("SQLite"))
        .unwrap()
    {
        Answered::Finished(o) => assert_eq!(o.id(), "l1"),
        other => panic!("{other:?}"),
    }
    assert!(store.link_used("k1").unwrap());
    let answered = store
        .events("l1")
        .unwrap()
        .into_iter()
        .find(|e| e.kind == "answered")
        .unwrap();
    assert_eq!(answered.actor, "mail:alice@example.com");

    // Used: refused, nothing changes, on this request or another.
    let before = kinds(&mut store, "l1");
    let e = store.answer_by_link(&link("k1", "l1"), &by_mail, &pick("SQLite"));
    assert_eq!(code(e), Code::LinkUsed);
    let e = store.answer_by_link(&link("k1", "l2"), &by_mail, &pick("SQLite"));
    assert_eq!(code(e), Code::LinkUsed);
    assert_eq!(kinds(&mut store, "l1"), before);
    assert_eq!(row(&mut store, "l2").status, Status::Pending);
    // Another link of the answered request: REQUEST_FINAL, and it stays unused.
    let e = store.answer_by_link(&link("k2", "l1"), &by_mail, &pick("Postgres"));
    assert_eq!(code(e), Code::RequestFinal);
    assert!(!store.link_used("k2").unwrap());
    // A link made before its request id was asked (the one it was sent for was pruned,
    // and the id asked again): the request is not the link's; nothing changes.
    let early = LinkUse {
        issued_ms: row(&mut store, "l2").created_ms - 1,
        ..link("k3", "l2")
    };
    let e = store.answer_by_link(&early, &by_mail, &pick("SQLite"));
    assert_eq!(code(e), Code::NotFound);
    assert!(!store.link_used("k3").unwrap());
    assert_eq!(row(&mut store, "l2").status, Status::Pending);
    // A link sent to another context's reviewers (the request was escalated away from
    // them, or was never theirs): WRONG_CONTEXT, unused, nothing changes.
    let elsewhere = LinkUse {
        context: "ops".into(),
        ..link("k4", "l2")
    };
    let before = kinds(&mut store, "l2");
    let e = store.answer_by_link(&elsewhere, &by_mail, &pick("SQLite"));
    assert_eq!(code(e), Code::WrongContext);
    assert!(!store.link_used("k4").unwrap());
    assert_eq!(kinds(&mut store, "l2"), before);
    assert_eq!(row(&mut store, "l2").status, Status::Pending);
    // A link bound to the request's digest (a push action) acts only on the request with
    // that digest: another is LINK_INVALID, unused, nothing changes; the right one answers.
    let digest = row(&mut store, "l2").request_digest().unwrap();
    let changed = LinkUse {
        digest: Some("sha256:0000".into()),
        ..link("k5", "l2")
    };
    let e = store.answer_by_link(&changed, &by_mail, &pick("SQLite"));
    assert_eq!(code(e), Code::LinkInvalid);
    assert!(!store.link_used("k5").unwrap());
    assert_eq!(kinds(&mut store, "l2"), before);
    let bound = LinkUse {
        digest: Some(digest),
        ..link("k6", "l2")
    };
    store
        .answer_by_link(&bound, &by_mail, &pick("SQLite"))
        .unwrap();
    assert!(store.link_used("k6").unwrap());
    assert_eq!(row(&mut store, "l2").status, Status::Answered);
    let v = store.verify(&[]).unwrap();
    assert_eq!(v.broken, None, "{v:?}");
}
