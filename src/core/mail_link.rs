//! The signed, expiring, one-request link a mail carries: what it binds and how
//! it is checked, pure (no I/O; the key is read by [`crate::app::mail_key`]).
//!
//! Why a signed token and not a row: the mail is written by the sender long before anyone
//! follows it, possibly by another host; the page checks it with the root's `mail.key`
//! alone. The token is `v1.` + base64url(claims JSON) + `.` + base64url(HMAC-SHA256 over
//! the version and the encoded claims). The claims bind the request, the context it was
//! sent for (the recipient is that context's: a link acts only while the request is there,
//! [`sent_for`]), the recipient (whose identity the link's session acts as:
//! `mail:ADDRESS`), an expiry and a link id. The link
//! id is derived from the delivery and the recipient ([`LinkKey::link_id`]), so a mail sent
//! again after a crash carries the very same link, and "used" (an answer was sent through
//! it: [`crate::store::queue::links`]) is recorded per link id.
//!
//! Nothing here decides what following a link does: the page's link route
//! ([`crate::web::page::link`]) opens a session scoped to the request and never answers.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::clock::Millis;
use crate::protocol::Code;

/// The token's version prefix.
const VERSION: &str = "v1";

/// What a link grants: one request, to one recipient, until an instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkClaims {
    /// The request it opens.
    #[serde(rename = "r")]
    pub request_id: String,
    /// The context whose recipients it was sent to: it acts only while the request is in
    /// that context ([`sent_for`]).
    #[serde(rename = "c")]
    pub context: String,
    /// The address it was sent to (the session acts as `mail:ADDRESS`).
    #[serde(rename = "to")]
    pub recipient: String,
    /// When it stops opening anything (ms since the epoch, the daemon's clock).
    #[serde(rename = "exp")]
    pub expires_ms: Millis,
    /// The link's id (32 hex digits), recorded once an answer was sent through it.
    #[serde(rename = "l")]
    pub link_id: String,
    /// When it was made (ms since the epoch: its delivery's time). A request id is free
    /// again once its request is pruned, so the link opens the request of that id asked
    /// before it was made, never a later one ([`opens`]).
    #[serde(rename = "iat")]
    pub issued_ms: Millis,
}

/// Whether a link made at `issued_ms` opens a request asked at `asked_ms`: the one it was
/// sent for was asked before the link was made; a request asked later under the same id
/// (after the first was pruned) is another's, and the link opens nothing.
pub fn opens(issued_ms: Millis, asked_ms: Millis) -> bool {
    asked_ms <= issued_ms
}

/// Whether a link sent for `context` acts on a request that is now in `now_in`: only in
/// the context it was sent for. A request escalated to another context is that context's
/// reviewers' to answer; the old context's mails (and their links) speak for it no more.
pub fn sent_for(context: &str, now_in: &str) -> Result<(), crate::protocol::UserQuestionError> {
    if context == now_in {
        return Ok(());
    }
    Err(crate::protocol::UserQuestionError::new(
        Code::WrongContext,
        format!(
            "this link was sent to the reviewers of context {context:?}, and the request is now \
             in context {now_in:?} (escalated): it is theirs to answer now, and this link \
             changes nothing"
        ),
    ))
}

/// Why a link is refused (each a stable code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Not a token this root signed: malformed, altered, or signed with another key.
    #[error("this link is not one dshq signed, or it was changed: ask for the request to be sent again, or log in to the page")]
    Invalid,
    /// Past its expiry.
    #[error("this link expired at {at}: log in to the page to answer, or ask for a new mail")]
    Expired {
        /// When it expired (RFC 3339).
        at: String,
    },
    /// It was made for the request as it was then, and the request of that id now is
    /// another (its digest differs): nothing acts on a request that is not the one shown.
    #[error("this action was made for another version of request {request_id:?}: open the request on the page")]
    Changed {
        /// The request it named.
        request_id: String,
    },
    /// An answer was already sent through it.
    #[error("this link was already used: an answer to request {request_id:?} was sent through it")]
    Used {
        /// The request it opened.
        request_id: String,
    },
}

impl Refused {
    /// The stable code.
    pub fn code(&self) -> Code {
        match self {
            Refused::Invalid | Refused::Changed { .. } => Code::LinkInvalid,
            Refused::Expired { .. } => Code::LinkExpired,
            Refused::Used { .. } => Code::LinkUsed,
        }
    }
}

/// The root's link-signing key (32 bytes). Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct LinkKey([u8; 32]);

impl std::fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkKey(..)")
    }
}

impl LinkKey {
    /// The key of these bytes.
    pub fn new(bytes: [u8; 32]) -> LinkKey {
        LinkKey(bytes)
    }

    /// The key's bytes (to write its file).
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn mac(&self, domain: &str) -> Hmac<Sha256> {
        let mut m =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        m.update(domain.as_bytes());
        m.update(b".");
        m
    }

    /// The link id of the mail of delivery `delivery_id` to `recipient` (or of the push
    /// message of that delivery to one device, `recipient` then naming the device): stable,
    /// so a message sent again carries the same link; distinct per delivery and recipient.
    pub fn link_id(&self, delivery_id: &str, recipient: &str) -> String {
        let mut m = self.mac("dshq-mail-link-id");
        m.update(delivery_id.as_bytes());
        m.update(b"\n");
        m.update(recipient.as_bytes());
        crate::protocol::digest::hex(&m.finalize().into_bytes()[..16])
    }

    /// The token of `claims`: `v1.` + base64url(claims JSON) + `.` + base64url(HMAC-SHA256
    /// in the claims' own domain over the version and the encoded claims).
    pub fn sign<T: Signed>(&self, claims: &T) -> String {
        let json = serde_json::to_vec(claims).expect("the claims serialize");
        let payload = URL_SAFE_NO_PAD.encode(json);
        let mut m = self.mac(T::DOMAIN);
        m.update(VERSION.as_bytes());
        m.update(b".");
        m.update(payload.as_bytes());
        let sig = URL_SAFE_NO_PAD.encode(m.finalize().into_bytes());
        format!("{VERSION}.{payload}.{sig}")
    }

    /// The claims of mail link `token` when this key signed it and it has not expired at
    /// `now` ([`LinkKey::verify_as`]).
    pub fn verify(&self, token: &str, now: Millis) -> Result<LinkClaims, Refused> {
        self.verify_as(token, now)
    }

    /// The claims of kind `T` of `token` when this key signed it in `T`'s domain and they
    /// have not expired at `now`. The signature is compared in constant time; a token that
    /// does not verify is [`Refused::Invalid`] whatever else is wrong with it.
    pub fn verify_as<T: Signed>(&self, token: &str, now: Millis) -> Result<T, Refused> {
        let mut parts = token.split('.');
        let (Some(VERSION), Some(payload), Some(sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Refused::Invalid);
        };
        let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| Refused::Invalid)?;
        let mut m = self.mac(T::DOMAIN);
        m.update(VERSION.as_bytes());
        m.update(b".");
        m.update(payload.as_bytes());
        m.verify_slice(&sig).map_err(|_| Refused::Invalid)?;
        let json = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| Refused::Invalid)?;
        let claims: T = serde_json::from_slice(&json).map_err(|_| Refused::Invalid)?;
        if now >= claims.expires_ms() {
            return Err(Refused::Expired {
                at: crate::clock::rfc3339(claims.expires_ms()),
            });
        }
        Ok(claims)
    }
}

/// Claims a token signed with the root's [`LinkKey`] carries: a mail's link
/// ([`LinkClaims`]), a push notification's one-tap action
/// ([`crate::core::push_action::ActionClaims`]). Each kind is signed in its own domain, so
/// a token of one kind never verifies as another; the signing, its check and the expiry
/// are written once, here.
pub trait Signed: Serialize + serde::de::DeserializeOwned {
    /// The HMAC's domain of this kind.
    const DOMAIN: &'static str;

    /// When the token stops acting (ms since the epoch, the daemon's clock).
    fn expires_ms(&self) -> Millis;
}

impl Signed for LinkClaims {
    const DOMAIN: &'static str = "dshq-mail-link";

    fn expires_ms(&self) -> Millis {
        self.expires_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> LinkClaims {
        LinkClaims {
            request_id: "r1".into(),
            context: "default".into(),
            recipient: "alice@example.com".into(),
            expires_ms: 2_000,
            link_id: "00ff".into(),
            issued_ms: 1_000,
        }
    }

    #[test]
    fn a_signed_link_verifies_until_it_expires() {
        let k = LinkKey::new([7; 32]);
        let t = k.sign(&claims());
        assert_eq!(k.verify(&t, 1_999), Ok(claims()));
        assert!(matches!(k.verify(&t, 2_000), Err(Refused::Expired { .. })));
        assert_eq!(k.verify(&t, 2_000).unwrap_err().code(), Code::LinkExpired);
    }

    #[test]
    fn any_changed_character_or_another_key_is_refused() {
        let k = LinkKey::new([7; 32]);
        let t = k.sign(&claims());
        for i in 0..t.len() {
            let mut b = t.clone().into_bytes();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(b).unwrap();
            if changed != t {
                assert_eq!(k.verify(&changed, 0), Err(Refused::Invalid), "at {i}");
            }
        }
        assert_eq!(LinkKey::new([8; 32]).verify(&t, 0), Err(Refused::Invalid));
        assert_eq!(k.verify("", 0), Err(Refused::Invalid));
        assert_eq!(k.verify(&format!("{t}.x"), 0), Err(Refused::Invalid));
        assert_eq!(format!("{k:?}"), "LinkKey(..)");
    }

    #[test]
    fn a_link_id_is_stable_per_delivery_and_recipient() {
        let k = LinkKey::new([7; 32]);
        let a = k.link_id("d1", "alice@example.com");
        assert_eq!(a.len(), 32);
        assert_eq!(a, k.link_id("d1", "alice@example.com"));
        assert_ne!(a, k.link_id("d2", "alice@example.com"));
        assert_ne!(a, k.link_id("d1", "bob@example.com"));
    }
}
