//! MCP tasks (the `io.modelcontextprotocol/tasks` extension): when the request declares
//! it (per request, in its `_meta` capabilities), `ask_user_question` returns a task at
//! once instead of waiting.
//!
//! The task *is* the durable request: its id is the request id, and `tasks/get` reads
//! the request's state from the store, so a task survives a restart of the server (or a
//! new session of a reconnecting client) with nothing kept in memory. The status follows
//! the request: `working` while pending or claimed, `completed` with the tool result
//! once answered, `cancelled` once aborted (`tasks/cancel` aborts it), `failed` with the
//! code otherwise (the human cancelled it: ASK_CANCELLED).

use rmcp::model::{
    CallToolResponse, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};

use super::ask::{self, Who};
use super::backend::Backend;
use super::Config;
use crate::app;
use crate::clock::rfc3339;
use crate::core::access::Action;
use crate::protocol::check::check_id;
use crate::protocol::Outcome;
use crate::root::Root;
use crate::store::{RequestRow, Status, Store};

/// The JSON-RPC error number of a failed task (an implementation-defined server error;
/// the protocol's code is in its `data`).
pub const TASK_FAILED: i64 = -32000;

/// How often a client should poll `tasks/get`, in milliseconds.
pub const POLL_MS: u64 = 1000;

/// Whether this request asks for a task: the tasks extension in the request's own
/// client capabilities (`_meta["io.modelcontextprotocol/clientCapabilities"]`), never
/// what the client declared at `initialize`.
pub fn requested(ctx: &rmcp::service::RequestContext<rmcp::RoleServer>) -> bool {
    ctx.meta
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
}

/// `ask_user_question` as a task: commit the request, return its task (a rejection is
/// the usual tool error, not a task).
pub async fn create(
    backend: &Backend,
    cfg: &Config,
    who: &Who,
    args: JsonObject,
) -> CallToolResponse {
    // The task's row and outcome are read in the commit's own job.
    let (submitted, first) = match ask::submit(backend, cfg, who, args, row_and_outcome).await {
        Ok(s) => s,
        Err(r) => return r.into(),
    };
    let id = submitted.id;
    match first {
        Ok(Some((row, outcome))) => {
            CallToolResponse::Task(CreateTaskResult::new(detailed(&row, outcome.as_ref()).task))
        }
        Ok(None) => {
            ask::pending_result(&id, Some(submitted.digest), submitted.call_id.as_deref()).into()
        }
        Err(e) => super::errors::from_error(&e, Some(&id)).into(),
    }
}

/// The request `id` and its outcome if it has one: right after the ask's commit, in its
/// job, and for `tasks/get`.
fn row_and_outcome(
    store: &mut Store,
    root: &Root,
    id: &str,
) -> crate::Result<Option<(RequestRow, Option<Outcome>)>> {
    // A deadline nobody noticed yet is ended here, as `get_answer` would.
    let outcome = app::feed::outcome_ready(store, root, id)?;
    Ok(store.get(id)?.map(|row| (row, outcome)))
}

fn not_found(id: &str) -> McpError {
    McpError::invalid_params(format!("no task {id:?} (a task id is a request id)"), None)
}

/// `tasks/get`: the request's state as a task.
pub async fn get(backend: &Backend, who: &Who, task_id: &str) -> Result<GetTaskResult, McpError> {
    check_id("task id", task_id).map_err(|_| not_found(task_id))?;
    let reach = who
        .require(Action::Read)
        .map_err(|e| McpError::invalid_request(e.message, None))?;
    let (root, id) = (backend.root().clone(), task_id.to_string());
    let found = backend
        .write(move |store| row_and_outcome(store, &root, &id))
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
    match found {
        Some((row, outcome)) if who.sees(&row, reach) => {
            Ok(GetTaskResult::new(detailed(&row, outcome.as_ref())))
        }
        _ => Err(not_found(task_id)),
    }
}

/// `tasks/cancel`: abort the request as the asker.
pub async fn cancel(backend: &Backend, who: &Who, task_id: &str) -> Result<(), McpError> {
    let mut args = JsonObject::new();
    args.insert("id".into(), Value::String(task_id.to_string()));
    args.insert("reason".into(), json!("the MCP task was cancelled"));
    let r = ask::abort_question(backend, who, args).await;
    if r.is_error == Some(true) {
        let code = r
            .structured_content
            .as_ref()
            .and_then(|v| v["error"]["code"].as_str())
            .unwrap_or("");
        if code == "NOT_FOUND" {
            return Err(not_found(task_id));
        }
        if code != "REQUEST_FINAL" {
            let text = r
                .content
                .first()
                .and_then(|c| c.as_text())
                .map(|t| t.text.clone())
                .unwrap_or_default();
            return Err(McpError::invalid_request(text, None));
        }
    }
    Ok(())
}

/// The task of request `row` with its outcome (when final).
pub fn detailed(row: &RequestRow, outcome: Option<&Outcome>) -> DetailedTask {
    let id = row.id.clone().unwrap_or_default();
    let created = rfc3339(row.created_ms);
    let updated = rfc3339(row.finished_ms.or(row.claimed_ms).unwrap_or(row.created_ms));
    let (payload, message) = match (row.status, outcome) {
        (Status::Pending, _) | (_, None) => (
            TaskPayload::Working,
            "waiting for a human to answer".to_string(),
        ),
        (Status::Claimed, _) => (TaskPayload::Working, "a human is answering".to_string()),
        (Status::Answered, Some(o)) => {
            let result = serde_json::to_value(ask::outcome_result(o))
                .ok()
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default();
            (TaskPayload::Completed { result }, "answered".to_string())
        }
        (Status::Aborted, Some(Outcome::Error(e))) => (
            TaskPayload::Cancelled,
            format!("{}: {}", e.error.code, e.error.message),
        ),
        (_, Some(o)) => {
            let error = match o {
                Outcome::Error(e) => e.error.clone(),
                Outcome::Answered(_) => crate::protocol::UserQuestionError::new(
                    crate::protocol::Code::Store,
                    "inconsistent state",
                ),
            };
            let message = format!("{}: {}", error.code, error.message);
            // A JSON-RPC error object: a server-error number, the protocol's code in `data`.
            let mut obj = JsonObject::new();
            obj.insert("code".into(), json!(TASK_FAILED));
            obj.insert("message".into(), json!(message));
            obj.insert(
                "data".into(),
                json!({ "code": error.code, "message": error.message }),
            );
            (TaskPayload::Failed { error: obj }, message)
        }
    };
    let task = Task::new(id, TaskStatus::Working, created, updated)
        .with_status_message(message)
        .with_poll_interval_ms(POLL_MS);
    DetailedTask::new(task, payload)
}
