//! MCP revision 2026-07-28 beside 2025-11-25: the official Python SDK's
//! stateless client (`Client(mode="2026-07-28")`, no `initialize`) against the same
//! `dshq mcp` over stdio and `/mcp` over Streamable HTTP, through the same flows as the
//! handshake-era client in [`crate::mcp`]; the answering human is the real CLI.
//!
//! The SDK has no client for the tasks extension at either revision, so the task
//! requests (`tools/call` declaring the extension, `tasks/get`, `tasks/cancel`) go as raw
//! JSON-RPC through the SDK's own session and transport, stamped with the same
//! per-request `_meta` the SDK puts on every 2026 request (`tests/mcp/client.py`, `raw`).

use serde_json::json;

use crate::api::{host, token};
use crate::helpers::Env;
use crate::mcp::{
    abort, ask_and_answer, assert_no_task, check_review, client, events, http, one_request,
    pending_then_get, review_requests, stdio, text, tools_and_schemas, Transport,
};

fn stateless(t: Transport) -> Transport {
    Transport::Stateless(Box::new(t))
}

/// Both revisions from one server: the handshake client negotiates 2025-11-25, the
/// stateless one is served at 2026-07-28, and both see the same tools.
fn both_revisions(env: &Env, t: &Transport) {
    let old = client(env, t, "tools", &[]);
    assert_eq!(old["tools"]["protocol"], "2025-11-25", "{old}");
    let new = client(env, &stateless(t.clone()), "tools", &[]);
    assert_eq!(new["tools"]["protocol"], "2026-07-28", "{new}");
    assert_eq!(
        old["tools"]["tools"], new["tools"]["tools"],
        "one set of tools behind both revisions"
    );
}

/// Ask as a task, see it working, cancel another; then, from a new client (and after a
/// restart of the server when the caller did one), poll it to completion after a CLI
/// answer.
fn task_start(env: &Env, t: &Transport, rid: &str) {
    let s = client(env, t, "task-start", &[("MCP_RID", rid)]);
    assert_no_task(&s);
    let created = &s["created"]["task"];
    assert_eq!(created["taskId"], rid, "the task id is the request id: {s}");
    assert_eq!(created["resultType"], "task", "{s}");
    assert_eq!(created["status"], "working");
    assert_eq!(s["status"]["task"]["status"], "working");
    // The revision's schema requires `ttlMs`; null is "lives as long as the request".
    for t in [created, &s["status"]["task"]] {
        let fields = t.as_object().unwrap();
        assert_eq!(fields.get("ttlMs"), Some(&serde_json::Value::Null), "{t}");
    }
    assert_eq!(s["cancelled"]["task"]["status"], "cancelled", "{s}");
    let cancelled = env
        .outcome(&format!("{rid}-cancelled"))
        .expect("the cancelled task's outcome");
    assert_eq!(cancelled["error"]["code"], "ASK_ABORTED");
}

fn task_poll(env: &Env, t: &Transport, rid: &str) {
    let s = client(env, t, "task-poll", &[("MCP_RID", rid)]);
    assert_eq!(s["after-restart"]["task"]["status"], "working", "{s}");
    let done = &s["done"]["task"];
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["answers"],
        json!([{"id": "color", "selected": ["Red"]}]),
        "the answer inline: {done}"
    );
    assert_eq!(env.wait_outcome(rid)["status"], "answered");
}

/// The human cancels a task's request: the task fails, with the protocol's code in the
/// error's data (the JSON-RPC number is the server-error one).
fn task_failed(env: &Env, t: &Transport, rid: &str) {
    let s = client(env, t, "task-failed", &[("MCP_RID", rid)]);
    let failed = &s["failed"]["task"];
    assert_eq!(failed["status"], "failed", "{s}");
    assert_eq!(failed["error"]["data"]["code"], "ASK_CANCELLED", "{s}");
    assert_eq!(failed["error"]["code"], -32000, "{s}");
    assert_eq!(env.outcome(rid).unwrap()["error"]["code"], "ASK_CANCELLED");
}

/// On 2026-07-28 the server cannot send `elicitation/create`: `review_questions` says so
/// with USAGE and takes no lease.
fn review_says_usage(env: &Env, t: &Transport) {
    one_request(env);
    let s = client(env, t, "review-no-elicitation", &[]);
    let r = &s["review"];
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structured"]["error"]["code"], "USAGE", "{r}");
    assert!(text(r).contains("2026-07-28"), "{r}");
    // Without an elicitation capability review_next cannot show a form either.
    let next = &s["review-next"];
    assert_eq!(next["structured"]["error"]["code"], "USAGE", "{next}");
    assert!(text(next).contains("no elicitation capability"), "{next}");
    let status = env
        .json(&["provider", "status", "--context", "rev"])
        .ok()
        .json();
    assert!(status.as_array().is_none_or(|a| a.is_empty()), "{status}");
    assert_eq!(
        env.json(&["show", "rev-single"]).ok().json()["status"],
        "pending"
    );
}

/// A review through `input_required`, one request per `review_next` call, the SDK's
/// client answering each form through its elicitation handler: a plan approved, an empty
/// form shown again then a single choice, a multi-select with Other, Other alone, a skip,
/// a plan approved with feedback (shown again) then declined with feedback, and a cancel
/// that stops the review and leaves the last request pending with the lease released.
fn review_next(env: &Env, t: &Transport, actor: &str) {
    env.ask(
        &json!({"id": "rev-approve", "context": "rev", "questions": [{"id": "p",
        "question": "Ship it?", "detail": "1. merge\n2. tag", "options": [{"label": "Approve"},
        {"label": "Revise"}], "intent": {"kind": "plan-review", "approve": "Approve"}}]}),
    )
    .ok();
    review_requests(env);
    let s = client(env, t, "review-next", &[]);
    let r = &s["review"];
    let calls = r["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 7, "one call per request: {r}");
    for c in &calls[..6] {
        assert_eq!(c["isError"], false, "{c}");
        assert_eq!(c["structured"]["reviewed"][0]["outcome"], "answered", "{c}");
    }
    assert_eq!(calls[0]["structured"]["reviewed"][0]["id"], "rev-approve");
    assert_eq!(
        calls[0]["structured"]["reviewed"][0]["decision"],
        "approved"
    );
    assert_eq!(
        calls[5]["structured"]["reviewed"][0]["decision"],
        "declined"
    );
    let last = &calls[6]["structured"];
    assert_eq!(
        last["reviewed"][0],
        json!({"id": "rev-last", "outcome": "left"})
    );
    assert_eq!(last["stopped"], true, "{last}");
    assert_eq!(last["stillOpen"], 1, "{last}");
    let forms: Vec<&str> = r["forms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(forms.len(), 9, "{forms:?}");
    assert!(
        forms[0].contains("1. merge\n2. tag"),
        "the plan is shown: {}",
        forms[0]
    );
    assert!(
        forms[2].starts_with("Not taken: nothing was chosen") && forms[2].contains("rev-single"),
        "{}",
        forms[2]
    );
    assert!(
        forms[7].starts_with("Not taken: feedback is sent with") && forms[7].contains("rev-plan"),
        "{}",
        forms[7]
    );
    assert_eq!(r["forms"][1]["properties"], json!(["choice", "other"]));
    assert_eq!(r["forms"][3]["properties"], json!(["choices", "other"]));
    assert_eq!(r["forms"][6]["properties"], json!(["decision", "feedback"]));
    let approved = env.outcome("rev-approve").expect("an outcome");
    assert_eq!(approved["decision"], "approved", "{approved}");
    assert_eq!(approved["provider"], actor, "{approved}");
    assert_eq!(
        approved["answer"]["answers"],
        json!([{"id": "p", "selected": ["Approve"]}])
    );
    check_review(env, actor);
}

/// A tampered `requestState`, the same state for another call, and a replayed one are
/// refused with BAD_REVIEW_STATE, and none of them changes the request or its events;
/// the real state, between them, answers.
fn review_next_state(env: &Env, t: &Transport) {
    one_request(env);
    let s = client(env, t, "review-next-state", &[]);
    let first = &s["first"];
    assert_eq!(first["kind"], "InputRequiredResult", "{s}");
    assert_eq!(first["mode"], "form");
    assert!(
        first["message"].as_str().unwrap().contains("rev-single"),
        "{first}"
    );
    let choice = &first["schema"]["properties"]["choice"];
    assert_eq!(choice["oneOf"][0]["const"], "Blue", "{first}");
    // The review holds the context's lease between the round trips; the state names the
    // lease by id only (it is signed, not encrypted, so the token stays with the server).
    let leases = first["leases"].as_array().expect("provider status");
    assert_eq!(leases.len(), 1, "the review holds the lease: {first}");
    let payload = first["payload"].as_object().expect("a JSON payload");
    let mut keys: Vec<&str> = payload.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["digest", "lease", "request", "review", "round"],
        "{first}"
    );
    assert_eq!(payload["request"], "rev-single");
    assert_eq!(payload["lease"], leases[0]["leaseId"], "{first}");
    let state = first["state"].as_str().unwrap();
    for refused in ["tampered", "other-call", "replayed"] {
        let r = &s[refused];
        assert_eq!(r["isError"], true, "{refused}: {r}");
        assert_eq!(
            r["structured"]["error"]["code"], "BAD_REVIEW_STATE",
            "{refused}: {r}"
        );
    }
    let before = &s["tampered"]["before"];
    assert_eq!(before["status"], "claimed", "{s}");
    assert_eq!(
        s["tampered"]["after"], *before,
        "a tampered state changes nothing"
    );
    assert_eq!(
        s["other-call"]["after"], *before,
        "another call's state changes nothing"
    );
    let answered = &s["answered"];
    assert_eq!(answered["isError"], false, "{answered}");
    assert_eq!(answered["after"]["status"], "answered");
    assert_eq!(
        s["replayed"]["after"], answered["after"],
        "a replay changes nothing"
    );
    let o = env.outcome("rev-single").expect("the outcome");
    assert_eq!(
        o["answer"]["answers"],
        json!([{"id": "c", "selected": ["Blue"]}]),
        "{o}"
    );
    assert!(state.starts_with("rs1."), "{state}");
    let status = env
        .json(&["provider", "status", "--context", "rev"])
        .ok()
        .json();
    assert!(
        status.as_array().is_none_or(|a| a.is_empty()),
        "the lease went: {status}"
    );
}

// --- stdio ---------------------------------------------------------------------------

#[test]
fn stdio_serves_both_revisions_with_one_tool_list() {
    let env = Env::new();
    both_revisions(&env, &stdio());
    tools_and_schemas(&env, &stateless(stdio()));
}

#[test]
fn stdio_2026_ask_pending_and_abort() {
    let env = Env::new();
    let t = stateless(stdio());
    ask_and_answer(&env, &t, "s26-q1");
    // The client's name comes from the request's own `_meta` (there is no handshake).
    let ev = events(&env, "s26-q1");
    assert_eq!(ev[0], ("accepted".into(), "mcp:dshq-test-client".into()));
    pending_then_get(&env, &t, "s26-q2");
    abort(&env, &t, "s26-q3", "mcp:dshq-test-client");
}

#[test]
fn stdio_2026_a_task_survives_a_restart_of_the_server_and_completes() {
    let env = Env::new();
    let t = stateless(stdio());
    // Each run is its own `dshq mcp` process: the poll asks a server that knows only
    // the store.
    task_start(&env, &t, "s26-t1");
    task_poll(&env, &t, "s26-t1");
    task_failed(&env, &t, "s26-t2");
}

#[test]
fn stdio_2026_review_questions_is_usage() {
    review_says_usage(&Env::new(), &stateless(stdio()));
}

#[test]
fn stdio_2026_review_next_through_input_required() {
    review_next(&Env::new(), &stateless(stdio()), "mcp:dshq-test-client");
}

#[test]
fn stdio_2026_review_next_refuses_a_tampered_or_replayed_state() {
    review_next_state(&Env::new(), &stateless(stdio()));
}

/// A review whose client never comes back ends by itself after `--form-timeout`: its
/// lease is released (the request is pending again) and the late retry is BAD_REVIEW_STATE,
/// changing nothing.
#[test]
fn stdio_2026_an_abandoned_review_releases_its_lease() {
    let env = Env::new();
    one_request(&env);
    let t = Transport::Stdio(vec!["--form-timeout".into(), "1s".into()]);
    let s = client(&env, &stateless(t), "review-next-abandoned", &[]);
    let a = &s["abandoned"];
    assert_eq!(a["held"][0]["live"], true, "the review held the lease: {a}");
    assert_eq!(a["after"]["status"], "pending", "{a}");
    assert_eq!(a["isError"], true, "{a}");
    assert_eq!(a["structured"]["error"]["code"], "BAD_REVIEW_STATE", "{a}");
    assert_eq!(
        a["late_after"], a["after"],
        "the late retry changes nothing: {a}"
    );
    assert!(env.outcome("rev-single").is_none());
}

// --- Streamable HTTP -----------------------------------------------------------------

#[test]
fn http_serves_both_revisions_and_2026_asks() {
    let env = Env::new();
    let h = host(&env, &[]);
    let asker = token(&env, "asker", "agent-box", None);
    let legacy = http(&h.base, &asker);
    both_revisions(&env, &legacy);
    let t = stateless(legacy);
    ask_and_answer(&env, &t, "h26-q1");
    let shown = crate::api::call(
        "GET",
        &format!("{}/api/v1/requests/h26-q1", h.base),
        Some(&asker),
        None,
    );
    assert_eq!(shown.status, 200, "{:?}", shown.body);
    assert_eq!(shown.body["source"], "web:agent-box");
    pending_then_get(&env, &t, "h26-q2");
    // Over HTTP the actor is the token at every revision.
    abort(&env, &t, "h26-q3", "mcp:agent-box");
}

#[test]
fn http_2026_a_task_survives_a_restart_of_the_host() {
    let env = Env::new();
    let h = host(&env, &[]);
    let asker = token(&env, "asker", "agent-box", None);
    task_start(&env, &stateless(http(&h.base, &asker)), "h26-t1");
    h.daemon.kill9();
    let h = host(&env, &[]);
    let t = stateless(http(&h.base, &asker));
    task_poll(&env, &t, "h26-t1");
    task_failed(&env, &t, "h26-t2");
}

#[test]
fn http_2026_review_questions_is_usage_for_a_reviewer() {
    let env = Env::new();
    let h = host(&env, &[]);
    let reviewer = token(&env, "reviewer", "alice", None);
    review_says_usage(&env, &stateless(http(&h.base, &reviewer)));
}

#[test]
fn http_2026_review_next_through_input_required() {
    let env = Env::new();
    let h = host(&env, &[]);
    let reviewer = token(&env, "reviewer", "alice", None);
    review_next(&env, &stateless(http(&h.base, &reviewer)), "mcp:alice");
}

#[test]
fn http_2026_review_next_refuses_a_tampered_or_replayed_state() {
    let env = Env::new();
    let h = host(&env, &[]);
    let reviewer = token(&env, "reviewer", "alice", None);
    review_next_state(&env, &stateless(http(&h.base, &reviewer)));
}

/// A request of two questions is no flat form: over `/mcp` `review_next` asks in URL mode
/// for the request's page, holding no lease meanwhile (the page answers through the host's
/// own), and the retry reports it answered there.
#[test]
fn http_2026_review_next_hands_a_batch_to_the_page() {
    let env = Env::new();
    let h = host(&env, &[]);
    let reviewer = token(&env, "reviewer", "alice", None);
    env.ask(&json!({"id": "rev-batch", "context": "rev", "questions": [
        {"id": "a", "question": "First?", "options": [{"label": "Yes"}, {"label": "No"}]},
        {"id": "b", "question": "Second?", "options": [{"label": "Yes"}, {"label": "No"}]}]}))
        .ok();
    let s = client(
        &env,
        &stateless(http(&h.base, &reviewer)),
        "review-next-url",
        &[],
    );
    let r = &s["review"];
    let forms = r["forms"].as_array().unwrap();
    assert_eq!(forms.len(), 1, "{r}");
    assert_eq!(forms[0]["mode"], "url", "{r}");
    assert_eq!(forms[0]["url"], format!("{}/r/rev-batch", h.base), "{r}");
    let leases = forms[0]["leases"].as_array().unwrap();
    assert!(
        leases.iter().all(|l| l["live"] == false),
        "no lease while the page answers: {r}"
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        r["structured"]["reviewed"],
        json!([{"id": "rev-batch", "outcome": "answered"}]),
        "{r}"
    );
    let o = env.outcome("rev-batch").expect("an outcome");
    assert_eq!(o["provider"], "cli-human", "{o}");
}

/// A plan whose body is too long for a form's message: numbered steps, over
/// `FORM_DETAIL_MAX` (4000) characters, its last line a mark the page must show.
fn long_plan(id: &str) -> serde_json::Value {
    let mut detail: String = (1..=80)
        .map(|n| format!("Step {n} of the plan: move the next batch of tables, check it.\n"))
        .collect();
    detail.push_str("END-OF-PLAN");
    assert!(detail.chars().count() > 4000, "{}", detail.len());
    json!({"id": id, "context": "rev", "questions": [{"id": "p", "question": "Ship this plan?",
        "detail": detail, "options": [{"label": "Approve"}, {"label": "Revise"}],
        "intent": {"kind": "plan-review", "approve": "Approve"}}]})
}

/// Plans too long for a form go to the page over `/mcp`: each round is a URL-mode input
/// request naming the request's page, the review holding no lease meanwhile (the real
/// page answers through the host's own, which it could not take otherwise). The human
/// first accepts before answering (the page is named again, with the reason), then
/// approves on the page; declines the second with feedback there; cancels at the third,
/// which stops the review and leaves it pending with no lease held. The retry reports
/// each outcome, checked against the outcome files.
#[test]
fn http_2026_review_next_hands_a_long_plan_to_the_page() {
    let env = Env::new();
    let h = host(&env, &[]);
    let reviewer = token(&env, "reviewer", "alice", None);
    for id in ["rev-long-approve", "rev-long-decline", "rev-long-cancel"] {
        env.ask(&long_plan(id)).ok();
    }
    let s = client(
        &env,
        &stateless(http(&h.base, &reviewer)),
        "review-next-page",
        &[],
    );
    let r = &s["review"];
    let forms = r["forms"].as_array().unwrap();
    let named: Vec<&str> = forms.iter().map(|f| f["url"].as_str().unwrap()).collect();
    let page = |id: &str| format!("{}/r/{id}", h.base);
    assert_eq!(
        named,
        [
            page("rev-long-approve"),
            page("rev-long-approve"),
            page("rev-long-decline"),
            page("rev-long-cancel")
        ],
        "{r}"
    );
    for f in forms {
        assert_eq!(f["mode"], "url", "{f}");
        assert!(
            f["message"]
                .as_str()
                .unwrap()
                .contains("(a plan too long for a form): answer it on dshq's page"),
            "{f}"
        );
        let leases = f["leases"].as_array().unwrap();
        assert!(
            leases.iter().all(|l| l["live"] == false),
            "no lease while the page answers: {f}"
        );
    }
    assert!(
        forms[1]["message"]
            .as_str()
            .unwrap()
            .starts_with("Not taken: the request is not answered yet"),
        "{r}"
    );
    assert_eq!(
        forms[1]["pageShowsThePlan"], true,
        "the page shows the whole plan"
    );
    let calls = r["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3, "{r}");
    for c in calls {
        assert_eq!(c["isError"], false, "{c}");
    }
    assert_eq!(
        calls[0]["structured"]["reviewed"],
        json!([{"id": "rev-long-approve", "outcome": "answered", "decision": "approved"}]),
        "{r}"
    );
    assert_eq!(
        calls[1]["structured"]["reviewed"],
        json!([{"id": "rev-long-decline", "outcome": "answered", "decision": "declined"}]),
        "{r}"
    );
    let last = &calls[2]["structured"];
    assert_eq!(
        last["reviewed"],
        json!([{"id": "rev-long-cancel", "outcome": "left"}]),
        "{r}"
    );
    assert_eq!(last["stopped"], true, "a cancel stops the review: {r}");
    assert_eq!(last["stillOpen"], 1, "{r}");
    assert!(
        r["leases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["live"] == false),
        "no lease left held: {r}"
    );
    assert_eq!(r["cancelled"]["status"], "pending", "{r}");
    // The outcome files: the page answered, as the reviewer who logged in.
    let approved = env.outcome("rev-long-approve").expect("an outcome");
    assert_eq!(approved["decision"], "approved", "{approved}");
    assert_eq!(approved["provider"], "web:alice", "{approved}");
    assert_eq!(
        approved["answer"]["answers"],
        json!([{"id": "p", "selected": ["Approve"]}])
    );
    let declined = env.outcome("rev-long-decline").expect("an outcome");
    assert_eq!(declined["decision"], "declined", "{declined}");
    assert_eq!(declined["provider"], "web:alice", "{declined}");
    assert_eq!(
        declined["answer"]["answers"],
        json!([{"id": "p", "selected": [], "custom": "split step 2"}])
    );
    assert!(env.outcome("rev-long-cancel").is_none());
    env.run(&["audit", "verify"]).ok();
}

/// Over stdio no page address is known: a batch and a long plan at the head of the queue
/// are not claimed (nothing of theirs changes), the request behind them is reviewed
/// through its form, and the next call reviews nothing and names, for each, its page
/// (`/r/ID`) and `dshq answer ID`; they stay pending, and no lease is left held.
#[test]
fn stdio_2026_review_next_names_the_page_for_what_is_no_form() {
    let env = Env::new();
    env.ask(&json!({"id": "rev-batch", "context": "rev", "questions": [
        {"id": "a", "question": "First?", "options": [{"label": "Yes"}, {"label": "No"}]},
        {"id": "b", "question": "Second?", "options": [{"label": "Yes"}, {"label": "No"}]}]}))
        .ok();
    env.ask(&long_plan("rev-long")).ok();
    one_request(&env);
    let s = client(&env, &stateless(stdio()), "review-next-elsewhere", &[]);
    let r = &s["review"];
    let calls = r["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{r}");
    assert_eq!(
        calls[0]["structured"]["reviewed"],
        json!([{"id": "rev-single", "outcome": "answered"}]),
        "the request behind them is reviewed: {r}"
    );
    let last = &calls[1];
    assert_eq!(last["isError"], false, "{last}");
    assert_eq!(last["structured"]["reviewed"], json!([]), "{last}");
    assert_eq!(last["structured"]["stillOpen"], 2, "{last}");
    assert_eq!(last["structured"]["stopped"], false, "{last}");
    let said = text(last);
    for needle in [
        "Request rev-batch (several questions) cannot be shown here: answer it on dshq's web page (/r/rev-batch) or with `dshq answer rev-batch`.",
        "Request rev-long (a plan too long for a form) cannot be shown here: answer it on dshq's web page (/r/rev-long) or with `dshq answer rev-long`.",
    ] {
        assert!(said.contains(needle), "{needle}\nnot in: {said}");
    }
    // Never claimed: their only event is the ask; no lease is left held.
    assert_eq!(r["batch"], json!({"status": "pending", "events": 1}), "{r}");
    assert_eq!(r["long"], json!({"status": "pending", "events": 1}), "{r}");
    assert!(
        r["leases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["live"] == false),
        "{r}"
    );
    let o = env.outcome("rev-single").expect("an outcome");
    assert_eq!(
        o["answer"]["answers"],
        json!([{"id": "c", "selected": ["Blue"]}])
    );
    assert!(env.outcome("rev-batch").is_none() && env.outcome("rev-long").is_none());
}

/// The host's stop (SIGTERM) ends a `review_next` review in flight at once, as the page's
/// lease: its lease is released and its claim is pending again when the daemon has
/// exited, not a lease's ttl later.
#[test]
fn http_2026_the_hosts_stop_releases_a_review_in_flight() {
    let env = Env::new();
    one_request(&env);
    let h = host(&env, &[]);
    let rita = token(&env, "reviewer", "rita", None);
    let s = client(
        &env,
        &stateless(http(&h.base, &rita)),
        "review-next-first",
        &[],
    );
    let first = &s["first"];
    assert_eq!(first["shown"]["status"], "claimed", "{first}");
    assert_eq!(
        first["leases"][0]["live"], true,
        "the review holds the lease: {first}"
    );
    assert_eq!(h.daemon.stop(), 0);
    let leases = env
        .json(&["provider", "status", "--context", "rev"])
        .ok()
        .json();
    assert!(
        leases
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["live"] == false),
        "a lease outlived the host: {leases}"
    );
    let shown = env.json(&["show", "rev-single"]).ok().json();
    assert_eq!(shown["status"], "pending", "{shown}");
    assert!(env.outcome("rev-single").is_none());
}
