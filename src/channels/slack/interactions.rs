//! The Slack interactions endpoint: `POST /slack/interactions`, the Request URL
//! of the Slack app's Interactivity settings. Slack posts a form with one field, `payload`
//! (JSON), each time someone presses a button of a dshq message.
//!
//! A press answers only when every check passes, in this order:
//! 1. the request is Slack's: its `X-Slack-Signature` matches the raw body and its
//!    timestamp, with the app's signing secret (the root's `slack-signing-secret`, or
//!    `--slack-signing-secret-file`; mode 0600), and the timestamp is within five minutes
//!    of the store's clock ([`crate::channels::slack::signature`]). Otherwise 401
//!    (`SLACK_BAD_SIGNATURE`, `SLACK_STALE_REQUEST`) and nothing else is read;
//! 2. it is a press of a dshq button (`block_actions`, our `action_id`; else 400
//!    `BAD_REQUEST`);
//! 3. the Slack user is a reviewer: the config file's `[slack.users]` names them
//!    (else `SLACK_UNKNOWN_USER`);
//! 4. the press comes from a message dshq posted for the request its button names (its
//!    channel and `ts` are one of the request's recorded messages; else `FORBIDDEN`: a
//!    forged value, which the signing secret alone could otherwise make for any request);
//! 5. the request is still open (else `REQUEST_FINAL`, saying who answered and when);
//! 6. the message's channel is the Slack channel of the context the request is in now
//!    (else `WRONG_CONTEXT`: an escalation moved it to another context, whose reviewers
//!    answer it from its own message there, or to a context that posts to no channel).
//!
//! Then the answer is recorded through the same use-case and the same host lease as the
//! page's ([`crate::app::provide::answer`], [`crate::host::provider::Providers`]), as
//! `slack:REVIEWER@SLACKUSER`, so the event log shows both the reviewer and the Slack
//! account. The message itself is changed by the answered event's delivery (the sender's
//! `chat.update`, [`crate::channels::slack`]): durable and retried like every delivery.
//!
//! What Slack expects back: a 200 within three seconds for every press it should not
//! retry. A refusal the presser should see (an unknown user, a request already over, an
//! answer the queue refused) is a 200 whose body is an ephemeral message
//! (`response_type: ephemeral`, `replace_original: false`, with the dsh error document
//! beside it), and the same text is posted to the presser alone with
//! `chat.postEphemeral`, since Slack shows no body of a button's acknowledgement. A
//! request that is not Slack's gets 401. Every refusal is logged with its code, the Slack
//! user id and the request id, never the body, the signature or a secret.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use serde_json::json;

use crate::app;
use crate::channels::slack::interaction::{self, Press};
use crate::channels::slack::signature::{Refusal, SigningSecret};
use crate::channels::slack::{Api, Slack, SIGNING_SECRET_FILE};
use crate::core::audit::Actor;
use crate::error::{Error, Result};
use crate::host::body::Body;
use crate::host::provider::Act;
use crate::host::AppState;
use crate::protocol::Code;
use crate::store::RequestRow;

/// The endpoint's path.
pub const PATH: &str = "/slack/interactions";

/// What the endpoint knows: the signing secret, who the Slack users are, and the Web API
/// (to tell a presser why a press was refused).
pub struct Interactions {
    secret: SigningSecret,
    users: BTreeMap<String, String>,
    /// Context → its Slack channel (`--slack`).
    channels: BTreeMap<String, String>,
    api: Arc<Api>,
}

/// The endpoint's routes when the daemon has a Slack channel (none otherwise): the
/// signing secret and the bot token are read now, so a daemon missing either does not
/// start.
pub fn routes(state: &AppState, slack: &Slack) -> Result<Router> {
    let root = &state.root;
    let file = slack
        .signing_secret_file
        .clone()
        .unwrap_or_else(|| root.dir().join(SIGNING_SECRET_FILE));
    let secret = SigningSecret::parse(&crate::channels::slack::read_secret_file(
        &file,
        crate::channels::slack::SIGNING_SECRET_WHAT,
    )?)
    .ok_or_else(|| Error::Usage("the Slack signing secret is empty".into()))?;
    let inter = Arc::new(Interactions {
        secret,
        users: slack.users.clone(),
        channels: slack.channels.clone(),
        api: Arc::new(Api::new(root, slack)?),
    });
    Ok(Router::new()
        .route(PATH, post(interact))
        .layer(Extension(inter))
        .with_state(state.clone()))
}

/// A refusal Slack gets: its status, and for a 200 the ephemeral message.
fn refuse(status: StatusCode, code: Code, message: String) -> Response {
    let error = json!({"code": code.as_str(), "message": message});
    if status == StatusCode::OK {
        (
            status,
            Json(json!({
                "response_type": "ephemeral",
                "replace_original": false,
                "text": message,
                "error": error,
            })),
        )
            .into_response()
    } else {
        (status, Json(json!({"error": error}))).into_response()
    }
}

/// Tell the presser alone, in the message's channel, without holding the acknowledgement.
fn tell(inter: &Arc<Interactions>, press: &Press, text: String) {
    let Some(channel) = press.channel.clone() else {
        return;
    };
    let (inter, user) = (inter.clone(), press.user.clone());
    tokio::spawn(async move {
        let body = json!({"channel": channel, "user": user, "text": text});
        if let Err(e) = inter.api.call("chat.postEphemeral", &body).await {
            tracing::warn!(user = %crate::text::for_log(&user), error = %e, "slack: cannot tell the presser why");
        }
    });
}

/// A refusal shown to the presser: logged, told ephemerally, answered 200.
fn refuse_shown(inter: &Arc<Interactions>, press: &Press, code: Code, message: String) -> Response {
    tracing::warn!(
        code = code.as_str(),
        user = %crate::text::for_log(&press.user),
        id = %crate::text::for_log(&press.value.request),
        "slack: press refused"
    );
    let text = crate::channels::slack::mrkdwn::escape(&message);
    tell(inter, press, text.clone());
    refuse(StatusCode::OK, code, text)
}

/// `POST /slack/interactions`: a press answers once it passes every check (the module's
/// list), in that order.
pub async fn interact(
    State(st): State<AppState>,
    Extension(inter): Extension<Arc<Interactions>>,
    headers: HeaderMap,
    Body(body): Body,
) -> Response {
    let press = match verified_press(&st, &inter, &headers, &body).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let (row, reviewer) = match acts_on(&st, &inter, &press).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    answer(&st, &inter, &press, &row, &reviewer).await
}

/// Checks 1 and 2: the request is Slack's (signed, recent) and a press of a dshq button.
async fn verified_press(
    st: &AppState,
    inter: &Interactions,
    headers: &HeaderMap,
    body: &[u8],
) -> std::result::Result<Press, Response> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let now_ms = st.db.read(|store| store.clock_now()).await.map_err(|e| {
        tracing::error!(error = %e, "slack: cannot read the store's clock");
        refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            Code::Store,
            "the store cannot be read".into(),
        )
    })?;
    if let Err(r) = inter.secret.verify(
        header("x-slack-request-timestamp"),
        header("x-slack-signature"),
        body,
        now_ms.div_euclid(1000),
    ) {
        let code = match r {
            Refusal::Stale(_) => Code::SlackStaleRequest,
            Refusal::Malformed(_) | Refusal::Mismatch => Code::SlackBadSignature,
        };
        tracing::warn!(code = code.as_str(), why = %r, "slack: request refused");
        return Err(refuse(StatusCode::UNAUTHORIZED, code, r.to_string()));
    }
    interaction::parse(body).map_err(|e| {
        tracing::warn!(code = Code::BadRequest.as_str(), why = %e, "slack: not a press of a dshq button");
        refuse(StatusCode::BAD_REQUEST, Code::BadRequest, e.to_string())
    })
}

/// Checks 3 to 6: the presser is a reviewer, the press comes from a message dshq posted
/// for its request, which is still open and still in the context whose channel the
/// message is in. The request as it is now, and the reviewer.
async fn acts_on(
    st: &AppState,
    inter: &Arc<Interactions>,
    press: &Press,
) -> std::result::Result<(RequestRow, String), Response> {
    let Some(reviewer) = inter.users.get(&press.user).cloned() else {
        let message = format!(
            "Your Slack account ({}) is not one of this dshq's reviewers: nothing was recorded. An operator adds it under [slack.users] in dshq's config file.",
            press.user
        );
        return Err(refuse_shown(inter, press, Code::SlackUnknownUser, message));
    };
    let id = press.value.request.clone();
    // The request as it is now: its context (whose host lease answers), and how it
    // ended if it is over (then the presser is told who ended it and when, and nothing
    // changes).
    let id2 = id.clone();
    let now = st
        .db
        .read(move |store| {
            let Some(row) = store.get(&id2)? else {
                return Ok(None);
            };
            let end = super::end_of(store, &row)?;
            let messages = store.slack_messages(&id2)?;
            Ok(Some((row, end, messages)))
        })
        .await;
    let (row, end, messages) = match now {
        Ok(None) => {
            let message = format!(
                "Request {id} is not in this dshq (pruned, or never here): nothing was recorded."
            );
            return Err(refuse_shown(inter, press, Code::NotFound, message));
        }
        Ok(Some(now)) => now,
        Err(e) => return Err(refuse_shown(inter, press, e.code(), e.to_string())),
    };
    // The press acts only on what its message was posted for, where the request is now.
    let posted = messages.iter().map(|m| (m.channel.as_str(), m.ts.as_str()));
    if let Err(m) = interaction::from_its_message(press, posted) {
        return Err(refuse_shown(inter, press, m.code(), m.to_string()));
    }
    if let Some(end) = end {
        let message = already_over(&id, &end);
        return Err(refuse_shown(inter, press, Code::RequestFinal, message));
    }
    let channel = inter.channels.get(&row.context).map(String::as_str);
    if let Err(m) = interaction::where_it_is(press, &row.context, channel) {
        return Err(refuse_shown(inter, press, m.code(), m.to_string()));
    }
    Ok((row, reviewer))
}

/// Record the press's answer through the same use-case and host lease as the page's.
async fn answer(
    st: &AppState,
    inter: &Arc<Interactions>,
    press: &Press,
    row: &RequestRow,
    reviewer: &str,
) -> Response {
    let id = press.value.request.clone();
    let actor = Actor::Slack {
        reviewer: reviewer.to_string(),
        user: press.user.clone(),
    };
    let (root, id2, answer) = (st.root.clone(), id.clone(), press.value.answer());
    let r = st
        .providers
        .act(row, actor, Act::Answer, move |store, acting| {
            app::provide::answer(store, Some(&root), &id2, acting, &answer)
        })
        .await;
    let user = crate::text::for_log(&press.user);
    match r {
        Err(Error::RequestFinal { .. }) => {
            // Someone else answered between the check and the write.
            let id2 = id.clone();
            let end = st
                .db
                .read(move |store| match store.get(&id2)? {
                    Some(row) => super::end_of(store, &row),
                    None => Ok(None),
                })
                .await;
            let message = match end {
                Ok(Some(end)) => already_over(&id, &end),
                _ => format!("Request {id} is already over: nothing was recorded."),
            };
            refuse_shown(inter, press, Code::RequestFinal, message)
        }
        Err(e) => refuse_shown(inter, press, e.code(), e.to_string()),
        Ok(app::provide::Answering::Voted(_)) => {
            tracing::info!(id = %crate::text::for_log(&id), reviewer = %reviewer, user = %user, "voted from Slack");
            let text =
                format!("Your vote on {id} is recorded; the request waits for more approvals.");
            tell(inter, press, super::mrkdwn::escape(&text));
            StatusCode::OK.into_response()
        }
        Ok(app::provide::Answering::Finished(_)) => {
            tracing::info!(id = %crate::text::for_log(&id), reviewer = %reviewer, user = %user, "answered from Slack");
            StatusCode::OK.into_response()
        }
    }
}

/// What a press on a request that is over is told.
fn already_over(id: &str, end: &crate::channels::slack::blocks::Ended) -> String {
    use crate::channels::slack::blocks::How;
    let at = crate::clock::rfc3339(end.at_ms);
    let by = end
        .by
        .as_deref()
        .map(|b| match Actor::parse(b) {
            Some(Actor::Slack { reviewer, user }) => format!(" by {reviewer} ({user} on Slack)"),
            _ => format!(" by {b}"),
        })
        .unwrap_or_default();
    let what = match end.how {
        How::Answered(_) => "was already answered",
        How::Expired { .. } | How::Deadline => "already expired",
        How::Cancelled => "was cancelled",
        How::Aborted => "was withdrawn by its asker",
    };
    format!("Request {id} {what}{by} at {at}: your press changed nothing.")
}
