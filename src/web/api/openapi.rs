//! The OpenAPI 3.0 document of the API, built from the very types the handlers take and
//! return (their JSON Schemas, by schemars, with its OpenAPI 3.0 settings): a field added
//! to a response type appears here without anyone editing a spec by hand. Served at
//! `/api/v1/openapi.json` and committed as `contrib/openapi.json`; a test fails when the
//! two drift, and another fuzzes the live API against it with schemathesis.
//!
//! Response schemas use the serializing contract (what the server writes); request
//! bodies the deserializing one (what it accepts), inlined so the two never share a name.

use axum::Json;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

use super::audit::HISTORY_PARAMS;
use super::requests::{AskedBody, ReasonBody, LIST_PARAMS};
use crate::host::changes::Change;
use crate::host::error::ErrorBody;
use crate::protocol::{Answer, Outcome, Request};
use crate::store::{Event, HistoryRow, Stats, Status};
use crate::views::{RequestSummary, RequestView};

struct Doc {
    out: SchemaGenerator,
}

impl Doc {
    /// A `$ref` to the response type `T`.
    fn response<T: JsonSchema>(&mut self) -> Value {
        self.out.subschema_for::<T>().to_value()
    }

    /// The request body type `T`, inlined.
    fn body<T: JsonSchema>(&mut self) -> Value {
        let mut v = SchemaSettings::openapi3()
            .for_deserialize()
            .with(|s| {
                s.inline_subschemas = true;
                s.meta_schema = None;
            })
            .into_generator()
            .into_root_schema_for::<T>()
            .to_value();
        if let Some(o) = v.as_object_mut() {
            o.remove("$schema");
            o.remove("title");
        }
        v
    }
}

fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

/// The error responses an operation may give (`codes`: HTTP statuses).
fn errors(codes: &[u16]) -> Map<String, Value> {
    let what = |c: u16| {
        match c {
        400 => "Bad input (BAD_REQUEST, BAD_ANSWER, USAGE, ...)",
        401 => "No valid bearer token (UNAUTHORIZED)",
        403 => "The token's role or context may not do this (FORBIDDEN)",
        404 => "No such request, or not one this token may see (NOT_FOUND)",
        409 => "The request's state or the provider lease forbids it (REQUEST_FINAL, DUPLICATE_PROVIDER, ...)",
        413 => "The body is over the size limit (TOO_LARGE)",
        422 => "An away notice refused (AWAY_IN_PAST, AWAY_SELF, AWAY_CHAIN, UNKNOWN_DELEGATE)",
        _ => "Error",
    }
    };
    codes
        .iter()
        .map(|&c| {
            (
                c.to_string(),
                json!({
                    "description": what(c),
                    "content": json_content(json!({"$ref": "#/components/schemas/ErrorBody"})),
                }),
            )
        })
        .collect()
}

fn op(
    summary: &str,
    params: Vec<Value>,
    body: Option<(Value, bool)>,
    ok: Vec<(u16, &str, Option<Value>)>,
    errs: &[u16],
) -> Value {
    let mut responses = errors(errs);
    for (code, what, schema) in ok {
        let mut r = json!({"description": what});
        if let Some(s) = schema {
            r["content"] = json_content(s);
        }
        responses.insert(code.to_string(), r);
    }
    let mut o = json!({
        "summary": summary,
        "security": [{"bearer": []}],
        "responses": responses,
    });
    if !params.is_empty() {
        o["parameters"] = Value::Array(params);
    }
    if let Some((schema, required)) = body {
        o["requestBody"] = json!({"required": required, "content": json_content(schema)});
    }
    o
}

fn id_param() -> Value {
    json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"},
           "description": "The request id."})
}

fn query(name: &str, schema: Value, description: &str) -> Value {
    let mut p = json!({"name": name, "in": "query", "required": false, "schema": schema,
                       "description": description});
    if schema_is_array(&p["schema"]) {
        p["style"] = json!("form");
        p["explode"] = json!(true);
    }
    p
}

fn schema_is_array(s: &Value) -> bool {
    s.get("type").and_then(Value::as_str) == Some("array")
}

fn filter_param(name: &str) -> Value {
    let string = json!({"type": "string"});
    match name {
        "status" => query(
            name,
            json!({"type": "string", "enum": Status::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>()}),
            "Only this status.",
        ),
        "context" => query(
            name,
            json!({"type": "array", "items": {"type": "string"}}),
            "Only these contexts (repeat the parameter).",
        ),
        "intent" => query(
            name,
            json!({"type": "string", "enum": [crate::protocol::types::PLAN_REVIEW]}),
            "Only requests with a question of this intent.",
        ),
        "oldest_first" => query(
            name,
            json!({"type": "boolean"}),
            "Oldest first (default newest first).",
        ),
        "limit" => query(
            name,
            json!({"type": "integer", "minimum": 1, "maximum": super::requests::LIST_LIMIT_MAX}),
            "At most this many.",
        ),
        "decision" => query(
            name,
            json!({"type": "string", "enum": ["approved", "declined"]}),
            "Only plan reviews decided so.",
        ),
        "code" => query(
            name,
            json!({"type": "string", "enum": crate::protocol::error::ALL_CODES.iter().map(|c| c.as_str()).collect::<Vec<_>>()}),
            "Only this error code.",
        ),
        "since" | "until" => query(
            name,
            string,
            "A duration back from now (7d) or an RFC 3339 time.",
        ),
        "wait" => query(
            name,
            string,
            "How long to wait for the outcome (30s; at most 5m); none: answer at once.",
        ),
        _ => query(name, string, "Filter (as the CLI's flag of the same name)."),
    }
}

/// What the outcome long-poll answers 200 with: the outcome document, or, for a request
/// on a tool call whose wait window closed first (dsh 0.2's continued questions), the
/// pending document. (For the schema only.)
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum OutcomeOrPending {
    /// The outcome document.
    Outcome(Box<Outcome>),
    /// `{pending: true, callId, ...}`.
    Pending(crate::protocol::continued::Pending),
}

/// The schemas the operations name, registered with the generator.
struct Schemas {
    asked: Value,
    summaries: Value,
    view: Value,
    outcome: Value,
    outcome_or_pending: Value,
    receipt: Value,
    voted: Value,
    history: Value,
    events: Value,
    stats: Value,
    request: Value,
    answer: Value,
    reason: Value,
    away: Value,
    aways: Value,
    away_body: Value,
}

/// The document.
pub fn document() -> Value {
    let mut d = Doc {
        out: SchemaSettings::openapi3()
            .for_serialize()
            .with(|s| s.meta_schema = None)
            .into_generator(),
    };
    let s = Schemas {
        asked: d.response::<AskedBody>(),
        summaries: d.response::<Vec<RequestSummary>>(),
        view: d.response::<RequestView>(),
        outcome: d.response::<Outcome>(),
        outcome_or_pending: d.response::<OutcomeOrPending>(),
        receipt: d.response::<crate::protocol::types::Receipt>(),
        voted: d.response::<crate::store::Voted>(),
        history: d.response::<Vec<HistoryRow>>(),
        events: d.response::<Vec<Event>>(),
        stats: d.response::<Stats>(),
        request: {
            // The stream's data and the error body are named by the components only.
            let _ = d.response::<Change>();
            let _ = d.response::<ErrorBody>();
            d.body::<Request>()
        },
        answer: d.body::<Answer>(),
        reason: d.body::<ReasonBody>(),
        away: d.response::<super::away::AwayView>(),
        aways: d.response::<Vec<super::away::AwayView>>(),
        away_body: d.body::<super::away::SetBody>(),
    };
    let mut paths = request_paths(&s);
    if let (Some(p), Value::Object(more)) = (paths.as_object_mut(), audit_paths(&s)) {
        p.extend(more);
    }
    let schemas = d.out.take_definitions(true);
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "dshq",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The HTTP API of dshq, a durable human-question queue. Every operation takes `Authorization: Bearer TOKEN` (`dshq token create`); errors are `{\"error\": {\"code\", \"message\"}}` with the protocol's stable codes.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    })
}

/// The operations on requests: ask, list, show, outcome, receipt, claim, answer, cancel,
/// abort.
fn request_paths(s: &Schemas) -> Value {
    let list_params: Vec<Value> = LIST_PARAMS.iter().map(|p| filter_param(p)).collect();
    let (asked, summaries, view, outcome) = (
        s.asked.clone(),
        s.summaries.clone(),
        s.view.clone(),
        s.outcome.clone(),
    );
    let (outcome_or_pending, receipt, voted) = (
        s.outcome_or_pending.clone(),
        s.receipt.clone(),
        s.voted.clone(),
    );
    let (request, answer, reason) = (s.request.clone(), s.answer.clone(), s.reason.clone());
    json!({
        "/api/v1/requests": {
            "post": op("Ask: submit a request document (as `dshq --json ask`)", vec![],
                Some((request, true)),
                vec![(201, "Accepted", Some(asked.clone())), (200, "Already accepted with the same content", Some(asked))],
                &[400, 401, 403, 409, 413]),
            "get": op("List requests (as `dshq list`)", list_params, None,
                vec![(200, "The requests, newest first", Some(summaries))], &[400, 401, 403]),
        },
        "/api/v1/requests/{id}": {
            "get": op("One request with its questions, state and outcome", vec![id_param()], None,
                vec![(200, "The request", Some(view.clone()))], &[401, 403, 404]),
        },
        "/api/v1/requests/{id}/outcome": {
            "get": op("The outcome document, waiting for it up to `wait` (long-poll)",
                vec![id_param(), filter_param("wait")], None,
                vec![(200, "The outcome; for a request on a tool call whose window closed first, the pending document", Some(outcome_or_pending)), (204, "No outcome yet (the wait ended first)", None)],
                &[400, 401, 403, 404]),
        },
        "/api/v1/requests/{id}/receipt": {
            "get": op("The signed decision receipt of a final request, as `dshq receipt ID` prints it (one compact line: check it offline with `dshq receipt verify FILE --key PUB`)",
                vec![id_param()], None,
                vec![(200, "The receipt", Some(receipt))], &[401, 403, 404, 409]),
        },
        "/api/v1/requests/{id}/claim": {
            "post": op("Claim the request for the host's provider lease", vec![id_param()], None,
                vec![(200, "The claimed request", Some(view))], &[401, 403, 404, 409]),
        },
        "/api/v1/requests/{id}/answer": {
            "post": op("Answer with an Answer document (on a request with a quorum: the caller's vote)",
                vec![id_param(), query("for", json!({"type": "string"}),
                    "Answer for this away person, whose delegate the caller is now: recorded as \"D for P\" (onBehalfOf); NOT_DELEGATE (403) otherwise.")],
                Some((answer, true)),
                vec![(200, "The outcome", Some(outcome.clone())),
                     (202, "The vote was recorded and the request's quorum is not met yet (it stays open)", Some(voted))],
                &[400, 401, 403, 404, 409, 413]),
        },
        "/api/v1/requests/{id}/cancel": {
            "post": op("Cancel as the human (ASK_CANCELLED)", vec![id_param()], Some((reason.clone(), false)),
                vec![(200, "The outcome", Some(outcome.clone()))], &[400, 401, 403, 404, 409, 413]),
        },
        "/api/v1/requests/{id}/abort": {
            "post": op("Abort as the asker (ASK_ABORTED)", vec![id_param()], Some((reason, false)),
                vec![(200, "The outcome", Some(outcome))], &[400, 401, 403, 404, 409, 413]),
        }
    })
}

/// The audit's operations (events, history, stats) and the event stream.
fn audit_paths(s: &Schemas) -> Value {
    let mut history_params: Vec<Value> = HISTORY_PARAMS.iter().map(|p| filter_param(p)).collect();
    for p in &mut history_params {
        if p["name"] == "limit" {
            p["schema"]["maximum"] = json!(super::audit::HISTORY_LIMIT_MAX);
        }
    }
    let (events, history, stats) = (s.events.clone(), s.history.clone(), s.stats.clone());
    let (away, aways, away_body) = (s.away.clone(), s.aways.clone(), s.away_body.clone());
    json!({
        "/api/v1/away": {
            "get": op("The away notices that hold now (as `dshq away`)", vec![], None,
                vec![(200, "The notices, by person", Some(aways))], &[401, 403]),
            "put": op("Set the caller's own away notice: away until a time, a delegate answering for them meanwhile (as `dshq away --until T --delegate D`)",
                vec![], Some((away_body, true)),
                vec![(200, "The notice set", Some(away.clone()))], &[400, 401, 403, 413, 422]),
            "delete": op("Cancel the caller's own away notice (NOT_AWAY when none holds)", vec![], None,
                vec![(200, "The notice cancelled", Some(away))], &[401, 403, 404]),
        },
        "/api/v1/requests/{id}/events": {
            "get": op("The event trail of one request", vec![id_param()], None,
                vec![(200, "The events, oldest first", Some(events))], &[401, 403, 404]),
        },
        "/api/v1/history": {
            "get": op("The audit: requests with who asked, who answered, when, and what was decided (as `dshq history`)",
                history_params, None, vec![(200, "The rows, newest first", Some(history))], &[400, 401, 403]),
        },
        "/api/v1/stats": {
            "get": op("Counts, wait percentiles, approval rate (as `dshq stats`)",
                vec![filter_param("since")], None, vec![(200, "The statistics", Some(stats))], &[400, 401, 403]),
        },
        "/api/v1/stream": {
            "get": {
                "summary": "Server-sent events of the request lifecycle: event names accepted, claimed, released, answered, cancelled, aborted, expired, escalated (and lagged); data is a Change",
                "description": "A client that reconnects sends the last id: it saw as Last-Event-ID and first gets the changes it missed, from the event log, then the live ones, none twice. More than 4096 missed log positions end the replay with a lagged event ({\"missed\": N}).",
                "security": [{"bearer": []}],
                "parameters": [{
                    "name": "Last-Event-ID",
                    "in": "header",
                    "required": false,
                    "description": "The id: of the last event received: resume after it",
                    "schema": {"type": "integer", "format": "int64", "minimum": 0},
                }],
                "responses": {
                    "200": {"description": "An endless text/event-stream; each event's data is a Change (see components)",
                            "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                    "400": errors(&[400])["400"].clone(),
                    "401": errors(&[401])["401"].clone(),
                    "403": errors(&[403])["403"].clone(),
                },
            },
        }
    })
}

/// `GET /api/v1/openapi.json`.
pub async fn serve() -> Json<Value> {
    Json(document())
}
