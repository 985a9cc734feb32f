//! Bearer-token authentication and the role check, shared by every route that takes a
//! token (the JSON API, the MCP endpoint; the page's session cookie resolves to the same
//! [`Caller`]).
//!
//! A bearer that is the identity provider's access token (a JWT, where `[oidc]` has
//! `api-access-tokens`) is verified against the provider's keys and judged by the
//! sign-in's rules instead ([`Caller::from_headers`]); the caller is then the person its
//! claims name, as a page sign-in's is.
//!
//! Use it as an extractor (`caller: Caller` in a handler's arguments: 401 before the
//! handler runs when the token is missing, wrong or revoked), then ask
//! [`Caller::require`] for the action: 403 when the role may not. Whether a given request
//! is visible to the caller is [`Caller::sees`]: an asker sees only what it asked, a
//! token bound to a context only that context; what it may not see is reported as not
//! found, so its existence is not revealed either.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::error::ApiError;
use super::AppState;
use crate::app;
use crate::core::access::{Action, Reach};
use crate::core::audit::{Actor, Source};
use crate::core::sign_in::Via;
use crate::error::Error;
use crate::store::{RequestRow, WebToken};

/// An authenticated caller: the token's record.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The token (its name, role and context).
    pub token: WebToken,
    /// For a mail link's session on the page: the link's claims. Such a
    /// caller sees that one request only and acts as `mail:ADDRESS`
    /// ([`crate::web::page::link`]).
    pub mail: Option<crate::core::mail_link::LinkClaims>,
    /// For a page session signed in through the identity provider: the subject and the
    /// contexts the claims reach ([`crate::web::page::sign_in`]). Such a caller acts as
    /// `oidc:PERSON@SUBJECT`, the token's name being the person.
    pub signed_in: Option<SignedIn>,
}

/// What a sign-in through the identity provider decided, as a caller carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    /// The provider's subject.
    pub subject: String,
    /// The contexts the role reaches; `None`: every context.
    pub contexts: Option<std::collections::BTreeSet<String>>,
}

impl Caller {
    /// Authenticate a bearer token (the `Authorization` header's value, or a token taken
    /// from elsewhere, such as a session).
    pub async fn from_token(state: &AppState, presented: String) -> Result<Caller, ApiError> {
        let token = state
            .db
            .read(move |store| app::tokens::authenticate(store, &presented))
            .await?;
        Ok(Caller {
            token,
            mail: None,
            signed_in: None,
        })
    }

    /// The caller a sign-in through the identity provider decided on: the person as the
    /// name, the role, and the contexts (a single one also binds as a token's context
    /// does, so the filters that take one apply).
    pub fn signed_in(d: &crate::core::sign_in::Decision) -> Caller {
        let single = d
            .contexts
            .as_ref()
            .filter(|c| c.len() == 1)
            .and_then(|c| c.iter().next().cloned());
        Caller {
            token: WebToken {
                name: d.person.clone(),
                role: d.role,
                context: single,
                created_ms: 0,
                revoked_ms: None,
            },
            mail: None,
            signed_in: Some(SignedIn {
                subject: d.identity.name.clone(),
                contexts: d.contexts.clone(),
            }),
        }
    }

    /// Authenticate the `Authorization: Bearer TOKEN` header of a request.
    pub async fn from_headers(
        state: &AppState,
        headers: &axum::http::HeaderMap,
    ) -> Result<Caller, ApiError> {
        let presented = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, rest) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
            })
            .ok_or(ApiError::from(Error::Unauthorized))?;
        if let Some(oidc) = state.oidc.as_deref() {
            if oidc.access_tokens().is_some() && is_jwt(presented) {
                return Caller::from_access_token(state, oidc, presented).await;
            }
        }
        Caller::from_token(state, presented.to_string()).await
    }

    /// Authenticate the identity provider's access token `presented` (a JWT): verified
    /// against the provider's keys, its claims judged by the sign-in's rules. Its first
    /// use is recorded as a sign-in (a `signed-in` event, the person's quorum groups); a
    /// refused token records nothing (401 with its `JWT_*` code, or `OIDC_NOT_MAPPED`).
    async fn from_access_token(
        state: &AppState,
        oidc: &crate::host::oidc::Oidc,
        presented: &str,
    ) -> Result<Caller, ApiError> {
        let tokens = oidc
            .access_tokens()
            .ok_or(ApiError::from(Error::Unauthorized))?;
        let mapping = &oidc.settings().mapping;
        let (claims, exp_ms) = tokens.verify(presented, mapping).await.map_err(|e| {
            tracing::info!(code = e.code().as_str(), why = %e, "an access token was refused");
            ApiError::from(Error::Jwt(e))
        })?;
        let decision = mapping
            .decide(&claims, state.root.people())
            .map_err(|e| {
                tracing::info!(code = e.code().as_str(), subject = %crate::text::for_log(&claims.subject), "an access token's claims admit nobody");
                ApiError::from(Error::SignIn(e))
            })?;
        if tokens.first_use(presented, exp_ms) {
            let (d, c) = (decision.clone(), claims.clone());
            let recorded = state
                .db
                .write(move |store| app::sign_in::record(store, &d, &c, Via::AccessToken))
                .await;
            if let Err(e) = recorded {
                tokens.forget(presented);
                return Err(e.into());
            }
            tracing::info!(
                person = %decision.person,
                role = decision.role.as_str(),
                "signed in with the identity provider's access token"
            );
        }
        Ok(Caller::signed_in(&decision))
    }

    /// How far this caller may take `action`; 403 when its role may not.
    pub fn require(&self, action: Action) -> Result<Reach, ApiError> {
        self.token
            .role
            .may(action)
            .ok_or(ApiError::from(Error::Forbidden))
    }

    /// Who this caller is in the event log: `web:NAME` (`mail:ADDRESS` for a mail
    /// link's session, `oidc:PERSON@SUBJECT` for a sign-in through the provider).
    pub fn actor(&self) -> Actor {
        match (&self.mail, &self.signed_in) {
            (Some(m), _) => Actor::Mail(m.recipient.clone()),
            (None, Some(s)) => Actor::Oidc {
                person: self.token.name.clone(),
                subject: s.subject.clone(),
            },
            (None, None) => Actor::Web(self.token.name.clone()),
        }
    }

    /// Whether the caller may see request `id` at all (a mail link's session: its one
    /// request only).
    pub fn sees_id(&self, id: &str) -> bool {
        self.mail.as_ref().is_none_or(|m| m.request_id == id)
    }

    /// Where a request this caller asks comes from: `web:NAME`.
    pub fn source(&self) -> Source {
        Source::WebToken(self.token.name.clone())
    }

    /// Whether the caller may see `row` with `reach`: its context (when the token is bound
    /// to one) and, for [`Reach::Own`], its source.
    pub fn sees(&self, row: &RequestRow, reach: Reach) -> bool {
        let context_ok = self.in_context(&row.context);
        let own_ok = match reach {
            Reach::All => true,
            Reach::Own => row.source == self.source().as_str(),
        };
        context_ok && own_ok && self.sees_id(row.id.as_deref().unwrap_or_default())
    }

    /// The contexts a list or history of this caller covers, out of those `asked` (none
    /// asked: every context the caller reaches; an empty answer: every context). `None`
    /// when it reaches none of those asked (the answer is then empty).
    pub fn contexts_of(&self, asked: Vec<String>) -> Option<Vec<String>> {
        if !asked.is_empty() {
            let reached: Vec<String> = asked.into_iter().filter(|c| self.in_context(c)).collect();
            return (!reached.is_empty()).then_some(reached);
        }
        let signed_in = self.signed_in.as_ref().and_then(|s| s.contexts.as_ref());
        Some(match (signed_in, &self.token.context) {
            (Some(cs), _) if cs.is_empty() => return None,
            (Some(cs), _) => cs.iter().cloned().collect(),
            (None, Some(c)) => vec![c.clone()],
            (None, None) => Vec::new(),
        })
    }

    /// Whether the caller reaches every context (no token context, no sign-in's contexts).
    pub fn reaches_every_context(&self) -> bool {
        self.token.context.is_none() && self.signed_in.as_ref().is_none_or(|s| s.contexts.is_none())
    }

    /// Whether the caller may act in `context` (a token bound to a context: only there).
    pub fn in_context(&self, context: &str) -> bool {
        self.token.context.as_deref().is_none_or(|c| c == context)
            && self
                .signed_in
                .as_ref()
                .and_then(|s| s.contexts.as_ref())
                .is_none_or(|cs| cs.contains(context))
    }
}

/// Whether a presented bearer is a JWT (three dot-separated parts) rather than a dshq
/// token (`dshq_` and hex, no dot).
fn is_jwt(presented: &str) -> bool {
    !presented.starts_with(app::tokens::PREFIX) && presented.split('.').count() == 3
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Caller::from_headers(state, &parts.headers).await
    }
}
