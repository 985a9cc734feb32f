//! The `requestState` of a review through `input_required` results (MCP 2026-07-28), and
//! the reviews in flight.
//!
//! A client echoes `requestState` back on its retry, so what comes back is the client's
//! input, never trusted. Two things guard it, because neither suffices alone:
//!
//! - **A signature** (HMAC-SHA256, the SDK's `RequestStateCodec`, with this root's key in
//!   [`KEY_FILE`], kept like `audit.key`: created once, mode 0600, never sent). It binds
//!   the state to the caller and the call (associated data: the caller's actor and
//!   source, and the context reviewed), and carries the review, its round, the request
//!   id, the digest of the request's body (the question), the lease id and an expiry. A
//!   forged, altered, expired or another caller's state fails here, before anything is
//!   looked up.
//! - **The table of reviews in flight** ([`Reviews`]), in this process: a signature
//!   cannot say that a state was used already, so each review's current round lives
//!   here, and a state of an earlier round (a replay) or of a review that ended is
//!   refused. The table also holds the lease token: the state names the lease by its id
//!   only, because it is signed, not encrypted, and the token is what acts for the
//!   context. The table's keeper heartbeats the lease between the round trips and
//!   releases it when the review's time is up (`--form-timeout`), so an abandoned review
//!   does not hold the context; a server that dies takes the table with it, and the
//!   lease runs out after its ttl.
//!
//! Every refusal is [`StateError`] (the stable code `BAD_REVIEW_STATE`) and changes
//! nothing: it is decided before the store is touched.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};

use super::backend::Backend;
use crate::error::{Error, Result};
use crate::protocol::{Code, UserQuestionError};
use crate::root::Root;

/// The key file in the state root (32 random bytes, hex).
pub const KEY_FILE: &str = "mcp-state.key";

/// What [`KEY_FILE`] holds, in messages.
pub const KEY_WHAT: &str = "MCP review state key";

/// Why a `requestState` is refused (one code, `BAD_REVIEW_STATE`, for all).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The signature does not verify for this caller and call, or the state expired.
    /// (The cases are not told apart to the client, as the SDK's codec asks.)
    #[error(
        "the requestState is not one this server gave this caller for this review (forged, \
         altered, expired, or another caller's); call review_next again without requestState"
    )]
    Invalid,
    /// A state of an earlier round, or of a review that has ended.
    #[error(
        "the requestState was used already, or its review has ended (answered, stopped, timed \
         out, or the server restarted); call review_next again without requestState"
    )]
    Replayed,
}

impl StateError {
    /// As the protocol's error.
    pub fn to_user_error(&self) -> UserQuestionError {
        UserQuestionError::new(Code::BadReviewState, self.to_string())
    }
}

/// What a signed state says (readable by anyone: no secret goes in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sealed {
    /// The review (a random id, the table's key).
    pub review: String,
    /// Its round: each retry consumes one.
    pub round: u32,
    /// The dsh request under review.
    pub request: String,
    /// `sha256` hex of the request's stored body: the question the form was built from.
    pub digest: String,
    /// The id of the lease the review holds (0: none, for a review handed to the page).
    pub lease: i64,
}

/// A review in flight.
#[derive(Debug)]
pub struct Live {
    /// What its current state says.
    pub sealed: Sealed,
    /// The lease token (never in the state); `None` when the review holds no lease.
    pub token: Option<String>,
    /// How many forms of this request could not stand as an answer so far.
    pub refused: u32,
    keeper: Option<tokio::task::JoinHandle<()>>,
}

impl Live {
    /// A review of `sealed`, holding the lease `token` when given.
    pub fn new(sealed: Sealed, token: Option<String>) -> Live {
        Live {
            sealed,
            token,
            refused: 0,
            keeper: None,
        }
    }
}

/// The reviews in flight in this process, and the signing key.
#[derive(Default)]
pub struct Reviews {
    live: Mutex<HashMap<String, Live>>,
    codec: Mutex<Option<Arc<RequestStateCodec>>>,
}

impl std::fmt::Debug for Reviews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reviews").finish_non_exhaustive()
    }
}

/// The associated data of a state: who calls, and which context they review.
pub fn bound_to(actor: &str, source: &str, context: &str) -> Vec<u8> {
    format!("dshq/review_next\n{actor}\n{source}\n{context}").into_bytes()
}

/// A fresh random id (128 bits, hex).
pub fn random_id() -> Result<String> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b)
        .map_err(|e| Error::io("the OS random source", std::io::Error::other(e.to_string())))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

impl Reviews {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The codec over this root's key (read, or created, once per process).
    pub fn codec(&self, root: &Root) -> Result<Arc<RequestStateCodec>> {
        let mut slot = self.codec.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = &*slot {
            return Ok(c.clone());
        }
        let key = load_or_create_key(root)?;
        let codec = RequestStateCodec::try_new(key.to_vec()).map_err(|e| {
            Error::io(
                root.dir().join(KEY_FILE),
                std::io::Error::other(e.to_string()),
            )
        })?;
        let codec = Arc::new(codec);
        *slot = Some(codec.clone());
        Ok(codec)
    }

    /// Seal `sealed` for the caller `bound` (see [`bound_to`]), valid for `ttl`.
    pub fn seal(codec: &RequestStateCodec, sealed: &Sealed, bound: &[u8], ttl: Duration) -> String {
        let opts = SealOptions::new().associated_data(bound).ttl(ttl);
        codec
            .seal_json_with(sealed, &opts)
            .expect("a sealed state serializes")
    }

    /// Verify a state the client sent back.
    pub fn open(
        codec: &RequestStateCodec,
        state: &str,
        bound: &[u8],
    ) -> std::result::Result<Sealed, StateError> {
        codec.open_json_with(state, bound).map_err(|e| {
            let why = match e {
                RequestStateError::Expired => "expired",
                _ => "does not verify",
            };
            tracing::info!(why, "refused a requestState");
            StateError::Invalid
        })
    }

    /// Put a review in the table, with a keeper that heartbeats its lease every `ttl / 3`
    /// and, after `life`, ends it (releasing the lease) if it is still there.
    pub fn begin(
        self: &Arc<Self>,
        backend: &Backend,
        mut live: Live,
        ttl: Duration,
        life: Duration,
    ) {
        let review = live.sealed.review.clone();
        let (me, backend2, token) = (self.clone(), backend.clone(), live.token.clone());
        live.keeper = Some(tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + life;
            let every = (ttl / 3).max(Duration::from_millis(200));
            loop {
                let next = (tokio::time::Instant::now() + every).min(deadline);
                tokio::time::sleep_until(next).await;
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
                if let Some(token) = token.clone() {
                    let r = backend2.write(move |store| store.heartbeat(&token)).await;
                    if let Err(e) = r {
                        tracing::info!(error = %e, "a review's lease ended: dropping the review");
                        break;
                    }
                }
            }
            let gone = me.table().remove(&review);
            if let Some(mut live) = gone {
                tracing::info!("a review through input_required was abandoned: ending it");
                live.keeper = None;
                end(&backend2, live).await;
            }
        }));
        self.table().insert(live.sealed.review.clone(), live);
    }

    /// Take out the review `sealed` names, when `sealed` is its current round (the state
    /// is then used up); a replay or an ended review is refused.
    pub fn take(&self, sealed: &Sealed) -> std::result::Result<Live, StateError> {
        let mut table = self.table();
        match table.get(&sealed.review) {
            Some(live) if live.sealed == *sealed => {}
            Some(_) | None => return Err(StateError::Replayed),
        }
        Ok(table.remove(&sealed.review).expect("present"))
    }

    /// Put back a review taken out, at its next round (a form shown again).
    pub fn put_back(&self, live: Live) {
        self.table().insert(live.sealed.review.clone(), live);
    }

    /// End every review in flight, releasing its lease (the host's stop: a review's claim
    /// goes back to pending now, not at its lease's expiry). A retry after this finds no
    /// review (`BAD_REVIEW_STATE`).
    pub async fn end_all(&self, backend: &Backend) {
        let all: Vec<Live> = self.table().drain().map(|(_, live)| live).collect();
        if !all.is_empty() {
            tracing::info!(
                reviews = all.len(),
                "ending the reviews in flight: the host stops"
            );
        }
        for live in all {
            end(backend, live).await;
        }
    }
}

/// End a review: stop its keeper, release its lease (its claim goes back to pending
/// unless it was answered).
pub async fn end(backend: &Backend, mut live: Live) {
    if let Some(k) = live.keeper.take() {
        k.abort();
    }
    if let Some(token) = live.token.take() {
        let r = backend.write(move |store| store.release(&token)).await;
        if let Err(e) = r {
            tracing::warn!(error = %e, "cannot release a review's lease");
        }
    }
}

fn parse_key(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, b) in key.iter_mut().enumerate() {
        *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

/// The root's key: read it, or create it (under a temporary name, then linked into place
/// without replacing, so two processes agree on one key).
fn load_or_create_key(root: &Root) -> Result<[u8; 32]> {
    let path = root.dir().join(KEY_FILE);
    let read = |path: &std::path::Path| -> Result<Option<[u8; 32]>> {
        match crate::disk::secret::read(path, KEY_WHAT)? {
            Some(t) => parse_key(&t).map(Some).ok_or_else(|| {
                Error::io(
                    path,
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "not a dshq MCP state key (remove it: a new one is made, and reviews in flight are refused)",
                    ),
                )
            }),
            None => Ok(None),
        }
    };
    if let Some(k) = read(&path)? {
        return Ok(k);
    }
    let mut key = [0u8; 32];
    getrandom::getrandom(&mut key)
        .map_err(|e| Error::io(&path, std::io::Error::other(e.to_string())))?;
    let hex: String = key.iter().map(|x| format!("{x:02x}")).collect();
    let tmp = root
        .dir()
        .join(format!(".{KEY_FILE}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| Error::io(&tmp, e))?;
    f.write_all(format!("{hex}\n").as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::io(&tmp, e))?;
    drop(f);
    let linked = std::fs::hard_link(&tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(&path)?
            .ok_or_else(|| Error::io(&path, std::io::Error::other("the key file vanished"))),
        Err(e) => Err(Error::io(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed() -> Sealed {
        Sealed {
            review: "r1".into(),
            round: 0,
            request: "q1".into(),
            digest: "ab".into(),
            lease: 7,
        }
    }

    #[test]
    fn a_state_opens_only_for_its_caller_unaltered() {
        let codec = RequestStateCodec::try_new(vec![7u8; 32]).unwrap();
        let me = bound_to("mcp:a", "web:a", "default");
        let s = Reviews::seal(&codec, &sealed(), &me, Duration::from_secs(60));
        assert_eq!(Reviews::open(&codec, &s, &me), Ok(sealed()));
        let other = bound_to("mcp:b", "web:b", "default");
        assert_eq!(Reviews::open(&codec, &s, &other), Err(StateError::Invalid));
        let mut altered = s.clone().into_bytes();
        let i = altered.len() / 2;
        altered[i] = if altered[i] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert_eq!(
            Reviews::open(&codec, &altered, &me),
            Err(StateError::Invalid)
        );
        assert_eq!(
            Reviews::open(&codec, "rs1.x.y", &me),
            Err(StateError::Invalid)
        );
        assert_eq!(
            StateError::Invalid.to_user_error().code.as_str(),
            "BAD_REVIEW_STATE"
        );
    }

    #[test]
    fn a_round_is_used_once() {
        let reviews = Reviews::default();
        reviews.put_back(Live::new(sealed(), None));
        let live = reviews.take(&sealed()).unwrap();
        assert_eq!(reviews.take(&sealed()).unwrap_err(), StateError::Replayed);
        let mut next = live;
        next.sealed.round += 1;
        reviews.put_back(next);
        assert_eq!(reviews.take(&sealed()).unwrap_err(), StateError::Replayed);
    }

    #[test]
    fn a_key_file_is_a_hex_key() {
        assert_eq!(parse_key(&"0a".repeat(32)), Some([10u8; 32]));
        assert_eq!(parse_key("0a0b"), None);
        assert_eq!(parse_key(&"zz".repeat(32)), None);
    }
}
