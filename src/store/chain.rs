//! The event chain, apart from any backend: the event to append, the hash each event
//! carries (plain SHA-256, or HMAC-SHA256 under the root's key), the key file beside the
//! store, the walk that verifies a chain, and the head anchored after each commit.
//!
//! Each backend stores the events and appends them under its own write lock (SQLite's
//! `BEGIN IMMEDIATE`, PostgreSQL's transaction lock); what a hash covers and how a chain
//! verifies is written once, here, so a chain copied from one backend to another verifies
//! unchanged.
//!
//! A plain SHA-256 chain only proves that whoever wrote the log computed it: anyone who can
//! write the database can edit an event and recompute every later hash. So the chain is
//! keyed: from the event named in the key file on, each hash is an HMAC-SHA256 under a key
//! kept in `audit.key` in the root (never in the database, never in an event, never
//! logged). Events written before a root had a key keep their plain hashes; the key file
//! records where the keyed part starts, so that switch point cannot be moved from the
//! database.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::error::{Error, Result};
use crate::store::anchor::{write_anchor, Anchor, ANCHOR_FILE};
use crate::store::types::ChainBreak;

/// The key file of the keyed chain, in the root beside `dshq.db`.
pub const KEY_FILE: &str = "audit.key";

/// What [`KEY_FILE`] holds, in messages.
pub const KEY_WHAT: &str = "event chain's HMAC key";

const KEY_MAGIC: &str = "dshq audit key v1";

/// The hash the first event chains from.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// An event to append: what happened and who did it are the audit's enums
/// ([`crate::core::audit`]); the row keeps their text forms.
#[derive(Debug, Clone)]
pub struct NewEvent<'a> {
    /// What happened.
    pub kind: EventKind,
    /// The request concerned.
    pub request_id: Option<&'a str>,
    /// The lease concerned.
    pub lease_id: Option<i64>,
    /// The agent concerned.
    pub agent_id: Option<&'a str>,
    /// Who did it.
    pub actor: Actor,
    /// Details, a JSON object.
    pub data: serde_json::Value,
}

/// The key of the keyed chain and the first event it covers.
#[derive(Clone, PartialEq, Eq)]
pub struct AuditKey {
    secret: [u8; 32],
    /// The first seq whose hash is keyed; earlier events keep their plain SHA-256.
    pub since: i64,
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditKey")
            .field("since", &self.since)
            .finish_non_exhaustive()
    }
}

impl AuditKey {
    /// A key from its parts (tests and tools).
    pub fn new(secret: [u8; 32], since: i64) -> AuditKey {
        AuditKey { secret, since }
    }

    fn to_file(&self) -> String {
        format!(
            "{KEY_MAGIC}\nsince {}\nkey {}\n",
            self.since,
            hex(&self.secret)
        )
    }

    fn parse(text: &str) -> Option<AuditKey> {
        let mut lines = text.lines();
        if lines.next()? != KEY_MAGIC {
            return None;
        }
        let since: i64 = lines.next()?.strip_prefix("since ")?.parse().ok()?;
        let key = lines.next()?.strip_prefix("key ")?;
        if since < 1 || key.len() != 64 || lines.next().is_some() {
            return None;
        }
        let mut secret = [0u8; 32];
        for (i, b) in secret.iter_mut().enumerate() {
            *b = u8::from_str_radix(key.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(AuditKey { secret, since })
    }
}

/// Read the key file of the root `dir`, if there is one.
pub fn load_key(dir: &Path) -> Result<Option<AuditKey>> {
    let path = dir.join(KEY_FILE);
    match crate::disk::secret::read(&path, KEY_WHAT)? {
        Some(text) => AuditKey::parse(&text).map(Some).ok_or_else(|| {
            Error::io(
                &path,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "not a dshq audit key file (restore it from a backup: the keyed chain cannot be verified without it)",
                ),
            )
        }),
        None => Ok(None),
    }
}

/// Keys already read by this process, per root.
static KEYS: Mutex<Vec<(PathBuf, Arc<AuditKey>)>> = Mutex::new(Vec::new());

/// The root's key, created (covering events from `next_seq` on) when the root has none.
/// Only a writer holding the log's append lock (SQLite's writer, PostgreSQL's chain lock) calls this, so two processes never
/// create keys with different start points; a concurrent creation still resolves to one
/// file (created under a temporary name, then linked into place without replacing).
///
/// A log whose newest event is keyed already has a key somewhere: creating another would
/// fork the chain (the events before it would verify under neither key, even once the
/// real key is restored), so that is refused, naming the key file.
pub fn key_for_append(
    dir: &Path,
    next_seq: i64,
    newest_is_keyed: impl FnOnce() -> Result<bool>,
) -> Result<Arc<AuditKey>> {
    let mut cache = KEYS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, k)) = cache.iter().find(|(d, _)| d == dir) {
        return Ok(k.clone());
    }
    let key = match load_key(dir)? {
        Some(k) => k,
        None => {
            if newest_is_keyed()? {
                return Err(Error::io(
                    dir.join(KEY_FILE),
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "the event log is keyed but the key file is missing; restore it \
                         (from the root this database came from, or a backup) before \
                         writing: a new key would leave the log unverifiable",
                    ),
                ));
            }
            let mut secret = [0u8; 32];
            getrandom::getrandom(&mut secret)
                .map_err(|e| Error::io(dir.join(KEY_FILE), std::io::Error::other(e.to_string())))?;
            let key = AuditKey {
                secret,
                since: next_seq,
            };
            create_key_file(dir, &key)?;
            tracing::info!(
                since = next_seq,
                "created the audit key (the chain is keyed from here on)"
            );
            // Another process may have won the race: the file is the authority.
            load_key(dir)?.unwrap_or(key)
        }
    };
    let key = Arc::new(key);
    cache.push((dir.to_path_buf(), key.clone()));
    Ok(key)
}

fn create_key_file(dir: &Path, key: &AuditKey) -> Result<()> {
    let path = dir.join(KEY_FILE);
    let tmp = dir.join(format!(".{KEY_FILE}.{}.tmp", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| Error::io(&tmp, e))?;
    f.write_all(key.to_file().as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::io(&tmp, e))?;
    drop(f);
    // Linked into place so an existing key is never replaced; where the file system has
    // no hard links, renamed (the caller holds the database's write lock, so no other
    // dshq writer is creating one meanwhile).
    match fs::hard_link(&tmp, &path) {
        Ok(()) => {
            let _ = fs::remove_file(&tmp);
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let _ = fs::remove_file(&tmp);
        }
        Err(_) => fs::rename(&tmp, &path).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            Error::io(&path, e)
        })?,
    }
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// What an event's hash covers: the event's content and the hash it chains from. One
/// value for the plain, the keyed and the chained hash, so the three cannot disagree on
/// what they cover.
#[derive(Debug, Clone, Copy)]
pub struct HashInput<'a> {
    /// The previous event's hash ([`GENESIS`] for the first).
    pub prev_hash: &'a str,
    /// The event's position in the log.
    pub seq: i64,
    /// When it happened.
    pub at_ms: Millis,
    /// Its kind, as stored.
    pub kind: &'a str,
    /// The request concerned.
    pub request_id: Option<&'a str>,
    /// The lease concerned.
    pub lease_id: Option<i64>,
    /// The agent concerned.
    pub agent_id: Option<&'a str>,
    /// Who did it, as stored.
    pub actor: &'a str,
    /// Its details, the stored JSON text.
    pub data: &'a str,
}

impl HashInput<'_> {
    /// The JSON array `[prev_hash, seq, at_ms, kind, request_id, lease_id, agent_id, actor,
    /// data]`. Serialized from a tuple (a JSON array, the same bytes as the `json!` array
    /// it was built as before, without building that value first: one per event).
    fn canonical(&self) -> String {
        serde_json::to_string(&(
            self.prev_hash,
            self.seq,
            self.at_ms,
            self.kind,
            self.request_id,
            self.lease_id,
            self.agent_id,
            self.actor,
            self.data,
        ))
        .expect("an event serializes")
    }

    /// The plain hash (SHA-256): the chain of events written before the root had a key
    /// (and of in-memory stores).
    pub fn plain(&self) -> String {
        hex(&Sha256::digest(self.canonical().as_bytes()))
    }

    /// The keyed hash (HMAC-SHA256 under `key`).
    pub fn keyed(&self, key: &AuditKey) -> String {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&key.secret).expect("HMAC takes a key of any length");
        mac.update(self.canonical().as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// The hash this event must carry: keyed from the key's `since` on, plain before.
    pub fn chained(&self, key: Option<&AuditKey>) -> String {
        match key {
            Some(k) if self.seq >= k.since => self.keyed(k),
            _ => self.plain(),
        }
    }
}

pub use crate::protocol::digest::hex;

/// The chain's head inside one write transaction once it appended an event: the next
/// append of the same transaction chains from it instead of reading the log's last event
/// again, and after the commit [`ChainHead::publish`] writes it to the root's
/// `audit.head`. A driver keeps it in its write context, one per transaction, so it is
/// only ever that transaction's; a rollback drops it with the context, and a rollback to a
/// savepoint reads it again.
#[derive(Debug)]
pub struct ChainHead {
    /// The root, for the anchor file; `None` for an in-memory store.
    pub dir: Option<PathBuf>,
    /// The key appends of this transaction hash with.
    pub key: Option<Arc<AuditKey>>,
    /// The newest event appended.
    pub anchor: Anchor,
}

impl ChainHead {
    /// After the commit: write the head to `audit.head` (atomically: a temporary file
    /// renamed over it). A failure is logged, not returned: the write is committed, and
    /// the anchor only lags (a lagging anchor is still contained in the log).
    pub fn publish(&self) {
        let Some(dir) = &self.dir else { return };
        if let Err(e) = write_anchor(&dir.join(ANCHOR_FILE), &self.anchor) {
            tracing::warn!(error = %e, "could not write the audit head");
        }
    }
}

/// Walks a chain event by event, oldest first: the one check both backends run, so
/// they cannot disagree on what a valid chain is.
#[derive(Debug)]
pub struct ChainWalk<'k> {
    key: Option<&'k AuditKey>,
    prev: String,
    expected_seq: i64,
    /// Events seen so far.
    pub count: i64,
}

impl<'k> ChainWalk<'k> {
    /// A walk from the first event, keyed with `key` from its `since` on.
    pub fn new(key: Option<&'k AuditKey>) -> ChainWalk<'k> {
        ChainWalk {
            key,
            prev: GENESIS.to_string(),
            expected_seq: 1,
            count: 0,
        }
    }

    /// A walk of a log whose prefix was pruned: from the event after `from`'s head (the
    /// first event, as genesis is, when there is no checkpoint). The checkpoint event
    /// itself is checked when the walk reaches it, like any other: its hash covers the
    /// head it claims, so a claim that was changed, or a checkpoint forged without the
    /// key, breaks the chain there.
    pub fn from(key: Option<&'k AuditKey>, from: Option<&Checkpoint>) -> ChainWalk<'k> {
        match from {
            None => ChainWalk::new(key),
            Some(c) => ChainWalk {
                key,
                prev: c.hash.clone(),
                expected_seq: c.seq + 1,
                count: 0,
            },
        }
    }

    /// Check the next event (`input` as stored, `hash` as stored): `Some` is the first
    /// break, after which the walk should stop.
    pub fn step(&mut self, input: &HashInput<'_>, hash: &str) -> Option<ChainBreak> {
        self.count += 1;
        let seq = input.seq;
        if seq != self.expected_seq {
            return Some(ChainBreak {
                seq: self.expected_seq,
                problem: format!("event {} is missing (next is {seq})", self.expected_seq),
            });
        }
        if input.prev_hash != self.prev {
            return Some(ChainBreak {
                seq,
                problem: "its prev_hash does not match the previous event (removed or reordered)"
                    .into(),
            });
        }
        if input.chained(self.key) != hash {
            return Some(ChainBreak {
                seq,
                problem: "its content does not match its hash (changed)".into(),
            });
        }
        self.prev = hash.to_string();
        self.expected_seq += 1;
        None
    }
}

/// What a `pruned` event records: the head (seq, hash) of the prefix of the log that
/// `dshq prune` removed. The log then starts at `seq + 1`, whose `prev_hash` is `hash`.
///
/// A removed request may have events after the prefix (accepted inside it, answered after
/// it: a queue that never drains has such requests at every position): those stay in the
/// log, rowless, and `open` names their ids, so the record check passes over them (every
/// lifecycle event of such an id up to its next acceptance) instead of calling them events
/// without a row. A later prune removes them with its prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The newest removed event.
    pub seq: i64,
    /// Its hash.
    pub hash: String,
    /// Removed requests with events after the prefix.
    pub open: Vec<String>,
}

impl Checkpoint {
    /// The fields a `pruned` event carries in its data (beside its counts).
    pub fn to_data(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("prunedSeq".into(), self.seq.into());
        m.insert("prunedHash".into(), self.hash.clone().into());
        m.insert("openIds".into(), self.open.clone().into());
        m
    }

    /// The checkpoint a `pruned` event's data records; `None` when it records none.
    pub fn from_data(data: &serde_json::Value) -> Option<Checkpoint> {
        let open = match data.get("openIds") {
            None => Vec::new(),
            Some(v) => v
                .as_array()?
                .iter()
                .map(|s| s.as_str().map(str::to_string))
                .collect::<Option<_>>()?,
        };
        Some(Checkpoint {
            seq: data.get("prunedSeq")?.as_i64()?,
            hash: data.get("prunedHash")?.as_str()?.to_string(),
            open,
        })
    }

    /// The events (by seq) that belong to removed requests: given the log's events after
    /// the prefix as (seq, kind, request id), oldest first, the lifecycle events of each id
    /// in `open` up to that id's next `accepted` event (a request asked again under the id
    /// is a new request, checked as any other; a rejection under it changes nothing).
    pub fn rowless<'a>(
        &self,
        events: impl IntoIterator<Item = (i64, &'a str, Option<&'a str>)>,
    ) -> std::collections::HashSet<i64> {
        let mut open: std::collections::HashSet<&str> =
            self.open.iter().map(String::as_str).collect();
        let mut out = std::collections::HashSet::new();
        for (seq, kind, id) in events {
            if open.is_empty() {
                break;
            }
            let Some(id) = id else { continue };
            if !open.contains(id) {
                continue;
            }
            match kind {
                "accepted" => {
                    open.remove(id);
                }
                // A rejection under the id reserves nothing and has no lifecycle events.
                "rejected" => {}
                _ => {
                    out.insert(seq);
                }
            }
        }
        out
    }
}

/// Where the walk of a log starts, from its first stored event's seq (`None`: an empty
/// log) and the newest `pruned` event's data (`None`: never pruned): the checkpoint to
/// walk from, or why the log cannot be walked at all. Pruning removes a prefix and appends
/// its checkpoint in one transaction, and a later prune's checkpoint covers the earlier
/// ones, so the newest checkpoint is the one the log starts after.
pub fn walk_start(
    first_seq: Option<i64>,
    newest_pruned: Option<&serde_json::Value>,
) -> std::result::Result<Option<Checkpoint>, ChainBreak> {
    let checkpoint = match newest_pruned {
        None => None,
        Some(data) => Some(Checkpoint::from_data(data).ok_or_else(|| ChainBreak {
            seq: first_seq.unwrap_or(1),
            problem: "the newest pruned event carries no checkpoint (prunedSeq, prunedHash)".into(),
        })?),
    };
    let start = checkpoint.as_ref().map_or(1, |c| c.seq + 1);
    match first_seq {
        Some(first) if first < start => Err(ChainBreak {
            seq: first,
            problem: format!(
                "the log still holds event {first}, which the checkpoint says was pruned \
                 (the log starts after event {})",
                start - 1
            ),
        }),
        Some(first) if first > start => Err(ChainBreak {
            seq: start,
            problem: match &checkpoint {
                None => format!(
                    "events {start} to {} are missing and no checkpoint accounts for them \
                     (removed outside dshq prune)",
                    first - 1
                ),
                Some(c) => format!(
                    "events {start} to {} are missing: the newest checkpoint pruned only up \
                     to event {} (removed outside dshq prune)",
                    first - 1,
                    c.seq
                ),
            },
        }),
        _ => Ok(checkpoint),
    }
}

/// Whether an anchor (seq, hash) is consistent with a log pruned up to `checkpoint`:
/// `None` when the anchor lies after the pruned prefix (check it against the log), or is
/// the checkpoint's own head; else why it cannot be checked here. An anchor inside the
/// pruned prefix is not silently passed: the events that would prove it are gone from the
/// log (they are in the prune's export file).
pub fn anchor_in_pruned(
    anchor_seq: i64,
    anchor_hash: &str,
    checkpoint: Option<&Checkpoint>,
) -> Option<std::result::Result<(), ChainBreak>> {
    let c = checkpoint?;
    if anchor_seq > c.seq {
        return None;
    }
    if anchor_seq == c.seq {
        return Some(if anchor_hash == c.hash {
            Ok(())
        } else {
            Err(ChainBreak {
                seq: anchor_seq,
                problem: format!(
                    "event {anchor_seq}'s hash in the checkpoint is not the anchor's: the log was rewritten from there"
                ),
            })
        });
    }
    Some(Err(ChainBreak {
        seq: anchor_seq,
        problem: format!(
            "the anchor names event {anchor_seq}, but the log was pruned up to event {} and \
             cannot check it: check it against the prune export that holds it, and keep a \
             newer anchor",
            c.seq
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_round_trips_and_rejects_anything_else() {
        let k = AuditKey::new([7u8; 32], 42);
        let text = k.to_file();
        assert!(text.starts_with("dshq audit key v1\nsince 42\nkey 0707"));
        assert_eq!(AuditKey::parse(&text), Some(k.clone()));
        assert!(
            !format!("{k:?}").contains("0707"),
            "the Debug form hides the key"
        );
        for bad in [
            "",
            "dshq audit key v1\nsince 0\nkey 00\n",
            &text.replace("since 42", "since x"),
            &text.replace("key 07", "key zz"),
            &format!("{text}extra\n"),
        ] {
            assert_eq!(AuditKey::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_canonical_form_is_the_json_array_of_the_fields() {
        let input = HashInput {
            prev_hash: GENESIS,
            seq: 7,
            at_ms: 1_700_000_000_123,
            kind: "accepted",
            request_id: Some("r\"1"),
            lease_id: None,
            agent_id: None,
            actor: "agent:a",
            data: r#"{"k":"v"}"#,
        };
        let expected = serde_json::json!([
            GENESIS,
            7,
            1_700_000_000_123i64,
            "accepted",
            "r\"1",
            null,
            null,
            "agent:a",
            r#"{"k":"v"}"#
        ])
        .to_string();
        assert_eq!(input.canonical(), expected);
    }

    #[test]
    fn the_keyed_hash_depends_on_the_key_and_the_switch_point() {
        let a = AuditKey::new([1u8; 32], 2);
        let b = AuditKey::new([2u8; 32], 2);
        let input = |seq| HashInput {
            prev_hash: GENESIS,
            seq,
            at_ms: 1,
            kind: "accepted",
            request_id: Some("r"),
            lease_id: None,
            agent_id: None,
            actor: "asker",
            data: "{}",
        };
        let args = |k: Option<&AuditKey>, seq| input(seq).chained(k);
        let plain = input(1).plain();
        // Before `since`: plain, whatever the key.
        assert_eq!(args(Some(&a), 1), plain);
        assert_eq!(args(None, 1), plain);
        // From `since` on: keyed, and another key gives another hash.
        assert_ne!(args(Some(&a), 2), args(None, 2));
        assert_ne!(args(Some(&a), 2), args(Some(&b), 2));
        assert_eq!(args(Some(&a), 2).len(), 64);
    }

    #[test]
    fn the_walk_starts_after_the_newest_checkpoint_and_only_there() {
        let c = Checkpoint {
            seq: 10,
            hash: "ab".repeat(32),
            open: vec!["x".into()],
        };
        assert_eq!(
            c.rowless([
                (11, "claimed", Some("x")),
                (12, "rejected", Some("x")),
                (13, "answered", Some("x")),
                (14, "accepted", Some("y")),
                (15, "accepted", Some("x")),
                (16, "answered", Some("x")),
            ]),
            [11, 13].into_iter().collect()
        );
        let data = serde_json::Value::Object(c.to_data());
        assert_eq!(walk_start(None, None), Ok(None));
        assert_eq!(walk_start(Some(1), None), Ok(None));
        assert_eq!(walk_start(Some(11), Some(&data)), Ok(Some(c.clone())));
        // A prefix removed without a checkpoint, or more than the checkpoint covers.
        assert!(walk_start(Some(5), None)
            .unwrap_err()
            .problem
            .contains("no checkpoint"));
        assert!(walk_start(Some(12), Some(&data))
            .unwrap_err()
            .problem
            .contains("only up"));
        assert!(walk_start(Some(3), Some(&data))
            .unwrap_err()
            .problem
            .contains("still holds"));
        assert!(walk_start(Some(11), Some(&serde_json::json!({}))).is_err());
        // The walk checks the first event's link to the checkpoint's head.
        let first = HashInput {
            prev_hash: &c.hash,
            seq: 11,
            at_ms: 1,
            kind: "accepted",
            request_id: Some("r"),
            lease_id: None,
            agent_id: None,
            actor: "cli",
            data: "{}",
        };
        let mut walk = ChainWalk::from(None, Some(&c));
        assert_eq!(walk.step(&first, &first.plain()), None);
        let other = Checkpoint {
            seq: 10,
            hash: GENESIS.into(),
            open: vec![],
        };
        let mut walk = ChainWalk::from(None, Some(&other));
        assert!(walk.step(&first, &first.plain()).is_some());
        // Anchors: after the prefix, checked by the log; its head, by the checkpoint;
        // inside it, not checkable here.
        assert_eq!(anchor_in_pruned(11, "x", Some(&c)), None);
        assert_eq!(anchor_in_pruned(10, &c.hash, Some(&c)), Some(Ok(())));
        assert!(matches!(anchor_in_pruned(10, "x", Some(&c)), Some(Err(_))));
        assert!(matches!(anchor_in_pruned(3, "x", Some(&c)), Some(Err(_))));
        assert_eq!(anchor_in_pruned(3, "x", None), None);
    }
}
