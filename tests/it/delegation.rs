//! Delegation while a reviewer is away, through the real binary: `dshq away` hands alice's
//! requests to dave until a time; the ladder's reminder of a request mailed to alice
//! reaches dave too (a real SMTP server the test starts, `smtp_sink.py`); dave answers for
//! alice over the HTTP API (`?for=alice`) in a context his own token is not bound to, and
//! `dshq show`, the event trail and the outcome say "dave for alice"; dave is never the
//! asker; a two-person quorum is never met by alice and dave alone; after the notice is
//! cancelled, or past its end (the test clock), dave answers for nobody. Every bad notice
//! has its code, on the CLI and the API.

use serde_json::{json, Value};

use crate::api::{call, host, token};
use crate::email::{free_port, mail_host_with, Sink};
use crate::helpers::*;

const PEOPLE: &str = "[people]\nalice = [\"mail:alice@example.com\", \"web:alice\"]\n\
                      dave = [\"mail:dave@example.com\", \"web:dave\"]\n\
                      bob = [\"web:bob\"]\n";

/// A root whose config file holds [`PEOPLE`]; the directory it lives in.
fn people_env() -> (tempfile::TempDir, Env) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, PEOPLE).unwrap();
    let env = Env::new().with_var("DSHQ_CONFIG", config.to_str().unwrap());
    (dir, env)
}

fn ship() -> Value {
    json!({"answers": [{"id": "q", "selected": ["Ship"]}]})
}

fn request(id: &str, context: &str, extra: Value) -> Value {
    let mut r = json!({"id": id, "context": context,
                       "questions": [{"id": "q", "question": "Ship it?",
                                      "options": [{"label": "Ship"}, {"label": "Hold"}]}]});
    if let (Some(r), Some(e)) = (r.as_object_mut(), extra.as_object()) {
        r.extend(e.clone());
    }
    r
}

/// `PUT`/`DELETE` on the API with `token`.
fn send(method: &str, url: &str, token: &str, body: Option<&Value>) -> crate::api::Resp {
    let bytes = body.map(|b| b.to_string().into_bytes());
    call(method, url, Some(token), bytes.as_deref())
}

/// alice's request is mailed to her; she goes away with dave as her delegate; the
/// ladder's reminder then reaches dave's mailbox as well as hers. dave answers it for
/// alice over the API, in a context his own token is not bound to: the outcome, `dshq
/// show` and the event trail say "dave for alice", and the chain verifies.
#[test]
fn an_away_reviewers_reminder_reaches_the_delegate_who_answers_for_them() {
    let (dir, env) = people_env();
    // alice may answer everywhere; dave's own token only in another context.
    token(&env, "reviewer", "alice", None);
    let dave = token(&env, "reviewer", "dave", Some("dave-only"));
    let (smtp, web) = (free_port(), free_port());
    let sink = Sink::start(smtp, &dir.path().join("mail"), 0);
    let mail = ["--email", "votes=alice@example.com"];
    let h = mail_host_with(&env, smtp, web, &mail, &[]);
    env.ask(&request(
        "r",
        "votes",
        json!({"ladder": {"remindAfter": "1m"}}),
    ))
    .ok();
    // The request is new: alice alone is told.
    let first = sink.wait_for("r", 1);
    assert_eq!(first[0]["rcpt_tos"], json!(["alice@example.com"]));
    h.daemon.stop();

    env.json(&[
        "away",
        "--until",
        "1h",
        "--delegate",
        "dave",
        "--as",
        "alice",
    ])
    .ok();
    // 90 s on: the reminder rung runs, and reaches alice and, while she is away, dave.
    let h = mail_host_with(&env, smtp, web, &mail, &[("DSHQ_CLOCK_SKEW", "+90s")]);
    let mut to_dave = Vec::new();
    assert!(
        wait_until(DEADLINE, || {
            to_dave = sink
                .of("r")
                .into_iter()
                .filter(|m| m["rcpt_tos"] == json!(["dave@example.com"]))
                .collect();
            !to_dave.is_empty()
        }),
        "no mail reached the delegate: {:?}\n{}",
        sink.mails(),
        h.daemon.log_text()
    );
    assert_eq!(to_dave.len(), 1, "{to_dave:?}");
    let all = sink.of("r");
    assert_eq!(
        all.len(),
        3,
        "accepted to alice; the reminder to alice and dave: {all:?}"
    );

    // dave answers for alice over the API: his token is bound to another context, alice
    // may answer in this one.
    let url = |q: &str| format!("{}/api/v1/requests/r/answer{q}", h.base);
    let r = send("POST", &url(""), &dave, Some(&ship()));
    assert_eq!(
        r.status, 404,
        "dave alone does not reach the context: {r:?}"
    );
    let r = send("POST", &url("?for=alice"), &dave, Some(&ship()));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["onBehalfOf"], "alice", "{}", r.body);
    let shown = env.json(&["show", "r"]).ok().json();
    assert_eq!(shown["outcome"]["onBehalfOf"], "alice", "{shown}");
    let text = env.run(&["show", "r"]).ok().stdout;
    assert!(text.contains("for alice"), "{text}");
    let events = env.json(&["events", "r"]).ok().json();
    let answered = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "answered")
        .unwrap();
    assert_eq!(answered["actor"], "web:dave", "{answered}");
    assert_eq!(answered["data"]["for"], "alice", "{answered}");
    env.run(&["audit", "verify"]).ok();
    h.daemon.stop();
}

/// dave, alice's delegate, is refused on a request he asked (`OWN_REQUEST`); a two-person
/// quorum is not met by dave for alice and then alice (or dave himself): `ALREADY_VOTED`
/// on the API and the CLI; bob meets it. Once the notice is cancelled, and past the end of
/// a new one, dave answers for nobody (`NOT_DELEGATE`). Each bad notice has its code on
/// the CLI and the API.
#[test]
fn a_delegate_is_never_the_asker_never_counts_twice_and_stops_at_the_end() {
    let (_dir, env) = people_env();
    let (alice, dave, bob) = (
        token(&env, "reviewer", "alice", None),
        token(&env, "reviewer", "dave", None),
        token(&env, "reviewer", "bob", None),
    );
    let asker = token(&env, "asker", "asker", None);
    let h = host(&env, &[]);
    let away = h.url("/away");

    // Bad notices, each with its code (alice sets her own over the API).
    for (body, code) in [
        (
            json!({"until": "2001-01-01T00:00:00Z", "delegate": "dave"}),
            "AWAY_IN_PAST",
        ),
        (
            json!({"until": "2999-01-01T00:00:00Z", "delegate": "alice"}),
            "AWAY_SELF",
        ),
        (
            json!({"until": "2999-01-01T00:00:00Z", "delegate": "zed"}),
            "UNKNOWN_DELEGATE",
        ),
        (json!({"until": "soon", "delegate": "dave"}), "BAD_REQUEST"),
    ] {
        let r = send("PUT", &away, &alice, Some(&body));
        assert_eq!(r.code(), code, "{body}: {r:?}");
    }
    assert_eq!(send("DELETE", &away, &alice, None).code(), "NOT_AWAY");
    let r = send(
        "PUT",
        &away,
        &alice,
        Some(&json!({"until": "2999-01-01T00:00:00Z", "delegate": "dave"})),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        (&r.body["person"], &r.body["delegate"]),
        (&json!("alice"), &json!("dave"))
    );
    // A chain: dave cannot go away while he is alice's delegate.
    let r = env.json(&["away", "--until", "1h", "--delegate", "bob", "--as", "dave"]);
    assert_eq!(
        (r.code, r.error_code()),
        (3, "AWAY_CHAIN".to_string()),
        "{r:?}"
    );
    let listed = h.get("/away", Some(&bob));
    assert_eq!(listed.body[0]["delegate"], "dave", "{listed:?}");

    // Never the asker.
    let ask = |t: &str, r: Value| {
        let resp = h.post("/requests", Some(t), &r);
        assert_eq!(resp.status, 201, "{resp:?}");
    };
    ask(&dave, request("own", "default", json!({})));
    let r = h.post("/requests/own/answer?for=alice", Some(&dave), &ship());
    assert_eq!((r.status, r.code()), (403, "OWN_REQUEST"), "{r:?}");

    // A two-person quorum: dave for alice occupies both.
    ask(
        &asker,
        request("q", "default", json!({"quorum": {"approvals": 2}})),
    );
    let r = h.post("/requests/q/answer?for=alice", Some(&dave), &ship());
    assert_eq!(r.status, 202, "{r:?}");
    assert_eq!(r.body["quorum"]["votes"][0]["onBehalfOf"], "alice", "{r:?}");
    let r = h.post("/requests/q/answer", Some(&alice), &ship());
    assert_eq!(r.code(), "ALREADY_VOTED", "{r:?}");
    let r = h.post("/requests/q/answer", Some(&dave), &ship());
    assert_eq!(r.code(), "ALREADY_VOTED", "{r:?}");
    let r = env.json(&["answer", "q", "--name", "alice", "--select", "Ship"]);
    assert_eq!(r.error_code(), "ALREADY_VOTED", "{r:?}");
    let shown = env.json(&["show", "q"]).ok().json();
    assert_eq!(shown["status"], "pending", "{shown}");
    let r = h.post("/requests/q/answer", Some(&bob), &ship());
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["approvers"], json!(["web:dave", "web:bob"]), "{r:?}");

    // Cancelled: dave answers for nobody.
    ask(&asker, request("after", "default", json!({})));
    env.json(&["away", "--cancel", "--as", "alice"]).ok();
    let r = h.post("/requests/after/answer?for=alice", Some(&dave), &ship());
    assert_eq!((r.status, r.code()), (403, "NOT_DELEGATE"), "{r:?}");
    // Set again for two minutes; three minutes on (the test clock), it no longer holds.
    // (The daemon stops first: its host's lease of the context is not what is tested.)
    h.daemon.stop();
    env.json(&[
        "away",
        "--until",
        "2m",
        "--delegate",
        "dave",
        "--as",
        "alice",
    ])
    .ok();
    let late = env.run_env(
        &[("DSHQ_CLOCK_SKEW", "+3m")],
        &[
            "--json", "answer", "after", "--name", "dave", "--for", "alice", "--select", "Ship",
        ],
    );
    assert_eq!(
        (late.code, late.error_code()),
        (14, "NOT_DELEGATE".to_string()),
        "{late:?}"
    );
    // That write's sweep recorded the end: the notice is gone for every clock.
    assert_eq!(env.json(&["away"]).ok().json(), json!([]));
    let exported = env.run(&["export"]).ok().stdout;
    assert!(exported.contains("away-ended"), "{exported}");
    env.run(&["audit", "verify"]).ok();
}

/// The page's away form: alice (signed in with her token) hands over to dave with the
/// session's CSRF token; the page then says so and lists it, and `dshq away` agrees; a
/// form without the token changes nothing (`FORBIDDEN`); a bad notice shows its code;
/// "I am back" cancels it. An auditor sees the list but no form.
#[test]
fn the_page_sets_and_cancels_ones_own_notice_with_its_csrf_token() {
    let (_dir, env) = people_env();
    let alice = token(&env, "reviewer", "alice", None);
    let audit = token(&env, "auditor", "audit", None);
    let h = host(&env, &[]);
    let s = crate::page::login(&h, &alice);
    let page = s.get("/away");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("id=\"away-set\""), "{}", page.body);

    let set = [("action", "set"), ("until", "8h"), ("delegate", "dave")];
    let forged = s.post("/away", &set);
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert_eq!(env.json(&["away"]).ok().json(), json!([]));
    let mut with_csrf = vec![("csrf", s.csrf.as_str())];
    with_csrf.extend_from_slice(&set);
    let r = s.post("/away", &with_csrf);
    assert_eq!(r.status, 303, "{}", r.body);
    let page = s.get("/away");
    assert!(page.body.contains("id=\"away-now\""), "{}", page.body);
    assert!(page.body.contains("dave answers for you"), "{}", page.body);
    let listed = env.json(&["away"]).ok().json();
    assert_eq!(listed[0]["person"], "alice");
    assert_eq!(listed[0]["setBy"], "web:alice");

    let bad = [
        ("csrf", s.csrf.as_str()),
        ("action", "set"),
        ("until", "8h"),
        ("delegate", "alice"),
    ];
    let r = s.post("/away", &bad);
    assert!(r.body.contains("AWAY_SELF"), "{} {}", r.status, r.body);

    let auditor = crate::page::login(&h, &audit);
    let seen = auditor.get("/away");
    assert!(seen.body.contains("id=\"away-list\""), "{}", seen.body);
    assert!(!seen.body.contains("id=\"away-set\""), "{}", seen.body);

    let r = s.post("/away", &[("csrf", s.csrf.as_str()), ("action", "cancel")]);
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(env.json(&["away"]).ok().json(), json!([]));
    h.daemon.stop();
}
