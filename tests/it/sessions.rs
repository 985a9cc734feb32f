//! Sessions and revocation through real sockets: what a token opened ends when
//! the token is revoked or its page session logs out; an MCP session answers only the
//! token that opened it; `/mcp` refuses browser Origins it was not told to allow; a review
//! sends a 2025-06-18 client only the forms that revision has. The MCP side is spoken as
//! raw JSON-RPC over HTTP, so the test sees exactly what goes over the wire.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::api::{host, token, Host};
use crate::helpers::{simple_request, wait_until, Env, DEADLINE};

/// A revoked token's open things must end within this long.
const WITHIN: Duration = Duration::from_secs(1);

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_read(Duration::from_secs(90))
        .redirects(0)
        .build()
}

/// A raw MCP client: one session over `/mcp` with one bearer token.
struct Mcp {
    url: String,
    token: String,
    session: Option<String>,
    version: String,
    next: u64,
}

impl Mcp {
    fn new(h: &Host, token: &str) -> Mcp {
        Mcp {
            url: format!("{}/mcp", h.base),
            token: token.to_string(),
            session: None,
            version: "2025-11-25".into(),
            next: 1,
        }
    }

    /// A POST of `body` with this client's headers (plus `extra`), as it comes back.
    #[allow(clippy::result_large_err)] // ureq's own error, matched on by status
    fn post(&self, body: &Value, extra: &[(&str, &str)]) -> Result<ureq::Response, ureq::Error> {
        let mut r = agent()
            .post(&self.url)
            .set("Authorization", &format!("Bearer {}", self.token))
            .set("Accept", "application/json, text/event-stream")
            .set("Content-Type", "application/json")
            .set("MCP-Protocol-Version", &self.version);
        if let Some(s) = &self.session {
            r = r.set("Mcp-Session-Id", s);
        }
        for (k, v) in extra {
            r = r.set(k, v);
        }
        r.send_string(&body.to_string())
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
    }

    /// Initialize with `version` (and elicitation), and send `initialized`.
    fn open(h: &Host, token: &str, version: &str) -> Mcp {
        let mut c = Mcp::new(h, token);
        c.version = version.into();
        let init = c.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {"elicitation": {}},
                   "clientInfo": {"name": "raw-test", "version": "1"}}),
        );
        let r = c.post(&init, &[]).expect("initialize");
        c.session = r.header("mcp-session-id").map(str::to_string);
        assert!(c.session.is_some(), "no session id");
        let reply = Messages::of(r)
            .next_message()
            .expect("the initialize result");
        assert_eq!(reply["result"]["protocolVersion"], version, "{reply}");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = c.post(&note, &[]).expect("initialized");
        assert_eq!(r.status(), 202);
        c
    }

    /// `tools/call` of `tool` with `args`: the messages that come back on its stream.
    fn call(&mut self, tool: &str, args: Value) -> Messages {
        let body = self.request("tools/call", json!({"name": tool, "arguments": args}));
        Messages::of(self.post(&body, &[]).expect("tools/call"))
    }
}

/// The JSON-RPC messages of one response: a JSON body, or an SSE stream read as it comes.
struct Messages {
    json: Option<Value>,
    lines: Option<BufReader<Box<dyn Read + Send + Sync>>>,
}

impl Messages {
    fn of(r: ureq::Response) -> Messages {
        if r.content_type() == "application/json" {
            let v: Value = serde_json::from_str(&r.into_string().unwrap()).unwrap();
            return Messages {
                json: Some(v),
                lines: None,
            };
        }
        Messages {
            json: None,
            lines: Some(BufReader::new(r.into_reader())),
        }
    }

    /// The next message (`None` when the stream ended).
    fn next_message(&mut self) -> Option<Value> {
        if let Some(v) = self.json.take() {
            return Some(v);
        }
        let lines = self.lines.as_mut()?;
        let mut line = String::new();
        loop {
            line.clear();
            if lines.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                let data = data.trim();
                if data.is_empty() {
                    continue; // a priming event
                }
                return Some(serde_json::from_str(data).unwrap());
            }
        }
    }
}

/// Read `r` to its end on a thread; the instant it ended is sent on the channel.
fn ends_at(r: impl Read + Send + 'static) -> mpsc::Receiver<Instant> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = r;
        let mut buf = [0u8; 4096];
        while matches!(r.read(&mut buf), Ok(n) if n > 0) {}
        let _ = tx.send(Instant::now());
    });
    rx
}

fn stream(h: &Host, token: &str) -> ureq::Response {
    let r = agent()
        .get(&h.url("/stream"))
        .set("Authorization", &format!("Bearer {token}"))
        .call()
        .expect("the event stream");
    assert_eq!(r.content_type(), "text/event-stream");
    r
}

fn page_stream(h: &Host, cookie: &str) -> ureq::Response {
    let r = agent()
        .get(&format!("{}/live", h.base))
        .set("Cookie", cookie)
        .call()
        .expect("the page stream");
    assert_eq!(r.content_type(), "text/event-stream");
    r
}

/// The standalone GET stream of an MCP session.
fn mcp_stream(c: &Mcp) -> ureq::Response {
    agent()
        .get(&c.url)
        .set("Authorization", &format!("Bearer {}", c.token))
        .set("Accept", "text/event-stream")
        .set("Mcp-Session-Id", c.session.as_deref().unwrap())
        .set("MCP-Protocol-Version", &c.version)
        .call()
        .expect("the session's stream")
}

fn count(log: &str, needle: &str) -> usize {
    log.matches(needle).count()
}

#[test]
fn revoking_a_token_ends_its_streams_long_polls_and_mcp_sessions_within_a_second() {
    let env = Env::new();
    let h = host(&env, &[]);
    let rita = token(&env, "reviewer", "rita", None);
    let other = token(&env, "reviewer", "olga", None);
    env.drop_file("r1.json", simple_request("r1").to_string().as_bytes());
    assert!(wait_until(DEADLINE, || env.json(&["show", "r1"]).code == 0));

    // Everything rita holds open: the API stream, the page's stream, a long-poll, an MCP
    // session with its stream and a tool call waiting for an answer.
    let api = ends_at(stream(&h, &rita).into_reader());
    let session = crate::page::login(&h, &rita);
    let page = ends_at(page_stream(&h, &session.cookie).into_reader());
    let (poll_tx, poll) = mpsc::channel();
    {
        let (url, rita) = (h.url("/requests/r1/outcome?wait=60s"), rita.clone());
        std::thread::spawn(move || {
            let r = crate::api::call("GET", &url, Some(&rita), None);
            let _ = poll_tx.send((Instant::now(), r.status, r.code().to_string()));
        });
    }
    let mut mcp = Mcp::open(&h, &rita, "2025-11-25");
    let mcp_get = ends_at(mcp_stream(&mcp).into_reader());
    let waiting = mcp.call("get_answer", json!({"id": "r1", "waitSeconds": 45}));
    let mcp_call = ends_at(waiting.lines.expect("a streamed call"));
    // And olga's stream, which must stay.
    let olga = ends_at(stream(&h, &other).into_reader());
    assert!(
        wait_until(DEADLINE, || {
            let log = h.daemon.log_text();
            count(&log, "event stream opened") >= 2
                && log.contains("page stream opened")
                && log.contains("long-poll waiting")
        }),
        "{}",
        h.daemon.log_text()
    );

    env.json(&["token", "revoke", "rita"]).ok();
    let revoked = Instant::now();
    for (what, rx) in [
        ("the API stream", &api),
        ("the page stream", &page),
        ("the MCP session's stream", &mcp_get),
        ("the MCP tool call", &mcp_call),
    ] {
        let at = rx
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("{what} never ended"));
        let took = at.saturating_duration_since(revoked);
        assert!(took <= WITHIN, "{what} ended {took:?} after the revocation");
    }
    let (at, status, code) = poll.recv_timeout(DEADLINE).expect("the long-poll ended");
    assert!(at.saturating_duration_since(revoked) <= WITHIN);
    assert_eq!((status, code.as_str()), (401, "UNAUTHORIZED"));
    // The MCP session is gone (and the token refused).
    let body = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list"});
    match mcp.post(&body, &[]) {
        Err(ureq::Error::Status(401, _)) => {}
        other => panic!("the revoked token's session answered: {other:?}"),
    }
    // Olga's stream is still open: it hears an answer.
    assert!(olga.try_recv().is_err(), "another token's stream ended too");
    let r = crate::api::call(
        "POST",
        &h.url("/requests/r1/answer"),
        Some(&other),
        Some(br#"{"answers":[{"id":"db","selected":["Postgres"]}]}"#),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert!(olga.try_recv().is_err(), "another token's stream ended too");
}

#[test]
fn a_page_logout_ends_that_sessions_live_stream_only() {
    let env = Env::new();
    let h = host(&env, &[]);
    let rita = token(&env, "reviewer", "rita", None);
    let one = crate::page::login(&h, &rita);
    let two = crate::page::login(&h, &rita);
    let first = ends_at(page_stream(&h, &one.cookie).into_reader());
    let second = ends_at(page_stream(&h, &two.cookie).into_reader());
    assert!(wait_until(DEADLINE, || count(
        &h.daemon.log_text(),
        "page stream opened"
    ) >= 2));
    let r = one.post("/logout", &[("csrf", &one.csrf)]);
    assert_eq!(r.status, 303, "{}", r.body);
    let out = Instant::now();
    let at = first.recv_timeout(DEADLINE).expect("the stream ended");
    assert!(at.saturating_duration_since(out) <= WITHIN);
    // The other login of the same token keeps its stream.
    assert!(
        second.try_recv().is_err(),
        "the other session's stream ended"
    );
    assert_eq!(two.get("/").status, 200);
}

#[test]
fn an_expired_page_session_ends_its_live_stream() {
    let env = Env::new();
    let h = host(&env, &["--web-session-idle", "2s"]);
    let rita = token(&env, "reviewer", "rita", None);
    let session = crate::page::login(&h, &rita);
    let opened = Instant::now();
    let live = ends_at(page_stream(&h, &session.cookie).into_reader());
    // Nobody uses the page: the session expires after 2 s, and its stream ends with it
    // (checked every second).
    let at = live.recv_timeout(DEADLINE).expect("the stream never ended");
    let lived = at.saturating_duration_since(opened);
    assert!(
        lived >= Duration::from_secs(1),
        "ended after {lived:?}, before the expiry"
    );
    assert!(
        lived <= Duration::from_secs(2) + WITHIN + WITHIN,
        "ended after {lived:?}"
    );
    // And the page sends the browser to the login form.
    let r = session.get("/");
    assert_eq!(r.status, 303, "{}", r.body);
}

#[test]
fn an_mcp_session_answers_only_the_token_that_opened_it() {
    let env = Env::new();
    let h = host(&env, &[]);
    let rita = token(&env, "reviewer", "rita", None);
    let audrey = token(&env, "auditor", "audrey", None);
    let mut own = Mcp::open(&h, &rita, "2025-11-25");
    let mut foreign = Mcp::new(&h, &audrey);
    foreign.session = own.session.clone();
    // Anything with another token on rita's session is 404, as an unknown session is.
    let list = foreign.request("tools/list", json!({}));
    match foreign.post(&list, &[]) {
        Err(ureq::Error::Status(404, _)) => {}
        other => panic!("a foreign token reached the session: {other:?}"),
    }
    // Answering the session's elicitation: a JSON-RPC response posted to the session.
    let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {}}});
    match foreign.post(&answer, &[]) {
        Err(ureq::Error::Status(404, _)) => {}
        other => panic!("a foreign token answered into the session: {other:?}"),
    }
    // Ending it.
    let del = agent()
        .delete(&foreign.url)
        .set("Authorization", &format!("Bearer {audrey}"))
        .set("Mcp-Session-Id", own.session.as_deref().unwrap())
        .call();
    match del {
        Err(ureq::Error::Status(404, _)) => {}
        other => panic!("a foreign token ended the session: {other:?}"),
    }
    // Its stream.
    let get = agent()
        .get(&foreign.url)
        .set("Authorization", &format!("Bearer {audrey}"))
        .set("Accept", "text/event-stream")
        .set("Mcp-Session-Id", own.session.as_deref().unwrap())
        .call();
    assert!(matches!(get, Err(ureq::Error::Status(404, _))), "{get:?}");
    // The owner's session still works.
    let mut reply = own.call("get_answer", json!({"id": "nope"}));
    let m = reply.next_message().expect("a result");
    assert_eq!(
        m["result"]["structuredContent"]["error"]["code"], "NOT_FOUND",
        "{m}"
    );
}

/// POST `initialize` with an `Origin` header (or none): the status.
fn initialize_from(c: &Mcp, origin: Option<&str>) -> u16 {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw-test", "version": "1"}}});
    let extra: Vec<(&str, &str)> = origin.map(|o| ("Origin", o)).into_iter().collect();
    match c.post(&init, &extra) {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(s, _)) => s,
        Err(e) => panic!("{e}"),
    }
}

/// POST `initialize` with these `Host` and `Origin` headers: the status.
fn initialize_as(c: &Mcp, host: &str, origin: &str) -> u16 {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw-test", "version": "1"}}});
    match c.post(&init, &[("Host", host), ("Origin", origin)]) {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(s, _)) => s,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn mcp_refuses_browser_origins_it_was_not_told_to_allow() {
    let env = Env::new();
    let asker = token(&env, "asker", "ann", None);
    {
        let h = host(&env, &[]);
        let c = Mcp::new(&h, &asker);
        let port = h.base.rsplit(':').next().unwrap().to_string();
        let other_port = format!("http://127.0.0.1:{}", port.parse::<u16>().unwrap() ^ 1);
        for origin in ["http://evil.example", "null", &other_port] {
            assert_eq!(initialize_from(&c, Some(origin)), 403, "Origin {origin}");
        }
        // A page of this loopback listener calling it (its own origin, by each loopback
        // name) is served, as the specification's DNS-rebinding guidance expects.
        assert_eq!(initialize_from(&c, Some(&h.base)), 200, "own origin");
        for name in ["localhost", "127.0.0.1", "[::1]"] {
            let host = format!("{name}:{port}");
            let origin = format!("http://{host}");
            assert_eq!(initialize_as(&c, &host, &origin), 200, "{origin}");
        }
        // DNS rebinding: the page's own name arrives in Host, with its own Origin.
        let rebound = format!("evil.example:{port}");
        assert_eq!(
            initialize_as(&c, &rebound, &format!("http://{rebound}")),
            403,
            "a rebound name"
        );
        // Another loopback name's origin than the Host's is another origin.
        let host = format!("localhost:{port}");
        assert_eq!(
            initialize_as(&c, &host, &format!("http://127.0.0.1:{port}")),
            403
        );
        // A client that sends no Origin (not a browser) is served.
        assert_eq!(initialize_from(&c, None), 200);
    }
    // Named origins are allowed, and only those.
    let h = host(&env, &["--mcp-allow-origin", "http://localhost:5173"]);
    let c = Mcp::new(&h, &asker);
    assert_eq!(initialize_from(&c, Some("http://localhost:5173")), 200);
    for origin in ["http://evil.example", "null", "http://localhost:5174"] {
        assert_eq!(initialize_from(&c, Some(origin)), 403, "Origin {origin}");
    }
    assert_eq!(initialize_from(&c, None), 200);
}

#[test]
fn a_2025_06_18_client_is_sent_plain_forms_only() {
    let env = Env::new();
    let h = host(&env, &[]);
    let rita = token(&env, "reviewer", "rita", None);
    let ask = |v: Value| env.ask(&v).ok();
    ask(
        json!({"id": "p-single", "context": "rev", "questions": [{"id": "c", "question": "Colour?",
        "options": [{"label": "Blue", "description": "calm"}, {"label": "Red"}]}]}),
    );
    ask(
        json!({"id": "p-multi", "context": "rev", "questions": [{"id": "m", "question": "Which?",
        "multiSelect": true, "options": [{"label": "A"}, {"label": "B"}, {"label": "C"}]}]}),
    );
    ask(
        json!({"id": "p-plan", "context": "rev", "questions": [{"id": "p", "question": "Approve?",
        "detail": "the plan", "options": [{"label": "Approve"}, {"label": "Revise"}],
        "intent": {"kind": "plan-review", "approve": "Approve"}}]}),
    );
    let mut c = Mcp::open(&h, &rita, "2025-06-18");
    let mut review = c.call("review_questions", json!({"context": "rev"}));
    let mut forms = Vec::new();
    let result = loop {
        let m = review
            .next_message()
            .expect("the review's stream ended early");
        if m.get("result").is_some() || m.get("error").is_some() {
            break m;
        }
        assert_eq!(m["method"], "elicitation/create", "{m}");
        let params = &m["params"];
        let schema = &params["requestedSchema"];
        forms.push(schema.clone());
        // Only what 2025-06-18 defines: flat primitives, enums without titles.
        for (name, p) in schema["properties"].as_object().unwrap() {
            let t = p["type"].as_str().unwrap_or("");
            assert!(
                ["string", "boolean", "number", "integer"].contains(&t),
                "{name}: {p}"
            );
            assert!(
                p.get("oneOf").is_none() && p.get("anyOf").is_none(),
                "{name}: {p}"
            );
        }
        let message = params["message"].as_str().unwrap();
        let content = if message.contains("p-single") {
            assert!(message.contains("Blue: calm"), "{message}");
            assert_eq!(
                schema["properties"]["choice"]["enum"],
                json!(["Blue", "Red"])
            );
            json!({"choice": "Blue"})
        } else if message.contains("p-multi") {
            assert_eq!(schema["properties"]["option1"]["title"], "A", "{schema}");
            json!({"option1": true, "option2": false, "option3": true})
        } else {
            let choices = schema["properties"]["decision"]["enum"].as_array().unwrap();
            assert_eq!(choices[0], "Approve", "{schema}");
            json!({"decision": "Approve"})
        };
        let reply = json!({"jsonrpc": "2.0", "id": m["id"],
                           "result": {"action": "accept", "content": content}});
        let r = c.post(&reply, &[]).expect("the form's answer");
        assert_eq!(r.status(), 202);
    };
    assert_eq!(forms.len(), 3, "{forms:?}");
    let s = &result["result"]["structuredContent"];
    assert_eq!(s["stillOpen"], 0, "{result}");
    let o = |id: &str| {
        env.outcome(id)
            .unwrap_or_else(|| panic!("no outcome for {id}"))
    };
    assert_eq!(
        o("p-single")["answer"]["answers"][0]["selected"],
        json!(["Blue"])
    );
    assert_eq!(
        o("p-multi")["answer"]["answers"][0]["selected"],
        json!(["A", "C"])
    );
    assert_eq!(o("p-plan")["decision"], "approved");
}
