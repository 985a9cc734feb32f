//! dsh 0.2's continued questions on dshq's own faces: a request on a tool call (`wait:
//! {callId, timeoutMs}`) whose window closes is pending (`{pending: true, callId}`), not a
//! failure; the late answer is delivered to the call without asking again; dsh's codes for
//! a bad window (`BAD_TIMEOUT`) and a second request on one call (`DUPLICATE_WAIT`). Through
//! `dshq ask --wait`, the HTTP outcome long-poll and MCP's ask tool (the official Python
//! SDK). The packages have their own tests (tests/it/clients.rs).

use serde_json::{json, Value};

use crate::api::{host, token};
use crate::helpers::Env;
use crate::mcp::{client, stdio, text};

fn request(call: &str, timeout_ms: Value) -> Value {
    json!({
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}],
        "wait": {"callId": call, "timeoutMs": timeout_ms},
    })
}

fn call_id_of(call: &str) -> String {
    dshq::protocol::continued::call_request_id(call)
}

#[test]
fn cli_ask_wait_is_pending_when_the_window_closes_and_delivers_the_late_answer_to_the_call() {
    let env = Env::new();
    let body = request("call_cli_1", json!(300)).to_string();
    let pending = env.run_stdin(&["--json", "ask", "-", "--wait"], &body);
    assert_eq!(pending.code, 0, "{pending:?}");
    let p = pending.json();
    let id = call_id_of("call_cli_1");
    assert_eq!(p["pending"], true, "{p}");
    assert_eq!(p["callId"], "call_cli_1");
    assert_eq!(p["id"], id.as_str());
    assert_eq!(p["status"], "pending");
    assert!(p["message"]
        .as_str()
        .unwrap()
        .contains(&format!("dshq wait {id}")));
    // Still answerable: a reviewer answers later.
    env.run(&["answer", &id, "--select", "SQLite"]).ok();
    // Asking again on the call re-attaches: the late answer, to the same call, one request.
    let again = env.run_stdin(&["--json", "ask", "-", "--wait"], &body).ok();
    let o = again.json();
    assert_eq!(o["status"], "answered", "{o}");
    assert_eq!(o["callId"], "call_cli_1");
    assert_eq!(o["answer"]["answers"][0]["selected"], json!(["SQLite"]));
    let all = env.json(&["list", "--all"]).ok().json();
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
    // The outcome file carries the call too.
    assert_eq!(env.outcome(&id).unwrap()["callId"], "call_cli_1");
    // A request without a call keeps WAIT_TIMEOUT.
    let plain = json!({"id": "plain", "questions": [{"id": "q", "question": "?"}]}).to_string();
    let r = env.run_stdin(
        &["--json", "ask", "-", "--wait", "--timeout", "200ms"],
        &plain,
    );
    assert_eq!(r.error_code(), "WAIT_TIMEOUT");
}

#[test]
fn dsh_codes_bad_timeout_duplicate_wait_and_one_id_per_call() {
    let env = Env::new();
    for bad in [json!(0), json!(-1), json!(1.5), json!(2_147_483_648u64)] {
        let r = env.run_stdin(
            &["--json", "ask", "-"],
            &request("call_t", bad.clone()).to_string(),
        );
        assert_eq!(r.error_code(), "BAD_TIMEOUT", "{bad}: {r:?}");
        assert_eq!(r.code, 3);
    }
    env.run_stdin(
        &["--json", "ask", "-"],
        &request("call_d", json!(100)).to_string(),
    )
    .ok();
    // The same request again is the same one; other content on the call is DUPLICATE_WAIT.
    env.run_stdin(
        &["--json", "ask", "-"],
        &request("call_d", json!(100)).to_string(),
    )
    .ok();
    let mut other = request("call_d", json!(100));
    other["questions"][0]["question"] = json!("Which database, really?");
    let r = env.run_stdin(&["--json", "ask", "-"], &other.to_string());
    assert_eq!(r.error_code(), "DUPLICATE_WAIT", "{r:?}");
    // A request on a call takes the call's id.
    let mut named = request("call_n", json!(100));
    named["id"] = json!("mine");
    let r = env.run_stdin(&["--json", "ask", "-"], &named.to_string());
    assert_eq!(r.error_code(), "BAD_REQUEST", "{r:?}");
    // A batch naming a question twice is BAD_ANSWER (dsh's code and dshq's).
    let id = call_id_of("call_d");
    let twice =
        json!({"answers": [{"id": "db", "selected": ["SQLite"]}, {"id": "db", "selected": []}]});
    let r = env.run_stdin(
        &["--json", "answer", &id, "--answers", "-"],
        &twice.to_string(),
    );
    assert_eq!(r.error_code(), "BAD_ANSWER", "{r:?}");
}

#[test]
fn http_outcome_long_poll_returns_the_pending_document_then_the_late_answer() {
    let env = Env::new();
    let h = host(&env, &[]);
    let t = token(&env, "asker", "agent", None);
    let asked = h.post("/requests", Some(&t), &request("call_http_1", json!(300)));
    assert_eq!(asked.status, 201, "{asked:?}");
    let id = call_id_of("call_http_1");
    assert_eq!(asked.body["id"], id.as_str());
    // The window (the request's, 300 ms) closing is the pending document, not 204.
    let p = h.get(&format!("/requests/{id}/outcome?wait=1s"), Some(&t));
    assert_eq!(p.status, 200, "{p:?}");
    assert_eq!(p.body["pending"], true);
    assert_eq!(p.body["callId"], "call_http_1");
    assert_eq!(p.body["requestDigest"], asked.body["requestDigest"]);
    env.run(&["answer", &id, "--select", "Postgres"]).ok();
    let o = h.get(&format!("/requests/{id}/outcome?wait=30s"), Some(&t));
    assert_eq!(o.status, 200);
    assert_eq!(o.body["status"], "answered");
    assert_eq!(o.body["callId"], "call_http_1");
    // A request without a call keeps 204.
    let plain = h.post(
        "/requests",
        Some(&t),
        &json!({"id": "plain", "questions": [{"id": "q", "question": "?"}]}),
    );
    assert_eq!(plain.status, 201);
    let r = h.get("/requests/plain/outcome?wait=1s", Some(&t));
    assert_eq!(r.status, 204);
    // BAD_TIMEOUT is a 400 with its code.
    let bad = h.post("/requests", Some(&t), &request("call_http_2", json!(0)));
    assert_eq!(bad.status, 400);
    assert_eq!(bad.code(), "BAD_TIMEOUT");
}

#[test]
fn mcp_ask_tool_is_pending_with_the_call_then_get_answer_delivers_to_it() {
    let env = Env::new();
    let s = client(&env, &stdio(), "continued", &[("MCP_CALL", "call_mcp_1")]);
    let id = call_id_of("call_mcp_1");
    let ask = &s["ask"];
    assert_eq!(ask["isError"], false, "{ask}");
    assert_eq!(ask["structured"]["status"], "pending", "{ask}");
    assert_eq!(ask["structured"]["callId"], "call_mcp_1");
    assert_eq!(ask["structured"]["id"], id.as_str());
    assert!(text(ask).contains("not a skipped answer"), "{ask}");
    let get = &s["get"];
    assert_eq!(get["structured"]["status"], "answered", "{get}");
    assert_eq!(get["structured"]["callId"], "call_mcp_1");
    assert_eq!(get["structured"]["answers"][0]["selected"], json!(["Red"]));
    // Asking again on the call: the same request, answered; never asked twice.
    let again = &s["again"];
    assert_eq!(again["structured"]["status"], "answered", "{again}");
    assert_eq!(again["structured"]["id"], id.as_str());
    let all = env.json(&["list", "--all"]).ok().json();
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
}
