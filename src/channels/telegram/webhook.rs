//! The Telegram webhook: `POST /telegram/webhook`, the URL given to the Bot API's
//! `setWebhook` (with its `secret_token`). Telegram posts an Update object (JSON) for each
//! event the bot may see; dshq acts on one kind, `callback_query`: someone pressed a
//! button of a dshq message.
//!
//! A press answers only when every check passes, in this order:
//! 1. the update is Telegram's: its `X-Telegram-Bot-Api-Secret-Token` header is the
//!    secret token given to `setWebhook` (the table's `secret-token-file`, else the root's
//!    `telegram-secret-token`; mode 0600), compared in constant time. Otherwise 401
//!    (`TELEGRAM_BAD_SECRET`) and nothing else is read;
//! 2. it is an Update (JSON; else 400 `BAD_REQUEST`); one that is not a `callback_query`
//!    is acknowledged and ignored;
//! 3. the presser is a person: the config file's `[people]` lists `telegram:USERID` for
//!    them (else `TELEGRAM_UNKNOWN_USER`; being in the chat is not being a reviewer);
//! 4. the button is one dshq wrote ([`crate::core::telegram::ButtonRef`]) on the message
//!    it names: the delivery's message recorded in that chat has that message id (else
//!    `FORBIDDEN`: a forged or copied `callback_data`), and the request is still the one
//!    it showed (its digest then and now; else `FORBIDDEN`, and `NOT_FOUND` when it is
//!    gone);
//! 5. the request is still open (else `REQUEST_FINAL`, saying how it ended and when);
//! 6. the chat is one of the chats of the context the request is in now (else
//!    `WRONG_CONTEXT`: an escalation moved it on, whose reviewers answer from their own
//!    message);
//! 7. the button's position names one of the request's [`crate::core::telegram::choices`]
//!    (else `FORBIDDEN`).
//!
//! Then the answer is recorded through the same use-case and the same host lease as the
//! page's ([`crate::app::provide::answer`], [`crate::host::provider::Providers::act`]), as
//! `telegram:PERSON@USERID`. The message itself is edited by the answered event's
//! delivery (the sender's `editMessageText`), durable and retried like every delivery.
//!
//! What Telegram gets back: 401 for an update that is not Telegram's, 400 for a body that
//! is no Update, and 200 for every update it sent (a refusal is not Telegram's to retry),
//! with the dsh error document of a refusal in the body. The presser is told the result
//! with `answerCallbackQuery` (a short text, an alert for a refusal), sent beside the
//! acknowledgement. Every refusal is logged with its code, the user id and the request,
//! never the body, the secret or the token.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{Api, Telegram, SECRET_TOKEN_FILE, SECRET_TOKEN_WHAT};
use crate::app;
use crate::core::audit::Actor;
use crate::core::people::{Face, Identity};
use crate::core::telegram::{choices, ButtonRef};
use crate::error::{Error, Result};
use crate::host::body::Body;
use crate::host::provider::Act;
use crate::host::AppState;
use crate::protocol::Code;
use crate::store::RequestRow;

/// The webhook's path.
pub const PATH: &str = "/telegram/webhook";

/// The header Telegram sends the secret token in.
const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// The webhook's secret token, kept as its SHA-256 so that a comparison takes the same
/// time whatever is presented (its length included).
struct SecretToken([u8; 32]);

impl SecretToken {
    /// The token as `setWebhook` takes it: 1 to 256 of `A-Z a-z 0-9 _ -`.
    fn parse(s: &str) -> Option<SecretToken> {
        let ok = (1..=256).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        ok.then(|| SecretToken(Sha256::digest(s.as_bytes()).into()))
    }

    fn matches(&self, given: Option<&[u8]>) -> bool {
        let given: [u8; 32] = Sha256::digest(given.unwrap_or_default()).into();
        bool::from(self.0.ct_eq(&given))
    }
}

/// What the webhook knows: the secret token, the channel, the Bot API.
struct Hook {
    secret: SecretToken,
    telegram: Telegram,
    api: Arc<Api>,
}

/// The webhook's route when the daemon has a Telegram channel: the secret token and the
/// bot token are read now, so a daemon missing either does not start.
pub fn routes(state: &AppState, telegram: &Telegram) -> Result<Router> {
    let root = &state.root;
    let file = telegram
        .settings
        .secret_token_file
        .clone()
        .unwrap_or_else(|| root.dir().join(SECRET_TOKEN_FILE));
    let text = crate::channels::slack::read_secret_file(&file, SECRET_TOKEN_WHAT)?;
    let secret = SecretToken::parse(&text).ok_or_else(|| {
        Error::Usage(format!(
            "{} does not hold a webhook secret token: 1 to 256 of A-Z, a-z, 0-9, _ and - (as setWebhook takes it)",
            crate::text::path_for_log(&file)
        ))
    })?;
    let hook = Arc::new(Hook {
        secret,
        telegram: telegram.clone(),
        api: Arc::new(Api::new(root, telegram)?),
    });
    Ok(Router::new()
        .route(PATH, post(update))
        .layer(Extension(hook))
        .with_state(state.clone()))
}

/// One press of a button, as the update names it.
#[derive(Debug, Clone)]
struct Press {
    /// The callback query's id (`answerCallbackQuery` names it).
    query: String,
    /// The Telegram user who pressed.
    user: String,
    /// The chat and the id of the message the button is on (none for a message sent
    /// through inline mode, which dshq never sends).
    message: Option<(i64, i64)>,
    /// The button's `callback_data`.
    data: String,
}

/// The press of a `callback_query` object.
fn press_of(q: &Value) -> Option<Press> {
    let user = q["from"]["id"].as_u64()?.to_string();
    Some(Press {
        query: q["id"].as_str()?.to_string(),
        user,
        message: q["message"]["chat"]["id"]
            .as_i64()
            .zip(q["message"]["message_id"].as_i64()),
        data: q["data"].as_str().unwrap_or_default().to_string(),
    })
}

/// A refusal: its status and the dsh error document.
fn refuse(status: StatusCode, code: Code, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"code": code.as_str(), "message": message}})),
    )
        .into_response()
}

/// Tell the presser `text` with `answerCallbackQuery` (an alert when `alert`), without
/// holding the acknowledgement.
fn tell(hook: &Arc<Hook>, press: &Press, text: &str, alert: bool) {
    // Telegram shows at most 200 characters.
    let text: String = text.chars().take(200).collect();
    let body = json!({"callback_query_id": press.query, "text": text, "show_alert": alert});
    let (hook, user) = (hook.clone(), press.user.clone());
    tokio::spawn(async move {
        if let Err(e) = hook.api.call("answerCallbackQuery", &body).await {
            tracing::warn!(user = %user, error = %e, "telegram: cannot tell the presser");
        }
    });
}

/// A refusal shown to the presser: logged, told in an alert, acknowledged 200.
fn refuse_shown(hook: &Arc<Hook>, press: &Press, code: Code, message: String) -> Response {
    tracing::warn!(code = code.as_str(), user = %press.user, data = %crate::text::for_log(&press.data), "telegram: press refused");
    tell(hook, press, &message, true);
    refuse(StatusCode::OK, code, &message)
}

/// `POST /telegram/webhook`: a press answers once it passes every check (the module's
/// list), in that order.
async fn update(
    State(st): State<AppState>,
    Extension(hook): Extension<Arc<Hook>>,
    headers: HeaderMap,
    Body(body): Body,
) -> Response {
    if !hook
        .secret
        .matches(headers.get(SECRET_HEADER).map(|v| v.as_bytes()))
    {
        tracing::warn!(
            code = Code::TelegramBadSecret.as_str(),
            "telegram: an update without the webhook's secret token refused"
        );
        return refuse(
            StatusCode::UNAUTHORIZED,
            Code::TelegramBadSecret,
            "the X-Telegram-Bot-Api-Secret-Token header is missing or is not the webhook's secret token",
        );
    }
    let update: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return refuse(
                StatusCode::BAD_REQUEST,
                Code::BadRequest,
                "the body is not a Telegram Update (a JSON object)",
            )
        }
    };
    let Some(q) = update.get("callback_query") else {
        return Json(json!({"ok": true, "ignored": "not a callback_query"})).into_response();
    };
    let Some(press) = press_of(q) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            Code::BadRequest,
            "the callback_query names no id or no user",
        );
    };
    let (row, person, answer) = match judge(&st, &hook, &press).await {
        Ok(x) => x,
        Err((code, message)) => return refuse_shown(&hook, &press, code, message),
    };
    act(&st, &hook, &press, &row, person, answer).await
}

/// A refusal: its code and what the presser is told.
type Refusal = (Code, String);

/// Checks 3 to 7: the presser's person, the request as it is now and the answer the
/// button gives.
async fn judge(
    st: &AppState,
    hook: &Arc<Hook>,
    press: &Press,
) -> std::result::Result<(RequestRow, String, crate::protocol::Answer), Refusal> {
    let Some(person) = st
        .root
        .people()
        .listed(&Identity::new(Face::Telegram, press.user.clone()))
        .map(str::to_string)
    else {
        return Err((
            Code::TelegramUnknownUser,
            format!(
                "Your Telegram account ({}) is not one of this dshq's reviewers: nothing was recorded. An operator lists telegram:{} for you under [people] in dshq's config file.",
                press.user, press.user
            ),
        ));
    };
    let forged = || {
        (
            Code::Forbidden,
            "This button is not one dshq put on this message: nothing was recorded.".to_string(),
        )
    };
    let (Some(button), Some((chat, message_id))) = (ButtonRef::parse(&press.data), press.message)
    else {
        return Err(forged());
    };
    let delivery = button.delivery.clone();
    let now = st
        .db
        .read(move |store| {
            let Some(m) = store.telegram_message_of_delivery(&delivery, chat)? else {
                return Ok(None);
            };
            let row = store.get(&m.request_id)?;
            let end = match &row {
                Some(r) => crate::channels::slack::end_of(store, r)?,
                None => None,
            };
            Ok(Some((m, row, end)))
        })
        .await
        .map_err(|e| (e.code(), e.to_string()))?;
    let Some((recorded, row, end)) = now else {
        return Err(forged());
    };
    if recorded.message_id != message_id {
        return Err(forged());
    }
    let id = recorded.request_id.clone();
    let Some(row) = row else {
        return Err((
            Code::NotFound,
            format!("Request {id} is not in this dshq any more (pruned): nothing was recorded."),
        ));
    };
    if row.request_digest().as_deref() != Some(recorded.digest.as_str()) {
        return Err((
            Code::Forbidden,
            format!("Request {id} is not the one this message showed: nothing was recorded."),
        ));
    }
    if let Some(end) = end {
        return Err((Code::RequestFinal, already_over(&id, &end)));
    }
    if !hook.telegram.chats_of(&row.context).contains(&chat) {
        return Err((
            Code::WrongContext,
            format!(
                "Request {id} moved to context {} (escalated): this message no longer answers it, and nothing was recorded.",
                row.context
            ),
        ));
    }
    let request = row.request().ok_or_else(forged)?;
    let choice = choices(&request)
        .into_iter()
        .nth(button.index)
        .ok_or_else(forged)?;
    Ok((row, person, choice.answer))
}

/// Record the press's answer through the same use-case and host lease as the page's.
async fn act(
    st: &AppState,
    hook: &Arc<Hook>,
    press: &Press,
    row: &RequestRow,
    person: String,
    answer: crate::protocol::Answer,
) -> Response {
    let id = row.id.clone().unwrap_or_default();
    let actor = Actor::Telegram {
        person: person.clone(),
        user: press.user.clone(),
    };
    let chosen = answer
        .answers
        .first()
        .map(|a| a.selected.join(", "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "declined".into());
    let (root, id2) = (st.root.clone(), id.clone());
    let r = st
        .providers
        .act(row, actor, Act::Answer, move |store, acting| {
            app::provide::answer(store, Some(&root), &id2, acting, &answer)
        })
        .await;
    let shown_id = crate::text::for_log(&id);
    match r {
        Err(Error::RequestFinal { .. }) => {
            // Someone else answered between the check and the write.
            let id2 = id.clone();
            let end = st
                .db
                .read(move |store| match store.get(&id2)? {
                    Some(row) => crate::channels::slack::end_of(store, &row),
                    None => Ok(None),
                })
                .await;
            let message = match end {
                Ok(Some(end)) => already_over(&id, &end),
                _ => format!("Request {id} is already over: nothing was recorded."),
            };
            refuse_shown(hook, press, Code::RequestFinal, message)
        }
        Err(e) => refuse_shown(hook, press, e.code(), e.to_string()),
        Ok(app::provide::Answering::Voted(_)) => {
            tracing::info!(id = %shown_id, person = %person, user = %press.user, "voted from Telegram");
            tell(
                hook,
                press,
                &format!("Your vote ({chosen}) is recorded; the request waits for more approvals."),
                false,
            );
            Json(json!({"id": id, "status": "voted"})).into_response()
        }
        Ok(app::provide::Answering::Finished(_)) => {
            tracing::info!(id = %shown_id, person = %person, user = %press.user, "answered from Telegram");
            tell(hook, press, &format!("Answered: {chosen}"), false);
            Json(json!({"id": id, "status": "answered"})).into_response()
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
            Some(Actor::Telegram { person, .. }) => format!(" by {person} (on Telegram)"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_token_matches_only_itself() {
        let s = SecretToken::parse("s3cr3t_TOKEN-1").unwrap();
        assert!(s.matches(Some(b"s3cr3t_TOKEN-1")));
        assert!(!s.matches(Some(b"s3cr3t_TOKEN-2")));
        assert!(!s.matches(Some(b"")));
        assert!(!s.matches(None));
        assert!(SecretToken::parse("with space").is_none());
        assert!(SecretToken::parse("").is_none());
        assert!(SecretToken::parse(&"a".repeat(257)).is_none());
    }

    #[test]
    fn a_press_names_its_query_user_message_and_data() {
        let p = press_of(
            &json!({"id": "4382bfdwdsb323b2d9", "from": {"id": 111, "is_bot": false,
            "first_name": "A"}, "message": {"message_id": 7, "chat": {"id": -100, "type": "group"},
            "date": 1}, "chat_instance": "1", "data": "dshq1:x:0"}),
        )
        .unwrap();
        assert_eq!((p.user.as_str(), p.message), ("111", Some((-100, 7))));
        assert!(press_of(&json!({"id": "1"})).is_none());
    }
}
