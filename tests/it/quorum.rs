//! Quorum through the real binary.
//!
//! - `two_of_three_through_the_cli_and_the_http_api`: a context's policy in the config
//!   file (two approvals of group `ops`) holds a request an asker token sent over HTTP;
//!   the asker's own approval from the CLI is `OWN_REQUEST` (exit 14), a reviewer outside
//!   the group is `NOT_IN_GROUP`; bob votes with `dshq answer` (the request stays open,
//!   `show`, the API's request JSON and the page list his vote), votes again (counted once), and
//!   carol's vote through the HTTP API meets the quorum: the outcome (the API's answer,
//!   the outbox file) names both approvers, the chain has two `voted` events and one
//!   `answered`, and `audit verify` passes.
//! - `three_reviewers_on_two_hosts_of_one_postgres_store_make_one_outcome`: two roots on
//!   one PostgreSQL store; for each of several requests needing two approvals, three
//!   reviewers run `dshq answer` at once, two on one host and one on the other: each
//!   request ends answered exactly once with two approvers, one outcome file in the asking
//!   root, and `audit verify` passes on both hosts.
//! - `mcp_get_answer_shows_the_votes_then_the_approvers`: MCP's `get_answer` (the Python
//!   SDK over stdio) lists the votes of a pending request with a quorum, then the approvers.

use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::api::{host, token};
use crate::helpers::Env;
use crate::throwaway;

/// `env` with a config file of `text` (`DSHQ_CONFIG`) for every command and its daemon.
fn with_config(env: Env, text: &str) -> Env {
    let path = env.dir.path().join("quorum.toml");
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap().to_string();
    env.with_var("DSHQ_CONFIG", &path)
}

fn plan_request(id: &str, context: &str) -> Value {
    json!({
        "id": id,
        "context": context,
        "questions": [{"id": "ship", "question": "Ship <b>v2</b>?", "detail": "the plan",
                       "options": [{"label": "Ship"}, {"label": "Hold"}],
                       "intent": {"kind": "plan-review", "approve": "Ship"}}]
    })
}

#[test]
fn two_of_three_through_the_cli_and_the_http_api() {
    let env = with_config(
        Env::new(),
        "[groups]\nops = [\"provider:bob\", \"web:carol\", \"web:dave\"]\n\n\
         [quorum.deploys]\napprovals = 2\ngroup = \"ops\"\n",
    );
    env.run(&["config", "check"]).ok();
    let alice = token(&env, "asker", "alice", None);
    let carol = token(&env, "reviewer", "carol", None);
    let h = host(&env, &[]);
    let r = h.post("/requests", Some(&alice), &plan_request("q1", "deploys"));
    assert_eq!(r.status, 201, "{r:?}");

    // The asker's own approval, from another face (the CLI, by the token's name).
    let own = env.json(&["answer", "q1", "--name", "alice", "--select", "Ship"]);
    assert_eq!(own.error_code(), "OWN_REQUEST");
    assert_eq!(own.code, 14);
    let outsider = env.json(&["answer", "q1", "--name", "mallory", "--select", "Ship"]);
    assert_eq!(outsider.error_code(), "NOT_IN_GROUP");

    // bob votes with the CLI: the request stays open, and every face shows the vote.
    let v = env
        .json(&["answer", "q1", "--name", "bob", "--select", "Ship"])
        .ok()
        .json();
    assert_eq!(
        (v["status"].as_str(), v["voter"].as_str()),
        (Some("voted"), Some("provider:bob"))
    );
    assert_eq!(v["quorum"]["approvals"], 2);
    assert_eq!(v["quorum"]["by"], "policy");
    let shown = env.json(&["show", "q1"]).ok().json();
    assert_eq!(shown["status"], "pending");
    assert_eq!(shown["quorum"]["votes"][0]["voter"], "provider:bob");
    assert_eq!(shown["quorum"]["votes"][0]["decision"], "approved");
    let text = env.run(&["show", "q1"]).ok();
    assert!(
        text.stdout.contains("vote     bob via provider:bob at"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("quorum   1/2 agree"),
        "{}",
        text.stdout
    );
    let api = h.get("/requests/q1", Some(&carol)).body;
    assert_eq!(api["quorum"]["votes"].as_array().unwrap().len(), 1, "{api}");

    // bob again: counted once.
    let again = env
        .json(&["answer", "q1", "--name", "bob", "--select", "Ship"])
        .ok()
        .json();
    assert_eq!(again["quorum"]["votes"].as_array().unwrap().len(), 1);

    // The page's request view lists the vote, the asker's text escaped.
    let dave = token(&env, "reviewer", "dave", None);
    let session = crate::page::login(&h, &dave);
    let queue = session.get("/");
    assert!(queue.body.contains("1/2 votes"), "{}", queue.body);
    let page = session.get("/r/q1");
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains("<strong class=\"progress\">1/2</strong>"),
        "{}",
        page.body
    );
    assert!(page.body.contains("id=\"quorum\""), "{}", page.body);
    assert!(
        page.body.contains("<strong>provider:bob</strong>"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("Ship &lt;b&gt;v2&lt;/b&gt;?"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("<b>v2</b>"), "{}", page.body);

    // carol through the HTTP API meets the quorum.
    let body = json!({"answers": [{"id": "ship", "selected": ["Ship"]}]});
    let r = h.post("/requests/q1/answer", Some(&carol), &body);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["approvers"], json!(["provider:bob", "web:carol"]));
    assert_eq!(r.body["decision"], "approved");
    let file = env.wait_outcome("q1");
    assert_eq!(file["approvers"], json!(["provider:bob", "web:carol"]));
    let r = h.post("/requests/q1/answer", Some(&carol), &body);
    assert_eq!((r.status, r.code()), (409, "REQUEST_FINAL"));
    assert_eq!(
        crate::ladder::kinds(&env, "q1"),
        ["accepted", "voted", "voted", "answered"]
    );
    let text = env.run(&["show", "q1"]).ok().stdout;
    assert!(
        text.contains("approved by provider:bob, web:carol"),
        "{text}"
    );
    // The signed receipt names every approver and the quorum it was held to.
    let receipt = env.json(&["receipt", "q1"]).ok().json();
    assert_eq!(receipt["approvers"], json!(["provider:bob", "web:carol"]));
    assert_eq!(receipt["policy"]["quorum"]["approvals"], 2);
    env.run(&["audit", "verify"]).ok();
    h.daemon.stop();
}

/// `dshq answer ID --name NAME --select Ship` on `env`, started (not waited for).
fn spawn_vote(env: &Env, id: &str, name: &str) -> std::process::Child {
    let mut c: Command = env.command();
    c.args(["--json", "answer", id, "--name", name, "--select", "Ship"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c.spawn().expect("spawn dshq answer")
}

#[test]
fn three_reviewers_on_two_hosts_of_one_postgres_store_make_one_outcome() {
    let url = throwaway::shared()
        .fresh_database()
        .expect("a fresh PostgreSQL database");
    let (a, b) = (Env::on_store(&url), Env::on_store(&url));
    const N: usize = 6;
    for i in 0..N {
        let mut req = plan_request(&format!("m{i}"), "release");
        req["quorum"] = json!({"approvals": 2});
        a.ask(&req).ok();
    }
    // b's root exists once it wrote something (its token is no request and no event);
    // a's daemon publishes a's outcomes, whichever host's vote finished them.
    // Every host of one store holds the chain's key.
    token(&b, "auditor", "b-audit", None);
    std::fs::copy(a.root().join("audit.key"), b.root().join("audit.key")).unwrap();
    let daemon = a.daemon();
    for i in 0..N {
        let id = format!("m{i}");
        let children = vec![
            spawn_vote(&a, &id, "r1"),
            spawn_vote(&b, &id, "r2"),
            spawn_vote(&a, &id, "r3"),
        ];
        let mut results = Vec::new();
        for c in children {
            let out = c.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).to_string();
            let v: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
            let what = if v["status"] == "answered" {
                "answered".to_string()
            } else if v["status"] == "voted" {
                "voted".to_string()
            } else {
                format!(
                    "{}: {}",
                    v["error"]["code"].as_str().unwrap_or("?"),
                    v["error"]["message"].as_str().unwrap_or(&stdout)
                )
            };
            results.push(what);
        }
        println!("{id}: {results:?}");
        let answered = results.iter().filter(|r| *r == "answered").count();
        assert_eq!(
            answered, 1,
            "{id}: exactly one vote answers it: {results:?}"
        );
        assert!(
            results
                .iter()
                .all(|r| ["answered", "voted"].contains(&r.as_str())
                    || r.starts_with("REQUEST_FINAL")
                    || r.starts_with("DUPLICATE_PROVIDER")),
            "{id}: {results:?}"
        );
        let shown = b.json(&["show", &id]).ok().json();
        assert_eq!(shown["status"], "answered");
        assert_eq!(shown["outcome"]["approvers"].as_array().unwrap().len(), 2);
        let kinds = crate::ladder::kinds(&b, &id);
        assert_eq!(
            kinds.iter().filter(|k| *k == "answered").count(),
            1,
            "{id}: {kinds:?}"
        );
        // The outcome is the asking root's, once.
        assert_eq!(
            a.wait_outcome(&id)["approvers"].as_array().unwrap().len(),
            2
        );
        assert!(b.outcome(&id).is_none());
    }
    a.run(&["audit", "verify"]).ok();
    b.run(&["audit", "verify"]).ok();
    daemon.stop();
}

/// MCP's `get_answer` on a request with a quorum: the votes so far while it is pending,
/// the approvers once it is answered.
#[test]
fn mcp_get_answer_shows_the_votes_then_the_approvers() {
    use crate::mcp::{client, stdio, text};
    let env = Env::new();
    let mut req = plan_request("mq", "default");
    req["quorum"] = json!({"approvals": 2});
    env.ask(&req).ok();
    env.json(&["answer", "mq", "--name", "bob", "--select", "Ship"])
        .ok();
    let s = client(&env, &stdio(), "quorum_get", &[("MCP_RID", "mq")]);
    let get = &s["get"];
    assert_eq!(get["structured"]["status"], "pending", "{get}");
    assert_eq!(get["structured"]["quorum"]["approvals"], 2, "{get}");
    assert_eq!(
        get["structured"]["quorum"]["votes"][0]["voter"], "provider:bob",
        "{get}"
    );
    assert!(text(get).contains("It needs a quorum"), "{get}");
    env.json(&["answer", "mq", "--name", "carol", "--select", "Ship"])
        .ok();
    let s = client(&env, &stdio(), "quorum_get", &[("MCP_RID", "mq")]);
    let get = &s["get"];
    assert_eq!(get["structured"]["status"], "answered", "{get}");
    assert_eq!(
        get["structured"]["approvers"],
        json!(["provider:bob", "provider:carol"]),
        "{get}"
    );
    assert!(
        text(get).contains("Approved by provider:bob, provider:carol"),
        "{get}"
    );
}

/// One person on two faces is one voter, and voters on different faces vote within
/// seconds of each other: a web vote (the page's host holds no lease for it), then a CLI
/// vote at once (no DUPLICATE_PROVIDER), then the same CLI person through their web token
/// (`web:bob`, the name after the face) and through a second token the directory links to
/// them (`web:bob-ci`): both `ALREADY_VOTED`, nothing recorded. `list` shows the progress,
/// the outcome the persons; `audit verify` passes.
#[test]
fn one_person_cli_then_web_is_refused_and_faces_mix_without_duplicate_provider() {
    let env = with_config(
        Env::new(),
        "[people]\nbob = [\"web:bob-ci\"]\n\n[quorum.deploys]\napprovals = 3\n",
    );
    let checked = env.json(&["config", "check"]).ok().json();
    assert_eq!(checked["people"]["bob"], json!(["web:bob-ci"]), "{checked}");
    let dave = token(&env, "reviewer", "dave", None);
    let bob_web = token(&env, "reviewer", "bob", None);
    let bob_ci = token(&env, "reviewer", "bob-ci", None);
    let carol = token(&env, "reviewer", "carol", None);
    let h = host(&env, &[]);
    env.ask(&plan_request("m1", "deploys")).ok();
    let ship = json!({"answers": [{"id": "ship", "selected": ["Ship"]}]});

    let r = h.post("/requests/m1/answer", Some(&dave), &ship);
    assert_eq!(r.status, 202, "{r:?}");
    // At once, from the terminal: a vote takes no lease, so the page's use is no bar.
    let v = env
        .json(&["answer", "m1", "--name", "bob", "--select", "Ship"])
        .ok()
        .json();
    assert_eq!(v["status"], "voted", "{v}");
    assert_eq!(v["quorum"]["agreeing"], 2);
    // bob again, through the web: his token by his name, and the one the directory links.
    for t in [&bob_web, &bob_ci] {
        let r = h.post("/requests/m1/answer", Some(t), &ship);
        assert_eq!((r.status, r.code()), (409, "ALREADY_VOTED"), "{r:?}");
    }
    let r = env.json(&["answer", "m1", "--name", "bob", "--select", "Hold"]);
    assert_eq!(r.error_code(), "ALREADY_VOTED");
    let listed = env.json(&["list"]).ok().json();
    assert_eq!(
        listed[0]["quorum"],
        json!({"approvals": 3, "agreeing": 2,
               "voters": ["dave via web:dave", "bob via provider:bob"]})
    );
    let table = env.run(&["list"]).ok().stdout;
    assert!(table.contains("pending (2/3 votes)"), "{table}");
    let r = h.post("/requests/m1/answer", Some(&carol), &ship);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.body["approvers"],
        json!(["web:dave", "provider:bob", "web:carol"])
    );
    let persons: Vec<&str> = r.body["votes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["person"].as_str().unwrap())
        .collect();
    assert_eq!(persons, ["dave", "bob", "carol"]);
    assert_eq!(
        crate::ladder::kinds(&env, "m1"),
        ["accepted", "voted", "voted", "voted", "answered"]
    );
    // The receipt names the approvers; its outcome, every vote with its person.
    let receipt = env.json(&["receipt", "m1"]).ok().json();
    assert_eq!(receipt["outcome"]["votes"][1]["person"], "bob");
    // So does the history: each vote's face and person.
    let history = env.json(&["history"]).ok().json();
    let row = history
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "m1")
        .cloned()
        .unwrap();
    assert_eq!(
        row["votes"][1],
        json!({"voter": "provider:bob", "person": "bob", "decision": "approved"})
    );
    let table = env.run(&["history", "--format", "table"]).ok().stdout;
    assert!(table.contains("bob via provider:bob"), "{table}");
    env.run(&["audit", "verify"]).ok();
    h.daemon.stop();
}

/// Votes cast at the same moment from several faces make exactly one outcome: two CLI
/// reviewers and two web reviewers race for a two-person rule (each request once), and
/// the same person racing on two faces is counted once.
#[test]
fn concurrent_votes_from_several_faces_make_one_outcome() {
    let env = Env::new();
    let tokens: Vec<String> = ["w1", "w2", "bob"]
        .iter()
        .map(|n| token(&env, "reviewer", n, None))
        .collect();
    let h = host(&env, &[]);
    const N: usize = 4;
    for i in 0..N {
        let mut req = plan_request(&format!("c{i}"), "default");
        req["quorum"] = json!({"approvals": 2});
        env.ask(&req).ok();
    }
    let ship = json!({"answers": [{"id": "ship", "selected": ["Ship"]}]});
    for i in 0..N {
        let id = format!("c{i}");
        let clis = [spawn_vote(&env, &id, "c1"), spawn_vote(&env, &id, "c2")];
        let webs: Vec<_> = tokens[..2]
            .iter()
            .map(|t| {
                let (url, t, body) = (
                    h.url(&format!("/requests/{id}/answer")),
                    t.clone(),
                    ship.clone(),
                );
                std::thread::spawn(move || {
                    crate::api::call("POST", &url, Some(&t), Some(body.to_string().as_bytes()))
                })
            })
            .collect();
        let mut ends = Vec::new();
        for c in clis {
            let out = c.wait_with_output().unwrap();
            let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            ends.push(
                v["status"]
                    .as_str()
                    .or(v["error"]["code"].as_str())
                    .unwrap_or("?")
                    .to_string(),
            );
        }
        for w in webs {
            let r = w.join().unwrap();
            ends.push(match r.status {
                200 => "answered".to_string(),
                202 => "voted".to_string(),
                _ => r.code().to_string(),
            });
        }
        let answered = ends.iter().filter(|e| *e == "answered").count();
        assert_eq!(answered, 1, "{id}: {ends:?}");
        assert!(
            ends.iter()
                .all(|e| ["answered", "voted", "REQUEST_FINAL"].contains(&e.as_str())),
            "{id}: {ends:?}"
        );
        let o = env.wait_outcome(&id);
        assert_eq!(o["approvers"].as_array().unwrap().len(), 2, "{o}");
    }
    // One person, two faces, at once: one vote, the other refused.
    let mut req = plan_request("same", "default");
    req["quorum"] = json!({"approvals": 2});
    env.ask(&req).ok();
    let cli = spawn_vote(&env, "same", "bob");
    let web = {
        let (url, t, body) = (
            h.url("/requests/same/answer"),
            tokens[2].clone(),
            ship.clone(),
        );
        std::thread::spawn(move || {
            crate::api::call("POST", &url, Some(&t), Some(body.to_string().as_bytes()))
        })
    };
    let cli_out: Value = serde_json::from_slice(&cli.wait_with_output().unwrap().stdout).unwrap();
    let web_r = web.join().unwrap();
    let refused = [
        cli_out["error"]["code"].as_str().unwrap_or(""),
        web_r.code(),
    ];
    assert_eq!(
        refused.iter().filter(|c| **c == "ALREADY_VOTED").count(),
        1,
        "{cli_out} {web_r:?}"
    );
    let shown = env.json(&["show", "same"]).ok().json();
    assert_eq!(shown["status"], "pending");
    assert_eq!(
        shown["quorum"]["votes"].as_array().unwrap().len(),
        1,
        "{shown}"
    );
    env.run(&["audit", "verify"]).ok();
    h.daemon.stop();
}
