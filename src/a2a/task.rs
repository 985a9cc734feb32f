//! A dshq request as an A2A task: the one place the task's state is derived from the
//! request's (nothing of a task is stored; the request is the task).
//!
//! | request | task state | artifact |
//! |---|---|---|
//! | `pending`, `claimed` | `TASK_STATE_WORKING` | none |
//! | `answered` | `TASK_STATE_COMPLETED` | the decision document |
//! | `aborted` (the asker, `CancelTask`, its deadline) | `TASK_STATE_CANCELED` | the outcome |
//! | `cancelled`, `expired` | `TASK_STATE_FAILED` | the outcome |
//! | `rejected` | `TASK_STATE_REJECTED` | the outcome |
//!
//! Every final task carries the same document the outbox file holds (with its signed
//! receipt) as its one artifact, `decision`, so a client reads the decision the same way
//! however the task ended.

use serde_json::{Map, Value};

use super::wire::{Artifact, Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent};
use super::wire::{TaskState, TaskStatus, TaskStatusUpdateEvent};
use crate::app;
use crate::clock::rfc3339;
use crate::host::AppState;
use crate::protocol::Outcome;
use crate::store::{RequestRow, Status};

/// The id of the artifact that carries the decision document.
pub const ARTIFACT: &str = "decision";

/// A request with its outcome (with the receipt) once it has one: what a task is made of.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request.
    pub row: RequestRow,
    /// Its outcome, once final.
    pub outcome: Option<Outcome>,
}

/// The task state of a request in `status` (with its outcome ready or not).
pub fn state(status: Status, has_outcome: bool) -> TaskState {
    match status {
        _ if !has_outcome => TaskState::Working,
        Status::Pending | Status::Claimed => TaskState::Working,
        Status::Answered => TaskState::Completed,
        Status::Aborted => TaskState::Canceled,
        Status::Cancelled | Status::Expired => TaskState::Failed,
        Status::Rejected => TaskState::Rejected,
    }
}

impl Seen {
    /// The task's id: the request's.
    pub fn id(&self) -> &str {
        self.row.id.as_deref().unwrap_or_default()
    }

    /// Its state.
    pub fn state(&self) -> TaskState {
        state(self.row.status, self.outcome.is_some())
    }

    /// Its status: the state, a line for a person, and when it last changed.
    pub fn status(&self) -> TaskStatus {
        let state = self.state();
        let text = match (self.row.status, &self.outcome) {
            (Status::Claimed, None) => "a person is answering".to_string(),
            (_, None) => "waiting for a person to answer".to_string(),
            (Status::Answered, Some(_)) => "answered".to_string(),
            (_, Some(o)) => match o {
                Outcome::Error(e) => format!("{}: {}", e.error.code.as_str(), e.error.message),
                Outcome::Answered(_) => "answered".to_string(),
            },
        };
        let at = self
            .row
            .finished_ms
            .or(self.row.claimed_ms)
            .unwrap_or(self.row.created_ms);
        TaskStatus {
            state,
            message: Some(Message {
                message_id: format!("{}.{}", self.id(), self.row.status.as_str()),
                context_id: Some(self.row.context.clone()),
                task_id: Some(self.id().to_string()),
                role: Role::Agent,
                parts: vec![Part::text(text)],
                metadata: None,
            }),
            timestamp: rfc3339(at),
        }
    }

    /// The decision document as the task's artifact, once final.
    pub fn artifact(&self) -> Option<Artifact> {
        let o = self.outcome.as_ref()?;
        let doc = serde_json::to_value(o).ok()?;
        Some(Artifact {
            artifact_id: ARTIFACT.into(),
            name: ARTIFACT.into(),
            description: "the decision document: the answers, the decision, who decided, \
                          the votes and the signed receipt (dshq's outcome document)"
                .into(),
            parts: vec![Part::data(doc)],
        })
    }

    /// The task.
    pub fn task(&self) -> Task {
        let mut metadata = Map::new();
        metadata.insert(
            "dshqStatus".into(),
            Value::String(self.row.status.as_str().into()),
        );
        Task {
            id: self.id().to_string(),
            context_id: self.row.context.clone(),
            status: self.status(),
            artifacts: self.artifact().into_iter().collect(),
            metadata: Some(metadata),
        }
    }

    /// What a stream sends once the task is final: the artifact, then the final status.
    pub fn final_events(&self) -> Vec<StreamResponse> {
        let (task_id, context_id) = (self.id().to_string(), self.row.context.clone());
        let mut out = Vec::new();
        if let Some(artifact) = self.artifact() {
            out.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                artifact,
                last_chunk: true,
            }));
        }
        out.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id,
            context_id,
            status: self.status(),
        }));
        out
    }
}

/// Read task `id` as it is now (its outcome with the receipt once final); `None` when
/// there is no such request. A deadline nobody noticed yet is ended here, as the HTTP
/// API's outcome does.
pub async fn read(st: &AppState, id: &str) -> crate::Result<Option<Seen>> {
    let (root, id) = (st.root.clone(), id.to_string());
    st.db
        .read(move |store| {
            let outcome = app::feed::outcome_ready(store, &root, &id)?;
            let Some(row) = store.get(&id)? else {
                return Ok(None);
            };
            let outcome = outcome.map(|o| app::receipts::attach(store, &root, row.seq, o));
            Ok(Some(Seen { row, outcome }))
        })
        .await
}
