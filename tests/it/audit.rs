//! Issue "Audit": `history` with its filters and formats, `stats`, the event trail of one
//! request, the hash chain of the event log (`audit verify`) and `export`, on the real
//! binary over a store filled through the real CLI.
//!
//! Times are deterministic: every command that creates or finishes a request runs with
//! `DSHQ_CLOCK_SKEW`, so creation and finish times are the designed offsets plus the wall
//! time the fixture took to build (measured, and used as the tolerance). Nothing sleeps.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::helpers::*;

// ---------------------------------------------------------------------------------------
// Clock and command helpers
// ---------------------------------------------------------------------------------------

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;

/// Wall-clock milliseconds since the epoch (the binary's clock without skew).
fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `DSHQ_CLOCK_SKEW` for a signed offset in milliseconds.
fn skew(ms: i64) -> String {
    format!("{}{}ms", if ms < 0 { "-" } else { "+" }, ms.abs())
}

/// Run `args` with the clock shifted by `at` ms.
fn run_at(env: &Env, at: i64, args: &[&str]) -> Run {
    let s = skew(at);
    env.run_env(&[("DSHQ_CLOCK_SKEW", s.as_str())], args)
}

/// Run `--json args` with the clock shifted by `at` ms.
fn json_at(env: &Env, at: i64, args: &[&str]) -> Run {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    run_at(env, at, &all)
}

/// `dshq --json ask FILE` with the clock shifted by `at` ms.
fn ask_at(env: &Env, at: i64, request: &Value) -> Run {
    let path = env.dir.path().join(format!("req-{}.json", unique()));
    fs::write(&path, serde_json::to_vec(request).unwrap()).unwrap();
    json_at(env, at, &["ask", path.to_str().unwrap()])
}

/// Register a provider at `at`; returns the lease token.
fn register_at(env: &Env, at: i64, name: &str, context: &str, ttl: &str) -> String {
    let r = json_at(
        env,
        at,
        &[
            "provider",
            "register",
            "--name",
            name,
            "--context",
            context,
            "--ttl",
            ttl,
        ],
    )
    .ok();
    r.json()["lease"].as_str().unwrap().to_string()
}

/// `agent enter`; returns the instance.
fn enter(env: &Env, id: &str, lineage: Option<&str>) -> String {
    let mut args = vec!["agent", "enter", "--id", id];
    if let Some(l) = lineage {
        args.extend(["--lineage", l]);
    }
    env.json(&args).ok().json()["instance"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A single-select question.
fn q(id: &str, text: &str, labels: &[&str]) -> Value {
    let options: Vec<Value> = labels.iter().map(|l| json!({ "label": l })).collect();
    json!({"id": id, "question": text, "options": options})
}

/// A plan-review question whose approving option is the second one.
fn plan(id: &str, text: &str) -> Value {
    json!({
        "id": id,
        "question": text,
        "detail": "1. migrate\n2. verify",
        "options": [{"label": "Revise"}, {"label": "Ship it"}],
        "intent": {"kind": "plan-review", "approve": "Ship it"}
    })
}

/// A request.
fn req(id: &str, context: &str, agent: Option<(&str, &str)>, questions: Vec<Value>) -> Value {
    let mut v = json!({"id": id, "context": context, "questions": questions});
    if let Some((a, instance)) = agent {
        v["agent"] = json!({"id": a, "instance": instance});
    }
    v
}

/// The lease id inside a token (`ID.SECRET`).
fn lease_id(token: &str) -> i64 {
    token.split('.').next().unwrap().parse().unwrap()
}

/// An RFC 3339 string as milliseconds.
#[track_caller]
fn ms_of(v: &Value) -> i64 {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .parse::<jiff::Timestamp>()
        .unwrap_or_else(|e| panic!("{v} is not RFC 3339: {e}"))
        .as_millisecond()
}

/// Assert `actual` is within `[lo, hi]`.
#[track_caller]
fn assert_within(what: &str, actual: i64, lo: i64, hi: i64) {
    assert!(
        (lo..=hi).contains(&actual),
        "{what}: {actual} is not within [{lo}, {hi}] (off by {} / {})",
        actual - lo,
        actual - hi
    );
}

// ---------------------------------------------------------------------------------------
// The fixture: a known mix of agents, contexts, providers, statuses, decisions and times
// ---------------------------------------------------------------------------------------

const LINEAGE_B: &str = "resumed from s1";
/// A lineage with a comma, double quotes and a newline: CSV must quote it.
const LINEAGE_C: &str = "resumed from \"s2\",\nafter crash";
/// A question text with a comma, double quotes and a newline.
const CSV_TEXT: &str = "Deploy \"blue\", then green?\nSay yes";

/// Every request of the fixture with its designed creation offset (ms from the start of
/// the fixture), newest first: the order `history` must return.
const CREATED: &[(&str, i64)] = &[
    ("r-trail", 0),
    ("r-csv", -HOUR),
    ("r-pend", -4 * HOUR),
    ("r-claim", -6 * HOUR),
    ("r-grep2", -20 * HOUR),
    ("r-batch", -26 * HOUR),
    ("r-grep1", -30 * HOUR),
    ("r-cancel", -47 * HOUR),
    ("r-plan-no", -50 * HOUR),
    ("r-plan-ok", -72 * HOUR),
    ("r-abort", -120 * HOUR),
    ("r-rej", -144 * HOUR),
    ("r-old", -240 * HOUR),
];

/// The designed finish offset of every final request.
const FINISHED: &[(&str, i64)] = &[
    ("r-trail", 2 * MIN),
    ("r-csv", -15 * MIN),
    ("r-grep2", -20 * HOUR + MIN),
    ("r-batch", -21 * HOUR),
    ("r-grep1", -20 * HOUR),
    ("r-cancel", -46 * HOUR),
    ("r-plan-no", -50 * HOUR + 30 * MIN),
    ("r-plan-ok", -70 * HOUR),
    ("r-abort", -119 * HOUR),
    ("r-rej", -144 * HOUR),
    ("r-old", -239 * HOUR),
];

fn created(id: &str) -> i64 {
    CREATED.iter().find(|(i, _)| *i == id).unwrap().1
}

fn finished(id: &str) -> Option<i64> {
    FINISHED.iter().find(|(i, _)| *i == id).map(|f| f.1)
}

/// One expected history row: id, context, agent, lineage, status, code, decision, provider.
type Expected = (
    &'static str,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
);

#[rustfmt::skip]
const ROWS: &[Expected] = &[
    ("r-trail",   "default", Some("C"), Some(LINEAGE_C), "answered",  None,                    None,             Some("alice")),
    ("r-csv",     "ops",     None,      None,            "answered",  None,                    None,             Some("bob")),
    ("r-pend",    "default", Some("A"), None,            "pending",   None,                    None,             None),
    ("r-claim",   "ops",     None,      None,            "claimed",   None,                    None,             None),
    ("r-grep2",   "ops",     None,      None,            "answered",  None,                    None,             Some("alice")),
    // Several plan reviews: the decisions are per question, none for the request.
    ("r-batch",   "default", Some("C"), Some(LINEAGE_C), "answered",  None,                    None,             Some("alice")),
    ("r-grep1",   "default", Some("B"), Some(LINEAGE_B), "answered",  None,                    None,             Some("bob")),
    ("r-cancel",  "default", Some("A"), None,            "cancelled", Some("ASK_CANCELLED"),   None,             Some("alice")),
    ("r-plan-no", "ops",     Some("A"), None,            "answered",  None,                    Some("declined"), Some("bob")),
    ("r-plan-ok", "default", Some("B"), Some(LINEAGE_B), "answered",  None,                    Some("approved"), Some("alice")),
    ("r-abort",   "ops",     Some("B"), Some(LINEAGE_B), "aborted",   Some("ASK_ABORTED"),     None,             None),
    ("r-rej",     "ops",     None,      None,            "rejected",  Some("EMPTY_QUESTIONS"), None,             None),
    ("r-old",     "default", Some("A"), None,            "answered",  None,                    None,             Some("alice")),
];

struct Fixture {
    env: Env,
    /// Wall clock just before the first command and just after the last.
    before: i64,
    after: i64,
    /// The 1-minute lease that claimed `r-trail` and expired.
    trail_lease: String,
}

impl Fixture {
    /// How far a designed time can be off: the wall time the fixture took.
    fn slack(&self) -> i64 {
        self.after - self.before
    }

    /// The designed wait of an answered request, ms.
    fn designed_wait(id: &str) -> i64 {
        finished(id).unwrap() - created(id)
    }
}

/// Build the fixture through the CLI.
fn build() -> Fixture {
    let env = Env::new();
    let before = wall_ms();
    let (a, b, c) = (
        enter(&env, "A", None),
        enter(&env, "B", Some(LINEAGE_B)),
        enter(&env, "C", Some(LINEAGE_C)),
    );
    let (a, b, c) = (a.as_str(), b.as_str(), c.as_str());
    let yes_no = ["Yes", "No"];

    // r-old: 10 days ago, answered an hour later by alice with an explicit lease.
    let t = created("r-old");
    let q_old = q("q", "Which database?", &["Postgres", "SQLite"]);
    ask_at(
        &env,
        t,
        &req("r-old", "default", Some(("A", a)), vec![q_old]),
    )
    .ok();
    let lease = register_at(&env, t, "alice", "default", "2h");
    let t = finished("r-old").unwrap();
    json_at(
        &env,
        t,
        &["answer", "r-old", "--lease", &lease, "--select", "Postgres"],
    )
    .ok();
    json_at(&env, t, &["provider", "release", "--lease", &lease]).ok();

    // r-rej: rejected at ingestion (EMPTY_QUESTIONS), kept for the audit.
    let r = ask_at(
        &env,
        created("r-rej"),
        &json!({"id": "r-rej", "context": "ops", "questions": []}),
    );
    assert_eq!(r.error_code(), "EMPTY_QUESTIONS", "{r:?}");

    // r-abort: aborted by the asker an hour after asking.
    let q_abort = q("q", "Which database for ops?", &yes_no);
    ask_at(
        &env,
        created("r-abort"),
        &req("r-abort", "ops", Some(("B", b)), vec![q_abort]),
    )
    .ok();
    json_at(
        &env,
        finished("r-abort").unwrap(),
        &["abort", "r-abort", "--reason", "job cancelled"],
    )
    .ok();

    // r-plan-ok: a plan review approved by alice (the approving option is not the first).
    let q_ok = plan("plan", "Approve the migration plan?");
    ask_at(
        &env,
        created("r-plan-ok"),
        &req("r-plan-ok", "default", Some(("B", b)), vec![q_ok]),
    )
    .ok();
    json_at(
        &env,
        finished("r-plan-ok").unwrap(),
        &[
            "answer",
            "r-plan-ok",
            "--name",
            "alice",
            "--select",
            "Ship it",
        ],
    )
    .ok();

    // r-plan-no: a plan review declined by bob with feedback, with an explicit lease in ops.
    let t = created("r-plan-no");
    let q_no = plan("plan", "Approve the rollback plan?");
    ask_at(
        &env,
        t,
        &req("r-plan-no", "ops", Some(("A", a)), vec![q_no]),
    )
    .ok();
    let lease = register_at(&env, t, "bob", "ops", "1h");
    let t = finished("r-plan-no").unwrap();
    json_at(
        &env,
        t,
        &[
            "answer",
            "r-plan-no",
            "--lease",
            &lease,
            "--custom",
            "add a rollback step",
        ],
    )
    .ok();
    json_at(&env, t, &["provider", "release", "--lease", &lease]).ok();

    // r-cancel: cancelled by alice.
    let q_cancel = q("q", "Which region?", &["eu", "us"]);
    ask_at(
        &env,
        created("r-cancel"),
        &req("r-cancel", "default", Some(("A", a)), vec![q_cancel]),
    )
    .ok();
    json_at(
        &env,
        finished("r-cancel").unwrap(),
        &[
            "cancel",
            "r-cancel",
            "--name",
            "alice",
            "--reason",
            "not needed",
        ],
    )
    .ok();

    // r-grep1: `%` and `_` in the text; bob answers in the default context.
    let q_g1 = q("q", "Is 100% of the rollout_plan done?", &yes_no);
    ask_at(
        &env,
        created("r-grep1"),
        &req("r-grep1", "default", Some(("B", b)), vec![q_g1]),
    )
    .ok();
    json_at(
        &env,
        finished("r-grep1").unwrap(),
        &["answer", "r-grep1", "--name", "bob", "--select", "Yes"],
    )
    .ok();

    // r-batch: three plan reviews, approved / declined / approved.
    let qs = vec![
        plan("p1", "Approve step one?"),
        plan("p2", "Approve step two?"),
        plan("p3", "Approve step three?"),
    ];
    ask_at(
        &env,
        created("r-batch"),
        &req("r-batch", "default", Some(("C", c)), qs),
    )
    .ok();
    json_at(
        &env,
        finished("r-batch").unwrap(),
        &[
            "answer",
            "r-batch",
            "--name",
            "alice",
            "--question",
            "p1",
            "--select",
            "Ship it",
            "--question",
            "p2",
            "--select",
            "Revise",
            "--question",
            "p3",
            "--select",
            "Ship it",
        ],
    )
    .ok();

    // r-grep2: what an unescaped LIKE would wrongly match for `100%` and `rollout_plan`.
    let q_g2 = q("q", "Is 1000 of the rolloutXplan done?", &yes_no);
    ask_at(
        &env,
        created("r-grep2"),
        &req("r-grep2", "ops", None, vec![q_g2]),
    )
    .ok();
    json_at(
        &env,
        finished("r-grep2").unwrap(),
        &["answer", "r-grep2", "--name", "alice", "--select", "No"],
    )
    .ok();

    // Still open: r-claim (claimed below) and r-pend.
    let q_claim = q("q", "Restart the cluster?", &yes_no);
    ask_at(
        &env,
        created("r-claim"),
        &req("r-claim", "ops", None, vec![q_claim]),
    )
    .ok();
    let q_pend = q("q", "Rotate the keys now?", &yes_no);
    ask_at(
        &env,
        created("r-pend"),
        &req("r-pend", "default", Some(("A", a)), vec![q_pend]),
    )
    .ok();

    // r-csv: a question text with a comma, double quotes and a newline.
    let q_csv = q("q", CSV_TEXT, &["yes", "no"]);
    ask_at(
        &env,
        created("r-csv"),
        &req("r-csv", "ops", None, vec![q_csv]),
    )
    .ok();
    json_at(
        &env,
        finished("r-csv").unwrap(),
        &["answer", "r-csv", "--name", "bob", "--select", "yes"],
    )
    .ok();

    // bob holds ops for an hour and claims r-claim.
    let bob = register_at(&env, 0, "bob", "ops", "1h");
    json_at(&env, 0, &["claim", "r-claim", "--lease", &bob]).ok();

    // r-trail: claimed by alice's 1-minute lease, released when it expires (seen by the
    // answer command two minutes later), then answered by alice with a transient lease.
    let q_trail = q("q", "Which cache?", &["Redis", "Memcached"]);
    ask_at(
        &env,
        created("r-trail"),
        &req("r-trail", "default", Some(("C", c)), vec![q_trail]),
    )
    .ok();
    let trail_lease = register_at(&env, 0, "alice", "default", "1m");
    json_at(&env, 0, &["claim", "r-trail", "--lease", &trail_lease]).ok();
    json_at(
        &env,
        finished("r-trail").unwrap(),
        &["answer", "r-trail", "--name", "alice", "--select", "Redis"],
    )
    .ok();

    let after = wall_ms();
    Fixture {
        env,
        before,
        after,
        trail_lease,
    }
}

// ---------------------------------------------------------------------------------------
// History in every format
// ---------------------------------------------------------------------------------------

const CSV_HEADER: &[&str] = &[
    "id",
    "context",
    "agent",
    "lineage",
    "createdAt",
    "finishedAt",
    "waitMs",
    "status",
    "code",
    "decision",
    "provider",
    "questions",
    "votes",
];

/// A strict RFC 4180 parser: fields separated by commas, records by CRLF or LF; a quoted
/// field may hold commas, line breaks and doubled quotes; a quote anywhere else is an error.
fn parse_csv(s: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = s.chars().peekable();
    // 0: at the start of a field, 1: in an unquoted field, 2: in quotes, 3: after quotes.
    let mut state = 0;
    while let Some(ch) = chars.next() {
        match state {
            2 => {
                if ch == '"' {
                    if chars.peek() == Some(&'"') {
                        chars.next();
                        field.push('"');
                    } else {
                        state = 3;
                    }
                } else {
                    field.push(ch);
                }
            }
            _ => match ch {
                '"' if state == 0 => state = 2,
                '"' => panic!("a quote inside an unquoted field or after a closing quote: {s:?}"),
                ',' => {
                    record.push(std::mem::take(&mut field));
                    state = 0;
                }
                '\r' if chars.peek() == Some(&'\n') => {}
                '\n' => {
                    record.push(std::mem::take(&mut field));
                    records.push(std::mem::take(&mut record));
                    state = 0;
                }
                c if state == 3 => panic!("{c:?} after a closing quote: {s:?}"),
                c => {
                    field.push(c);
                    state = 1;
                }
            },
        }
    }
    assert_ne!(state, 2, "an unterminated quoted field: {s:?}");
    if state != 0 || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    records
}

#[test]
fn the_csv_parser_is_strict() {
    assert_eq!(
        parse_csv("a,\"b,\"\"c\"\"\nd\",\r\ne,f\n"),
        vec![
            vec!["a".to_string(), "b,\"c\"\nd".into(), "".into()],
            vec!["e".into(), "f".into()],
        ]
    );
    assert!(std::panic::catch_unwind(|| parse_csv("a\"b\n")).is_err());
    assert!(std::panic::catch_unwind(|| parse_csv("\"ab\n")).is_err());
}

fn history_run(env: &Env, args: &[&str], format: &str) -> Run {
    let mut all = vec!["history"];
    all.extend_from_slice(args);
    all.extend(["--format", format]);
    env.run(&all).ok()
}

/// `history ARGS --format json`, as rows.
fn history_rows(env: &Env, args: &[&str]) -> Vec<Value> {
    let v = history_run(env, args, "json").json();
    v.as_array()
        .unwrap_or_else(|| panic!("--format json is an array: {v}"))
        .clone()
}

fn ids_of(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .map(|r| r["id"].as_str().unwrap_or("-").to_string())
        .collect()
}

/// The ids `history ARGS` returns, checked to be the same in json, ndjson, csv and table.
#[track_caller]
fn history_ids(env: &Env, args: &[&str]) -> Vec<String> {
    let ids = ids_of(&history_rows(env, args));

    let nd = history_run(env, args, "ndjson");
    let nd_rows: Vec<Value> = nd
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("ndjson line {l:?}: {e}")))
        .collect();
    assert!(
        nd_rows.iter().all(Value::is_object),
        "ndjson lines are objects: {:?}",
        nd.stdout
    );
    assert_eq!(ids_of(&nd_rows), ids, "ndjson of {args:?}");

    let csv = parse_csv(&history_run(env, args, "csv").stdout);
    assert_eq!(csv[0], CSV_HEADER, "csv header of {args:?}");
    for r in &csv {
        assert_eq!(r.len(), CSV_HEADER.len(), "csv record {r:?}");
    }
    let csv_ids: Vec<String> = csv[1..].iter().map(|r| r[0].clone()).collect();
    assert_eq!(csv_ids, ids, "csv of {args:?}");

    let table = history_run(env, args, "table").stdout;
    if ids.is_empty() {
        assert!(
            table.contains("no matching requests"),
            "empty table of {args:?}: {table:?}"
        );
    } else {
        assert!(table.starts_with("ID "), "table header: {table:?}");
        let universe: BTreeSet<&str> = CREATED.iter().map(|c| c.0).collect();
        let table_ids: Vec<String> = table
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .filter(|t| universe.contains(t))
            .map(str::to_string)
            .collect();
        assert_eq!(table_ids, ids, "table of {args:?}:\n{table}");
    }
    ids
}

/// Assert `history ARGS` returns exactly `expected` (newest first) in every format.
#[track_caller]
fn check(env: &Env, args: &[&str], expected: &[&str]) {
    // The expectation itself must be in creation order, newest first.
    let pos: Vec<usize> = expected
        .iter()
        .map(|e| CREATED.iter().position(|c| c.0 == *e).unwrap())
        .collect();
    assert!(
        pos.windows(2).all(|w| w[0] < w[1]),
        "test bug: {expected:?} is not newest first"
    );
    assert_eq!(history_ids(env, args), expected, "history {args:?}");
}

#[test]
fn history_filters_alone_and_combined_in_every_format() {
    let fx = build();
    let env = &fx.env;
    let all: Vec<&str> = CREATED.iter().map(|c| c.0).collect();

    check(env, &["--limit", "0"], &all);
    check(env, &[], &all);

    check(
        env,
        &["--agent", "A"],
        &["r-pend", "r-cancel", "r-plan-no", "r-old"],
    );
    check(env, &["--agent", "B"], &["r-grep1", "r-plan-ok", "r-abort"]);
    check(env, &["--agent", "C"], &["r-trail", "r-batch"]);
    check(env, &["--agent", "nobody"], &[]);

    check(
        env,
        &["--context", "default"],
        &[
            "r-trail",
            "r-pend",
            "r-batch",
            "r-grep1",
            "r-cancel",
            "r-plan-ok",
            "r-old",
        ],
    );
    check(
        env,
        &["--context", "ops"],
        &[
            "r-csv",
            "r-claim",
            "r-grep2",
            "r-plan-no",
            "r-abort",
            "r-rej",
        ],
    );

    check(
        env,
        &["--provider", "alice"],
        &[
            "r-trail",
            "r-grep2",
            "r-batch",
            "r-cancel",
            "r-plan-ok",
            "r-old",
        ],
    );
    check(
        env,
        &["--provider", "bob"],
        &["r-csv", "r-grep1", "r-plan-no"],
    );

    check(
        env,
        &["--status", "answered"],
        &[
            "r-trail",
            "r-csv",
            "r-grep2",
            "r-batch",
            "r-grep1",
            "r-plan-no",
            "r-plan-ok",
            "r-old",
        ],
    );
    check(env, &["--status", "cancelled"], &["r-cancel"]);
    check(env, &["--status", "aborted"], &["r-abort"]);
    check(env, &["--status", "pending"], &["r-pend"]);
    check(env, &["--status", "claimed"], &["r-claim"]);
    check(env, &["--status", "rejected"], &["r-rej"]);

    check(env, &["--code", "ASK_CANCELLED"], &["r-cancel"]);
    check(env, &["--code", "ASK_ABORTED"], &["r-abort"]);
    check(env, &["--code", "EMPTY_QUESTIONS"], &["r-rej"]);

    check(
        env,
        &["--intent", "plan-review"],
        &["r-batch", "r-plan-no", "r-plan-ok"],
    );
    check(env, &["--decision", "approved"], &["r-batch", "r-plan-ok"]);
    check(env, &["--decision", "declined"], &["r-batch", "r-plan-no"]);

    let since_7d: Vec<&str> = all.iter().copied().filter(|i| *i != "r-old").collect();
    check(env, &["--since", "7d"], &since_7d);
    check(
        env,
        &["--since", "1d"],
        &["r-trail", "r-csv", "r-pend", "r-claim", "r-grep2"],
    );
    check(
        env,
        &["--until", "2d"],
        &["r-plan-no", "r-plan-ok", "r-abort", "r-rej", "r-old"],
    );

    // RFC 3339 bounds taken from the rows themselves: since is inclusive, until exclusive.
    let rows = history_rows(env, &[]);
    let created_at = |id: &str| {
        rows.iter().find(|r| r["id"] == id).unwrap()["createdAt"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (g1, csv) = (created_at("r-grep1"), created_at("r-csv"));
    check(
        env,
        &["--since", &g1, "--until", &csv],
        &["r-pend", "r-claim", "r-grep2", "r-batch", "r-grep1"],
    );
    // The same instants written with a +02:00 offset mean the same thing.
    let plus2 = |s: &str| {
        let t: jiff::Timestamp = s.parse().unwrap();
        let text = t.display_with_offset(jiff::tz::offset(2)).to_string();
        assert!(text.ends_with("+02:00"), "{text}");
        assert_eq!(text.parse::<jiff::Timestamp>().unwrap(), t);
        text
    };
    check(
        env,
        &["--since", &plus2(&g1), "--until", &plus2(&csv)],
        &["r-pend", "r-claim", "r-grep2", "r-batch", "r-grep1"],
    );
    check(
        env,
        &["--until", &g1],
        &[
            "r-cancel",
            "r-plan-no",
            "r-plan-ok",
            "r-abort",
            "r-rej",
            "r-old",
        ],
    );

    // --grep: case-insensitive substring of a question's text; `%` and `_` are literal.
    check(env, &["--grep", "DATABASE"], &["r-abort", "r-old"]);
    check(
        env,
        &["--grep", "PLAN"],
        &["r-grep2", "r-grep1", "r-plan-no", "r-plan-ok"],
    );
    check(env, &["--grep", "100%"], &["r-grep1"]);
    check(env, &["--grep", "%"], &["r-grep1"]);
    check(env, &["--grep", "rollout_plan"], &["r-grep1"]);
    check(env, &["--grep", "_"], &["r-grep1"]);
    check(env, &["--grep", "\"blue\", then"], &["r-csv"]);
    check(env, &["--grep", "GREEN?\nsay"], &["r-csv"]);
    check(env, &["--grep", "no such words"], &[]);

    check(env, &["--limit", "3"], &["r-trail", "r-csv", "r-pend"]);
    check(env, &["--limit", "1", "--context", "ops"], &["r-csv"]);

    // Combined filters are ANDed.
    check(
        env,
        &["--context", "default", "--status", "answered"],
        &["r-trail", "r-batch", "r-grep1", "r-plan-ok", "r-old"],
    );
    check(env, &["--agent", "A", "--context", "ops"], &["r-plan-no"]);
    check(
        env,
        &["--provider", "alice", "--since", "7d", "--until", "1d"],
        &["r-batch", "r-cancel", "r-plan-ok"],
    );
    check(
        env,
        &[
            "--intent",
            "plan-review",
            "--decision",
            "declined",
            "--context",
            "ops",
        ],
        &["r-plan-no"],
    );
    check(
        env,
        &["--status", "answered", "--grep", "plan", "--limit", "2"],
        &["r-grep2", "r-grep1"],
    );
    check(
        env,
        &["--agent", "B", "--decision", "approved"],
        &["r-plan-ok"],
    );
    check(
        env,
        &["--provider", "bob", "--context", "default"],
        &["r-grep1"],
    );
    check(env, &["--code", "ASK_ABORTED", "--context", "default"], &[]);

    // `--json` without --format is the JSON array.
    let v = env.json(&["history", "--agent", "C"]).ok().json();
    assert_eq!(ids_of(v.as_array().unwrap()), ["r-trail", "r-batch"]);

    // Bad filter values are usage errors, not empty results.
    for bad in [
        vec!["--status", "done"],
        vec!["--decision", "maybe"],
        vec!["--since", "last tuesday"],
    ] {
        let mut args = vec!["history"];
        args.extend(bad.iter().copied());
        let r = env.json(&args);
        assert_ne!(r.code, 0, "{bad:?}: {r:?}");
        assert_eq!(r.error_code(), "USAGE", "{bad:?}: {r:?}");
    }
}

#[test]
fn history_rows_carry_the_audit_fields() {
    let fx = build();
    let env = &fx.env;
    let slack = fx.slack();
    let t0 = wall_ms();
    let rows = history_rows(env, &[]);
    let t1 = wall_ms();
    assert_eq!(rows.len(), ROWS.len());

    let keys: BTreeSet<&str> = CSV_HEADER.iter().copied().collect();
    for (row, exp) in rows.iter().zip(ROWS) {
        let (id, context, agent, lineage, status, code, decision, provider) = *exp;
        let row_keys: BTreeSet<&str> = row
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(row_keys, keys, "{row}");
        assert_eq!(row["id"], id, "{row}");
        assert_eq!(row["context"], context, "{row}");
        assert_eq!(row["agent"], json!(agent), "{row}");
        assert_eq!(row["lineage"], json!(lineage), "{row}");
        assert_eq!(row["status"], status, "{row}");
        assert_eq!(row["code"], json!(code), "{row}");
        assert_eq!(row["decision"], json!(decision), "{row}");
        assert_eq!(row["provider"], json!(provider), "{row}");

        let c = ms_of(&row["createdAt"]);
        let off = created(id);
        assert_within(
            &format!("{id} createdAt"),
            c,
            fx.before + off,
            fx.after + off,
        );
        let wait = row["waitMs"].as_i64().unwrap();
        match finished(id) {
            Some(f_off) => {
                let f = ms_of(&row["finishedAt"]);
                assert_within(
                    &format!("{id} finishedAt"),
                    f,
                    fx.before + f_off,
                    fx.after + f_off,
                );
                assert_eq!(wait, f - c, "{id}: waitMs is finishedAt - createdAt");
                let designed = f_off - off;
                assert_within(
                    &format!("{id} waitMs"),
                    wait,
                    designed - slack,
                    designed + slack,
                );
            }
            None => {
                assert_eq!(row["finishedAt"], Value::Null, "{row}");
                // An open request has waited until now.
                assert_within(&format!("{id} waitMs (open)"), wait, t0 - c, t1 - c);
            }
        }
    }

    let row = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(
        row("r-plan-no")["questions"],
        json!([{"id": "plan", "question": "Approve the rollback plan?", "intent": "plan-review",
                "selected": [], "custom": "add a rollback step", "decision": "declined"}])
    );
    assert_eq!(
        row("r-plan-ok")["questions"],
        json!([{"id": "plan", "question": "Approve the migration plan?", "intent": "plan-review",
                "selected": ["Ship it"], "custom": null, "decision": "approved"}])
    );
    assert_eq!(
        row("r-batch")["questions"],
        json!([
            {"id": "p1", "question": "Approve step one?", "intent": "plan-review",
             "selected": ["Ship it"], "custom": null, "decision": "approved"},
            {"id": "p2", "question": "Approve step two?", "intent": "plan-review",
             "selected": ["Revise"], "custom": null, "decision": "declined"},
            {"id": "p3", "question": "Approve step three?", "intent": "plan-review",
             "selected": ["Ship it"], "custom": null, "decision": "approved"}
        ])
    );
    assert_eq!(
        row("r-csv")["questions"],
        json!([{"id": "q", "question": CSV_TEXT, "intent": null,
                "selected": ["yes"], "custom": null, "decision": null}])
    );
    assert_eq!(
        row("r-cancel")["questions"],
        json!([{"id": "q", "question": "Which region?", "intent": null,
                "selected": null, "custom": null, "decision": null}])
    );
    assert_eq!(row("r-rej")["questions"], json!([]));
    assert_eq!(row("r-rej")["waitMs"], 0);
    assert_eq!(row("r-rej")["createdAt"], row("r-rej")["finishedAt"]);

    // ndjson: the same rows, one per line (open rows' waitMs moves with the clock).
    let strip = |mut r: Value| {
        if r["finishedAt"].is_null() {
            r["waitMs"] = Value::Null;
        }
        r
    };
    let nd = history_run(env, &[], "ndjson").stdout;
    assert!(nd.ends_with('\n'), "{nd:?}");
    let nd_rows: Vec<Value> = nd
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(strip)
        .collect();
    let json_rows: Vec<Value> = rows.iter().cloned().map(strip).collect();
    assert_eq!(nd_rows, json_rows);

    // CSV: every field equals the JSON row's (null as empty); questions hold the JSON.
    let raw = history_run(env, &[], "csv").stdout;
    let csv = parse_csv(&raw);
    assert_eq!(csv.len(), rows.len() + 1);
    for (rec, row) in csv[1..].iter().zip(&rows) {
        for (i, name) in CSV_HEADER.iter().enumerate() {
            let v = &row[*name];
            match *name {
                "questions" => {
                    let parsed: Value = serde_json::from_str(&rec[i])
                        .unwrap_or_else(|e| panic!("questions field {:?}: {e}", rec[i]));
                    assert_eq!(&parsed, v, "{}", rec[0]);
                }
                "waitMs" if row["finishedAt"].is_null() => {
                    rec[i].parse::<i64>().unwrap();
                }
                "waitMs" => assert_eq!(rec[i], v.as_i64().unwrap().to_string()),
                _ => assert_eq!(rec[i], v.as_str().unwrap_or(""), "{}.{name}", rec[0]),
            }
        }
    }
    let lineage_c = csv.iter().find(|r| r[0] == "r-trail").unwrap()[3].clone();
    assert_eq!(lineage_c, LINEAGE_C);
    // The raw text: a field with a comma, quotes and a line break is quoted, inner quotes
    // doubled, the line break kept.
    assert!(
        raw.contains(",\"resumed from \"\"s2\"\",\nafter crash\","),
        "lineage C is not RFC 4180-quoted: {raw}"
    );
    assert!(
        raw.contains(
            r#","[{""id"":""q"",""question"":""Deploy \""blue\"", then green?\nSay yes"","#
        ),
        "the r-csv questions field is not RFC 4180-quoted JSON: {raw}"
    );

    // Table: one line per request with its agent, lineage, status, decision and provider.
    let table = history_run(env, &[], "table").stdout;
    let line = |id: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("{id} not in the table:\n{table}"))
            .to_string()
    };
    let ok = line("r-plan-ok");
    for part in [
        "default",
        "B (resumed from s1)",
        "answered",
        "approved",
        "alice",
    ] {
        assert!(ok.contains(part), "{part:?} not in {ok:?}");
    }
    let cancel = line("r-cancel");
    assert!(cancel.contains("cancelled (ASK_CANCELLED)"), "{cancel:?}");
    assert!(line("r-rej").contains("rejected (EMPTY_QUESTIONS)"));
}

// ---------------------------------------------------------------------------------------
// Stats
// ---------------------------------------------------------------------------------------

/// `byStatus` / `byCode` as a map (accepts an object or an array of `[key, count]` pairs).
fn counts(v: &Value) -> BTreeMap<String, i64> {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, n)| (k.clone(), n.as_i64().unwrap()))
            .collect(),
        Value::Array(a) => a
            .iter()
            .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_i64().unwrap()))
            .collect(),
        other => panic!("not counts: {other}"),
    }
}

fn expect_counts(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
}

/// Wait groups by key: (count, p50, p90, p99).
fn groups(v: &Value) -> BTreeMap<String, (i64, i64, i64, i64)> {
    v.as_array()
        .unwrap_or_else(|| panic!("wait groups are an array: {v}"))
        .iter()
        .map(|g| {
            (
                g["key"].as_str().unwrap().to_string(),
                (
                    g["count"].as_i64().unwrap(),
                    g["p50Ms"].as_i64().unwrap(),
                    g["p90Ms"].as_i64().unwrap(),
                    g["p99Ms"].as_i64().unwrap(),
                ),
            )
        })
        .collect()
}

/// Nearest-rank percentile: the value at rank ceil(p/100 * n), computed independently.
fn nearest_rank(values: &[i64], p: f64) -> i64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank - 1]
}

/// Assert the wait groups match hand-computed (count, p50, p90, p99) within `slack` ms.
#[track_caller]
fn assert_groups(
    what: &str,
    actual: &BTreeMap<String, (i64, i64, i64, i64)>,
    expected: &[(&str, i64, i64, i64, i64)],
    slack: i64,
) {
    let keys: Vec<&str> = actual.keys().map(String::as_str).collect();
    let want: Vec<&str> = expected.iter().map(|e| e.0).collect();
    assert_eq!(keys, want, "{what}: groups {actual:?}");
    for (key, n, p50, p90, p99) in expected {
        let got = actual[*key];
        assert_eq!(got.0, *n, "{what} {key}: count {got:?}");
        assert_within(
            &format!("{what} {key} p50"),
            got.1,
            p50 - slack,
            p50 + slack,
        );
        assert_within(
            &format!("{what} {key} p90"),
            got.2,
            p90 - slack,
            p90 + slack,
        );
        assert_within(
            &format!("{what} {key} p99"),
            got.3,
            p99 - slack,
            p99 + slack,
        );
    }
}

/// The exact figures from the history rows themselves (answered only).
fn exact_groups(
    rows: &[Value],
    by: &str,
    since_ms: Option<i64>,
) -> BTreeMap<String, (i64, i64, i64, i64)> {
    let mut waits: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for r in rows {
        if r["status"] != "answered" || since_ms.is_some_and(|s| ms_of(&r["createdAt"]) < s) {
            continue;
        }
        waits
            .entry(r[by].as_str().unwrap().to_string())
            .or_default()
            .push(r["waitMs"].as_i64().unwrap());
    }
    waits
        .into_iter()
        .map(|(k, w)| {
            let g = (
                w.len() as i64,
                nearest_rank(&w, 50.0),
                nearest_rank(&w, 90.0),
                nearest_rank(&w, 99.0),
            );
            (k, g)
        })
        .collect()
}

#[test]
fn stats_counts_percentiles_approval_and_open() {
    let fx = build();
    let env = &fx.env;
    let slack = fx.slack();
    let rows = history_rows(env, &[]);
    let claim_created = rows.iter().find(|r| r["id"] == "r-claim").unwrap()["createdAt"].clone();

    let t0 = wall_ms();
    let st = env.json(&["stats"]).ok().json();
    let t1 = wall_ms();
    assert_eq!(st["total"], 13, "{st}");
    assert_eq!(
        counts(&st["byStatus"]),
        expect_counts(&[
            ("aborted", 1),
            ("answered", 8),
            ("cancelled", 1),
            ("claimed", 1),
            ("pending", 1),
            ("rejected", 1)
        ]),
        "{st}"
    );
    assert_eq!(
        counts(&st["byCode"]),
        expect_counts(&[
            ("ASK_ABORTED", 1),
            ("ASK_CANCELLED", 1),
            ("EMPTY_QUESTIONS", 1)
        ]),
        "{st}"
    );

    // By hand (nearest rank, rank = ceil(p/100 * n)):
    // default: 2m 1h 2h 5h 10h -> p50 rank 3 = 2h, p90 rank 5 = 10h, p99 = 10h
    // ops:     1m 30m 45m      -> p50 rank 2 = 30m, p90 rank 3 = 45m, p99 = 45m
    // alice:   1m 2m 1h 2h 5h  -> p50 = 1h, p90 = 5h, p99 = 5h
    // bob:     30m 45m 10h     -> p50 = 45m, p90 = 10h, p99 = 10h
    for id in ["r-trail", "r-old", "r-plan-ok", "r-batch", "r-grep1"] {
        assert_eq!(
            rows.iter().find(|r| r["id"] == id).unwrap()["context"],
            "default"
        );
    }
    assert_eq!(Fixture::designed_wait("r-batch"), 5 * HOUR);
    assert_eq!(Fixture::designed_wait("r-grep1"), 10 * HOUR);
    let by_context = groups(&st["waitByContext"]);
    let by_provider = groups(&st["waitByProvider"]);
    assert_groups(
        "context",
        &by_context,
        &[
            ("default", 5, 2 * HOUR, 10 * HOUR, 10 * HOUR),
            ("ops", 3, 30 * MIN, 45 * MIN, 45 * MIN),
        ],
        slack,
    );
    assert_groups(
        "provider",
        &by_provider,
        &[
            ("alice", 5, HOUR, 5 * HOUR, 5 * HOUR),
            ("bob", 3, 45 * MIN, 10 * HOUR, 10 * HOUR),
        ],
        slack,
    );
    // And exactly what the recorded times give.
    assert_eq!(by_context, exact_groups(&rows, "context", None));
    assert_eq!(by_provider, exact_groups(&rows, "provider", None));

    // Plan-review questions: approved r-plan-ok, r-batch p1 and p3; declined r-plan-no, p2.
    assert_eq!(st["approved"], 3, "{st}");
    assert_eq!(st["declined"], 2, "{st}");
    let rate = st["approvalRate"].as_f64().unwrap();
    assert!((rate - 0.6).abs() < 1e-9, "{st}");

    assert_eq!(st["open"], 2, "{st}");
    let oldest = &st["oldestOpen"];
    assert_eq!(oldest["id"], "r-claim", "{st}");
    assert_eq!(oldest["createdAt"], claim_created, "{st}");
    let c = ms_of(&claim_created);
    assert_within(
        "oldest waitingMs",
        oldest["waitingMs"].as_i64().unwrap(),
        t0 - c,
        t1 - c,
    );

    // --since narrows to requests created in the window (r-cancel at -47h is in, r-plan-no
    // at -50h is out); the open figures are about now.
    let since = env.json(&["stats", "--since", "2d"]).ok().json();
    assert_eq!(since["total"], 8, "{since}");
    assert_eq!(
        counts(&since["byStatus"]),
        expect_counts(&[
            ("answered", 5),
            ("cancelled", 1),
            ("claimed", 1),
            ("pending", 1)
        ]),
        "{since}"
    );
    assert_eq!(
        counts(&since["byCode"]),
        expect_counts(&[("ASK_CANCELLED", 1)]),
        "{since}"
    );
    // default: 2m 5h 10h; ops: 1m 45m; alice: 1m 2m 5h; bob: 45m 10h.
    let by_context = groups(&since["waitByContext"]);
    let by_provider = groups(&since["waitByProvider"]);
    assert_groups(
        "context since 2d",
        &by_context,
        &[
            ("default", 3, 5 * HOUR, 10 * HOUR, 10 * HOUR),
            ("ops", 2, MIN, 45 * MIN, 45 * MIN),
        ],
        slack,
    );
    assert_groups(
        "provider since 2d",
        &by_provider,
        &[
            ("alice", 3, 2 * MIN, 5 * HOUR, 5 * HOUR),
            ("bob", 2, 45 * MIN, 10 * HOUR, 10 * HOUR),
        ],
        slack,
    );
    let cut = wall_ms() - 48 * HOUR;
    assert_eq!(by_context, exact_groups(&rows, "context", Some(cut)));
    assert_eq!(since["approved"], 2, "{since}");
    assert_eq!(since["declined"], 1, "{since}");
    let rate = since["approvalRate"].as_f64().unwrap();
    assert!((rate - 2.0 / 3.0).abs() < 1e-9, "{since}");
    assert_eq!(since["open"], 2, "{since}");
    assert_eq!(since["oldestOpen"]["id"], "r-claim", "{since}");

    // An RFC 3339 --since: from r-grep1's creation (inclusive) on.
    let g1 = rows.iter().find(|r| r["id"] == "r-grep1").unwrap()["createdAt"]
        .as_str()
        .unwrap()
        .to_string();
    let st = env.json(&["stats", "--since", &g1]).ok().json();
    assert_eq!(st["total"], 7, "{st}");
    assert_eq!(st["approved"], 2, "{st}");
    assert_eq!(st["declined"], 1, "{st}");

    // A window with no decided plan review has no approval rate.
    let st = env.json(&["stats", "--since", "90m"]).ok().json();
    assert_eq!(st["total"], 2, "{st}");
    assert_eq!(st["approvalRate"], Value::Null, "{st}");

    // The human text names the oldest open request.
    let text = env.run(&["stats"]).ok().stdout;
    assert!(text.contains("r-claim"), "{text}");
}

#[test]
fn stats_percentiles_are_nearest_rank() {
    let env = Env::new();
    let before = wall_ms();
    // Ten waits of 1..10 minutes, asked in a shuffled order.
    let order = [7, 2, 10, 4, 1, 9, 3, 6, 8, 5];
    for k in order {
        let id = format!("w{k}");
        let r = req(&id, "default", None, vec![q("q", "Wait?", &["ok"])]);
        ask_at(&env, -k * MIN, &r).ok();
    }
    for k in order {
        let id = format!("w{k}");
        json_at(
            &env,
            0,
            &["answer", &id, "--name", "carol", "--select", "ok"],
        )
        .ok();
    }
    let slack = wall_ms() - before;
    let st = env.json(&["stats"]).ok().json();
    // n = 10: p50 rank 5 = 5m, p90 rank 9 = 9m, p99 rank 10 = 10m (interpolation would
    // give 5.5m, 9.1m and 9.91m).
    let expected = [("default", 10, 5 * MIN, 9 * MIN, 10 * MIN)];
    assert_groups("context", &groups(&st["waitByContext"]), &expected, slack);
    let expected = [("carol", 10, 5 * MIN, 9 * MIN, 10 * MIN)];
    assert_groups("provider", &groups(&st["waitByProvider"]), &expected, slack);
    assert_eq!(st["open"], 0, "{st}");
    assert_eq!(st["oldestOpen"], Value::Null, "{st}");
    assert_eq!(st["approvalRate"], Value::Null, "{st}");
}

// ---------------------------------------------------------------------------------------
// The event trail of one request
// ---------------------------------------------------------------------------------------

fn events_of(env: &Env, id: &str) -> Vec<Value> {
    let v = env.json(&["events", id]).ok().json();
    v.as_array()
        .unwrap_or_else(|| panic!("events is an array: {v}"))
        .clone()
}

fn field(events: &[Value], name: &str) -> Vec<Value> {
    events.iter().map(|e| e[name].clone()).collect()
}

#[test]
fn events_trail_of_one_request() {
    let fx = build();
    let env = &fx.env;
    let slack = fx.slack();

    let ev = events_of(env, "r-trail");
    assert_eq!(
        field(&ev, "kind"),
        [
            json!("accepted"),
            json!("claimed"),
            json!("released"),
            json!("answered")
        ],
        "{ev:#?}"
    );
    assert_eq!(
        field(&ev, "actor"),
        [
            json!("agent:C"),
            json!("provider:alice"),
            json!("daemon"),
            json!("provider:alice")
        ],
        "{ev:#?}"
    );
    for e in &ev {
        assert_eq!(e["requestId"], "r-trail", "{e}");
        for k in ["seq", "atMs", "kind", "actor", "data", "prevHash", "hash"] {
            assert!(!e[k].is_null(), "{k} in {e}");
        }
    }
    let seqs: Vec<i64> = ev.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(ev[0]["agentId"], "C");
    assert_eq!(ev[0]["data"]["context"], "default");

    // The claim and its release name the 1-minute lease; the answer took a new one.
    let trail = lease_id(&fx.trail_lease);
    assert_eq!(ev[1]["leaseId"], trail, "{ev:#?}");
    assert_eq!(ev[2]["leaseId"], trail, "{ev:#?}");
    assert_eq!(ev[2]["data"]["reason"], "lease expired", "{ev:#?}");
    let answer_lease = ev[3]["leaseId"].as_i64().unwrap();
    assert_ne!(answer_lease, trail);
    assert_eq!(ev[3]["data"]["implicitClaim"], true, "{ev:#?}");

    // Times: the release and the answer happened two minutes (of skew) after the claim.
    let at: Vec<i64> = ev.iter().map(|e| e["atMs"].as_i64().unwrap()).collect();
    assert_within("claim after accept", at[1] - at[0], 0, slack);
    assert_within(
        "release after claim",
        at[2] - at[1],
        2 * MIN - slack,
        2 * MIN + slack,
    );
    // The answering command sweeps the expiry first, then answers (a moment later).
    assert_within("answer after release", at[3] - at[2], 0, slack);

    // Other trails: a cancel, an abort, a rejection.
    let ev = events_of(env, "r-cancel");
    assert_eq!(field(&ev, "kind"), [json!("accepted"), json!("cancelled")]);
    assert_eq!(
        field(&ev, "actor"),
        [json!("agent:A"), json!("provider:alice")]
    );
    assert_eq!(ev[1]["data"]["code"], "ASK_CANCELLED");
    let ev = events_of(env, "r-abort");
    assert_eq!(field(&ev, "kind"), [json!("accepted"), json!("aborted")]);
    assert_eq!(field(&ev, "actor"), [json!("agent:B"), json!("asker")]);
    let ev = events_of(env, "r-rej");
    assert_eq!(field(&ev, "kind"), [json!("rejected")]);
    assert_eq!(ev[0]["data"]["code"], "EMPTY_QUESTIONS");
    let ev = events_of(env, "r-grep2");
    assert_eq!(
        field(&ev, "actor"),
        [json!("asker"), json!("provider:alice")]
    );

    // The human table shows the same trail.
    let text = env.run(&["events", "r-trail"]).ok().stdout;
    for kind in [
        "accepted",
        "claimed",
        "released",
        "answered",
        "provider:alice",
        "daemon",
    ] {
        assert!(text.contains(kind), "{kind} in {text}");
    }

    let r = env.json(&["events", "no-such-request"]);
    assert_ne!(r.code, 0);
    assert_eq!(r.error_code(), "NOT_FOUND", "{r:?}");
}

// ---------------------------------------------------------------------------------------
// The hash chain
// ---------------------------------------------------------------------------------------

/// A small store: an agent, two requests, an answer and a cancel (9 events).
fn small_store() -> Env {
    let env = Env::new();
    enter(&env, "A", None);
    env.ask(&simple_request("s1")).ok();
    env.ask(&simple_request("s2")).ok();
    env.json(&["answer", "s1", "--name", "alice", "--select", "Postgres"])
        .ok();
    env.json(&["cancel", "s2", "--name", "bob"]).ok();
    env
}

fn db(env: &Env) -> rusqlite::Connection {
    rusqlite::Connection::open(env.root().join("dshq.db")).unwrap()
}

fn event_count(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
        .unwrap()
}

/// `audit verify` passes, covering every event, with the head's seq and hash.
#[track_caller]
fn assert_verifies(env: &Env) {
    let conn = db(env);
    let n = event_count(&conn);
    let head: String = conn
        .query_row(
            "SELECT hash FROM events ORDER BY seq DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let rows: i64 = conn
        .query_row("SELECT COUNT(*) FROM requests", [], |r| r.get(0))
        .unwrap();
    let v = env.json(&["audit", "verify"]).ok().json();
    assert_eq!(
        v,
        json!({"ok": true, "events": n, "requests": rows, "headSeq": n, "headHash": head,
               "keyedSince": 1, "anchors": [{"seq": n, "hash": head}], "firstBreak": null})
    );
    env.run(&["audit", "verify"]).ok();
}

/// `audit verify` fails with AUDIT_BROKEN naming event `seq`; returns the message.
#[track_caller]
fn assert_broken_at(env: &Env, seq: i64) -> String {
    let r = env.json(&["audit", "verify"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert_eq!(
        r.code,
        dshq::protocol::Code::AuditBroken.exit_status(),
        "{r:?}"
    );
    assert_eq!(r.error_code(), "AUDIT_BROKEN", "{r:?}");
    let doc = r.json();
    assert_eq!(doc["error"]["name"], "UserQuestionError");
    let msg = doc["error"]["message"].as_str().unwrap().to_string();
    let mut named: Vec<i64> = msg
        .match_indices("event ")
        .filter_map(|(i, _)| {
            let digits: String = msg[i + 6..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .collect();
    named.dedup();
    assert_eq!(named, [seq], "the message names event {seq}: {msg:?}");
    // Without --json it fails too.
    assert_ne!(env.run(&["audit", "verify"]).code, 0);
    msg
}

fn drop_triggers(conn: &rusqlite::Connection) {
    conn.execute_batch("DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;")
        .unwrap();
}

#[test]
fn events_are_append_only_while_the_triggers_stand() {
    let env = small_store();
    assert_verifies(&env);
    let conn = db(&env);
    let n = event_count(&conn);
    assert_eq!(n, 9);
    let e = conn
        .execute("UPDATE events SET data = '{}' WHERE seq = 3", [])
        .unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    let e = conn
        .execute("UPDATE events SET seq = 100 WHERE seq = 9", [])
        .unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    let e = conn
        .execute("DELETE FROM events WHERE seq = 4", [])
        .unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    let e = conn.execute("DELETE FROM events", []).unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    assert_eq!(event_count(&conn), n);
    assert_verifies(&env);
}

#[test]
fn audit_verify_finds_a_changed_event() {
    let env = small_store();
    assert_verifies(&env);
    let conn = db(&env);
    drop_triggers(&conn);
    let original: String = conn
        .query_row("SELECT data FROM events WHERE seq = 3", [], |r| r.get(0))
        .unwrap();
    conn.execute(
        "UPDATE events SET data = '{\"tampered\":true}' WHERE seq = 3",
        [],
    )
    .unwrap();
    let msg = assert_broken_at(&env, 3);
    assert!(msg.contains("changed"), "{msg}");
    // Restored, it verifies again.
    conn.execute("UPDATE events SET data = ?1 WHERE seq = 3", [&original])
        .unwrap();
    assert_verifies(&env);
    // Another column: the actor of the answer.
    conn.execute(
        "UPDATE events SET actor = 'provider:mallory' WHERE seq = 5",
        [],
    )
    .unwrap();
    assert_broken_at(&env, 5);
    conn.execute(
        "UPDATE events SET actor = 'provider:alice' WHERE seq = 5",
        [],
    )
    .unwrap();
    assert_verifies(&env);
    // And the time.
    conn.execute("UPDATE events SET at_ms = at_ms + 1 WHERE seq = 7", [])
        .unwrap();
    assert_broken_at(&env, 7);
}

#[test]
fn audit_verify_finds_a_rehashed_change_at_the_next_link() {
    let env = small_store();
    let conn = db(&env);
    drop_triggers(&conn);
    // Change event 3 and give it a correct hash of its own: event 4 no longer links to it.
    type Ev = (
        i64,
        String,
        Option<String>,
        Option<i64>,
        Option<String>,
        String,
        String,
    );
    let (at, kind, req, lease, agent, actor, prev): Ev = conn
        .query_row(
            "SELECT at_ms, kind, request_id, lease_id, agent_id, actor, prev_hash FROM events WHERE seq = 3",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
        )
        .unwrap();
    let data = "{\"tampered\":true}";
    let hash = dshq::store::sqlite::events::HashInput {
        prev_hash: &prev,
        seq: 3,
        at_ms: at,
        kind: &kind,
        request_id: req.as_deref(),
        lease_id: lease,
        agent_id: agent.as_deref(),
        actor: &actor,
        data,
    }
    .plain();
    conn.execute(
        "UPDATE events SET data = ?1, hash = ?2 WHERE seq = 3",
        rusqlite::params![data, hash],
    )
    .unwrap();
    // The chain is keyed: a plain SHA-256 recomputed by whoever can write the database
    // does not verify at the changed event itself.
    let msg = assert_broken_at(&env, 3);
    assert!(msg.contains("changed"), "{msg}");
}

#[test]
fn audit_verify_finds_a_deleted_event() {
    let env = small_store();
    assert_verifies(&env);
    let conn = db(&env);
    drop_triggers(&conn);
    conn.execute("DELETE FROM events WHERE seq = 4", [])
        .unwrap();
    let msg = assert_broken_at(&env, 4);
    assert!(msg.contains("missing"), "{msg}");

    // The first event removed.
    let env = small_store();
    let conn = db(&env);
    drop_triggers(&conn);
    conn.execute("DELETE FROM events WHERE seq = 1", [])
        .unwrap();
    assert_broken_at(&env, 1);
}

#[test]
fn audit_verify_finds_reordered_events() {
    // Swap the seq of events 3 and 4 through a temporary value.
    let env = small_store();
    assert_verifies(&env);
    let conn = db(&env);
    drop_triggers(&conn);
    conn.execute_batch(
        "UPDATE events SET seq = -1 WHERE seq = 3;
         UPDATE events SET seq = 3 WHERE seq = 4;
         UPDATE events SET seq = 4 WHERE seq = -1;",
    )
    .unwrap();
    assert_broken_at(&env, 3);
    // Swapped back, it verifies.
    conn.execute_batch(
        "UPDATE events SET seq = -1 WHERE seq = 3;
         UPDATE events SET seq = 3 WHERE seq = 4;
         UPDATE events SET seq = 4 WHERE seq = -1;",
    )
    .unwrap();
    assert_verifies(&env);

    // Swap the content of events 5 and 6, keeping seq and the hash columns in place.
    let env = small_store();
    let conn = db(&env);
    drop_triggers(&conn);
    conn.execute_batch(
        "CREATE TEMP TABLE saved AS SELECT * FROM events WHERE seq IN (5, 6);
         UPDATE events SET (at_ms, kind, request_id, lease_id, agent_id, actor, data) =
             (SELECT at_ms, kind, request_id, lease_id, agent_id, actor, data FROM saved
              WHERE saved.seq = 11 - events.seq)
         WHERE seq IN (5, 6);",
    )
    .unwrap();
    let kinds: Vec<String> = conn
        .prepare("SELECT kind FROM events WHERE seq IN (5, 6) ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(kinds, ["lease-released", "answered"], "the swap happened");
    assert_broken_at(&env, 5);
}

// ---------------------------------------------------------------------------------------
// Export
// ---------------------------------------------------------------------------------------

#[test]
fn export_is_ndjson_matching_the_database() {
    let fx = build();
    let env = &fx.env;
    let out = env.run(&["export"]).ok().stdout;
    assert!(out.ends_with('\n'), "{out:?}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let mut by_type: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for v in &lines {
        let t = v["type"]
            .as_str()
            .unwrap_or_else(|| panic!("no type: {v}"))
            .to_string();
        by_type.entry(t).or_default().push(v);
    }

    let conn = db(env);
    let count = |table: &str| -> usize {
        conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap() as usize
    };
    let n = |t: &str| by_type.get(t).map_or(0, Vec::len);
    assert_eq!(n("request"), count("requests"));
    assert_eq!(n("request"), CREATED.len());
    assert_eq!(n("question"), count("questions"));
    assert_eq!(n("event"), count("events"));
    assert_eq!(n("lease"), count("leases"));
    assert_eq!(n("agent"), count("agents"));
    assert_eq!(n("agent"), 3);
    assert_eq!(
        lines.len(),
        ["request", "question", "event", "lease", "agent"]
            .iter()
            .map(|t| n(t))
            .sum::<usize>(),
        "no other types: {:?}",
        by_type.keys()
    );

    // The requests are the history's; the events are the log, in order, hashes included.
    let ids: BTreeSet<String> = by_type["request"]
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    let want: BTreeSet<String> = CREATED.iter().map(|c| c.0.to_string()).collect();
    assert_eq!(ids, want);
    let hashes: Vec<(i64, String)> = conn
        .prepare("SELECT seq, hash FROM events ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let exported: Vec<(i64, String)> = by_type["event"]
        .iter()
        .map(|e| {
            (
                e["seq"].as_i64().unwrap(),
                e["hash"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(exported, hashes);
    let csv_body = by_type["request"]
        .iter()
        .find(|r| r["id"] == "r-csv")
        .unwrap()["body"]
        .as_str()
        .unwrap()
        .to_string();
    let body: Value = serde_json::from_str(&csv_body).unwrap();
    assert_eq!(body["questions"][0]["question"], CSV_TEXT);
    // Lease secrets (even hashed) are not exported.
    for l in &by_type["lease"] {
        assert!(
            l.as_object().unwrap().keys().all(|k| !k.contains("secret")),
            "{l}"
        );
    }
    // The exported log verifies as the database does.
    assert_verifies(env);
}

// ---------------------------------------------------------------------------------------
// The log is the record: forgeries of the request tables, re-hashing, truncation
// ---------------------------------------------------------------------------------------

/// `audit verify` fails with AUDIT_BROKEN and a message containing every one of `needles`;
/// returns the message.
#[track_caller]
fn assert_audit_fails(env: &Env, extra: &[&str], needles: &[&str]) -> String {
    let mut args = vec!["audit", "verify"];
    args.extend_from_slice(extra);
    let r = env.json(&args);
    assert_eq!(
        r.code,
        dshq::protocol::Code::AuditBroken.exit_status(),
        "audit verify must fail: {r:?}"
    );
    assert_eq!(r.error_code(), "AUDIT_BROKEN", "{r:?}");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    for n in needles {
        assert!(msg.contains(n), "{n:?} in {msg:?}");
    }
    msg
}

/// A store with a plan review `p1` declined with feedback, beside the small store's
/// `s1` (answered by alice) and `s2` (cancelled by bob).
fn plan_store() -> Env {
    let env = small_store();
    env.ask(&json!({"id": "p1", "questions": [plan("plan", "Approve the migration plan?")]}))
        .ok();
    env.json(&["answer", "p1", "--name", "carol", "--select", "Revise"])
        .ok();
    env
}

#[test]
fn a_forged_answer_and_provider_break_the_audit() {
    let env = small_store();
    assert_verifies(&env);
    let conn = tamper_db(&env);
    let forged = json!({"answers": [{"id": "db", "selected": ["SQLite"]}]}).to_string();
    conn.execute(
        "UPDATE requests SET answer = ?1, provider = 'mallory' WHERE id = 's1'",
        [&forged],
    )
    .unwrap();
    // What `show` presents is the forgery; the audit must not call it ok.
    assert_audit_fails(&env, &[], &["s1"]);

    // The provider alone.
    let env = small_store();
    tamper_db(&env)
        .execute(
            "UPDATE requests SET provider = 'mallory' WHERE id = 's1'",
            [],
        )
        .unwrap();
    assert_audit_fails(&env, &[], &["s1", "provider"]);

    // The selected labels of the question row alone.
    let env = small_store();
    tamper_db(&env)
        .execute(
            "UPDATE questions SET selected = '[\"SQLite\"]', custom = 'forged'
             WHERE request_seq = (SELECT seq FROM requests WHERE id = 's1')",
            [],
        )
        .unwrap();
    assert_audit_fails(&env, &[], &["s1"]);

    // A cancel turned into an answer.
    let env = small_store();
    tamper_db(&env)
        .execute(
            "UPDATE requests SET status = 'answered', error_code = NULL, error_message = NULL,
                 answer = ?1 WHERE id = 's2'",
            [&json!({"answers": [{"id": "db", "selected": ["Postgres"]}]}).to_string()],
        )
        .unwrap();
    assert_audit_fails(&env, &[], &["s2"]);

    // The finish time.
    let env = small_store();
    tamper_db(&env)
        .execute(
            "UPDATE requests SET finished_ms = finished_ms - 1000 WHERE id = 's1'",
            [],
        )
        .unwrap();
    assert_audit_fails(&env, &[], &["s1"]);
}

#[test]
fn a_flipped_decision_breaks_the_audit() {
    let env = plan_store();
    assert_verifies(&env);
    let conn = tamper_db(&env);
    let d: String = conn
        .query_row("SELECT decision FROM requests WHERE id = 'p1'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(d, "declined");
    conn.execute(
        "UPDATE requests SET decision = 'approved' WHERE id = 'p1'",
        [],
    )
    .unwrap();
    assert_audit_fails(&env, &[], &["p1", "decision"]);

    // The question row's decision (with its selected label) alone.
    let env = plan_store();
    tamper_db(&env)
        .execute(
            "UPDATE questions SET decision = 'approved', selected = '[\"Ship it\"]'
             WHERE request_seq = (SELECT seq FROM requests WHERE id = 'p1')",
            [],
        )
        .unwrap();
    assert_audit_fails(&env, &[], &["p1"]);
}

#[test]
fn rewritten_question_text_breaks_the_audit() {
    let env = plan_store();
    let conn = tamper_db(&env);
    conn.execute(
        "UPDATE questions SET question = 'DROP the production database?'
         WHERE request_seq = (SELECT seq FROM requests WHERE id = 'p1')",
        [],
    )
    .unwrap();
    assert_audit_fails(&env, &[], &["p1", "question"]);

    // The body and the question row rewritten together: the digest still differs.
    let env = plan_store();
    let conn = tamper_db(&env);
    let body: String = conn
        .query_row("SELECT body FROM requests WHERE id = 'p1'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let forged = body.replace(
        "Approve the migration plan?",
        "DROP the production database?",
    );
    assert_ne!(forged, body);
    conn.execute("UPDATE requests SET body = ?1 WHERE id = 'p1'", [&forged])
        .unwrap();
    conn.execute(
        "UPDATE questions SET question = 'DROP the production database?'
         WHERE request_seq = (SELECT seq FROM requests WHERE id = 'p1')",
        [],
    )
    .unwrap();
    assert_audit_fails(&env, &[], &["p1"]);
}

#[test]
fn an_answered_request_without_events_breaks_the_audit() {
    let env = small_store();
    let conn = tamper_db(&env);
    let body = json!({"id": "ghost", "questions": [{"id": "q", "question": "Ship it?",
                      "options": [{"label": "Yes"}, {"label": "No"}]}]})
    .to_string();
    conn.execute(
        "INSERT INTO requests (id, context, status, body, source, created_ms, finished_ms,
                               answer, provider)
         VALUES ('ghost', 'default', 'answered', ?1, 'cli', 1, 2, ?2, 'alice')",
        rusqlite::params![
            body,
            json!({"answers": [{"id": "q", "selected": ["Yes"]}]}).to_string()
        ],
    )
    .unwrap();
    let seq = conn.last_insert_rowid();
    conn.execute(
        "INSERT INTO questions (request_seq, idx, qid, question, multi_select, options, selected)
         VALUES (?1, 0, 'q', 'Ship it?', 0, '[{\"label\":\"Yes\"},{\"label\":\"No\"}]', '[\"Yes\"]')",
        [seq],
    )
    .unwrap();
    assert_audit_fails(&env, &[], &["ghost"]);
}

/// Rewrite events `from..` with `data` for event `from`, recomputing the plain SHA-256
/// chain the way an attacker who knows the documented formula would.
fn rehash_from(conn: &rusqlite::Connection, from: i64, data: &str) {
    type Ev = (
        i64,
        i64,
        String,
        Option<String>,
        Option<i64>,
        Option<String>,
        String,
        String,
    );
    let evs: Vec<Ev> = conn
        .prepare(
            "SELECT seq, at_ms, kind, request_id, lease_id, agent_id, actor, data FROM events
             WHERE seq >= ?1 ORDER BY seq",
        )
        .unwrap()
        .query_map([from], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut prev: String = conn
        .query_row("SELECT prev_hash FROM events WHERE seq = ?1", [from], |r| {
            r.get(0)
        })
        .unwrap();
    for (seq, at, kind, req, lease, agent, actor, old) in evs {
        let d = if seq == from { data.to_string() } else { old };
        let hash = dshq::store::sqlite::events::HashInput {
            prev_hash: &prev,
            seq,
            at_ms: at,
            kind: &kind,
            request_id: req.as_deref(),
            lease_id: lease,
            agent_id: agent.as_deref(),
            actor: &actor,
            data: &d,
        }
        .plain();
        conn.execute(
            "UPDATE events SET data = ?1, prev_hash = ?2, hash = ?3 WHERE seq = ?4",
            rusqlite::params![d, prev, hash, seq],
        )
        .unwrap();
        prev = hash;
    }
}

#[test]
fn an_edited_event_with_a_recomputed_plain_chain_breaks_the_audit() {
    let env = plan_store();
    let conn = tamper_db(&env);
    drop_triggers(&conn);
    let (seq, data): (i64, String) = conn
        .query_row(
            "SELECT seq, data FROM events WHERE kind = 'answered' AND request_id = 'p1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let forged = data.replace("declined", "approved");
    assert_ne!(forged, data);
    rehash_from(&conn, seq, &forged);
    // The rows agree with the forged event.
    conn.execute(
        "UPDATE requests SET decision = 'approved' WHERE id = 'p1'",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE questions SET decision = 'approved' WHERE request_seq = (SELECT seq FROM requests WHERE id = 'p1')",
        [],
    )
    .unwrap();
    assert_audit_fails(&env, &[], &[&format!("event {seq}")]);

    // Without the key file no one can verify a keyed chain: it fails, it does not pass.
    let env = small_store();
    std::fs::remove_file(env.root().join("audit.key")).unwrap();
    assert_audit_fails(&env, &[], &["audit.key"]);
}

#[test]
fn deleting_the_newest_events_breaks_the_audit() {
    let env = small_store();
    assert_verifies(&env);
    // Keep a copy of the head elsewhere, as an operator would.
    let copy = env.dir.path().join("head-copy");
    std::fs::copy(env.root().join("audit.head"), &copy).unwrap();
    env.json(&["audit", "verify", "--anchor", copy.to_str().unwrap()])
        .ok();
    let conn = tamper_db(&env);
    drop_triggers(&conn);
    let n = event_count(&conn);
    let kind: String = conn
        .query_row("SELECT kind FROM events WHERE seq = ?1", [n], |r| r.get(0))
        .unwrap();
    assert_eq!(
        kind, "lease-released",
        "the newest event is not a request's"
    );
    conn.execute("DELETE FROM events WHERE seq = ?1", [n])
        .unwrap();
    let head = format!("event {n}");
    assert_audit_fails(&env, &[], &["anchor", &head]);
    assert_audit_fails(
        &env,
        &["--anchor", copy.to_str().unwrap()],
        &["anchor", &head],
    );

    // Deleting the cancel too (and its row's state with it) is found either way.
    conn.execute("DELETE FROM events WHERE seq = ?1", [n - 1])
        .unwrap();
    conn.execute(
        "UPDATE requests SET status = 'pending', finished_ms = NULL, error_code = NULL,
             error_message = NULL, provider = NULL, claimed_lease = NULL WHERE id = 's2'",
        [],
    )
    .unwrap();
    assert_audit_fails(&env, &["--anchor", copy.to_str().unwrap()], &["anchor"]);

    // A missing anchor file named on the command line is an error, not a pass.
    let env = small_store();
    let r = env.json(&["audit", "verify", "--anchor", "/nonexistent/head"]);
    assert_ne!(r.code, 0, "{r:?}");
}

/// Drop the triggers that make the request tables a record (schema v3), as someone with
/// write access to the database file can.
fn drop_record_triggers(conn: &rusqlite::Connection) {
    conn.execute_batch(
        "DROP TRIGGER IF EXISTS requests_record_fixed; DROP TRIGGER IF EXISTS requests_final_fixed;
         DROP TRIGGER IF EXISTS requests_no_delete; DROP TRIGGER IF EXISTS questions_record_fixed;
         DROP TRIGGER IF EXISTS questions_answer_fixed; DROP TRIGGER IF EXISTS questions_no_delete;
         DROP TRIGGER IF EXISTS requests_edits_fixed;",
    )
    .unwrap();
}

/// The database opened with the record triggers dropped.
fn tamper_db(env: &Env) -> rusqlite::Connection {
    let conn = db(env);
    drop_record_triggers(&conn);
    conn
}

/// Rewrite every event's data with `edit` and recompute the whole chain as plain SHA-256.
fn replain_all(conn: &rusqlite::Connection, edit: impl Fn(i64, &mut Value)) {
    let evs: Vec<(i64, String)> = conn
        .prepare("SELECT seq, data FROM events ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (seq, data) in &evs {
        let mut v: Value = serde_json::from_str(data).unwrap();
        edit(*seq, &mut v);
        conn.execute(
            "UPDATE events SET data = ?1 WHERE seq = ?2",
            rusqlite::params![v.to_string(), seq],
        )
        .unwrap();
    }
    let first: String = conn
        .query_row("SELECT data FROM events WHERE seq = 1", [], |r| r.get(0))
        .unwrap();
    rehash_from(conn, 1, &first);
}

#[test]
fn the_record_triggers_refuse_in_place_edits() {
    let env = small_store();
    let conn = db(&env);
    for sql in [
        "UPDATE requests SET answer = '{}', provider = 'mallory' WHERE id = 's1'",
        "UPDATE requests SET status = 'answered' WHERE id = 's2'",
        "UPDATE requests SET body = '{}' WHERE id = 's1'",
        "DELETE FROM requests WHERE id = 's2'",
        "UPDATE questions SET question = 'DROP it?'",
        "UPDATE questions SET selected = '[\"SQLite\"]' WHERE selected IS NOT NULL",
        "DELETE FROM questions",
        // Since schema v8 each trigger guards the columns it names: every column of each
        // group is still refused, alone or beside one that may change.
        "UPDATE requests SET error_message = 'forged' WHERE id = 's2'",
        "UPDATE requests SET error_code = 'ASK_ABORTED' WHERE id = 's2'",
        "UPDATE requests SET finished_ms = finished_ms + 1 WHERE id = 's1'",
        "UPDATE requests SET decision = 'approved' WHERE id = 's1'",
        "UPDATE requests SET claimed_lease = NULL, outbox_pending = 0 WHERE id = 's1'",
        "UPDATE requests SET context = 'ops', outbox_pending = 0 WHERE id = 's1'",
        "UPDATE requests SET created_ms = 0 WHERE id = 's2'",
        "UPDATE requests SET seq = seq + 100 WHERE id = 's2'",
        "UPDATE requests SET rowid = rowid + 100 WHERE id = 's2'",
        "UPDATE requests SET OID = oid + 100 WHERE id = 's2'",
        "UPDATE OR REPLACE requests SET _rowid_ = (SELECT seq FROM requests WHERE id = 's1') WHERE id = 's2'",
        "UPDATE questions SET custom = 'forged' WHERE selected IS NOT NULL",
        "UPDATE questions SET decision = 'declined' WHERE selected IS NOT NULL",
        "UPDATE questions SET options = '[]' WHERE selected IS NULL",
        "UPDATE questions SET idx = idx + 5",
    ] {
        let e = conn.execute(sql, []).unwrap_err();
        assert!(e.to_string().contains("record"), "{sql}: {e}");
    }
    // Outbox bookkeeping on a final row is still allowed.
    conn.execute("UPDATE requests SET outbox_pending = 0 WHERE id = 's1'", [])
        .unwrap();
    assert_verifies(&env);
    // What an open request may change still changes: a pending request is claimed and
    // its question answered, with the columns the split triggers name.
    env.ask(&simple_request("s3")).ok();
    conn.execute(
        "UPDATE requests SET status = 'cancelled', finished_ms = 1, error_code = 'ASK_CANCELLED',
                             error_message = 'by hand' WHERE id = 's3'",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE questions SET selected = '[]', custom = 'x' WHERE selected IS NULL
           AND request_seq = (SELECT seq FROM requests WHERE id = 's3')",
        [],
    )
    .unwrap();
}

#[test]
fn a_store_from_before_the_keyed_chain_keeps_verifying_and_its_switch_point_holds() {
    // Turn a store into what an older dshq left: plain chain, the old event payloads,
    // no key, no anchor, schema v2.
    let env = small_store();
    let conn = tamper_db(&env);
    drop_triggers(&conn);
    conn.execute("DELETE FROM schema_migrations WHERE version = 3", [])
        .unwrap();
    replain_all(&conn, |_, v| {
        let o = v.as_object_mut().unwrap();
        for k in [
            "rowSeq",
            "digest",
            "deadlineMs",
            "lineage",
            "bodySha256",
            "answer",
            "provider",
        ] {
            o.remove(k);
        }
    });
    conn.execute_batch(
        "CREATE TRIGGER events_no_update BEFORE UPDATE ON events
         BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
         CREATE TRIGGER events_no_delete BEFORE DELETE ON events
         BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;",
    )
    .unwrap();
    drop(conn);
    std::fs::remove_file(env.root().join("audit.key")).unwrap();
    std::fs::remove_file(env.root().join("audit.head")).unwrap();
    let n = 9;

    // It verifies as it is (the upgrade applies the newer migrations on open).
    let v = env.json(&["audit", "verify"]).ok().json();
    assert_eq!(v["events"], n);
    assert_eq!(v["keyedSince"], Value::Null);
    assert_eq!(v["requests"], 2);
    assert!(
        !env.root().join("audit.key").exists(),
        "verify creates no key"
    );
    let version: i64 = db(&env)
        .query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(version, dshq::store::sqlite::MIGRATIONS.last().unwrap().0);

    // The first write keys the chain from the next event on.
    env.ask(&simple_request("s3")).ok();
    let v = env.json(&["audit", "verify"]).ok().json();
    assert_eq!(v["keyedSince"], n + 1);
    assert_eq!(v["events"], n + 1);
    let meta = std::fs::metadata(env.root().join("audit.key")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);

    // The old events carry less, but a forged provider is still found (their actor).
    let conn = tamper_db(&env);
    conn.execute(
        "UPDATE requests SET provider = 'mallory' WHERE id = 's1'",
        [],
    )
    .unwrap();
    assert_audit_fails(&env, &[], &["s1", "provider"]);
    conn.execute("UPDATE requests SET provider = 'alice' WHERE id = 's1'", [])
        .unwrap();
    env.json(&["audit", "verify"]).ok();

    // Rewriting an old event and recomputing the plain chain to the end (the keyed part
    // too, as if it had never been keyed) breaks at the first keyed event.
    drop_triggers(&conn);
    let answered: i64 = conn
        .query_row(
            "SELECT seq FROM events WHERE kind = 'answered' AND request_id = 's1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute(
        "UPDATE events SET actor = 'provider:mallory' WHERE seq = ?1",
        [answered],
    )
    .unwrap();
    conn.execute(
        "UPDATE requests SET provider = 'mallory' WHERE id = 's1'",
        [],
    )
    .unwrap();
    replain_all(&conn, |_, _| {});
    assert_audit_fails(&env, &[], &[&format!("event {}", n + 1)]);
}

#[test]
fn a_database_failing_sqlites_integrity_check_breaks_the_audit() {
    let env = small_store();
    assert_verifies(&env);
    let conn = db(&env);
    // Point an index at another column: its entries no longer match the table.
    conn.execute_batch(
        "PRAGMA writable_schema = ON;
         UPDATE sqlite_master SET sql = 'CREATE INDEX requests_created ON requests (finished_ms)'
         WHERE name = 'requests_created';
         PRAGMA writable_schema = OFF;",
    )
    .unwrap();
    drop(conn);
    assert_audit_fails(&env, &[], &["integrity check"]);
}

#[test]
fn the_events_table_escapes_answer_text_now_in_the_log() {
    // The answered event carries the answer: custom text with bidi and C1 controls must
    // not reach the terminal raw through `dshq events`.
    let env = Env::new();
    env.ask(&simple_request("t1")).ok();
    env.json(&[
        "answer",
        "t1",
        "--name",
        "alice",
        "--custom",
        "ok\u{202e}gnp.exe\u{9b}2J\u{7}",
    ])
    .ok();
    let out = env.run(&["events", "t1"]).ok().stdout;
    assert!(out.contains("answered"), "{out}");
    for bad in ['\u{202e}', '\u{9b}', '\u{7}', '\u{1b}'] {
        assert!(!out.contains(bad), "{bad:?} raw in {out:?}");
    }
    env.json(&["audit", "verify"]).ok();
}

/// `requests.require_provider` is a column of what was asked (export shows it): the
/// audit must hold it to the request body the log's digest pins, as it does `context`.
#[test]
fn a_forged_require_provider_breaks_the_audit() {
    let env = small_store();
    assert_verifies(&env);
    tamper_db(&env)
        .execute(
            "UPDATE requests SET require_provider = 1 WHERE id = 's1'",
            [],
        )
        .unwrap();
    assert_audit_fails(&env, &[], &["s1", "requireProvider"]);
}

/// A keyed log whose root lost `audit.key` (the database moved or restored into another
/// root, the key deleted by mistake): a write must not create a new key. It used to,
/// silently, covering only the next events: the old events then verified under neither
/// key, so the log stayed unverifiable even after the real key was restored.
#[test]
fn a_write_to_a_keyed_log_without_its_key_is_refused_not_forked() {
    let env = small_store();
    assert_verifies(&env);
    let key_path = env.root().join("audit.key");
    let key = std::fs::read(&key_path).unwrap();
    let events_before = event_count(&db(&env));
    std::fs::remove_file(&key_path).unwrap();

    let r = env.ask(&simple_request("s3"));
    assert_ne!(r.code, 0, "a write without the key must fail: {r:?}");
    assert_eq!(r.error_code(), "IO", "{r:?}");
    assert!(r.stdout.contains("audit.key"), "names the key file: {r:?}");
    assert!(!key_path.exists(), "no new key was made");
    assert_eq!(
        event_count(&db(&env)),
        events_before,
        "nothing was appended"
    );

    // With the key back (owner-only, as every key file must be), the log verifies and
    // writes go on under it.
    std::fs::write(&key_path, &key).unwrap();
    let owner_only = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600);
    std::fs::set_permissions(&key_path, owner_only).unwrap();
    env.ask(&simple_request("s3")).ok();
    assert_verifies(&env);
}

/// A rejected row is a record too: what it was filed under (its context, an agent, a
/// deadline, a claim) must not change unnoticed; `list`, `show` and `history --agent`
/// present those columns.
#[test]
fn a_forged_rejected_row_breaks_the_audit() {
    let make = || {
        let env = Env::new();
        let r = env.ask(&json!({"id": "bad1", "context": "ops", "questions": []}));
        assert_eq!(r.error_code(), "EMPTY_QUESTIONS", "{r:?}");
        assert_verifies(&env);
        env
    };
    for (sql, needle) in [
        (
            "UPDATE requests SET context = 'default' WHERE id = 'bad1'",
            "context",
        ),
        (
            "UPDATE requests SET agent_id = 'A', agent_instance = 'x' WHERE id = 'bad1'",
            "agent",
        ),
        (
            "UPDATE requests SET agent_lineage = 'root' WHERE id = 'bad1'",
            "lineage",
        ),
        (
            "UPDATE requests SET deadline_ms = 5 WHERE id = 'bad1'",
            "deadline",
        ),
        (
            "UPDATE requests SET claimed_ms = 5 WHERE id = 'bad1'",
            "claim",
        ),
    ] {
        let env = make();
        tamper_db(&env).execute(sql, []).unwrap();
        assert_audit_fails(&env, &[], &["bad1", needle]);
    }
}

// ---------------------------------------------------------------------------------------
// Edit-then-approve: the recorded edit is covered by the audit
// ---------------------------------------------------------------------------------------

/// A store with plan review `e1` approved as edited by alice (`dshq answer --edit`).
fn edited_store() -> Env {
    let env = Env::new();
    env.ask(&crate::edit::plan_review("e1")).ok();
    let file = env.root().join("edited.md");
    std::fs::write(&file, crate::edit::EDITED).unwrap();
    env.json(&[
        "answer",
        "e1",
        "--name",
        "alice",
        "--edit",
        file.to_str().unwrap(),
    ])
    .ok();
    assert_eq!(env.json(&["audit", "verify"]).ok().json()["ok"], true);
    env
}

/// The `answered` event of `e1`: its seq and data.
fn answered_of_e1(conn: &rusqlite::Connection) -> (i64, Value) {
    let (seq, data): (i64, String) = conn
        .query_row(
            "SELECT seq, data FROM events WHERE request_id = 'e1' AND kind = 'answered'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    (seq, serde_json::from_str(&data).unwrap())
}

#[test]
fn an_altered_edit_breaks_the_audit() {
    // While the record triggers stand, a final request's edits cannot change.
    let env = edited_store();
    let e = db(&env)
        .execute("UPDATE requests SET edits = '{}' WHERE id = 'e1'", [])
        .unwrap_err();
    assert!(e.to_string().contains("requests are a record"), "{e}");

    // The diff in the row, altered to hide a step: the row is not the log.
    let conn = tamper_db(&env);
    let stored: String = conn
        .query_row("SELECT edits FROM requests WHERE id = 'e1'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let mut v: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(v["plan"]["diff"], crate::edit::DIFF);
    v["plan"]["diff"] = json!(crate::edit::DIFF.replace("+2. Back up node a\n", ""));
    conn.execute(
        "UPDATE requests SET edits = ?1 WHERE id = 'e1'",
        [v.to_string()],
    )
    .unwrap();
    // What `show` presents is the forgery; the audit must not call it ok.
    let shown = env.json(&["show", "e1"]).ok().json();
    assert!(!shown["outcome"]["edited"]["plan"]["diff"]
        .as_str()
        .unwrap()
        .contains("Back up"));
    assert_audit_fails(&env, &[], &["e1", "edits"]);

    // The approved text, in the row's answer and edits alike: still not the log's.
    let env = edited_store();
    let conn = tamper_db(&env);
    let forged = "1. Drain node a\n2. Delete node a\n";
    let mut v: Value = serde_json::from_str(
        &conn
            .query_row("SELECT edits FROM requests WHERE id = 'e1'", [], |r| {
                r.get::<_, String>(0)
            })
            .unwrap(),
    )
    .unwrap();
    v["plan"]["approved"] = json!(forged);
    let answer = json!({"answers": [{"id": "plan", "selected": ["Approve"], "edited": forged}]});
    conn.execute(
        "UPDATE requests SET edits = ?1, answer = ?2 WHERE id = 'e1'",
        [v.to_string(), answer.to_string()],
    )
    .unwrap();
    assert_audit_fails(&env, &[], &["e1"]);

    // The diff in the event (and the row, to agree): the chain breaks at that event.
    let env = edited_store();
    let conn = tamper_db(&env);
    drop_triggers(&conn);
    let (seq, mut data) = answered_of_e1(&conn);
    data["edits"]["plan"]["diff"] = json!("--- proposed\n+++ approved\n");
    conn.execute(
        "UPDATE events SET data = ?1 WHERE seq = ?2",
        rusqlite::params![data.to_string(), seq],
    )
    .unwrap();
    conn.execute(
        "UPDATE requests SET edits = ?1 WHERE id = 'e1'",
        [data["edits"].to_string()],
    )
    .unwrap();
    assert_broken_at(&env, seq);
}
