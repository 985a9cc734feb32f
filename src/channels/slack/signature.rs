//! Slack's request signatures ("Verifying requests from Slack"): Slack sends
//! `X-Slack-Request-Timestamp` (unix seconds) and `X-Slack-Signature`, `v0=` and the hex
//! of HMAC-SHA256 keyed by the app's signing secret over `v0:{timestamp}:{raw body}`. A
//! request is Slack's when the signature matches (compared in constant time, by the HMAC's
//! own check) and its timestamp is within five minutes of now (a captured request cannot
//! be replayed later). "Now" is the store's clock, the one every deadline is judged by.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The signature scheme's version, the prefix of the signed text and of the header.
pub const VERSION: &str = "v0";

/// How far a request's timestamp may be from now, in seconds (Slack's five minutes).
pub const WINDOW_SECS: i64 = 5 * 60;

/// Why a request is not Slack's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A header is missing or is not what Slack sends (`v0=` and hex, a decimal time).
    Malformed(&'static str),
    /// The signature does not match the body and timestamp.
    Mismatch,
    /// Signed, but its timestamp is this many seconds away from now.
    Stale(i64),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Malformed(what) => write!(f, "{what}"),
            Refusal::Mismatch => f.write_str("the X-Slack-Signature does not match the request"),
            Refusal::Stale(age) => write!(
                f,
                "the request's timestamp is {age}s from now, outside Slack's {WINDOW_SECS}s window"
            ),
        }
    }
}

/// An app's signing secret. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct SigningSecret(Vec<u8>);

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret(..)")
    }
}

impl SigningSecret {
    /// The secret as Slack's app settings show it (surrounding whitespace dropped);
    /// `None` when empty.
    pub fn parse(text: &str) -> Option<SigningSecret> {
        let t = text.trim();
        (!t.is_empty()).then(|| SigningSecret(t.as_bytes().to_vec()))
    }

    fn mac(&self, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(VERSION.as_bytes());
        mac.update(b":");
        mac.update(timestamp.as_bytes());
        mac.update(b":");
        mac.update(body);
        mac
    }

    /// The `X-Slack-Signature` of `body` sent at `timestamp` (what Slack computes).
    pub fn sign(&self, timestamp: &str, body: &[u8]) -> String {
        let tag = self.mac(timestamp, body).finalize().into_bytes();
        let mut out = format!("{VERSION}=");
        for b in tag {
            out.push_str(&format!("{b:02x}"));
        }
        out
    }

    /// Whether a request with these headers and `body` is Slack's at `now_secs`.
    pub fn verify(
        &self,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
        now_secs: i64,
    ) -> Result<(), Refusal> {
        let timestamp = timestamp.ok_or(Refusal::Malformed("no X-Slack-Request-Timestamp"))?;
        let sent: i64 = timestamp
            .parse()
            .ok()
            .filter(|_| timestamp.bytes().all(|b| b.is_ascii_digit()))
            .ok_or(Refusal::Malformed(
                "the X-Slack-Request-Timestamp is not unix seconds",
            ))?;
        let signature = signature.ok_or(Refusal::Malformed("no X-Slack-Signature"))?;
        let hex = signature
            .strip_prefix(VERSION)
            .and_then(|s| s.strip_prefix('='))
            .ok_or(Refusal::Malformed("the X-Slack-Signature is not v0=HEX"))?;
        let tag =
            decode_hex(hex).ok_or(Refusal::Malformed("the X-Slack-Signature is not v0=HEX"))?;
        // The HMAC's own comparison is constant-time.
        self.mac(timestamp, body)
            .verify_slice(&tag)
            .map_err(|_| Refusal::Mismatch)?;
        let age = (now_secs - sent).abs();
        if age > WINDOW_SECS {
            return Err(Refusal::Stale(age));
        }
        Ok(())
    }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of Slack's documentation (its secret, timestamp, body and the
    /// signature it gives).
    #[test]
    fn slacks_documented_example_verifies() {
        let secret = SigningSecret::parse("8f742231b10e8888abcd99yyyzzz85a5").unwrap();
        let ts = "1531420618";
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let want = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(secret.sign(ts, body), want);
        assert_eq!(
            secret.verify(Some(ts), Some(want), body, 1_531_420_618 + 10),
            Ok(())
        );
    }

    #[test]
    fn a_changed_body_a_bad_header_or_an_old_time_is_refused() {
        let s = SigningSecret::parse("secret").unwrap();
        let sig = s.sign("1000", b"payload=x");
        assert_eq!(
            s.verify(Some("1000"), Some(&sig), b"payload=x", 1000),
            Ok(())
        );
        assert_eq!(
            s.verify(Some("1000"), Some(&sig), b"payload=y", 1000),
            Err(Refusal::Mismatch)
        );
        assert_eq!(
            s.verify(Some("1001"), Some(&sig), b"payload=x", 1000),
            Err(Refusal::Mismatch)
        );
        assert_eq!(
            s.verify(
                Some("1000"),
                Some(&sig),
                b"payload=x",
                1000 + WINDOW_SECS + 1
            ),
            Err(Refusal::Stale(WINDOW_SECS + 1))
        );
        assert_eq!(
            s.verify(Some("1000"), Some(&sig), b"payload=x", 1000 - WINDOW_SECS),
            Ok(())
        );
        assert!(matches!(
            s.verify(None, Some(&sig), b"payload=x", 1000),
            Err(Refusal::Malformed(_))
        ));
        assert!(matches!(
            s.verify(Some("-5"), Some(&sig), b"payload=x", 1000),
            Err(Refusal::Malformed(_))
        ));
        assert!(matches!(
            s.verify(Some("1000"), Some(&sig[3..]), b"payload=x", 1000),
            Err(Refusal::Malformed(_))
        ));
        assert!(matches!(
            s.verify(Some("1000"), Some("v0=zz"), b"payload=x", 1000),
            Err(Refusal::Malformed(_))
        ));
        let other = SigningSecret::parse("other").unwrap();
        assert_eq!(
            other.verify(Some("1000"), Some(&sig), b"payload=x", 1000),
            Err(Refusal::Mismatch)
        );
        assert_eq!(format!("{s:?}"), "SigningSecret(..)");
        assert!(SigningSecret::parse("  \n").is_none());
    }
}
