//! `POST /a2a`: A2A's JSON-RPC binding. Each call: authenticate the bearer token (401
//! before anything is read), check `A2A-Version`, parse the JSON-RPC envelope and the
//! method's parameters, run one use-case on the database thread, render the result (or
//! an SSE stream, [`super::stream`]).
//!
//! | method | what it does |
//! |---|---|
//! | `SendMessage` | ask (the asker's use-case); the task; waits for the decision unless `returnImmediately`, up to the host's long-poll bound |
//! | `SendStreamingMessage` | ask; stream the task until it is final |
//! | `GetTask` | the request as a task |
//! | `CancelTask` | abort the request as the asker (`ASK_ABORTED`) |
//! | `SubscribeToTask` | stream an open task until it is final |
//! | `Create`/`Get`/`List`/`DeleteTaskPushNotificationConfig` | the task's webhooks ([`super::push`]) |
//!
//! `ListTasks` and `GetExtendedAgentCard` answer `-32004` (the HTTP API lists requests;
//! the card is public and whole).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::errors::{Kind, RpcError};
use super::task::{self, Seen};
use super::wire::{PushConfig, PushConfigRef, SendMessageRequest, TaskIdRequest};
use super::Face;
use crate::app;
use crate::core::access::Action;
use crate::host::auth::Caller;
use crate::host::body::Body;
use crate::host::AppState;
use crate::protocol::check::check_id;
use crate::protocol::Code;
use crate::store::Asked;

/// The header a client names its protocol version in.
pub const VERSION_HEADER: &str = "a2a-version";

/// One call: its id (echoed), method and parameters.
struct Call {
    id: Value,
    method: String,
    params: Value,
}

/// A JSON-RPC response with `error`.
pub fn error(id: &Value, e: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()})
}

fn reply(id: &Value, r: Result<Value, RpcError>) -> Response {
    let body = match r {
        Ok(v) => super::wire::result(id, v),
        Err(e) => error(id, &e),
    };
    axum::Json(body).into_response()
}

/// The version the client speaks: `A2A-Version` (header, or the query parameter), empty
/// meaning 0.3, as A2A says; only 1.0 is served (a patch number is ignored).
fn version_ok(headers: &HeaderMap, query: Option<&str>) -> Result<(), RpcError> {
    let from_query = query.and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| k.eq_ignore_ascii_case("A2A-Version"))
            .map(|(_, v)| v.to_string())
    });
    let v = headers
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or(from_query)
        .unwrap_or_default();
    let major_minor: Vec<&str> = v.trim().split('.').take(2).collect();
    if major_minor == ["1", "0"] {
        return Ok(());
    }
    let said = if v.trim().is_empty() {
        "none (0.3)".to_string()
    } else {
        format!("{:?}", crate::text::one_line(&v))
    };
    Err(RpcError::new(
        Kind::Version,
        Code::BadRequest,
        format!(
            "A2A-Version {said} is not served: this agent speaks A2A {}",
            super::VERSION
        ),
    ))
}

fn parse_call(bytes: &[u8]) -> Result<Call, (Value, RpcError)> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| {
        (
            Value::Null,
            RpcError::new(
                Kind::Parse,
                Code::BadRequest,
                format!("the body is not JSON: {e}"),
            ),
        )
    })?;
    let id = v.get("id").cloned().unwrap_or(Value::Null);
    let invalid = |m: &str| {
        (
            id.clone(),
            RpcError::new(Kind::InvalidRequest, Code::BadRequest, m.to_string()),
        )
    };
    let Value::Object(o) = &v else {
        return Err(invalid(
            "the body is one JSON-RPC 2.0 request object (batches are not served)",
        ));
    };
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("a JSON-RPC 2.0 request has \"jsonrpc\": \"2.0\""));
    }
    if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
        return Err(invalid("the id is a string, a number or null"));
    }
    let Some(method) = o.get("method").and_then(Value::as_str) else {
        return Err(invalid("a JSON-RPC request names its method"));
    };
    Ok(Call {
        id,
        method: method.to_string(),
        params: o.get("params").cloned().unwrap_or_else(|| json!({})),
    })
}

fn params<T: DeserializeOwned>(p: Value) -> Result<T, RpcError> {
    serde_path_to_error::deserialize(p)
        .map_err(|e| RpcError::params(format!("invalid params at {}: {}", e.path(), e.inner())))
}

/// `POST /a2a`.
pub async fn serve(
    State(st): State<AppState>,
    Extension(face): Extension<Arc<Face>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    Body(bytes): Body,
) -> Response {
    let caller = match Caller::from_headers(&st, &headers).await {
        Ok(c) => c,
        Err(e) => return unauthorized(e),
    };
    let call = match parse_call(&bytes) {
        Ok(c) => c,
        Err((id, e)) => return reply(&id, Err(e)),
    };
    if let Err(e) = version_ok(&headers, uri.query()) {
        return reply(&call.id, Err(e));
    }
    let id = call.id.clone();
    let ctx = Ctx { st, face, caller };
    match call.method.as_str() {
        "SendMessage" => reply(&id, ctx.send(call.params).await),
        "SendStreamingMessage" => match ctx.ask(call.params).await {
            Ok((seen, _)) => super::stream::sse(ctx.st.clone(), id, seen, ctx.caller.clone()),
            Err(e) => reply(&id, Err(e)),
        },
        "GetTask" => reply(&id, ctx.get(call.params).await),
        "CancelTask" => reply(&id, ctx.cancel(call.params).await),
        "SubscribeToTask" => match ctx.subscribe(call.params).await {
            Ok(seen) => super::stream::sse(ctx.st.clone(), id, seen, ctx.caller.clone()),
            Err(e) => reply(&id, Err(e)),
        },
        "CreateTaskPushNotificationConfig" => reply(&id, ctx.push_create(call.params).await),
        "GetTaskPushNotificationConfig" => reply(&id, ctx.push_get(call.params).await),
        "ListTaskPushNotificationConfigs" => reply(&id, ctx.push_list(call.params).await),
        "DeleteTaskPushNotificationConfig" => reply(&id, ctx.push_delete(call.params).await),
        "ListTasks" | "GetExtendedAgentCard" => reply(
            &id,
            Err(RpcError::new(
                Kind::Unsupported,
                Code::BadRequest,
                format!(
                    "{} is not offered: list requests with GET /api/v1/requests; the card at {} is whole",
                    call.method,
                    super::CARD_PATH
                ),
            )),
        ),
        other => reply(
            &id,
            Err(RpcError::new(
                Kind::MethodNotFound,
                Code::BadRequest,
                format!("no method {:?} (A2A 1.0's JSON-RPC methods are PascalCase, such as SendMessage)", crate::text::one_line(other)),
            )),
        ),
    }
}

/// 401 with A2A's JSON-RPC error shape and the bearer challenge.
fn unauthorized(e: crate::host::error::ApiError) -> Response {
    let err = RpcError::new(Kind::InvalidRequest, e.0.code, e.0.message);
    let mut r = (
        StatusCode::UNAUTHORIZED,
        axum::Json(error(&Value::Null, &err)),
    )
        .into_response();
    r.headers_mut().insert(
        axum::http::header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer"),
    );
    r
}

/// One authenticated call's context.
struct Ctx {
    st: AppState,
    face: Arc<Face>,
    caller: Caller,
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("a wire shape serializes")
}

impl Ctx {
    fn require(&self, action: Action) -> Result<crate::core::access::Reach, RpcError> {
        self.caller.require(action).map_err(|e| RpcError::from(e.0))
    }

    /// Task `id` if the caller may see it (else not found: existence is not revealed).
    async fn visible(&self, id: &str) -> Result<Seen, RpcError> {
        let reach = self.require(Action::Read)?;
        check_id("task id", id).map_err(|_| RpcError::no_task(id))?;
        match task::read(&self.st, id).await? {
            Some(s) if self.caller.sees(&s.row, reach) => Ok(s),
            _ => Err(RpcError::no_task(id)),
        }
    }

    /// Ask the message's request; the task as it is now, and whether to wait for it.
    async fn ask(&self, p: Value) -> Result<(Seen, bool), RpcError> {
        self.require(Action::Ask)?;
        let req: SendMessageRequest = params(p)?;
        let bytes = super::message::request_of(&req.message)?;
        let config = req.configuration.unwrap_or_default();
        let push = config.task_push_notification_config;
        if let Some(c) = &push {
            self.face.pushes.check(c)?;
        }
        let (source, actor, root) = (
            self.caller.source(),
            self.caller.actor(),
            self.st.root.clone(),
        );
        let token = self.caller.token.clone();
        let asked = self
            .st
            .db
            .write(move |store| {
                app::ask::ask_with_token(
                    store,
                    &root,
                    app::ask::TokenAsk {
                        bytes: &bytes,
                        token: Some(&token),
                        source,
                        actor,
                    },
                )
            })
            .await?;
        let id = match asked {
            Asked::Accepted(a) => a.id,
            Asked::Rejected { error, .. } => return Err(RpcError::from(error)),
        };
        if let Some(c) = push {
            self.face
                .pushes
                .create(&self.caller.token.name, &id, c)
                .await?;
        }
        let seen = task::read(&self.st, &id)
            .await?
            .ok_or_else(|| RpcError::no_task(&id))?;
        Ok((seen, !config.return_immediately))
    }

    async fn send(&self, p: Value) -> Result<Value, RpcError> {
        let (seen, wait) = self.ask(p).await?;
        let seen = if wait && !seen.state().is_terminal() {
            self.wait(seen, self.st.limits.max_wait).await?
        } else {
            seen
        };
        Ok(json!({"task": to_value(&seen.task())}))
    }

    /// Wait up to `max` for task `seen` to end (woken by its final change, never by
    /// polling): the task as it is then.
    async fn wait(&self, seen: Seen, max: Duration) -> Result<Seen, RpcError> {
        let id = seen.id().to_string();
        let deadline = tokio::time::Instant::now() + max;
        let mut shutdown = self.st.shutdown.clone();
        let mut last = seen;
        loop {
            let mut finished = self.st.db.changes().wait_final(&id);
            if let Some(s) = task::read(&self.st, &id).await? {
                last = s;
            }
            if last.state().is_terminal() || tokio::time::Instant::now() >= deadline {
                return Ok(last);
            }
            tokio::select! {
                woken = finished.finished() => if !woken { return Ok(last) },
                _ = tokio::time::sleep_until(deadline) => return Ok(last),
                _ = shutdown.wait_for(|s| *s) => return Ok(last),
            }
        }
    }

    async fn get(&self, p: Value) -> Result<Value, RpcError> {
        let r: TaskIdRequest = params(p)?;
        Ok(to_value(&self.visible(&r.id).await?.task()))
    }

    async fn cancel(&self, p: Value) -> Result<Value, RpcError> {
        let r: TaskIdRequest = params(p)?;
        self.require(Action::Abort)?;
        let seen = self.visible(&r.id).await?;
        if seen.state().is_terminal() {
            return Err(RpcError::new(
                Kind::TaskNotCancelable,
                Code::RequestFinal,
                format!(
                    "task {:?} is final already ({})",
                    crate::text::one_line(&r.id),
                    seen.row.status.as_str()
                ),
            ));
        }
        let (root, actor, id) = (self.st.root.clone(), self.caller.actor(), r.id.clone());
        self.st
            .db
            .write(move |store| {
                app::ask::abort(
                    store,
                    &root,
                    &id,
                    Some("the A2A task was cancelled"),
                    &actor,
                )
            })
            .await?;
        Ok(to_value(&self.visible(&r.id).await?.task()))
    }

    async fn subscribe(&self, p: Value) -> Result<Seen, RpcError> {
        let r: TaskIdRequest = params(p)?;
        let seen = self.visible(&r.id).await?;
        if seen.state().is_terminal() {
            return Err(RpcError::new(
                Kind::Unsupported,
                Code::RequestFinal,
                format!(
                    "task {:?} is final: read it with GetTask",
                    crate::text::one_line(&r.id)
                ),
            ));
        }
        Ok(seen)
    }

    async fn push_create(&self, p: Value) -> Result<Value, RpcError> {
        let c: PushConfig = params(p)?;
        let task = c
            .task_id
            .clone()
            .ok_or_else(|| RpcError::params("a push configuration names its taskId"))?;
        self.face.pushes.check(&c)?;
        self.visible(&task).await?;
        let made = self
            .face
            .pushes
            .create(&self.caller.token.name, &task, c)
            .await?;
        Ok(to_value(&made))
    }

    async fn push_ref(
        &self,
        p: Value,
        needs_id: bool,
    ) -> Result<(PushConfigRef, String), RpcError> {
        let r: PushConfigRef = params(p)?;
        self.face.pushes.check_enabled()?;
        self.visible(&r.task_id).await?;
        let id = match (&r.id, needs_id) {
            (Some(id), _) => id.clone(),
            (None, false) => String::new(),
            (None, true) => return Err(RpcError::params("name the push configuration's id")),
        };
        Ok((r, id))
    }

    async fn push_get(&self, p: Value) -> Result<Value, RpcError> {
        let (r, id) = self.push_ref(p, true).await?;
        let found = self
            .face
            .pushes
            .list(&self.caller.token.name, &r.task_id)
            .await
            .into_iter()
            .find(|c| c.id.as_deref() == Some(id.as_str()));
        found.map(|c| to_value(&c)).ok_or_else(|| {
            RpcError::new(
                Kind::TaskNotFound,
                Code::NotFound,
                format!(
                    "no push configuration {:?} on task {:?}",
                    crate::text::one_line(&id),
                    crate::text::one_line(&r.task_id)
                ),
            )
        })
    }

    async fn push_list(&self, p: Value) -> Result<Value, RpcError> {
        let (r, _) = self.push_ref(p, false).await?;
        let all = self
            .face
            .pushes
            .list(&self.caller.token.name, &r.task_id)
            .await;
        Ok(json!({"configs": all.iter().map(to_value).collect::<Vec<_>>(), "nextPageToken": ""}))
    }

    async fn push_delete(&self, p: Value) -> Result<Value, RpcError> {
        let (r, id) = self.push_ref(p, true).await?;
        self.face
            .pushes
            .delete(&self.caller.token.name, &r.task_id, &id)
            .await?;
        Ok(json!({}))
    }
}
