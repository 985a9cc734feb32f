//! `/api/v1/away`: a reviewer's away notice over HTTP ([`crate::app::delegation`]).
//!
//! - `GET`: the notices that hold now (any caller who may read the record or answer).
//! - `PUT` with `{"until": RFC3339, "delegate": PERSON}`: set the caller's own notice.
//! - `DELETE`: cancel the caller's own notice (`NOT_AWAY` when none holds).
//!
//! A caller sets and cancels only their own (the person their identity belongs to), and
//! only with a role that answers: what a reviewer hands over is their answering. Setting
//! someone else's is the operator's, from the CLI (`dshq away --as PERSON`).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::app;
use crate::clock::rfc3339;
use crate::core::access::Action;
use crate::core::delegation::Away;
use crate::error::Error;
use crate::host::auth::Caller;
use crate::host::body::Body;
use crate::host::error::{ApiError, ApiResult};
use crate::host::AppState;
use crate::protocol::Code;

/// The body of `PUT /api/v1/away`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetBody {
    /// When the notice ends (RFC 3339, in the future).
    until: String,
    /// Who answers meanwhile: a reviewer (a person of the people directory, or of a
    /// reviewer's web token).
    delegate: String,
}

/// One away notice on the wire.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AwayView {
    /// The person who is away.
    pub person: String,
    /// The person who answers for them meanwhile.
    pub delegate: String,
    /// When it ends (RFC 3339).
    pub until: String,
    /// When it was set (RFC 3339).
    pub set_at: String,
    /// Who set it (`web:NAME`, `oidc:PERSON@SUBJECT`, `cli`).
    pub set_by: String,
}

impl From<Away> for AwayView {
    fn from(a: Away) -> AwayView {
        AwayView {
            until: rfc3339(a.until_ms),
            set_at: rfc3339(a.set_ms),
            person: a.person,
            delegate: a.delegate,
            set_by: a.set_by,
        }
    }
}

/// The person the caller is: the people directory's answer for their identity.
fn person_of(store: &crate::store::Store, caller: &Caller) -> crate::error::Result<String> {
    store
        .people()
        .of_actor(&caller.actor())
        .map(|(_, p)| p)
        .ok_or(Error::Forbidden)
}

/// `GET /api/v1/away`: the notices that hold now.
pub async fn list(State(st): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<AwayView>>> {
    if caller.require(Action::Answer).is_err() {
        caller.require(Action::Audit)?;
    }
    let list = st.db.read(app::delegation::holding).await?;
    Ok(Json(list.into_iter().map(AwayView::from).collect()))
}

/// `PUT /api/v1/away`: set the caller's own notice.
pub async fn set(
    State(st): State<AppState>,
    caller: Caller,
    Body(bytes): Body,
) -> ApiResult<Json<AwayView>> {
    caller.require(Action::Answer)?;
    let b: SetBody = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            Code::BadRequest,
            format!("the body must be {{\"until\": RFC3339, \"delegate\": PERSON}}: {e}"),
        )
    })?;
    let until_ms = b
        .until
        .parse::<jiff::Timestamp>()
        .map_err(|e| {
            ApiError::new(
                Code::BadRequest,
                format!("\"until\" is no RFC 3339 time: {e}"),
            )
        })?
        .as_millisecond();
    let actor = caller.actor();
    let done = st
        .db
        .write(move |store| {
            let person = person_of(store, &caller)?;
            app::delegation::set(store, &person, &b.delegate, until_ms, &actor)
        })
        .await?;
    Ok(Json(done.into()))
}

/// `DELETE /api/v1/away`: cancel the caller's own notice.
pub async fn cancel(State(st): State<AppState>, caller: Caller) -> ApiResult<Json<AwayView>> {
    caller.require(Action::Answer)?;
    let actor = caller.actor();
    let done = st
        .db
        .write(move |store| {
            let person = person_of(store, &caller)?;
            app::delegation::cancel(store, &person, &actor)
        })
        .await?;
    Ok(Json(done.into()))
}
