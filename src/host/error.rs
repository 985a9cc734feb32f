//! HTTP errors: every failure is `{"error": {"code", "message"}}` with the protocol's
//! stable code and a status that says its class. A store or I/O failure is logged and
//! shown without its details (paths and database messages are for the operator's log,
//! not for a remote caller).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::Error;
use crate::protocol::{Code, UserQuestionError};

/// An error as the API returns it.
#[derive(Debug)]
pub struct ApiError(pub UserQuestionError);

/// The body of an error response.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// The error of an [`ErrorBody`].
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ErrorDetail {
    /// The stable code.
    pub code: Code,
    /// What went wrong, for a person.
    pub message: String,
}

impl ApiError {
    /// An error with `code` and `message`.
    pub fn new(code: Code, message: impl Into<String>) -> ApiError {
        ApiError(UserQuestionError::new(code, message))
    }

    /// The HTTP status of a code.
    pub fn status(code: Code) -> StatusCode {
        match code {
            Code::Unauthorized
            | Code::SlackBadSignature
            | Code::SlackStaleRequest
            | Code::TelegramBadSecret
            | Code::OidcNonce
            | Code::OidcIssuer
            | Code::OidcAudience
            | Code::OidcExpired
            | Code::OidcUnsigned
            | Code::OidcUnknownKey
            | Code::OidcBadSignature
            | Code::OidcCodeRejected
            | Code::JwtMalformed
            | Code::JwtUnsigned
            | Code::JwtIssuer
            | Code::JwtAudience
            | Code::JwtExpired
            | Code::JwtUnknownKey
            | Code::JwtBadSignature
            | Code::TeamsServiceUrl => StatusCode::UNAUTHORIZED,
            Code::Forbidden
            | Code::OwnRequest
            | Code::NotInGroup
            | Code::SlackUnknownUser
            | Code::TelegramUnknownUser
            | Code::OidcNotMapped
            | Code::NotDelegate
            | Code::TeamsUnknownUser => StatusCode::FORBIDDEN,
            Code::OidcState | Code::BadReturnUrl => StatusCode::BAD_REQUEST,
            Code::OidcProvider | Code::JwtKeys => StatusCode::BAD_GATEWAY,
            Code::AwayInPast | Code::AwaySelf | Code::AwayChain | Code::UnknownDelegate => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Code::NotAway => StatusCode::NOT_FOUND,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::BadRequest
            | Code::EmptyQuestions
            | Code::BadIntent
            | Code::BadAnswer
            | Code::BadReviewState
            | Code::EditNotAllowed
            | Code::BadTimeout
            | Code::Usage => StatusCode::BAD_REQUEST,
            Code::DuplicateId
            | Code::DuplicateWait
            | Code::CallerNotLive
            | Code::DelegatedCaller
            | Code::NoProvider
            | Code::AskAborted
            | Code::AskCancelled
            | Code::AskExpired
            | Code::DuplicateProvider
            | Code::LeaseExpired
            | Code::RequestFinal
            | Code::ClaimedElsewhere
            | Code::AlreadyVoted
            | Code::WrongContext
            | Code::RequestOpen => StatusCode::CONFLICT,
            Code::ReceiptInvalid | Code::ReceiptUntrustedKey | Code::ReceiptMismatch => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Code::LinkInvalid => StatusCode::BAD_REQUEST,
            Code::LinkExpired | Code::LinkUsed => StatusCode::GONE,
            Code::WaitTimeout => StatusCode::REQUEST_TIMEOUT,
            Code::NoDaemon => StatusCode::SERVICE_UNAVAILABLE,
            Code::AuditBroken
            | Code::DaemonRunning
            | Code::UnsafeRoot
            | Code::NoRoot
            | Code::Store
            | Code::Io => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let ue = e.to_user_error();
        if ApiError::status(ue.code).is_server_error() {
            tracing::error!(error = %crate::text::for_log(&e.to_string()), "HTTP call failed");
            return ApiError::new(ue.code, "the server failed; the operator's log says why");
        }
        ApiError(ue)
    }
}

impl From<UserQuestionError> for ApiError {
    fn from(e: UserQuestionError) -> ApiError {
        ApiError(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = ApiError::status(self.0.code);
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.0.code,
                message: self.0.message,
            },
        };
        let mut r = (status, axum::Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        r
    }
}

/// A handler's result.
pub type ApiResult<T> = std::result::Result<T, ApiError>;
