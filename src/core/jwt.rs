//! A signed token from another party (a JWT), as dshq judges it: which algorithms it may be
//! signed with, whether it is current, and each way it is refused ([`Refused`], with its
//! stable code). Pure: the key set, its fetching and the signature's arithmetic are the
//! host's ([`crate::host::jwks`]); this file holds the rules a face and the error document
//! share, so every caller (a chat service's inbound call, an identity provider's access
//! token on the API) refuses the same token the same way.
//!
//! Why an allow-list of two asymmetric algorithms: a verifier that reads the algorithm from
//! the token it verifies can be told `none` (no signature) or an HMAC keyed with the public
//! key (which anyone has); accepting only RS256 and ES256, and only with a key of the
//! issuer's published set, closes both.

use crate::protocol::Code;

/// The algorithms a token may be signed with (the names of RFC 7518).
pub const ALLOWED_ALGS: &[&str] = &["RS256", "ES256"];

/// Why a token is refused (each with its stable code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Not a JWT: not three base64url parts, a header or claims that are not JSON, a claim
    /// of the wrong type.
    #[error("the token is not a well-formed JWT ({0})")]
    Malformed(String),
    /// Unsigned (`alg: none`), or signed with an algorithm not allowed (an HMAC, say).
    #[error("the token is unsigned or uses an algorithm dshq does not allow ({0}; allowed: RS256, ES256)")]
    Unsigned(String),
    /// Issued by another than the issuer(s) configured.
    #[error("the token was issued by someone else ({0})")]
    Issuer(String),
    /// Not meant for this audience.
    #[error("the token is not meant for this audience ({0})")]
    Audience(String),
    /// Past its expiry, or not valid yet (beyond the leeway).
    #[error("the token has expired or is not valid yet ({0})")]
    Expired(String),
    /// Signed by a key the issuer does not publish (made up, or rotated out), after the key
    /// set was fetched again where the rate limit allowed it.
    #[error("the token is signed by a key the issuer does not publish ({0})")]
    UnknownKey(String),
    /// The signature does not verify with the issuer's key.
    #[error("the token's signature does not verify ({0})")]
    BadSignature(String),
    /// The issuer's metadata or key set cannot be fetched, or is not what OpenID says.
    #[error("the issuer's keys cannot be fetched now: {0}")]
    Keys(String),
}

impl Refused {
    /// The stable code.
    pub fn code(&self) -> Code {
        match self {
            Refused::Malformed(_) => Code::JwtMalformed,
            Refused::Unsigned(_) => Code::JwtUnsigned,
            Refused::Issuer(_) => Code::JwtIssuer,
            Refused::Audience(_) => Code::JwtAudience,
            Refused::Expired(_) => Code::JwtExpired,
            Refused::UnknownKey(_) => Code::JwtUnknownKey,
            Refused::BadSignature(_) => Code::JwtBadSignature,
            Refused::Keys(_) => Code::JwtKeys,
        }
    }
}

/// The allow-list's verdict on a header's `alg`.
pub fn check_alg(alg: Option<&str>) -> Result<(), Refused> {
    match alg {
        Some(a) if ALLOWED_ALGS.contains(&a) => Ok(()),
        Some(a) => Err(Refused::Unsigned(format!("alg {a:?}"))),
        None => Err(Refused::Unsigned("no alg".into())),
    }
}

/// What a token's header says about its signature: the algorithm and the key id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// `alg`, checked against [`ALLOWED_ALGS`].
    pub alg: String,
    /// `kid`, when the token names its key.
    pub kid: Option<String>,
}

/// The header of `token`, its algorithm on the allow-list: read before any key is looked
/// up, so `alg: none` and an HMAC are refused as what they are, whatever the key set holds.
pub fn header(token: &str) -> Result<Header, Refused> {
    use base64::Engine;
    let mut parts = token.split('.');
    let (Some(head), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refused::Malformed("not three dot-separated parts".into()));
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head)
        .map_err(|e| Refused::Malformed(format!("the header is not base64url: {e}")))?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| Refused::Malformed(format!("the header is not JSON: {e}")))?;
    let alg = value.get("alg").and_then(|a| a.as_str());
    check_alg(alg)?;
    let kid = match value.get("kid") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(k)) => Some(k.clone()),
        Some(_) => {
            return Err(Refused::Malformed(
                "the header's kid is not a string".into(),
            ))
        }
    };
    Ok(Header {
        alg: alg.unwrap_or_default().to_string(),
        kid,
    })
}

/// Whether a token with `exp` and `nbf` (seconds since the epoch) is current at `now_s`,
/// allowing `leeway_s` seconds of clock difference either way. `exp` is required.
pub fn check_times(
    exp: Option<f64>,
    nbf: Option<f64>,
    now_s: f64,
    leeway_s: f64,
) -> Result<(), Refused> {
    let exp = exp.ok_or_else(|| Refused::Expired("it has no exp".into()))?;
    if now_s > exp + leeway_s {
        return Err(Refused::Expired(format!(
            "exp was {:.0} s ago",
            (now_s - exp).max(0.0)
        )));
    }
    if let Some(nbf) = nbf {
        if now_s + leeway_s < nbf {
            return Err(Refused::Expired(format!(
                "nbf is {:.0} s ahead",
                (nbf - now_s).max(0.0)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_asymmetric_algorithms_pass() {
        assert!(check_alg(Some("RS256")).is_ok());
        assert!(check_alg(Some("ES256")).is_ok());
        for bad in ["none", "HS256", "HS512", "RS384", "PS256", ""] {
            assert_eq!(check_alg(Some(bad)).unwrap_err().code(), Code::JwtUnsigned);
        }
        assert_eq!(check_alg(None).unwrap_err().code(), Code::JwtUnsigned);
    }

    #[test]
    fn the_header_is_read_before_any_key() {
        use base64::Engine;
        let enc = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        let tok = |h: &str| format!("{}.{}.sig", enc(h), enc("{}"));
        let h = header(&tok(r#"{"alg":"RS256","kid":"k1"}"#)).unwrap();
        assert_eq!((h.alg.as_str(), h.kid.as_deref()), ("RS256", Some("k1")));
        let none = header(&tok(r#"{"alg":"none"}"#)).unwrap_err();
        assert_eq!(none.code(), Code::JwtUnsigned);
        let hmac = header(&tok(r#"{"alg":"HS256","kid":"k1"}"#)).unwrap_err();
        assert_eq!(hmac.code(), Code::JwtUnsigned);
        for bad in ["a.b", "a.b.c.d", "!!.b.c"] {
            assert_eq!(header(bad).unwrap_err().code(), Code::JwtMalformed);
        }
    }

    #[test]
    fn a_token_is_current_within_the_leeway_only() {
        assert!(check_times(Some(1000.0), None, 1000.0, 60.0).is_ok());
        assert!(check_times(Some(1000.0), None, 1059.0, 60.0).is_ok());
        assert!(check_times(Some(1000.0), None, 1061.0, 60.0).is_err());
        assert!(check_times(None, None, 0.0, 60.0).is_err());
        assert!(check_times(Some(5000.0), Some(1059.0), 1000.0, 60.0).is_ok());
        let e = check_times(Some(5000.0), Some(1061.0), 1000.0, 60.0).unwrap_err();
        assert_eq!(e.code(), Code::JwtExpired);
    }
}
