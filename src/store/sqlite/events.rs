//! The append-only event log: every state change is an event with a time and an actor.
//!
//! The database refuses UPDATE and DELETE on `events` (triggers), and each event carries a
//! hash over its content and the previous event's hash, so an edit made with the triggers
//! dropped is still found by [`verify`].
//!
//! A plain SHA-256 chain only proves that whoever wrote the log computed it: anyone who can
//! write the database can edit an event and recompute every later hash. So the chain is
//! keyed: from the event named in the key file on, each hash is an HMAC-SHA256 under a key
//! kept in `audit.key` beside the database (never in it, never in an event, never logged).
//! Events written before a root had a key keep their plain hashes; the key file records
//! where the keyed part starts, so that switch point cannot be moved from the database.
//!
//! A chain cannot tell that its newest events were removed. So every committed write also
//! records the log's head (seq, hash) in `audit.head`, outside the database
//! ([`publish_head`]); `dshq audit verify` fails when the log no longer contains it.

use std::cell::RefCell;
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hmac::{Hmac, Mac};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use sha2::{Digest, Sha256};

use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::error::{Error, Result};
use crate::store::anchor::{write_anchor, Anchor, ANCHOR_FILE};
use crate::store::types::{ChainBreak, Event};

/// The key file of the keyed chain, in the root beside `dshq.db`.
pub const KEY_FILE: &str = "audit.key";

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

/// The directory of the database `conn` works on (the root); `None` in memory.
pub fn root_dir(conn: &Connection) -> Option<PathBuf> {
    let path = conn.path().filter(|p| !p.is_empty())?;
    Path::new(path).parent().map(Path::to_path_buf)
}

/// Read the key file of the root `dir`, if there is one.
pub fn load_key(dir: &Path) -> Result<Option<AuditKey>> {
    let path = dir.join(KEY_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => AuditKey::parse(&text).map(Some).ok_or_else(|| {
            Error::io(
                &path,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "not a dshq audit key file (restore it from a backup: the keyed chain cannot be verified without it)",
                ),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// Keys already read by this process, per root.
static KEYS: Mutex<Vec<(PathBuf, Arc<AuditKey>)>> = Mutex::new(Vec::new());

/// The root's key, created (covering events from `next_seq` on) when the root has none.
/// Only a writer holding the database's write lock calls this, so two processes never
/// create keys with different start points; a concurrent creation still resolves to one
/// file (created under a temporary name, then linked into place without replacing).
///
/// A log whose newest event is keyed already has a key somewhere: creating another would
/// fork the chain (the events before it would verify under neither key, even once the
/// real key is restored), so that is refused, naming the key file.
fn key_for_append(tx: &Transaction, dir: &Path, next_seq: i64) -> Result<Arc<AuditKey>> {
    let mut cache = KEYS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, k)) = cache.iter().find(|(d, _)| d == dir) {
        return Ok(k.clone());
    }
    let key = match load_key(dir)? {
        Some(k) => k,
        None => {
            if newest_is_keyed(tx)? {
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

/// Whether the newest event's hash is not its plain SHA-256, i.e. it was keyed.
fn newest_is_keyed(tx: &Transaction) -> Result<bool> {
    let newest = tx
        .query_row(
            &format!("SELECT {COLUMNS} FROM events ORDER BY seq DESC LIMIT 1"),
            [],
            |r| {
                Ok((HashInput {
                    prev_hash: &r.get::<_, String>(8)?,
                    seq: r.get(0)?,
                    at_ms: r.get(1)?,
                    kind: &r.get::<_, String>(2)?,
                    request_id: r.get::<_, Option<String>>(3)?.as_deref(),
                    lease_id: r.get(4)?,
                    agent_id: r.get::<_, Option<String>>(5)?.as_deref(),
                    actor: &r.get::<_, String>(6)?,
                    data: &r.get::<_, String>(7)?,
                }
                .plain())
                    != r.get::<_, String>(9)?)
            },
        )
        .optional()?;
    Ok(newest.unwrap_or(false))
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
    fn canonical(&self) -> String {
        serde_json::json!([
            self.prev_hash,
            self.seq,
            self.at_ms,
            self.kind,
            self.request_id,
            self.lease_id,
            self.agent_id,
            self.actor,
            self.data
        ])
        .to_string()
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

/// Append one event at `now`.
pub fn append(tx: &Transaction, now: Millis, e: NewEvent<'_>) -> Result<i64> {
    let last: Option<(i64, String)> = tx
        .prepare_cached("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let (seq, prev) = match last {
        Some((s, h)) => (s + 1, h),
        None => (1, GENESIS.to_string()),
    };
    let data = if e.data.is_null() {
        "{}".to_string()
    } else {
        e.data.to_string()
    };
    let (kind, actor) = (e.kind.as_str(), e.actor.as_str());
    let dir = root_dir(tx);
    let key = match &dir {
        Some(d) => Some(key_for_append(tx, d, seq)?),
        None => None,
    };
    let hash = HashInput {
        prev_hash: &prev,
        seq,
        at_ms: now,
        kind,
        request_id: e.request_id,
        lease_id: e.lease_id,
        agent_id: e.agent_id,
        actor: &actor,
        data: &data,
    }
    .chained(key.as_deref());
    tx.prepare_cached(
        "INSERT INTO events (seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        seq,
        now,
        kind,
        e.request_id,
        e.lease_id,
        e.agent_id,
        actor,
        data,
        prev,
        hash
    ])?;
    if let Some(dir) = dir {
        PENDING_HEAD.with(|h| {
            *h.borrow_mut() = Some((
                dir,
                Anchor {
                    seq,
                    hash: hash.clone(),
                },
            ))
        });
    }
    Ok(seq)
}

thread_local! {
    /// The head appended by this thread's open transaction, published after its commit.
    static PENDING_HEAD: RefCell<Option<(PathBuf, Anchor)>> = const { RefCell::new(None) };
}

/// Forget a head left by a transaction that rolled back (call before a write begins).
pub fn forget_head() {
    PENDING_HEAD.with(|h| h.borrow_mut().take());
}

/// After a commit: write the head it appended to `audit.head` (atomically: a temporary
/// file renamed over it). A failure is logged, not returned: the write is
/// committed, and the anchor only lags (a lagging anchor is still contained in the log).
pub fn publish_head() {
    let Some((dir, anchor)) = PENDING_HEAD.with(|h| h.borrow_mut().take()) else {
        return;
    };
    if let Err(e) = write_anchor(&dir.join(ANCHOR_FILE), &anchor) {
        tracing::warn!(error = %e, "could not write the audit head");
    }
}

/// Whether the log still contains `anchor`: `None` when it does, else what is wrong.
pub fn check_anchor(conn: &Connection, anchor: &Anchor) -> Result<Option<ChainBreak>> {
    let found: Option<String> = conn
        .query_row(
            "SELECT hash FROM events WHERE seq = ?1",
            [anchor.seq],
            |r| r.get(0),
        )
        .optional()?;
    let last: i64 = conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?;
    Ok(match found {
        None => Some(ChainBreak {
            seq: anchor.seq,
            problem: format!(
                "the anchor names event {} but the log ends at {last}: its newest events were removed",
                anchor.seq
            ),
        }),
        Some(h) if h != anchor.hash => Some(ChainBreak {
            seq: anchor.seq,
            problem: format!(
                "event {}'s hash is not the anchor's: the log was rewritten from there",
                anchor.seq
            ),
        }),
        Some(_) => None,
    })
}

fn row_to_event(r: &rusqlite::Row<'_>) -> rusqlite::Result<Event> {
    let data: String = r.get(7)?;
    Ok(Event {
        seq: r.get(0)?,
        at_ms: r.get(1)?,
        kind: r.get(2)?,
        request_id: r.get(3)?,
        lease_id: r.get(4)?,
        agent_id: r.get(5)?,
        actor: r.get(6)?,
        data: serde_json::from_str(&data).unwrap_or(serde_json::Value::String(data)),
        prev_hash: r.get(8)?,
        hash: r.get(9)?,
    })
}

const COLUMNS: &str =
    "seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash";

/// The events of one request, oldest first.
pub fn for_request(conn: &Connection, request_id: &str) -> Result<Vec<Event>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM events WHERE request_id = ?1 ORDER BY seq"
    ))?;
    let rows = stmt.query_map([request_id], row_to_event)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The events after position `after` up to `upto`, oldest first.
pub fn range(conn: &Connection, after: i64, upto: i64) -> Result<Vec<Event>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM events WHERE seq > ?1 AND seq <= ?2 ORDER BY seq"
    ))?;
    let rows = stmt.query_map([after, upto], row_to_event)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The newest event position (0 for an empty log).
pub fn head(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?)
}

/// The position `limit` events after `after` (or the newest, if fewer).
pub fn upto(conn: &Connection, after: i64, limit: usize) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT COALESCE(MAX(seq), ?1) FROM
           (SELECT seq FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2)",
        rusqlite::params![after, limit as i64],
        |r| r.get(0),
    )?)
}

/// Every event, oldest first.
pub fn all(conn: &Connection) -> Result<Vec<Event>> {
    let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM events ORDER BY seq"))?;
    let rows = stmt.query_map([], row_to_event)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Walk the chain with the root's key (when the database is a file); `Ok(None)` when
/// every event verifies, else the first break.
pub fn verify(conn: &Connection) -> Result<(i64, Option<ChainBreak>)> {
    let key = match root_dir(conn) {
        Some(dir) => load_key(&dir)?,
        None => None,
    };
    let missing_key = key.is_none() && root_dir(conn).is_some();
    let (count, brk) = verify_with(conn, key.as_ref())?;
    Ok((
        count,
        brk.map(|mut b| {
            if missing_key && b.problem.contains("does not match its hash") {
                b.problem.push_str(&format!(
                    "; the root has no {KEY_FILE}, so a keyed chain cannot verify (restore the key file)"
                ));
            }
            b
        }),
    ))
}

/// Walk the chain, keyed with `key` from its `since` on; `Ok(None)` when every event
/// verifies, else the first break.
pub fn verify_with(conn: &Connection, key: Option<&AuditKey>) -> Result<(i64, Option<ChainBreak>)> {
    let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM events ORDER BY seq"))?;
    let mut rows = stmt.query([])?;
    let mut prev = GENESIS.to_string();
    let mut expected_seq = 1;
    let mut count = 0;
    while let Some(r) = rows.next()? {
        let seq: i64 = r.get(0)?;
        let data: String = r.get(7)?;
        let prev_hash: String = r.get(8)?;
        let hash: String = r.get(9)?;
        count += 1;
        if seq != expected_seq {
            return Ok((
                count,
                Some(ChainBreak {
                    seq: expected_seq,
                    problem: format!("event {expected_seq} is missing (next is {seq})"),
                }),
            ));
        }
        if prev_hash != prev {
            return Ok((
                count,
                Some(ChainBreak {
                    seq,
                    problem:
                        "its prev_hash does not match the previous event (removed or reordered)"
                            .into(),
                }),
            ));
        }
        let recomputed = HashInput {
            prev_hash: &prev_hash,
            seq,
            at_ms: r.get(1)?,
            kind: &r.get::<_, String>(2)?,
            request_id: r.get::<_, Option<String>>(3)?.as_deref(),
            lease_id: r.get(4)?,
            agent_id: r.get::<_, Option<String>>(5)?.as_deref(),
            actor: &r.get::<_, String>(6)?,
            data: &data,
        }
        .chained(key);
        if recomputed != hash {
            return Ok((
                count,
                Some(ChainBreak {
                    seq,
                    problem: "its content does not match its hash (changed)".into(),
                }),
            ));
        }
        prev = hash;
        expected_seq += 1;
    }
    Ok((count, None))
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
    fn a_file_store_keys_its_chain_and_anchors_its_head() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::store::sqlite::open(&dir.path().join("dshq.db")).unwrap();
        for i in 0..3 {
            crate::store::sqlite::write(&mut conn, 1_000 + i, |tx| {
                append(
                    tx,
                    1_000 + i,
                    NewEvent {
                        kind: EventKind::Accepted,
                        actor: Actor::Cli,
                        request_id: None,
                        lease_id: None,
                        agent_id: None,
                        data: serde_json::Value::Null,
                    },
                )
            })
            .unwrap();
        }
        let key = load_key(dir.path())
            .unwrap()
            .expect("the first write creates the key");
        assert_eq!(key.since, 1);
        assert_eq!(verify(&conn).unwrap(), (3, None));
        // Without the key the chain does not verify.
        assert_eq!(verify_with(&conn, None).unwrap().1.unwrap().seq, 1);
        let head = crate::store::anchor::read_anchor(&dir.path().join(ANCHOR_FILE)).unwrap();
        assert_eq!(head.seq, 3);
        assert_eq!(check_anchor(&conn, &head).unwrap(), None);
        let ahead = Anchor {
            seq: 4,
            hash: head.hash.clone(),
        };
        assert!(check_anchor(&conn, &ahead).unwrap().is_some());
    }
}
