//! dsh 0.2's continued ("timed") questions, in dshq's protocol.
//!
//! In dsh 0.2 a tool call may ask with a wait window (`askTimed(request, callId,
//! timeoutMs)`): the caller gets the answer, or `{pending: true, callId}` when the window
//! closes while the question stays answerable, and a late answer is delivered to that call
//! instead of the question being asked again. dshq's requests are durable already; what
//! this adds is the call and the window on the request (`wait: {callId, timeoutMs?}`), the
//! rules that tie a request to its call, and the pending document every asker face that
//! waits returns when the window closes.
//!
//! - **One call, one request.** The request's id is the call's: `call-` and 32 hex digits
//!   of the SHA-256 of the call id ([`call_request_id`]), so asking again on the same call
//!   re-attaches (the same content) or is `DUPLICATE_WAIT` (other content), and a late
//!   answer is found from the call id alone. A request with a `wait` whose JSON `id` is
//!   another is refused (`BAD_REQUEST`).
//! - **The window** (`timeoutMs`) is dsh's: a safe integer from 1 to 2147483647
//!   milliseconds, else `BAD_TIMEOUT`. It bounds a face's wait, never the request (that is
//!   `timeout`/`deadline`, which end it `ASK_ABORTED`).
//!
//! Pure: no I/O.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::{err, Code, UserQuestionError};
use super::types::Wait;

/// The largest wait window (dsh's: the largest platform timer, in milliseconds).
pub const MAX_TIMEOUT_MS: u64 = 2_147_483_647;

/// The longest call id.
pub const MAX_CALL_ID_CHARS: usize = 256;

/// The request id of a tool call: `call-` and the first 32 lowercase hex digits of the
/// SHA-256 of the call id (as the packages compute it).
pub fn call_request_id(call_id: &str) -> String {
    let hash = Sha256::digest(call_id.as_bytes());
    let hex: String = hash.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("call-{hex}")
}

/// Check a request's `wait`: the call id (`BAD_REQUEST`) and the window (`BAD_TIMEOUT`).
pub fn check_wait(wait: &Wait) -> Result<(), UserQuestionError> {
    let call = &wait.call_id;
    if call.is_empty() || call.chars().count() > MAX_CALL_ID_CHARS {
        return Err(err(
            Code::BadRequest,
            format!("`wait.callId` must be 1 to {MAX_CALL_ID_CHARS} characters"),
        ));
    }
    if call.chars().any(char::is_control) {
        return Err(err(
            Code::BadRequest,
            "`wait.callId` must not hold control characters",
        ));
    }
    if let Some(n) = &wait.timeout_ms {
        window_ms(n)?;
    }
    Ok(())
}

/// A `timeoutMs` as milliseconds, or `BAD_TIMEOUT`.
fn window_ms(n: &serde_json::Number) -> Result<u64, UserQuestionError> {
    n.as_u64()
        .filter(|ms| (1..=MAX_TIMEOUT_MS).contains(ms))
        .ok_or_else(|| {
            err(
                Code::BadTimeout,
                format!(
                    "`wait.timeoutMs` is {n}: give a whole number of milliseconds from 1 to {MAX_TIMEOUT_MS} (or leave it out to wait for the answer)"
                ),
            )
        })
}

/// The window of a checked `wait`, if it has one.
pub fn window(wait: &Wait) -> Option<Duration> {
    wait.timeout_ms
        .as_ref()
        .and_then(|n| window_ms(n).ok())
        .map(Duration::from_millis)
}

/// The id a request names for itself: the call's for a request with a `wait`, else its
/// JSON `id` (what a file's name or a generated id only stands in for when absent).
pub fn own_id(request: &super::types::Request) -> Option<String> {
    match &request.wait {
        Some(w) => Some(call_request_id(&w.call_id)),
        None => request.id.clone(),
    }
}

/// The id a request with `wait` must have; `BAD_REQUEST` when its JSON names another.
pub fn request_id(wait: &Wait, given: Option<&str>) -> Result<String, UserQuestionError> {
    let id = call_request_id(&wait.call_id);
    match given {
        Some(g) if g != id => Err(err(
            Code::BadRequest,
            format!(
                "a request with a `wait` takes its id from its call ({id}); give no `id`, or that one"
            ),
        )),
        _ => Ok(id),
    }
}

/// What a face that waits returns when the window of a request with a call closes
/// without an answer: dsh 0.2's `{pending: true, callId}`, with dshq's id and digest and a
/// message saying how the answer reaches the call later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pending {
    /// Always `true`.
    pub pending: bool,
    /// The tool call whose question stays answerable.
    pub call_id: String,
    /// The request id (the call's).
    pub id: String,
    /// `sha256:HEX` of the request, as its outcome will carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_digest: Option<String>,
    /// Always `"pending"` (the request's state).
    pub status: String,
    /// What to do meanwhile and how to collect the answer.
    pub message: String,
}

impl Pending {
    /// The pending document of request `id` on call `call_id`.
    pub fn new(id: &str, call_id: &str, request_digest: Option<String>) -> Pending {
        Pending {
            pending: true,
            call_id: call_id.to_string(),
            id: id.to_string(),
            request_digest,
            status: "pending".into(),
            message: format!(
                "No answer arrived before the wait window closed. This is pending, not a skipped \
                 answer, and not permission: the question stays answerable. Continue with work \
                 that does not depend on it. The answer is delivered to call {call} when it comes: \
                 `dshq wait {id}`, GET /api/v1/requests/{id}/outcome, or the MCP tool get_answer \
                 with {{\"id\": \"{id}\"}} (asking again on the same call re-attaches; it never asks \
                 twice).",
                call = crate::text::one_line(call_id),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(call: &str, ms: Option<serde_json::Value>) -> Wait {
        serde_json::from_value(serde_json::json!({"callId": call, "timeoutMs": ms})).unwrap()
    }

    #[test]
    fn the_request_id_of_a_call_is_fixed_and_in_the_id_charset() {
        // sha256("call_1") = 1a0d...; computed apart from this code (sha256sum).
        let id = call_request_id("call_1");
        assert!(id.starts_with("call-") && id.len() == 37);
        assert!(super::super::check::is_valid_id(&id));
        assert_eq!(id, call_request_id("call_1"));
        assert_ne!(id, call_request_id("call_2"));
    }

    #[test]
    fn a_window_outside_dsh_bounds_is_bad_timeout() {
        for bad in [
            serde_json::json!(0),
            serde_json::json!(-5),
            serde_json::json!(1.5),
            serde_json::json!(2_147_483_648u64),
        ] {
            let e = check_wait(&wait("c", Some(bad.clone()))).unwrap_err();
            assert_eq!(e.code, Code::BadTimeout, "{bad}");
        }
        for good in [1u64, 120_000, MAX_TIMEOUT_MS] {
            check_wait(&wait("c", Some(good.into()))).unwrap();
            assert_eq!(
                window(&wait("c", Some(good.into()))),
                Some(Duration::from_millis(good))
            );
        }
        assert_eq!(window(&wait("c", None)), None);
    }

    #[test]
    fn a_bad_call_id_is_bad_request() {
        for bad in ["", "a\nb", &"x".repeat(MAX_CALL_ID_CHARS + 1)] {
            assert_eq!(
                check_wait(&wait(bad, None)).unwrap_err().code,
                Code::BadRequest
            );
        }
    }

    #[test]
    fn a_request_with_a_wait_takes_the_call_id_as_its_id() {
        let w = wait("call_9", None);
        let id = call_request_id("call_9");
        assert_eq!(request_id(&w, None).unwrap(), id);
        assert_eq!(request_id(&w, Some(&id)).unwrap(), id);
        assert_eq!(
            request_id(&w, Some("mine")).unwrap_err().code,
            Code::BadRequest
        );
    }
}
