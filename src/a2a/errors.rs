//! The face's errors as A2A's JSON-RPC binding writes them: the JSON-RPC or A2A error
//! number (`-32001` task not found, `-32602` invalid params, ...), a message for a person,
//! and in `data` a `google.rpc.ErrorInfo` whose `reason` and `metadata.code` are dshq's
//! stable code (`BAD_REQUEST`, `EMPTY_QUESTIONS`, `NOT_FOUND`, ...), so a client branches
//! on the same code every other face gives. The official SDKs surface `metadata` as the
//! error's data.

use serde_json::{json, Value};

use crate::error::Error;
use crate::protocol::{Code, UserQuestionError};

/// The `@type` of the detail that carries the code.
pub const ERROR_INFO: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// The `domain` of that detail.
pub const DOMAIN: &str = "dshq";

/// The classes of error A2A's JSON-RPC binding numbers (its section 5.4 and JSON-RPC 2.0's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `-32700`: the body is not JSON.
    Parse,
    /// `-32600`: not a JSON-RPC 2.0 request object.
    InvalidRequest,
    /// `-32601`: no such method.
    MethodNotFound,
    /// `-32602`: the parameters (the request inside the message included) are invalid.
    InvalidParams,
    /// `-32603`: the server failed (the operator's log says why).
    Internal,
    /// `-32001`: no such task, or not the caller's.
    TaskNotFound,
    /// `-32002`: the task is final already.
    TaskNotCancelable,
    /// `-32003`: this agent sends no push notifications (none allowed by the operator).
    PushNotSupported,
    /// `-32004`: an operation this agent does not offer.
    Unsupported,
    /// `-32005`: a part this agent does not read (a file).
    ContentType,
    /// `-32009`: an `A2A-Version` other than 1.0.
    Version,
}

impl Kind {
    /// The error number.
    pub fn number(self) -> i64 {
        match self {
            Kind::Parse => -32700,
            Kind::InvalidRequest => -32600,
            Kind::MethodNotFound => -32601,
            Kind::InvalidParams => -32602,
            Kind::Internal => -32603,
            Kind::TaskNotFound => -32001,
            Kind::TaskNotCancelable => -32002,
            Kind::PushNotSupported => -32003,
            Kind::Unsupported => -32004,
            Kind::ContentType => -32005,
            Kind::Version => -32009,
        }
    }
}

/// An error of one call.
#[derive(Debug, Clone)]
pub struct RpcError {
    /// Its class.
    pub kind: Kind,
    /// dshq's stable code.
    pub code: Code,
    /// What went wrong, for a person.
    pub message: String,
}

impl RpcError {
    /// An error of `kind` with dshq's `code`.
    pub fn new(kind: Kind, code: Code, message: impl Into<String>) -> RpcError {
        RpcError {
            kind,
            code,
            message: message.into(),
        }
    }

    /// Invalid parameters (`BAD_REQUEST`).
    pub fn params(message: impl Into<String>) -> RpcError {
        RpcError::new(Kind::InvalidParams, Code::BadRequest, message)
    }

    /// No task `id` the caller may see.
    pub fn no_task(id: &str) -> RpcError {
        RpcError::new(
            Kind::TaskNotFound,
            Code::NotFound,
            format!(
                "no task {:?} (a task id is a request id)",
                crate::text::one_line(id)
            ),
        )
    }

    /// The JSON-RPC `error` member.
    pub fn to_json(&self) -> Value {
        let code = self.code.as_str();
        json!({
            "code": self.kind.number(),
            "message": self.message,
            "data": [{
                "@type": ERROR_INFO,
                "reason": code,
                "domain": DOMAIN,
                "metadata": {"code": code},
            }],
        })
    }
}

impl From<UserQuestionError> for RpcError {
    fn from(e: UserQuestionError) -> RpcError {
        let kind = match e.code {
            Code::NotFound => Kind::TaskNotFound,
            Code::RequestFinal => Kind::TaskNotCancelable,
            c if crate::host::error::ApiError::status(c).is_server_error() => Kind::Internal,
            _ => Kind::InvalidParams,
        };
        RpcError::new(kind, e.code, e.message)
    }
}

impl From<Error> for RpcError {
    fn from(e: Error) -> RpcError {
        let ue = e.to_user_error();
        if crate::host::error::ApiError::status(ue.code).is_server_error() {
            tracing::error!(error = %crate::text::for_log(&e.to_string()), "an A2A call failed");
            return RpcError::new(
                Kind::Internal,
                ue.code,
                "the server failed; the operator's log says why",
            );
        }
        RpcError::from(ue)
    }
}
