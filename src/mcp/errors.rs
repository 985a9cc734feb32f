//! Errors as MCP tool errors: `isError: true`, the protocol's stable code in
//! `structuredContent.error.code` (a [`ToolError`], which every tool's output schema
//! admits beside its result), and a text written for the model that reads it (what
//! happened, and what to do next). A tool error is what a model sees; a JSON-RPC error
//! is what a host shows as "the tool failed", so every dshq error is a tool error.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use super::tools::{ErrorDetail, ErrorStatus, ToolError};
use crate::error::Error;
use crate::protocol::{Code, UserQuestionError};

/// What a model should do after `code`.
pub fn guidance(code: Code) -> &'static str {
    match code {
        Code::DelegatedCaller => {
            "You are running as a delegated agent (another agent owns you), so you have no human \
             to ask. Do not retry. Put the question in your final result, so the agent that \
             delegated to you can ask it."
        }
        Code::CallerNotLive => {
            "The agent identity this session asks as is not live in dshq's registry (it ended, \
             expired or was superseded). Do not retry with it; report that the MCP server needs \
             a live agent instance (dshq agent enter)."
        }
        Code::BadRequest | Code::EmptyQuestions | Code::BadIntent => {
            "The arguments do not form a valid question. Fix what the message names and call \
             again."
        }
        Code::BadTimeout => {
            "The wait window is not a whole number of milliseconds from 1 to 2147483647. Fix \
             `wait.timeoutMs` (or leave it out to wait for the answer) and call again."
        }
        Code::DuplicateWait => {
            "That tool call already has a question with other content. Collect its answer with \
             get_answer (the id is the call's), or ask under a new call id."
        }
        Code::DuplicateId => {
            "That request id was already used for a different question. Call again without `id` \
             (a fresh one is generated) or with another id."
        }
        Code::NoProvider => {
            "No human reviewer is connected right now and this question needs one. Try again \
             later."
        }
        Code::AskCancelled => {
            "The human declined to answer (cancelled the question). Do not ask the same question \
             again; continue without it or explain why you need it."
        }
        Code::AskAborted => {
            "The question was withdrawn (aborted by the asker or its deadline passed); it has no \
             answer."
        }
        Code::AskExpired => {
            "Nobody answered before the question's ladder expired it; it has no answer. Decide \
             whether to continue without it or ask again later."
        }
        Code::NotFound => "No question with that id is visible here. Check the id.",
        Code::RequestFinal => "That question is already final; its outcome does not change.",
        Code::DuplicateProvider => {
            "Another reviewer holds this context now. Try again when they are done, or review \
             another context."
        }
        Code::Unauthorized | Code::Forbidden => {
            "This connection's token may not do that (check its role and context)."
        }
        Code::Usage => "This cannot be done here; the message says why.",
        _ => "dshq could not do this; the message says why. Retrying later may help.",
    }
}

/// A tool error for `e`, about request `id` when known.
pub fn tool_error(e: &UserQuestionError, id: Option<&str>) -> CallToolResult {
    let mut text = format!("Error {}: {}", e.code.as_str(), guidance(e.code));
    if let Some(id) = id {
        text.push_str(&format!("\nRequest id: {id}"));
    }
    text.push_str(&format!("\nDetails: {}", e.message));
    let structured = ToolError {
        status: ErrorStatus::Error,
        error: ErrorDetail {
            code: e.code.as_str().to_string(),
            message: e.message.clone(),
            guidance: guidance(e.code).to_string(),
        },
        id: id.map(str::to_string),
    };
    let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
    r.structured_content = Some(json!(structured));
    r
}

/// A tool error for a dshq error (a store or I/O failure is logged and shown without
/// its details, as on the HTTP API).
pub fn from_error(e: &Error, id: Option<&str>) -> CallToolResult {
    let user = match e.code() {
        Code::Store | Code::Io => {
            tracing::error!(error = %e, "MCP tool failed");
            UserQuestionError::new(e.code(), "dshq's store failed; see the server's log")
        }
        _ => e.to_user_error(),
    };
    tool_error(&user, id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delegated_caller_is_told_to_put_the_question_in_its_final_result() {
        let r = tool_error(
            &UserQuestionError::new(Code::DelegatedCaller, "agent x is owned by y"),
            None,
        );
        assert_eq!(r.is_error, Some(true));
        let text = r.content[0].as_text().map(|t| t.text.clone()).unwrap();
        assert!(text.starts_with("Error DELEGATED_CALLER:"), "{text}");
        assert!(text.contains("final result"), "{text}");
        let s = r.structured_content.unwrap();
        assert_eq!(s["status"], "error");
        assert_eq!(s["error"]["code"], "DELEGATED_CALLER");
        assert!(s["error"]["guidance"]
            .as_str()
            .unwrap()
            .contains("final result"));
    }
}
