//! Asking: accept or reject a request and publish its outcome; abort one; ingest a batch
//! of inbox files. Files, the CLI, and later HTTP and MCP all ask through here.

use super::{publish, Finished};
use crate::core::access::{Action, Reach};
use crate::core::audit::{Actor, Source};
use crate::error::{Error, Result};
use crate::files::outbox;
use crate::protocol::check::{parse_request, salvage_id_context};
use crate::protocol::DEFAULT_CONTEXT;
use crate::root::Root;
use crate::store::{AskInput, Asked, Store, WebToken};

/// A request as given to a face: its bytes, where it came from, who asks.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    /// The bytes as given.
    pub bytes: &'a [u8],
    /// The id to use when the request names none (the file's name), if any.
    pub fallback_id: Option<String>,
    /// Whether a rejection may be published under the fallback id (false for a generated
    /// id, which names nothing the asker knows).
    pub outcome_under_fallback: bool,
    /// Where it came from.
    pub source: Source,
    /// Who asks (recorded with a rejection).
    pub actor: Actor,
    /// The caller sees only the requests it asked itself (an asker token, over HTTP or
    /// MCP): a re-delivery of a request that another source asked is refused with
    /// `DUPLICATE_ID`, as a different request under a taken id is, instead of being taken
    /// for the caller's own (which would hand it the other asker's state and answer).
    pub own_only: bool,
}

/// An ask with a token (the JSON API, MCP over HTTP), or with none (MCP over stdio: the
/// local user, who may ask anything, as with the CLI).
pub struct TokenAsk<'a> {
    /// The bytes as given.
    pub bytes: &'a [u8],
    /// The token's record, when there is one.
    pub token: Option<&'a WebToken>,
    /// Where it came from (`web:NAME`, `mcp`).
    pub source: Source,
    /// Who asks.
    pub actor: Actor,
}

/// [`ask`] with a token's rules: the request must be in a context the token may act in
/// (a token bound to a context, only there; else `FORBIDDEN` and nothing is recorded); a
/// token that reads only its own requests may not re-deliver another's
/// ([`Ask::own_only`]); a request that names no id gets a fresh one ([`generated_id`]),
/// under which no rejection is published. Whether the token may ask at all is its role's
/// ([`crate::core::access`]), checked by the face before it reads the input.
pub fn ask_with_token(store: &mut Store, root: &Root, a: TokenAsk<'_>) -> Result<Asked> {
    if let Some(t) = a.token {
        let (_, context) = salvage_id_context(a.bytes);
        let asked_in = context.as_deref().unwrap_or(DEFAULT_CONTEXT);
        if t.context.as_deref().is_some_and(|c| c != asked_in) {
            return Err(Error::Forbidden);
        }
    }
    let own_only = a
        .token
        .is_some_and(|t| t.role.may(Action::Read) == Some(Reach::Own));
    ask(
        store,
        root,
        Ask {
            bytes: a.bytes,
            fallback_id: Some(generated_id()),
            outcome_under_fallback: false,
            source: a.source,
            actor: a.actor,
            own_only,
        },
    )
}

/// Parse, then accept or record the rejection (one transaction); then publish: a stale
/// error outcome of an earlier rejection of this id goes, and pending outcomes are
/// written. A rejection is `Ok(Asked::Rejected)`: the face decides how to report it.
pub fn ask(store: &mut Store, root: &Root, a: Ask<'_>) -> Result<Asked> {
    let request = parse_request(a.bytes);
    // Kept with a rejection (for the audit, and as the outcome's name when known and free).
    let (id, context) = salvage_id_context(a.bytes);
    let id = id.or(a
        .outcome_under_fallback
        .then(|| a.fallback_id.clone())
        .flatten());
    let salvaged = (id, context);
    let source = a.source.as_str().into_owned();
    let asked = store.ask(AskInput {
        request,
        fallback_id: a.fallback_id,
        salvaged,
        raw: crate::protocol::syntax::recorded_text(a.bytes.to_vec()),
        source: a.source,
        actor: a.actor,
    })?;
    if let Asked::Accepted(accepted) = &asked {
        if a.own_only && !accepted.new {
            let theirs = store
                .get(&accepted.id)?
                .is_some_and(|row| row.source != source);
            if theirs {
                // A re-delivery writes nothing, so there is nothing to record either.
                return Ok(Asked::Rejected {
                    error: crate::protocol::UserQuestionError::new(
                        crate::protocol::Code::DuplicateId,
                        format!(
                            "request id {:?} is taken by a request this caller did not ask; ask under a new id",
                            crate::text::one_line(&accepted.id)
                        ),
                    ),
                    outcome: false,
                });
            }
        }
    }
    if let Asked::Accepted(accepted) = &asked {
        // An earlier rejection of this id may have left its error outcome (and a crash
        // right here would leave it for a re-delivery, or for the daemon's start).
        if accepted.replaced_rejection || (!accepted.new && !accepted.status.is_final()) {
            outbox::repair(root, store, Some(&[accepted.id.as_str()]))?;
        }
    }
    super::publish_pending(store, root)?;
    Ok(asked)
}

/// The asker aborts request `id` (`ASK_ABORTED`), and the outcome is published.
pub fn abort(
    store: &mut Store,
    root: &Root,
    id: &str,
    reason: Option<&str>,
    actor: &Actor,
) -> Result<Finished> {
    let outcome = store.abort(id, reason, actor)?;
    Ok(publish(store, Some(root), outcome))
}

/// Ingest one inbox batch (the daemon's file loop): read the files, one store
/// transaction for all of them, then remove or file each by its verdict (only after the
/// commit).
pub fn ingest_inbox(
    store: &mut Store,
    root: &Root,
    names: &[String],
    max_bytes: u64,
    batch_bytes: u64,
) -> Result<crate::files::inbox::Ingested> {
    crate::files::inbox::ingest(
        root,
        store,
        names,
        max_bytes,
        batch_bytes,
        crate::clock::now_ms(),
    )
}

/// Read the named inbox files of a batch (files only, no store): the first half of
/// [`ingest_inbox`], which the daemon runs ahead on another thread.
pub fn read_inbox(
    root: &Root,
    names: &[String],
    max_bytes: u64,
    batch_bytes: u64,
) -> crate::files::inbox::ReadBatch {
    crate::files::inbox::read_batch(&root.inbox_new(), names, max_bytes, batch_bytes)
}

/// Commit a batch [`read_inbox`] read, in one transaction; the files it handled are
/// returned for the caller to remove (the second half of [`ingest_inbox`]).
pub fn commit_inbox(
    store: &mut Store,
    root: &Root,
    batch: crate::files::inbox::ReadBatch,
) -> Result<(crate::files::inbox::Ingested, crate::files::inbox::Removals)> {
    crate::files::inbox::commit_batch(root, store, batch, crate::clock::now_ms())
}

/// A fresh request id for a request that names none (stdin, HTTP): `ask-` and 32
/// lowercase hex digits (128 random bits), unguessable and within the id charset.
pub fn generated_id() -> String {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).expect("the OS random source is available");
    format!(
        "ask-{}",
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    )
}

/// Remove outcome files left under open requests (stale error outcomes of an earlier
/// rejection of a reused id): at the daemon's start, for every open request.
pub fn repair_outbox(store: &mut Store, root: &Root) -> Result<usize> {
    outbox::repair(root, store, None)
}
