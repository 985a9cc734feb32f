//! A2A 1.0's JSON shapes (the ProtoJSON of `lf.a2a.v1`: camelCase members, enums as their
//! SCREAMING_SNAKE_CASE names, timestamps in RFC 3339 UTC), as far as this face reads and
//! writes them. Only the shapes: what they mean for dshq is [`super::task`] and
//! [`super::message`].
//!
//! What a client sends is read leniently (a member this face does not know is ignored, as
//! ProtoJSON readers of a newer revision's messages do); what it writes leaves out every
//! member it has no value for.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A task's state (`TaskState`): the ones dshq's requests map to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TaskState {
    /// Waiting for, or being answered by, a person.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Answered: the decision document is the artifact.
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Ended without an answer by the reviewer's side or the deadline.
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Aborted by the asker.
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// Refused at asking.
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
}

impl TaskState {
    /// Whether the state never changes again.
    pub fn is_terminal(self) -> bool {
        self != TaskState::Working
    }
}

/// `Role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Unset (0): refused on a message sent to the agent.
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// The client.
    #[serde(rename = "ROLE_USER")]
    User,
    /// The agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// `Part`: exactly one of `text`, `raw`, `url`, `data`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Bytes (base64): a file, which this agent does not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A file by URL, which this agent does not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// JSON data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// A file's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// The media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }

    /// A JSON data part.
    pub fn data(data: Value) -> Part {
        Part {
            data: Some(data),
            media_type: Some("application/json".into()),
            ..Part::default()
        }
    }
}

/// `Message`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The sender's id of the message.
    pub message_id: String,
    /// Its context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Who sent it.
    #[serde(default = "unspecified")]
    pub role: Role,
    /// Its content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

fn unspecified() -> Role {
    Role::Unspecified
}

/// `TaskStatus`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// A line for a person.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When it last changed (RFC 3339).
    pub timestamp: String,
}

/// `Artifact`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Its id.
    pub artifact_id: String,
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: String,
    /// Its content.
    pub parts: Vec<Part>,
}

/// `Task`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task id (the request id).
    pub id: String,
    /// Its context (the request's).
    pub context_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// Its artifacts (the decision, once final).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Free-form metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `TaskStatusUpdateEvent`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
}

/// `TaskArtifactUpdateEvent`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: String,
    /// The artifact.
    pub artifact: Artifact,
    /// Whether this is the artifact's last chunk.
    pub last_chunk: bool,
}

/// `StreamResponse` (and a push notification's body): exactly one member.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The whole task.
    Task(Task),
    /// A new status.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// `SendMessageConfiguration`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// A webhook to tell when the task ends.
    #[serde(default)]
    pub task_push_notification_config: Option<PushConfig>,
    /// Return the task at once instead of waiting for its end.
    #[serde(default)]
    pub return_immediately: bool,
}

/// `SendMessageRequest`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The message.
    pub message: Message,
    /// How to send it.
    #[serde(default)]
    pub configuration: Option<SendMessageConfiguration>,
}

/// `GetTaskRequest`, `CancelTaskRequest`, `SubscribeToTaskRequest`: the task's id.
#[derive(Debug, Clone, Deserialize)]
pub struct TaskIdRequest {
    /// The task id.
    pub id: String,
}

/// `GetTaskPushNotificationConfigRequest`, `DeleteTaskPushNotificationConfigRequest`,
/// `ListTaskPushNotificationConfigsRequest` (without `id`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigRef {
    /// The task.
    pub task_id: String,
    /// The configuration (absent: all of the task's).
    #[serde(default)]
    pub id: Option<String>,
}

/// `AuthenticationInfo`: what the agent sends as `Authorization: SCHEME CREDENTIALS`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// The HTTP auth scheme (`Bearer`, `Basic`, ...).
    pub scheme: String,
    /// The credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// `TaskPushNotificationConfig`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfig {
    /// Its id (made up when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The webhook.
    pub url: String,
    /// Sent as `X-A2A-Notification-Token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Sent as `Authorization: SCHEME CREDENTIALS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// A JSON-RPC 2.0 response to call `id` carrying `result` (a streamed event is one too).
pub fn result(id: &Value, result: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})
}
