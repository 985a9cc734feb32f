//! A request body read with a bound: at most [`super::Limits::max_body`] bytes (the size
//! limit of inbox files) within [`super::Limits::body_timeout`]. Over the limit is 413
//! `TOO_LARGE`, before the rest is used; a body that trickles in is cut off. Either way
//! nothing reaches a use-case.
//!
//! Before a 413 the rest of the body is read and dropped, up to [`DRAIN_MAX`] bytes and
//! [`DRAIN_TIME`] (a lingering close, as nginx does): a server that answers and closes
//! while the client is still sending resets the connection, and the client sees a broken
//! pipe instead of the `TOO_LARGE` it should read (seen in CI on a 20 KB form). A body
//! larger than that is cut off all the same.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use futures_util::StreamExt;

use super::error::ApiError;
use super::AppState;
use crate::protocol::Code;

/// The most of an oversize body read (and dropped) before its 413 is sent.
pub const DRAIN_MAX: u64 = 8 << 20;

/// The longest an oversize body is read (and dropped) before its 413 is sent.
pub const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// Read and drop what is left of a refused body, within [`DRAIN_MAX`] and [`DRAIN_TIME`].
async fn drain(mut stream: axum::body::BodyDataStream) {
    let mut left = DRAIN_MAX;
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        while let Some(Ok(chunk)) = stream.next().await {
            match left.checked_sub(chunk.len() as u64) {
                Some(l) => left = l,
                None => return,
            }
        }
    })
    .await;
}

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
        let mut stream = req.into_body().into_data_stream();
        if declared.is_some_and(|n| n > limit) {
            if declared.is_some_and(|n| n <= DRAIN_MAX) {
                drain(stream).await;
            }
            return Err(too_large());
        }
        let read = async {
            let mut buf: Vec<u8> = Vec::new();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| {
                    ApiError::new(Code::BadRequest, format!("cannot read the body: {e}"))
                })?;
                if buf.len() as u64 + chunk.len() as u64 > limit {
                    return Ok(None);
                }
                buf.extend_from_slice(&chunk);
            }
            Ok(Some(Bytes::from(buf)))
        };
        let read = tokio::time::timeout(state.limits.body_timeout, read).await;
        match read {
            Ok(Ok(Some(b))) => Ok(Body(b)),
            Ok(Ok(None)) => {
                drain(stream).await;
                Err(too_large())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ApiError::new(
                Code::BadRequest,
                "the body did not arrive in time",
            )),
        }
    }
}
