//! One input, one code, on every face: each input that the vocabulary refuses with one of
//! its ask codes (`docs/protocol.md`, section 3, dsh 0.2's `BAD_TIMEOUT` and
//! `DUPLICATE_WAIT` included) is refused with that very code by every
//! face that can carry it: an inbox file (the daemon's `rejected/NAME.error.json`), `dshq
//! ask`, the HTTP API, MCP over stdio (`dshq mcp`) and `/mcp` (the official Python SDK's
//! client for both). A model or program that reacts to dsh's codes meets the same code
//! wherever it asks.
//!
//! MCP's `ask_user_question` has no `deadline` and no `requireProvider` (so no
//! `ASK_ABORTED` at the ask, no `NO_PROVIDER`), and its asking agent is the session's (the
//! server's `--agent`, or the `Dshq-Agent-*` headers), never an argument: those cases run
//! on the faces that can state them.

use std::process::Command;

use serde_json::{json, Value};

use crate::api::{host, token, Host};
use crate::helpers::{wait_until, Env, DEADLINE};
use crate::mcp::{run_script, script_env, steps, Transport};

/// Who asks, where the face takes it from the session and not the document.
#[derive(Clone, Copy, PartialEq)]
enum Asker {
    /// No agent.
    Nobody,
    /// An agent that is not live.
    Ghost,
    /// A live agent owned by another.
    Child,
}

struct Case {
    name: &'static str,
    /// The request's questions and fields, without `id` and `agent`.
    doc: Value,
    /// The same as `ask_user_question`'s arguments, where MCP can state it.
    mcp: Option<Value>,
    asker: Asker,
    code: &'static str,
}

fn q(extra: Value) -> Value {
    let mut q =
        json!({"id": "q1", "question": "Which one?", "options": [{"label": "A"}, {"label": "B"}]});
    q.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    q
}

fn cases() -> Vec<Case> {
    let plan = |options: Value, approve: &str| {
        json!({"id": "plan", "question": "Approve?", "detail": "1. Do it",
               "options": options, "intent": {"kind": "plan-review", "approve": approve}})
    };
    let same = |doc: &Value| Some(doc.clone());
    let mut out = Vec::new();
    let mut case = |name, doc: Value, mcp: Option<Value>, asker, code| {
        out.push(Case {
            name,
            doc,
            mcp,
            asker,
            code,
        })
    };
    let d = json!({"questions": [q(json!({"mutliSelect": true}))]});
    case(
        "unknown field",
        d.clone(),
        same(&d),
        Asker::Nobody,
        "BAD_REQUEST",
    );
    let d = json!({"questions": [q(json!({"options": [{"label": "A"}, {"label": "A"}]}))]});
    case(
        "duplicate label",
        d.clone(),
        same(&d),
        Asker::Nobody,
        "BAD_REQUEST",
    );
    let d = json!({"questions": []});
    case(
        "no questions",
        d.clone(),
        same(&d),
        Asker::Nobody,
        "EMPTY_QUESTIONS",
    );
    let d = json!({"questions": [], "timeout": "1h", "meta": {"k": 1}});
    case(
        "no questions, with fields",
        d.clone(),
        same(&d),
        Asker::Nobody,
        "EMPTY_QUESTIONS",
    );
    let d = json!({"questions": [plan(json!([{"label": "Yes"}, {"label": "No"}]), "Ship it")]});
    case(
        "intent approves no option",
        d.clone(),
        same(&d),
        Asker::Nobody,
        "BAD_INTENT",
    );
    let d = json!({"questions": [plan(json!([]), "Yes")]});
    case(
        "intent with no options",
        d.clone(),
        same(&d),
        Asker::Nobody,
        "BAD_INTENT",
    );
    let mut other_kind = plan(json!([{"label": "Yes"}]), "Yes");
    other_kind["intent"]["kind"] = json!("vote");
    let d = json!({"questions": [other_kind]});
    case(
        "another intent kind",
        d.clone(),
        same(&d),
        Asker::Nobody,
        "BAD_INTENT",
    );
    let mut no_detail = plan(json!([{"label": "Yes"}]), "Yes");
    no_detail.as_object_mut().unwrap().remove("detail");
    let d = json!({"questions": [no_detail]});
    case(
        "intent without detail",
        d.clone(),
        same(&d),
        Asker::Nobody,
        "BAD_INTENT",
    );
    let d = json!({"questions": [q(json!({}))], "deadline": "2001-01-01T00:00:00Z"});
    case("deadline passed", d, None, Asker::Nobody, "ASK_ABORTED");
    let d = json!({"questions": [q(json!({}))], "requireProvider": true});
    case("no provider", d, None, Asker::Nobody, "NO_PROVIDER");
    let d = json!({"questions": [q(json!({}))]});
    case(
        "agent not live",
        d.clone(),
        same(&d),
        Asker::Ghost,
        "CALLER_NOT_LIVE",
    );
    case(
        "agent delegated",
        d.clone(),
        same(&d),
        Asker::Child,
        "DELEGATED_CALLER",
    );
    let d = json!({"questions": [q(json!({"question": "Another question"}))]});
    case(
        "another request's id",
        d.clone(),
        same(&d),
        Asker::Nobody,
        "DUPLICATE_ID",
    );
    // dsh 0.2's continued questions: a request on a tool call (its id is the call's).
    for (name, ms) in [
        ("a zero window", json!(0)),
        ("a window past 2^31-1 ms", json!(2147483648u64)),
        ("a window of a fraction", json!(1.5)),
        ("a negative window", json!(-1)),
    ] {
        let d =
            json!({"questions": [q(json!({}))], "wait": {"callId": "c-window", "timeoutMs": ms}});
        case(name, d.clone(), same(&d), Asker::Nobody, "BAD_TIMEOUT");
    }
    let d = json!({"questions": [q(json!({"question": "Another question"}))],
                   "wait": {"callId": "c-taken", "timeoutMs": 1000}});
    case(
        "another question on the call",
        d.clone(),
        same(&d),
        Asker::Nobody,
        "DUPLICATE_WAIT",
    );
    out
}

/// The id each case asks under: one taken already (by another request) for DUPLICATE_ID,
/// else its own.
fn id_of(i: usize, c: &Case) -> String {
    if c.code == "DUPLICATE_ID" {
        "taken".into()
    } else {
        format!("case-{i}")
    }
}

fn with(doc: &Value, id: &str, agent: Option<&Value>) -> Value {
    let mut d = doc.clone();
    // A request on a tool call has the call's id.
    if d.get("wait").is_none() {
        d["id"] = json!(id);
    }
    if let Some(a) = agent {
        d["agent"] = a.clone();
    }
    d
}

/// Each MCP case of `asker`, called in one session over `t`: (case index, code).
fn over_mcp(env: &Env, t: &Transport, asker: Asker, agent: Option<&Value>) -> Vec<(usize, String)> {
    let all = cases();
    let mine: Vec<(usize, &Case)> = all
        .iter()
        .enumerate()
        .filter(|(_, c)| c.asker == asker && c.mcp.is_some())
        .collect();
    let calls: Vec<Value> = mine
        .iter()
        .map(|(i, c)| {
            let mut args = c.mcp.clone().unwrap();
            if args.get("wait").is_none() {
                args["id"] = json!(id_of(*i, c));
            }
            args["waitSeconds"] = json!(0);
            json!(["ask_user_question", args])
        })
        .collect();
    let mut cmd = Command::new("python3");
    cmd.arg(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py"))
        .arg("calls");
    let calls = serde_json::to_string(&calls).unwrap();
    let agent_json = agent.map(Value::to_string).unwrap_or_default();
    let mut vars = vec![("MCP_CALLS", calls.as_str())];
    if agent.is_some() && matches!(t, Transport::Http { .. }) {
        vars.push(("MCP_AGENT", agent_json.as_str()));
    }
    script_env(&mut cmd, env, t, &vars);
    let (stdout, _) = run_script(cmd, "client.py calls", "the MCP SDK did not import");
    let got = steps(&stdout);
    mine.iter()
        .enumerate()
        .map(|(n, (i, _))| {
            let step = &got[format!("call-{n}")];
            assert_eq!(step["isError"], true, "{step}");
            let code = step["structured"]["error"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (*i, code)
        })
        .collect()
}

#[test]
fn every_ask_code_is_the_same_on_every_face() {
    let env = Env::new();
    let h: Host = host(&env, &[]);
    let asker_token = token(&env, "asker", "codes", None);
    // The id DUPLICATE_ID meets, and the call DUPLICATE_WAIT meets, each taken by another
    // request.
    env.ask(&with(&json!({"questions": [q(json!({}))]}), "taken", None))
        .ok();
    env.ask(
        &json!({"questions": [q(json!({}))], "wait": {"callId": "c-taken", "timeoutMs": 1000}}),
    )
    .ok();
    env.json(&["agent", "enter", "--id", "parent"]).ok();
    let child = env
        .json(&["agent", "enter", "--id", "child", "--owner", "parent"])
        .ok()
        .json();
    let ghost = json!({"id": "ghost", "instance": "i-1"});
    let child = json!({"id": "child", "instance": child["instance"]});
    let agent_of = |a: Asker| match a {
        Asker::Nobody => None,
        Asker::Ghost => Some(&ghost),
        Asker::Child => Some(&child),
    };

    let all = cases();
    let mut seen: Vec<Vec<(&str, String)>> = all.iter().map(|_| Vec::new()).collect();
    for (i, c) in all.iter().enumerate() {
        let doc = with(&c.doc, &id_of(i, c), agent_of(c.asker));
        let bytes = serde_json::to_vec(&doc).unwrap();
        // A file in the inbox: the daemon's rejection beside it.
        let name = format!("file-{i}.json");
        env.drop_file(&name, &bytes);
        let error = env
            .root()
            .join("rejected")
            .join(format!("file-{i}.error.json"));
        assert!(
            wait_until(DEADLINE, || error.exists()),
            "{}: no rejection of the file",
            c.name
        );
        let e: Value = serde_json::from_slice(&std::fs::read(&error).unwrap()).unwrap();
        seen[i].push(("file", e["code"].as_str().unwrap_or_default().into()));
        // dshq ask.
        seen[i].push(("cli", env.ask(&doc).error_code()));
        // The HTTP API.
        let r = h.post("/requests", Some(&asker_token), &doc);
        seen[i].push(("http", r.code().to_string()));
    }
    // MCP, each asker in a session of its own (the agent is the session's).
    let mcp_token = token(&env, "asker", "codes-mcp", None);
    for asker in [Asker::Nobody, Asker::Ghost, Asker::Child] {
        let agent = agent_of(asker);
        let stdio_args = match agent {
            Some(a) => vec![
                "--agent".to_string(),
                a["id"].as_str().unwrap().to_string(),
                "--instance".to_string(),
                a["instance"].as_str().unwrap().to_string(),
            ],
            None => vec![],
        };
        for (face, t) in [
            ("mcp stdio", Transport::Stdio(stdio_args)),
            (
                "/mcp",
                Transport::Http {
                    base: h.base.clone(),
                    token: mcp_token.clone(),
                },
            ),
        ] {
            for (i, code) in over_mcp(&env, &t, asker, agent) {
                seen[i].push((face, code));
            }
        }
    }

    let mut wrong = Vec::new();
    for (c, got) in all.iter().zip(&seen) {
        let faces = if c.mcp.is_some() { 5 } else { 3 };
        assert_eq!(got.len(), faces, "{}: {got:?}", c.name);
        for (face, code) in got {
            if code != c.code {
                wrong.push(format!("{}: {face} said {code}, not {}", c.name, c.code));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "one input, two codes:\n{}",
        wrong.join("\n")
    );
}

/// The same for the answer rules (section 4): each answer the vocabulary refuses gets one
/// code from an answer file (`answers/rejected/NAME.error.json`), `dshq answer --answers`
/// and the HTTP API, and leaves the request pending. (MCP's reviewer answers through
/// forms the server builds, and the page through its own form: neither can send these.)
#[test]
fn every_answer_code_is_the_same_on_every_face() {
    let env = Env::new();
    let h: Host = host(&env, &[]);
    let rita = token(&env, "reviewer", "rita", None);
    let ask = |id: &str, context: &str| {
        env.ask(&json!({"id": id, "context": context, "questions": [
            {"id": "one", "question": "Which?", "options": [{"label": "A"}, {"label": "B"}]},
            {"id": "many", "question": "Which ones?", "multiSelect": true,
             "options": [{"label": "X"}, {"label": "Y"}]},
            {"id": "text", "question": "Why?", "detail": "the reason"}
        ]}))
        .ok();
    };
    for id in ["by-cli", "by-http"] {
        ask(id, id);
    }
    let lease = env.register("filer", "by-file", "10m");
    let ok = |one: Value| json!([one, {"id": "many", "selected": ["X"]}, {"id": "text", "selected": [], "custom": "because"}]);
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "a label that is no option",
            ok(json!({"id": "one", "selected": ["C"]})),
            "BAD_ANSWER",
        ),
        (
            "two labels on a single select",
            ok(json!({"id": "one", "selected": ["A", "B"]})),
            "BAD_ANSWER",
        ),
        (
            "custom beside a label on a single select",
            ok(json!({"id": "one", "selected": ["A"], "custom": "c"})),
            "BAD_ANSWER",
        ),
        (
            "a blank custom",
            ok(json!({"id": "one", "selected": [], "custom": "  "})),
            "BAD_ANSWER",
        ),
        (
            "a question left out",
            json!([{"id": "one", "selected": ["A"]}]),
            "BAD_ANSWER",
        ),
        (
            "an unknown question",
            {
                let mut a = ok(json!({"id": "one", "selected": ["A"]}));
                a.as_array_mut()
                    .unwrap()
                    .push(json!({"id": "nope", "selected": []}));
                a
            },
            "BAD_ANSWER",
        ),
        (
            "an edit where none is allowed",
            ok(json!({"id": "one", "selected": ["A"], "edited": "x"})),
            "EDIT_NOT_ALLOWED",
        ),
    ];
    let mut wrong = Vec::new();
    for (i, (what, answers, code)) in cases.iter().enumerate() {
        let mut seen = Vec::new();
        // An answer file (named after its request: one request a case).
        let id = format!("by-file-{i}");
        ask(&id, "by-file");
        let name = format!("{id}.json");
        env.drop_answer(
            &name,
            &serde_json::to_vec(&json!({"lease": lease, "answers": answers})).unwrap(),
        );
        let error = env
            .root()
            .join("answers/rejected")
            .join(format!("{id}.error.json"));
        assert!(
            wait_until(DEADLINE, || error.exists()),
            "{what}: no rejection"
        );
        let e: Value = serde_json::from_slice(&std::fs::read(&error).unwrap()).unwrap();
        seen.push(("file", e["code"].as_str().unwrap_or_default().to_string()));
        // dshq answer --answers FILE.
        let f = env.dir.path().join(format!("answer-{i}.json"));
        std::fs::write(&f, json!({"answers": answers}).to_string()).unwrap();
        let r = env.json(&["answer", "by-cli", "--answers", f.to_str().unwrap()]);
        seen.push(("cli", r.error_code()));
        // The HTTP API.
        let r = h.post(
            "/requests/by-http/answer",
            Some(&rita),
            &json!({"answers": answers}),
        );
        seen.push(("http", r.code().to_string()));
        for (face, got) in seen {
            if got != *code {
                wrong.push(format!("{what}: {face} said {got}, not {code}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "one answer, two codes:\n{}",
        wrong.join("\n")
    );
    for id in ["by-file-0", "by-cli", "by-http"] {
        assert_eq!(
            env.json(&["show", id]).ok().json()["status"],
            "pending",
            "{id}"
        );
    }
}
