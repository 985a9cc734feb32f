//! The identity provider the page signs people in through (OpenID Connect), as the host
//! holds it: its discovery document, its keys, and the two steps of a sign-in
//! (authorization code with PKCE): [`Oidc::start`] makes the provider's authorization URL
//! with a fresh state, nonce and PKCE verifier, [`Oidc::finish`] exchanges the code and
//! verifies the ID token (issuer, audience, expiry, nonce, signature; unsigned tokens and
//! symmetric algorithms refused).
//!
//! Why the `openidconnect` crate: discovery, the code exchange, PKCE and the ID token's
//! checks are the spec's and easy to get subtly wrong; the crate is the maintained Rust
//! implementation. Its HTTP goes through hyper (the client the Slack channel uses, with
//! the system's CA store; plain HTTP only to a loopback provider), so no second HTTP stack.
//!
//! Keys rotate: the provider's key set is fetched at discovery and again when a token
//! names a key id it does not hold, at most once per `jwks-refetch-after` (so a stream of
//! tokens with made-up key ids cannot make the host hammer the provider). Discovery is
//! lazy and retried: a provider that is down when the daemon starts does not stop it.
//!
//! The API for machines may also take the provider's access tokens (`api-access-tokens`):
//! a bearer that is a JWT is verified by the host's one verifier of signed tokens
//! ([`super::jwks`]) against the provider's published keys (its issuer, the configured
//! audience, its expiry; RS256 or ES256 only), and its claims are judged by the same rules
//! as a sign-in's ([`AccessTokens`]). The first use of each token is its sign-in, recorded
//! once ([`AccessTokens::first_use`]); a refused token records nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreGenderClaim, CoreIdTokenVerifier, CoreJsonWebKeySet,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm,
};
use openidconnect::{
    AdditionalClaims, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret,
    CsrfToken, EndpointMaybeSet, EndpointNotSet, EndpointSet, IdToken, IssuerUrl, Nonce,
    PkceCodeChallenge, PkceCodeVerifier, ProviderMetadataWithLogout, RedirectUrl,
    RequestTokenError, Scope, SignatureVerificationError, TokenResponse,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::sign_in::{check_url, Claims, Refused, Settings};
use crate::error::{Error, Result};

/// What the client secret file holds (for its refusal messages).
pub const SECRET_WHAT: &str = "the identity provider's client secret";

/// The error of the host's HTTP client (a message; its causes on one line).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(String);

/// The HTTP client the crate calls: hyper, HTTPS with the system's CA store, a timeout,
/// and a cap on what an answer may weigh.
#[derive(Clone)]
pub struct Http {
    client: Client<super::https::Https, Full<Bytes>>,
    timeout: Duration,
}

/// The most an answer of the provider may weigh.
const MAX_ANSWER: usize = 1 << 20;

impl Http {
    fn new(timeout: Duration) -> Result<Http> {
        Ok(Http {
            client: super::https::client("the identity provider")?,
            timeout,
        })
    }
}

impl<'c> openidconnect::AsyncHttpClient<'c> for Http {
    type Error = HttpError;
    type Future = Pin<
        Box<
            dyn Future<Output = std::result::Result<openidconnect::HttpResponse, HttpError>>
                + Send
                + 'c,
        >,
    >;

    fn call(&'c self, request: openidconnect::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let request = hyper::Request::from_parts(parts, Full::new(Bytes::from(body)));
            let resp = super::https::exchange(&self.client, request, self.timeout, MAX_ANSWER)
                .await
                .map_err(HttpError)?;
            let (parts, bytes) = resp.into_parts();
            Ok(hyper::Response::from_parts(parts, bytes.to_vec()))
        })
    }
}

/// Every claim of an ID token beyond the standard ones (`groups`, `roles`, ...).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct OtherClaims {
    #[serde(flatten)]
    all: serde_json::Map<String, Value>,
}

impl AdditionalClaims for OtherClaims {}

type Token = IdToken<
    OtherClaims,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;

/// The signing algorithms an ID token may use: the provider's keys, never the client
/// secret (HMAC), never none.
const ALGS: &[CoreJwsSigningAlgorithm] = &[
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];

/// The provider as discovered.
struct Discovered {
    meta: ProviderMetadataWithLogout,
    keys: Mutex<Keys>,
}

struct Keys {
    set: CoreJsonWebKeySet,
    /// When the set was last fetched for an unknown key id.
    refetched: Option<Instant>,
}

/// A sign-in under way: what [`Oidc::finish`] checks the provider's answer against. Kept
/// by the host (never sent to the browser but for the state, in the provider's URL).
#[derive(Clone)]
pub struct Pending {
    /// The state sent to the provider (compared in constant time).
    pub state: String,
    nonce: String,
    pkce: String,
    /// Where to go once signed in (a path on this site).
    pub return_to: String,
    /// When it started.
    pub started: Instant,
}

/// A verified sign-in: the claims the rules read, and the raw ID token (kept in the
/// host's memory only, as the provider's logout hint; never logged nor recorded).
pub struct Verified {
    /// The claims.
    pub claims: Claims,
    /// The ID token.
    pub id_token: String,
}

/// The identity provider of the host.
pub struct Oidc {
    settings: Settings,
    secret: ClientSecret,
    http: Http,
    discovered: tokio::sync::Mutex<Option<Arc<Discovered>>>,
    access_tokens: Option<AccessTokens>,
}

/// The provider's access tokens on the API: the verifier, and the tokens whose first use
/// was recorded (by a digest; never the token), until they expire.
pub struct AccessTokens {
    verifier: super::jwks::Verifier,
    recorded: Mutex<std::collections::HashMap<[u8; 32], i64>>,
}

/// How many recorded tokens are remembered at most (expired ones are forgotten first; a
/// token forgotten early is recorded again at its next use, which is harmless).
const REMEMBERED_TOKENS: usize = 4096;

impl AccessTokens {
    /// Verify `token` and read the claims the rules read (every claim of it, by the
    /// mapping's names), with its expiry (ms).
    pub async fn verify(
        &self,
        token: &str,
        mapping: &crate::core::sign_in::Mapping,
    ) -> std::result::Result<(Claims, i64), crate::core::jwt::Refused> {
        use crate::core::jwt::Refused as R;
        let all: Value = self.verifier.verify(token).await?;
        let text = |k: &str| all.get(k).and_then(Value::as_str).map(str::to_string);
        let subject = text("sub").ok_or_else(|| R::Malformed("the token has no sub".into()))?;
        let issuer = text("iss").unwrap_or_default();
        let exp_ms = all
            .get("exp")
            .and_then(Value::as_f64)
            .map(|s| (s * 1000.0) as i64)
            .unwrap_or_default();
        Ok((Claims::read(mapping, &issuer, &subject, &all), exp_ms))
    }

    /// Whether this is the first use of `token` (to be recorded as its sign-in): true once
    /// per token while it is remembered.
    pub fn first_use(&self, token: &str, exp_ms: i64) -> bool {
        let digest = digest(token);
        let now = crate::clock::now_ms();
        let mut seen = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains_key(&digest) {
            return false;
        }
        if seen.len() >= REMEMBERED_TOKENS {
            seen.retain(|_, exp| *exp > now);
            if seen.len() >= REMEMBERED_TOKENS {
                seen.clear();
            }
        }
        seen.insert(digest, exp_ms);
        true
    }

    /// Forget that `token` was recorded (its recording failed: the next use tries again).
    pub fn forget(&self, token: &str) {
        self.recorded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&digest(token));
    }
}

/// What a recorded token is remembered by (never the token itself).
fn digest(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc")
            .field("issuer", &self.settings.issuer)
            .finish_non_exhaustive()
    }
}

fn now_utc() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(crate::clock::now_ms()).unwrap_or_default()
}

impl Oidc {
    /// The provider of `settings`, its client secret read from its file (refused when
    /// others may read it). Nothing is fetched yet.
    pub fn new(settings: Settings) -> Result<Oidc> {
        let secret = crate::disk::secret::read(&settings.client_secret_file, SECRET_WHAT)?
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{} (the [oidc] client-secret-file) does not exist",
                    crate::text::path_for_log(&settings.client_secret_file)
                ))
            })?;
        let secret = secret.trim().to_string();
        if secret.is_empty() {
            return Err(Error::Usage(format!(
                "{} (the [oidc] client-secret-file) is empty",
                crate::text::path_for_log(&settings.client_secret_file)
            )));
        }
        let access_tokens = match &settings.api_audience {
            None => None,
            Some(audience) => {
                let mut s = super::jwks::Settings::new(
                    "the identity provider's access tokens",
                    format!(
                        "{}/.well-known/openid-configuration",
                        settings.issuer.trim_end_matches('/')
                    ),
                    vec![settings.issuer.clone()],
                    vec![audience.clone()],
                );
                s.refetch_after = settings.jwks_refetch_after;
                Some(AccessTokens {
                    verifier: super::jwks::Verifier::new(s)?,
                    recorded: Mutex::new(Default::default()),
                })
            }
        };
        Ok(Oidc {
            http: Http::new(Duration::from_secs(10))?,
            settings,
            secret: ClientSecret::new(secret),
            discovered: tokio::sync::Mutex::new(None),
            access_tokens,
        })
    }

    /// The provider's access tokens on the API, when `api-access-tokens` is on.
    pub fn access_tokens(&self) -> Option<&AccessTokens> {
        self.access_tokens.as_ref()
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The provider as discovered (once; again after a failure).
    async fn discovered(&self) -> std::result::Result<Arc<Discovered>, Refused> {
        let mut slot = self.discovered.lock().await;
        if let Some(d) = slot.as_ref() {
            return Ok(d.clone());
        }
        let issuer = IssuerUrl::new(self.settings.issuer.clone())
            .map_err(|e| Refused::Provider(format!("the issuer is no URL: {e}")))?;
        let meta = ProviderMetadataWithLogout::discover_async(issuer, &self.http)
            .await
            .map_err(|e| {
                Refused::Provider(format!("discovery failed: {}", crate::text::causes(&e)))
            })?;
        for url in [meta.authorization_endpoint().as_str()]
            .into_iter()
            .chain(meta.token_endpoint().map(|u| u.as_str()))
        {
            check_url("the provider's endpoint", url).map_err(Refused::Provider)?;
        }
        let d = Arc::new(Discovered {
            keys: Mutex::new(Keys {
                set: meta.jwks().clone(),
                refetched: None,
            }),
            meta,
        });
        tracing::info!(issuer = %self.settings.issuer, "identity provider discovered");
        *slot = Some(d.clone());
        Ok(d)
    }

    /// The crate's client of the discovered provider: dshq's id and secret, the callback.
    fn client(
        &self,
        d: &Discovered,
    ) -> std::result::Result<
        CoreClient<
            EndpointSet,
            EndpointNotSet,
            EndpointNotSet,
            EndpointNotSet,
            EndpointMaybeSet,
            EndpointMaybeSet,
        >,
        Refused,
    > {
        Ok(CoreClient::from_provider_metadata(
            d.meta.clone(),
            self.client_id(),
            Some(self.secret.clone()),
        )
        .set_redirect_uri(self.redirect()?))
    }

    fn client_id(&self) -> ClientId {
        ClientId::new(self.settings.client_id.clone())
    }

    fn redirect(&self) -> std::result::Result<RedirectUrl, Refused> {
        RedirectUrl::new(self.settings.redirect_url.clone())
            .map_err(|e| Refused::Provider(format!("the redirect URL: {e}")))
    }

    /// Start a sign-in that returns to `return_to`: the provider's authorization URL, and
    /// what to keep until the browser comes back.
    pub async fn start(
        &self,
        return_to: String,
    ) -> std::result::Result<(String, Pending), Refused> {
        let d = self.discovered().await?;
        let client = self.client(&d)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut req = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge);
        for s in self.settings.scopes.iter().filter(|s| *s != "openid") {
            req = req.add_scope(Scope::new(s.clone()));
        }
        let (url, state, nonce) = req.url();
        Ok((
            url.to_string(),
            Pending {
                state: state.secret().clone(),
                nonce: nonce.secret().clone(),
                pkce: verifier.secret().clone(),
                return_to,
                started: Instant::now(),
            },
        ))
    }

    /// Finish the sign-in `pending` with the provider's `code`: exchange it (with the PKCE
    /// verifier and the client secret), verify the ID token, read its claims.
    pub async fn finish(
        &self,
        pending: Pending,
        code: &str,
    ) -> std::result::Result<Verified, Refused> {
        let d = self.discovered().await?;
        let client = self.client(&d)?;
        let answer = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| Refused::Provider(format!("the provider has no token endpoint: {e}")))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.pkce.clone()))
            .request_async(&self.http)
            .await
            .map_err(|e| match e {
                RequestTokenError::ServerResponse(r) => Refused::CodeRejected(
                    crate::text::for_log(&format!("{}", r.error())).into_owned(),
                ),
                other => Refused::Provider(crate::text::causes(&other)),
            })?;
        let raw = answer
            .id_token()
            .map(|t| t.to_string())
            .ok_or_else(|| Refused::Provider("the provider's answer has no ID token".into()))?;
        let token: Token = raw
            .parse()
            .map_err(|e| Refused::Provider(format!("the ID token is not a JWT: {e}")))?;
        let nonce = Nonce::new(pending.nonce.clone());
        let all = match self.verify(&d, &token, &nonce, false) {
            Err(Refused::UnknownKey) if self.refetch_keys(&d).await => {
                self.verify(&d, &token, &nonce, true)?
            }
            other => other?,
        };
        let subject = all
            .get("sub")
            .and_then(Value::as_str)
            .ok_or_else(|| Refused::Provider("the ID token has no subject".into()))?
            .to_string();
        let issuer = all
            .get("iss")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        Ok(Verified {
            claims: Claims::read(&self.settings.mapping, &issuer, &subject, &all),
            id_token: raw,
        })
    }

    /// Verify `token` against the keys held; its claims as JSON.
    fn verify(
        &self,
        d: &Discovered,
        token: &Token,
        nonce: &Nonce,
        refetched: bool,
    ) -> std::result::Result<Value, Refused> {
        let keys = d.keys.lock().unwrap_or_else(|p| p.into_inner()).set.clone();
        let verifier =
            CoreIdTokenVerifier::new_public_client(self.client_id(), d.meta.issuer().clone(), keys)
                .set_allowed_algs(ALGS.iter().cloned())
                .set_time_fn(now_utc);
        let claims = token.claims(&verifier, nonce).map_err(|e| {
            let why = crate::text::for_log(&e.to_string()).into_owned();
            match e {
                ClaimsVerificationError::Expired(_) => Refused::Expired(why),
                ClaimsVerificationError::InvalidAudience(_) => Refused::Audience(why),
                ClaimsVerificationError::InvalidIssuer(_) => Refused::Issuer(why),
                ClaimsVerificationError::InvalidNonce(_) => Refused::Nonce,
                ClaimsVerificationError::SignatureVerification(s) => match s {
                    SignatureVerificationError::NoMatchingKey => {
                        let _ = refetched;
                        Refused::UnknownKey
                    }
                    SignatureVerificationError::NoSignature
                    | SignatureVerificationError::DisallowedAlg(_)
                    | SignatureVerificationError::UnsupportedAlg(_) => Refused::Unsigned(why),
                    _ => Refused::BadSignature(why),
                },
                _ => Refused::Provider(why),
            }
        })?;
        serde_json::to_value(claims)
            .map_err(|e| Refused::Provider(format!("the ID token's claims: {e}")))
    }

    /// Fetch the key set again, unless it was fetched for an unknown key less than
    /// `jwks-refetch-after` ago; whether it was.
    async fn refetch_keys(&self, d: &Discovered) -> bool {
        {
            let keys = d.keys.lock().unwrap_or_else(|p| p.into_inner());
            if keys
                .refetched
                .is_some_and(|at| at.elapsed() < self.settings.jwks_refetch_after)
            {
                tracing::info!(
                    "an ID token names an unknown key; the key set was fetched lately, not again"
                );
                return false;
            }
        }
        let fetched = CoreJsonWebKeySet::fetch_async(d.meta.jwks_uri(), &self.http).await;
        let mut keys = d.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.refetched = Some(Instant::now());
        match fetched {
            Ok(set) => {
                tracing::info!(
                    "the identity provider's key set was fetched again (an unknown key id)"
                );
                keys.set = set;
                true
            }
            Err(e) => {
                tracing::warn!(error = %crate::text::causes(&e), "the identity provider's key set could not be fetched again");
                false
            }
        }
    }

    /// The provider's logout URL for a session signed in with `id_token`, returning to
    /// the page's login; `None` when the provider offers no end-session endpoint.
    pub async fn end_session_url(&self, id_token: &str) -> Option<String> {
        let d = self.discovered().await.ok()?;
        let end = d.meta.additional_metadata().end_session_endpoint.as_ref()?;
        check_url("the end-session endpoint", end.as_str()).ok()?;
        let mut url = end.url().clone();
        let back = match &self.settings.post_logout_url {
            Some(u) => u.clone(),
            None => {
                let mut u = url::Url::parse(&self.settings.redirect_url).ok()?;
                u.set_path("/login");
                u.set_query(None);
                u.to_string()
            }
        };
        url.query_pairs_mut()
            .append_pair("id_token_hint", id_token)
            .append_pair("post_logout_redirect_uri", &back)
            .append_pair("client_id", &self.settings.client_id);
        Some(url.to_string())
    }
}
