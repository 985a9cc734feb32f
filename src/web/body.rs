//! A request body read with a bound: at most [`super::Limits::max_body`] bytes (the size
//! limit of inbox files) within [`super::Limits::body_timeout`]. Over the limit is 413
//! `TOO_LARGE`, before the rest is read; a body that trickles in is cut off. Either way
//! nothing reaches a use-case.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use futures_util::StreamExt;

use super::error::ApiError;
use super::AppState;
use crate::protocol::Code;

/// A bounded body.
#[derive(Debug)]
pub struct Body(pub Bytes);

impl FromRequest<AppState> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let limit = state.limits.max_body;
        let too_large = || {
            ApiError::new(
                Code::TooLarge,
                format!("the body is over the limit of {limit} bytes"),
            )
        };
        let declared = req
            .headers()
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit) {
            return Err(too_large());
        }
        let mut stream = req.into_body().into_data_stream();
        let read = async {
            let mut buf: Vec<u8> = Vec::new();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| {
                    ApiError::new(Code::BadRequest, format!("cannot read the body: {e}"))
                })?;
                if buf.len() as u64 + chunk.len() as u64 > limit {
                    return Err(too_large());
                }
                buf.extend_from_slice(&chunk);
            }
            Ok(Bytes::from(buf))
        };
        match tokio::time::timeout(state.limits.body_timeout, read).await {
            Ok(r) => r.map(Body),
            Err(_) => Err(ApiError::new(
                Code::BadRequest,
                "the body did not arrive in time",
            )),
        }
    }
}
