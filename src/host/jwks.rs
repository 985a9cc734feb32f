//! Verifying another party's signed token (a JWT) against the keys its issuer publishes:
//! the OpenID metadata document names the key set (`jwks_uri`), the key set holds the
//! public keys by id (`kid`). One verifier for every caller that takes such a token: a chat
//! service's calls to its endpoint (the Bot Framework signs each one), an identity
//! provider's access tokens on the API. The caller says whose tokens it takes (the metadata
//! URL, the issuer or issuers, the audience) and what claims it reads; the rules a token
//! meets are [`crate::core::jwt`]'s.
//!
//! - **Algorithms**: RS256 or ES256 only, with a key of the published set; `alg: none` and
//!   an HMAC are refused before any key is looked up.
//! - **Claims**: the issuer is one of the configured, the audience holds the configured,
//!   `exp` has not passed and `nbf` has come, within a small leeway, on dshq's clock.
//! - **Keys rotate**: the set is fetched at the first token and cached; a token naming a
//!   key id the cache lacks fetches it again (a rotated-in key works at once), at most once
//!   per `refetch_after` (a stream of made-up key ids cannot make the host hammer the
//!   issuer); a key no longer published is gone from the cache after that fetch (a rotated-
//!   out key is refused). The whole set is also fetched again once it is `max_age` old.
//!   An issuer that is down when the daemon starts does not stop it: the fetch is retried
//!   at the next token.
//!
//! Why the `jsonwebtoken` crate: it is the maintained Rust implementation of JWS
//! verification and JWK parsing, and with its RustCrypto backend it adds no C dependency and
//! reuses the RSA and P-256 crates already in the tree. The HTTP is the host's one HTTPS
//! client ([`super::https`]), bounded in time and size.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::core::jwt::{self, Refused};
use crate::error::{Error, Result};

/// Whose tokens a [`Verifier`] takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// What the verifier is for, in messages ("the Bot Framework").
    pub what: String,
    /// The issuer's OpenID metadata document (its `jwks_uri` names the key set): HTTPS, or
    /// plain HTTP to this machine's loopback.
    pub metadata_url: String,
    /// The issuers a token may name (`iss`); at least one.
    pub issuers: Vec<String>,
    /// The audience a token must hold (`aud`): one of these.
    pub audiences: Vec<String>,
    /// How far apart the issuer's clock and this one may be.
    pub leeway: Duration,
    /// The least time between two fetches of the key set for an unknown key id.
    pub refetch_after: Duration,
    /// How long a fetched key set is used before it is fetched again.
    pub max_age: Duration,
    /// How long one fetch may take.
    pub timeout: Duration,
}

impl Settings {
    /// Settings with the defaults for the times: a minute's leeway, a refetch for an unknown
    /// key at most every five minutes, the set kept a day, ten seconds a fetch.
    pub fn new(
        what: impl Into<String>,
        metadata_url: impl Into<String>,
        issuers: Vec<String>,
        audiences: Vec<String>,
    ) -> Settings {
        Settings {
            what: what.into(),
            metadata_url: metadata_url.into(),
            issuers,
            audiences,
            leeway: Duration::from_secs(60),
            refetch_after: Duration::from_secs(300),
            max_age: Duration::from_secs(24 * 3600),
            timeout: Duration::from_secs(10),
        }
    }
}

/// The most a metadata document or key set may weigh.
const MAX_ANSWER: usize = 1 << 20;

/// One published key.
struct Key {
    kid: Option<String>,
    key: DecodingKey,
}

/// The cached key set.
#[derive(Default)]
struct Cache {
    keys: Vec<Key>,
    /// When the set was fetched last (for `max_age`).
    fetched: Option<Instant>,
    /// When it was fetched last for an unknown key id (for `refetch_after`).
    refetched: Option<Instant>,
}

/// Verifies one issuer's tokens.
pub struct Verifier {
    settings: Settings,
    client: Client<super::https::Https, Full<Bytes>>,
    cache: tokio::sync::Mutex<Cache>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("what", &self.settings.what)
            .field("metadata_url", &self.settings.metadata_url)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// A verifier of `settings`' tokens; nothing is fetched yet. Refused: a metadata URL that
    /// is neither HTTPS nor loopback HTTP, no issuer, no audience.
    pub fn new(settings: Settings) -> Result<Verifier> {
        crate::core::sign_in::check_url(
            &format!("{}'s OpenID metadata URL", settings.what),
            &settings.metadata_url,
        )
        .map_err(Error::Usage)?;
        if settings.issuers.is_empty() || settings.audiences.is_empty() {
            return Err(Error::Usage(format!(
                "{}: a token verifier needs at least one issuer and one audience",
                settings.what
            )));
        }
        Ok(Verifier {
            client: super::https::client(&settings.what)?,
            settings,
            cache: tokio::sync::Mutex::new(Cache::default()),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Verify `token` and read its claims as `C` (which names only what the caller reads;
    /// `iss`, `aud`, `exp` and `nbf` are checked here whatever `C` holds).
    pub async fn verify<C: DeserializeOwned>(
        &self,
        token: &str,
    ) -> std::result::Result<C, Refused> {
        let header = jwt::header(token)?;
        let alg = match header.alg.as_str() {
            "RS256" => Algorithm::RS256,
            _ => Algorithm::ES256,
        };
        let key = self.key_for(header.kid.as_deref(), alg).await?;
        let mut v = Validation::new(alg);
        v.set_issuer(&self.settings.issuers);
        v.set_audience(&self.settings.audiences);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        // Times are checked below on dshq's clock (the one every other rule reads).
        v.validate_exp = false;
        v.validate_nbf = false;
        let data = jsonwebtoken::decode::<Value>(token, &key, &v).map_err(refusal)?;
        let now_s = crate::clock::now_ms() as f64 / 1000.0;
        let num = |k: &str| data.claims.get(k).and_then(Value::as_f64);
        jwt::check_times(
            num("exp"),
            num("nbf"),
            now_s,
            self.settings.leeway.as_secs_f64(),
        )?;
        serde_json::from_value(data.claims)
            .map_err(|e| Refused::Malformed(format!("a claim is not as expected: {e}")))
    }

    /// The published key `kid` names (or the only one of `alg`'s family when the token
    /// names none), fetching the set again where the rules above allow.
    async fn key_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> std::result::Result<DecodingKey, Refused> {
        let mut cache = self.cache.lock().await;
        let stale = cache
            .fetched
            .is_none_or(|t| t.elapsed() >= self.settings.max_age);
        if stale {
            match self.fetch().await {
                Ok(keys) => {
                    cache.keys = keys;
                    cache.fetched = Some(Instant::now());
                }
                // A set still held is used while the issuer cannot be reached.
                Err(e) if cache.fetched.is_some() => {
                    // Tried again once `refetch_after` has passed, not at every token.
                    cache.fetched = Instant::now().checked_sub(
                        self.settings
                            .max_age
                            .saturating_sub(self.settings.refetch_after),
                    );
                    tracing::warn!(what = %self.settings.what, error = %e, "the key set could not be fetched again; the cached one is used");
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(k) = find(&cache.keys, kid, alg) {
            return Ok(k);
        }
        let may_refetch = !stale
            && cache
                .refetched
                .is_none_or(|t| t.elapsed() >= self.settings.refetch_after);
        if may_refetch {
            cache.refetched = Some(Instant::now());
            let keys = self.fetch().await?;
            cache.keys = keys;
            cache.fetched = Some(Instant::now());
            if let Some(k) = find(&cache.keys, kid, alg) {
                return Ok(k);
            }
        }
        Err(Refused::UnknownKey(match kid {
            Some(k) => format!("kid {k:?}"),
            None => "the token names no kid".into(),
        }))
    }

    /// Fetch the metadata document, then the key set it names; keys this verifier cannot
    /// use (encryption keys, other key types) are left out.
    async fn fetch(&self) -> std::result::Result<Vec<Key>, Refused> {
        let meta = self.get_json(&self.settings.metadata_url).await?;
        let uri = meta
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Refused::Keys(format!(
                    "{}'s metadata names no jwks_uri",
                    self.settings.what
                ))
            })?
            .to_string();
        crate::core::sign_in::check_url("the jwks_uri", &uri).map_err(Refused::Keys)?;
        let set = self.get_json(&uri).await?;
        let listed = set
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| Refused::Keys(format!("{uri} is not a key set (no keys array)")))?;
        let mut keys = Vec::new();
        for raw in listed {
            let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else {
                continue;
            };
            if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
                continue;
            }
            if let Ok(key) = DecodingKey::from_jwk(&jwk) {
                keys.push(Key {
                    kid: jwk.common.key_id.clone(),
                    key,
                });
            }
        }
        tracing::debug!(what = %self.settings.what, keys = keys.len(), "key set fetched");
        Ok(keys)
    }

    async fn get_json(&self, url: &str) -> std::result::Result<Value, Refused> {
        let request = hyper::Request::get(url)
            .header(hyper::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|e| Refused::Keys(format!("{url}: {e}")))?;
        let resp = super::https::exchange(&self.client, request, self.settings.timeout, MAX_ANSWER)
            .await
            .map_err(|e| Refused::Keys(format!("{url}: {e}")))?;
        if !resp.status().is_success() {
            return Err(Refused::Keys(format!("{url} answered {}", resp.status())));
        }
        serde_json::from_slice(resp.body())
            .map_err(|e| Refused::Keys(format!("{url} did not answer JSON: {e}")))
    }
}

/// The key `kid` names, of `alg`'s family.
fn find(keys: &[Key], kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
    let family = alg.family();
    let mut fits = keys.iter().filter(|k| k.key.family() == family);
    match kid {
        Some(kid) => fits
            .find(|k| k.kid.as_deref() == Some(kid))
            .map(|k| k.key.clone()),
        None => {
            let only = fits.next()?;
            fits.next().is_none().then(|| only.key.clone())
        }
    }
}

/// The crate's error as the refusal it is.
fn refusal(e: jsonwebtoken::errors::Error) -> Refused {
    let what = e.to_string();
    match e.into_kind() {
        ErrorKind::InvalidSignature => Refused::BadSignature(what),
        ErrorKind::InvalidIssuer => Refused::Issuer(what),
        ErrorKind::InvalidAudience => Refused::Audience(what),
        ErrorKind::ExpiredSignature | ErrorKind::ImmatureSignature => Refused::Expired(what),
        ErrorKind::MissingRequiredClaim(c) => match c.as_str() {
            "iss" => Refused::Issuer(format!("the token has no {c}")),
            "aud" => Refused::Audience(format!("the token has no {c}")),
            "exp" => Refused::Expired(format!("the token has no {c}")),
            _ => Refused::Malformed(format!("the token has no {c}")),
        },
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => Refused::Unsigned(what),
        ErrorKind::InvalidEcdsaKey | ErrorKind::InvalidRsaKey(_) | ErrorKind::InvalidKeyFormat => {
            Refused::BadSignature(what)
        }
        _ => Refused::Malformed(what),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    use base64::Engine;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    use super::*;
    use crate::protocol::Code;

    /// A signing key of the test's issuer and its public JWK.
    struct TestKey {
        alg: Algorithm,
        kid: String,
        enc: EncodingKey,
        jwk: Value,
    }

    fn es256(kid: &str) -> TestKey {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        use p256::pkcs8::EncodePrivateKey;
        let secret = loop {
            let mut b = [0u8; 32];
            getrandom::getrandom(&mut b).unwrap();
            if let Ok(k) = p256::SecretKey::from_slice(&b) {
                break k;
            }
        };
        let point = secret.public_key().to_encoded_point(false);
        TestKey {
            alg: Algorithm::ES256,
            kid: kid.into(),
            enc: EncodingKey::from_ec_der(secret.to_pkcs8_der().unwrap().as_bytes()),
            jwk: json!({"kty": "EC", "crv": "P-256", "use": "sig", "kid": kid,
                        "x": B64.encode(point.x().unwrap()), "y": B64.encode(point.y().unwrap())}),
        }
    }

    /// An RSA key made by openssl (as an operator makes one).
    fn rs256(kid: &str) -> TestKey {
        let dir = tempfile::tempdir().unwrap();
        let pem = dir.path().join("k.pem");
        let run = |args: &[&str]| {
            let out = std::process::Command::new("openssl")
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "openssl {args:?}: {out:?}");
            out.stdout
        };
        let p = pem.to_str().unwrap();
        run(&["genrsa", "-traditional", "-out", p, "2048"]);
        let der = run(&["rsa", "-in", p, "-traditional", "-outform", "DER"]);
        let modulus = String::from_utf8(run(&["rsa", "-in", p, "-noout", "-modulus"])).unwrap();
        let hex = modulus.trim().trim_start_matches("Modulus=");
        let n: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        TestKey {
            alg: Algorithm::RS256,
            kid: kid.into(),
            enc: EncodingKey::from_rsa_der(&der),
            jwk: json!({"kty": "RSA", "use": "sig", "kid": kid, "n": B64.encode(n), "e": "AQAB",
                        "endorsements": ["msteams"]}),
        }
    }

    /// The issuer: its metadata and key set on loopback, counting the key set's fetches.
    struct Issuer {
        base: String,
        keys: Arc<Mutex<Vec<Value>>>,
        fetches: Arc<AtomicUsize>,
    }

    async fn issuer(keys: &[&TestKey]) -> Issuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let set: Arc<Mutex<Vec<Value>>> =
            Arc::new(Mutex::new(keys.iter().map(|k| k.jwk.clone()).collect()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (s, f, b) = (set.clone(), fetches.clone(), base.clone());
        let app = axum::Router::new()
            .route(
                "/meta",
                axum::routing::get(move || {
                    let b = b.clone();
                    async move {
                        axum::Json(
                            json!({"issuer": "https://iss.test", "jwks_uri": format!("{b}/jwks")}),
                        )
                    }
                }),
            )
            .route(
                "/jwks",
                axum::routing::get(move || {
                    f.fetch_add(1, Ordering::SeqCst);
                    let keys = s.lock().unwrap().clone();
                    async move { axum::Json(json!({ "keys": keys })) }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Issuer {
            base,
            keys: set,
            fetches,
        }
    }

    impl Issuer {
        fn verifier(&self) -> Verifier {
            Verifier::new(Settings::new(
                "the test issuer",
                format!("{}/meta", self.base),
                vec!["https://iss.test".into()],
                vec!["app-1".into()],
            ))
            .unwrap()
        }

        fn publish(&self, keys: &[&TestKey]) {
            *self.keys.lock().unwrap() = keys.iter().map(|k| k.jwk.clone()).collect();
        }

        fn fetches(&self) -> usize {
            self.fetches.load(Ordering::SeqCst)
        }
    }

    fn now() -> i64 {
        crate::clock::now_ms() / 1000
    }

    fn claims() -> Value {
        json!({"iss": "https://iss.test", "aud": "app-1", "exp": now() + 600, "nbf": now() - 10,
               "serviceUrl": "https://smba.test/"})
    }

    fn sign(key: &TestKey, claims: &Value) -> String {
        let mut h = Header::new(key.alg);
        h.kid = Some(key.kid.clone());
        jsonwebtoken::encode(&h, claims, &key.enc).unwrap()
    }

    async fn code(v: &Verifier, token: &str) -> Code {
        v.verify::<Value>(token).await.unwrap_err().code()
    }

    #[tokio::test]
    async fn a_signed_current_token_for_us_is_taken_and_every_other_refused() {
        let (rsa, ec) = (rs256("r1"), es256("e1"));
        let iss = issuer(&[&rsa, &ec]).await;
        let v = iss.verifier();
        let got: Value = v.verify(&sign(&rsa, &claims())).await.unwrap();
        assert_eq!(got["serviceUrl"], "https://smba.test/");
        v.verify::<Value>(&sign(&ec, &claims())).await.unwrap();

        let with = |k: &str, val: Value| {
            let mut c = claims();
            c[k] = val;
            c
        };
        assert_eq!(
            code(&v, &sign(&rsa, &with("exp", json!(now() - 3600)))).await,
            Code::JwtExpired
        );
        assert_eq!(
            code(&v, &sign(&rsa, &with("nbf", json!(now() + 3600)))).await,
            Code::JwtExpired
        );
        assert_eq!(
            code(&v, &sign(&rsa, &with("aud", json!("app-2")))).await,
            Code::JwtAudience
        );
        assert_eq!(
            code(&v, &sign(&rsa, &with("iss", json!("https://evil.test")))).await,
            Code::JwtIssuer
        );
        let mut no_exp = claims();
        no_exp.as_object_mut().unwrap().remove("exp");
        assert_eq!(code(&v, &sign(&rsa, &no_exp)).await, Code::JwtExpired);

        // Another key under a published kid: the signature does not verify.
        let impostor = rs256("r1");
        assert_eq!(
            code(&v, &sign(&impostor, &claims())).await,
            Code::JwtBadSignature
        );
        let good = sign(&rsa, &claims());
        let (head, rest) = good.split_once('.').unwrap();
        let (body, _) = rest.split_once('.').unwrap();
        let forged = B64
            .encode(serde_json::to_vec(&with("serviceUrl", json!("https://evil.test/"))).unwrap());
        let spliced = format!("{head}.{forged}.{}", good.rsplit('.').next().unwrap());
        assert_ne!(body, forged);
        assert_eq!(code(&v, &spliced).await, Code::JwtBadSignature);

        // Unsigned, and an HMAC keyed with the public key: refused as such.
        let none = format!(
            "{}.{}.",
            B64.encode(r#"{"alg":"none","kid":"r1"}"#),
            B64.encode(claims().to_string())
        );
        assert_eq!(code(&v, &none).await, Code::JwtUnsigned);
        let mut h = Header::new(Algorithm::HS256);
        h.kid = Some("r1".into());
        let hmac = jsonwebtoken::encode(
            &h,
            &claims(),
            &EncodingKey::from_secret(rsa.jwk["n"].as_str().unwrap().as_bytes()).unwrap(),
        )
        .unwrap();
        assert_eq!(code(&v, &hmac).await, Code::JwtUnsigned);
        assert_eq!(code(&v, "not.a.jwt").await, Code::JwtMalformed);
        assert_eq!(
            iss.fetches(),
            1,
            "no refusal above needed the key set again"
        );
    }

    #[tokio::test]
    async fn keys_rotate_in_at_once_and_out_for_good_and_made_up_ids_fetch_at_most_once() {
        let (old, new) = (es256("old"), es256("new"));
        let iss = issuer(&[&old]).await;
        let v = iss.verifier();
        v.verify::<Value>(&sign(&old, &claims())).await.unwrap();
        assert_eq!(iss.fetches(), 1);

        // The issuer rotates: the new key is taken at once (one fetch), the old one is gone.
        iss.publish(&[&new]);
        v.verify::<Value>(&sign(&new, &claims())).await.unwrap();
        assert_eq!(iss.fetches(), 2);
        assert_eq!(code(&v, &sign(&old, &claims())).await, Code::JwtUnknownKey);

        // Made-up key ids within the window fetch nothing more.
        for i in 0..5 {
            let made_up = es256(&format!("made-up-{i}"));
            assert_eq!(
                code(&v, &sign(&made_up, &claims())).await,
                Code::JwtUnknownKey
            );
        }
        assert_eq!(iss.fetches(), 2);
    }

    #[tokio::test]
    async fn an_issuer_that_cannot_be_reached_is_a_keys_refusal() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let mut s = Settings::new(
            "x",
            format!("http://{addr}/meta"),
            vec!["i".into()],
            vec!["a".into()],
        );
        s.timeout = Duration::from_secs(2);
        let v = Verifier::new(s).unwrap();
        assert_eq!(code(&v, &sign(&es256("k"), &claims())).await, Code::JwtKeys);
        let bad = Settings::new(
            "x",
            "http://example.com/meta",
            vec!["i".into()],
            vec!["a".into()],
        );
        assert!(
            Verifier::new(bad).is_err(),
            "plain http beyond loopback is refused"
        );
    }
}
