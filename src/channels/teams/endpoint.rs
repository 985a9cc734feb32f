//! The bot's messaging endpoint: `POST /teams/messages`, the endpoint of the Azure Bot
//! resource. The Bot Framework posts an activity (JSON) for everything that happens to the
//! bot; dshq acts on one kind: the `adaptiveCard/action` invoke an `Action.Execute` of
//! one of its cards sends, and answers 200 with nothing to every other activity (the bot
//! was added to a conversation, someone wrote to it).
//!
//! An action answers only when every check passes, in this order:
//! 1. the call is the Bot Framework's: its `Authorization: Bearer` JWT verifies against
//!    the keys of the Bot Framework's OpenID metadata ([`crate::host::jwks`]: RS256, the
//!    issuer `https://api.botframework.com`, the audience the bot's app id, current), else
//!    401 with the token's code (`JWT_*`); and its `serviceUrl` claim is the activity's
//!    `serviceUrl`, else 401 `TEAMS_SERVICE_URL`. Nothing else is read before;
//! 2. it is an action of a dshq card (our verb, our data; else `BAD_REQUEST`);
//! 3. the Teams user is a person: `[people]` lists their `teams:OBJECTID`
//!    (else `TEAMS_UNKNOWN_USER`);
//! 4. the action comes from a card dshq sent for the request it names (its conversation
//!    and activity id are recorded for the request), showing the request as it is stored
//!    (its digest; else `FORBIDDEN`);
//! 5. the request is still open (else `REQUEST_FINAL`);
//! 6. the card's conversation is the one of the context the request is in now (else
//!    `WRONG_CONTEXT`: an escalation moved it on).
//!
//! Then the answer is recorded through the same use-case and host lease as the page's
//! ([`crate::host::provider::Providers::act`]), as `teams:PERSON@OBJECTID`, and the invoke
//! is answered with the ended card (Teams puts it in place of the pressed one); the
//! answered event's delivery then updates every card sent for the request. A refusal of
//! steps 2 to 6 is an invoke answer Teams shows to the presser
//! (`application/vnd.microsoft.error`, with the code and the message), and nothing changes.
//! Every refusal is logged with its code, never the token or the body.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{extract::State, Extension, Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::Teams;
use crate::app;
use crate::core::audit::Actor;
use crate::core::people::{Face, Identity};
use crate::core::teams::{ActionData, ISSUER, VERB};
use crate::error::{Error, Result};
use crate::host::body::Body;
use crate::host::error::ApiError;
use crate::host::jwks::{Settings, Verifier};
use crate::host::provider::Act;
use crate::host::AppState;
use crate::protocol::Code;
use crate::store::RequestRow;

/// The endpoint's path.
pub const PATH: &str = "/teams/messages";

/// What the endpoint knows: the Bot Framework's verifier and the channel's settings.
pub struct Endpoint {
    verifier: Verifier,
    teams: Teams,
}

/// The endpoint's routes (the verifier is built now; the keys are fetched at the first
/// call).
pub fn routes(state: &AppState, teams: &Teams) -> Result<Router> {
    let s = &teams.settings;
    let mut settings = Settings::new(
        "the Bot Framework",
        s.openid_metadata.clone(),
        vec![ISSUER.to_string()],
        vec![s.app_id.clone()],
    );
    // The Bot Framework's own SDKs allow five minutes of clock difference.
    settings.leeway = std::time::Duration::from_secs(300);
    settings.timeout = s.timeout;
    let endpoint = Arc::new(Endpoint {
        verifier: Verifier::new(settings)?,
        teams: teams.clone(),
    });
    Ok(Router::new()
        .route(PATH, post(activity))
        .layer(Extension(endpoint))
        .with_state(state.clone()))
}

/// The token's claims the endpoint reads beyond the verifier's.
#[derive(Deserialize)]
struct Claims {
    #[serde(rename = "serviceUrl")]
    service_url: Option<String>,
}

/// The parts of an activity the endpoint reads.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Activity {
    #[serde(rename = "type")]
    kind: String,
    name: Option<String>,
    #[serde(rename = "serviceUrl")]
    service_url: Option<String>,
    from: Option<From>,
    conversation: Option<Conversation>,
    #[serde(rename = "replyToId")]
    reply_to_id: Option<String>,
    value: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct From {
    #[serde(rename = "aadObjectId")]
    aad_object_id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Conversation {
    id: String,
}

/// An HTTP refusal (the call is not the Bot Framework's): the error document.
fn unauthorized(code: Code, message: String) -> Response {
    tracing::warn!(code = code.as_str(), why = %crate::text::for_log(&message), "teams: call refused");
    ApiError::new(code, message).into_response()
}

/// An invoke refusal Teams shows to the presser: logged, nothing changed.
fn refuse(code: Code, message: String, id: &str) -> Response {
    tracing::warn!(code = code.as_str(), id = %crate::text::for_log(id), "teams: action refused");
    let status = ApiError::status(code).as_u16();
    (
        StatusCode::OK,
        Json(json!({
            "statusCode": status,
            "type": "application/vnd.microsoft.error",
            "value": {"code": code.as_str(), "message": message},
        })),
    )
        .into_response()
}

/// `POST /teams/messages`.
pub async fn activity(
    State(st): State<AppState>,
    Extension(ep): Extension<Arc<Endpoint>>,
    headers: HeaderMap,
    Body(body): Body,
) -> Response {
    let Some(token) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return unauthorized(
            Code::Unauthorized,
            "a Bot Framework token (Authorization: Bearer) is required".into(),
        );
    };
    let claims: Claims = match ep.verifier.verify(token.trim()).await {
        Ok(c) => c,
        Err(r) => return unauthorized(r.code(), r.to_string()),
    };
    let act: Activity = match serde_json::from_slice(&body) {
        Ok(a) => a,
        Err(e) => {
            return ApiError::new(Code::BadRequest, format!("the activity is not JSON: {e}"))
                .into_response()
        }
    };
    if claims.service_url.is_none() || claims.service_url != act.service_url {
        return unauthorized(
            Code::TeamsServiceUrl,
            "the token's serviceUrl is not the activity's".into(),
        );
    }
    if act.kind != "invoke" || act.name.as_deref() != Some("adaptiveCard/action") {
        return StatusCode::OK.into_response();
    }
    let action = &act.value.clone().unwrap_or(Value::Null)["action"];
    let data = (action["type"] == "Action.Execute" && action["verb"] == VERB)
        .then(|| serde_json::from_value::<ActionData>(action["data"].clone()).ok())
        .flatten();
    let Some(data) = data else {
        return refuse(
            Code::BadRequest,
            "this action is not one of dshq's".into(),
            "",
        );
    };
    match acts_on(&st, &ep, &act, &data).await {
        Ok((row, person, user)) => answer(&st, &ep, &data, &row, person, user).await,
        Err((code, message)) => refuse(code, message, &data.request),
    }
}

/// Checks 3 to 6: the request as it is now, the person and their object id.
async fn acts_on(
    st: &AppState,
    ep: &Endpoint,
    act: &Activity,
    data: &ActionData,
) -> std::result::Result<(RequestRow, String, String), (Code, String)> {
    let user = act
        .from
        .as_ref()
        .and_then(|f| f.aad_object_id.clone())
        .unwrap_or_default();
    let person = crate::core::people::is_aad_object_id(&user)
        .then(|| st.root.people().listed(&Identity::new(Face::Teams, &user)))
        .flatten()
        .map(str::to_string);
    let Some(person) = person else {
        return Err((
            Code::TeamsUnknownUser,
            format!(
                "Your Teams account ({}) is not one of this dshq's reviewers: nothing was recorded. An operator lists teams:OBJECTID under your name in [people].",
                crate::text::for_log(&user)
            ),
        ));
    };
    let id = data.request.clone();
    let now = st
        .db
        .read(move |store| {
            let Some(row) = store.get(&id)? else {
                return Ok(None);
            };
            let end = crate::channels::slack::end_of(store, &row)?;
            let cards = super::cards(&store.slack_messages(&id)?);
            Ok(Some((row, end, cards)))
        })
        .await
        .map_err(|e| (e.code(), e.to_string()))?;
    let Some((row, end, cards)) = now else {
        return Err((
            Code::NotFound,
            format!(
                "Request {} is not in this dshq: nothing was recorded.",
                data.request
            ),
        ));
    };
    let conversation = act
        .conversation
        .as_ref()
        .map(|c| c.id.as_str())
        .unwrap_or("");
    let activity = act.reply_to_id.as_deref().unwrap_or("");
    let sent = cards.iter().map(|(c, a)| (c.as_str(), a.as_str()));
    let digest = row.request_digest();
    let context_conversation = ep.teams.conversation(&row.context);
    // Its card first: a forged action learns nothing of the request.
    if let Err(m) = crate::core::teams::check_action(
        data,
        conversation,
        activity,
        sent.clone(),
        digest.as_deref(),
        &row.context,
        context_conversation,
    )
    .or_else(|m| match (&m, &end) {
        // A request that ended is told as such, whatever its context is now.
        (crate::core::teams::Misdirected::Moved { .. }, Some(_)) => Ok(()),
        _ => Err(m),
    }) {
        return Err((m.code(), m.to_string()));
    }
    if let Some(end) = end {
        let at = crate::clock::rfc3339(end.at_ms);
        return Err((
            Code::RequestFinal,
            format!(
                "Request {} is already over (since {at}): your press changed nothing.",
                data.request
            ),
        ));
    }
    Ok((row, person, user))
}

/// Record the answer, and answer the invoke with the ended card.
async fn answer(
    st: &AppState,
    ep: &Endpoint,
    data: &ActionData,
    row: &RequestRow,
    person: String,
    user: String,
) -> Response {
    let actor = Actor::Teams {
        person: person.clone(),
        user,
    };
    let (root, id, answer) = (st.root.clone(), data.request.clone(), data.answer());
    let r = st
        .providers
        .act(row, actor, Act::Answer, move |store, acting| {
            app::provide::answer(store, Some(&root), &id, acting, &answer)
        })
        .await;
    match r {
        Err(e @ Error::RequestFinal { .. }) => {
            refuse(Code::RequestFinal, e.to_string(), &data.request)
        }
        Err(e) => refuse(e.code(), e.to_string(), &data.request),
        Ok(app::provide::Answering::Voted(_)) => {
            tracing::info!(id = %crate::text::for_log(&data.request), person = %person, "voted from Teams");
            (
                StatusCode::OK,
                Json(json!({
                    "statusCode": 200,
                    "type": "application/vnd.microsoft.activity.message",
                    "value": format!("Your vote on {} is recorded; the request waits for more approvals.", data.request),
                })),
            )
                .into_response()
        }
        Ok(app::provide::Answering::Finished(_)) => {
            tracing::info!(id = %crate::text::for_log(&data.request), person = %person, "answered from Teams");
            let id = data.request.clone();
            let now = st
                .db
                .read(move |store| match store.get(&id)? {
                    Some(row) => Ok(crate::channels::slack::end_of(store, &row)?.map(|e| (row, e))),
                    None => Ok(None),
                })
                .await;
            let card = match now {
                Ok(Some((row, end))) => super::render(
                    &ep.teams,
                    &data.request,
                    &row,
                    &crate::channels::slack::blocks::Call::New,
                    Some(&end),
                )
                .ok()
                .and_then(|a| a["attachments"][0]["content"].clone().into()),
                _ => None,
            };
            match card {
                Some(card) => (
                    StatusCode::OK,
                    Json(json!({
                        "statusCode": 200,
                        "type": "application/vnd.microsoft.card.adaptive",
                        "value": card,
                    })),
                )
                    .into_response(),
                None => StatusCode::OK.into_response(),
            }
        }
    }
}
