// dshq for Node: ask a human through dshq, the durable human-question queue.
//
// Plain ESM with no dependencies beyond Node's own (fs, crypto, fetch); the types are in
// index.d.ts. Two transports, as in the Python package: the state root's directories
// (the inbox and the outbox) and the HTTP API of `dshq daemon --listen` with a bearer
// token. An outcome is taken as a request's own only when its requestDigest is the digest
// of what was asked (docs/protocol.md, section 8); a key given by the caller names the
// request, so an agent that restarts and asks again re-attaches to its question.

import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

// --- errors: one class per stable code -------------------------------------------------

/** A dshq error: a stable `code` and a `message` for people. */
export class DshqError extends Error {
  constructor(message, { code, requestId, outcome } = {}) {
    super(message);
    this.name = new.target.name;
    this.code = code ?? new.target.code ?? "";
    this.requestId = requestId ?? null;
    this.outcome = outcome ?? null;
  }
}

/** Every stable code dshq reports, in its own order (src/protocol/error.rs). */
export const CODES = Object.freeze([
  "BAD_REQUEST", "ASK_ABORTED", "EMPTY_QUESTIONS", "CALLER_NOT_LIVE", "DELEGATED_CALLER",
  "BAD_INTENT", "NO_PROVIDER", "DUPLICATE_ID", "BAD_ANSWER", "ASK_CANCELLED", "ASK_EXPIRED",
  "DUPLICATE_PROVIDER", "LEASE_EXPIRED", "NOT_FOUND", "REQUEST_FINAL", "CLAIMED_ELSEWHERE",
  "WRONG_CONTEXT", "WAIT_TIMEOUT", "AUDIT_BROKEN", "DAEMON_RUNNING", "UNSAFE_ROOT", "USAGE",
  "STORE", "IO", "UNAUTHORIZED", "FORBIDDEN", "TOO_LARGE", "NO_ROOT",
  "BAD_REVIEW_STATE", "EDIT_NOT_ALLOWED", "OWN_REQUEST", "NOT_IN_GROUP", "ALREADY_VOTED",
  "REQUEST_OPEN", "RECEIPT_INVALID", "RECEIPT_UNTRUSTED_KEY", "RECEIPT_MISMATCH",
  "SLACK_BAD_SIGNATURE", "SLACK_STALE_REQUEST", "SLACK_UNKNOWN_USER",
  "TELEGRAM_BAD_SECRET", "TELEGRAM_UNKNOWN_USER",
  "LINK_INVALID", "LINK_EXPIRED", "LINK_USED", "BAD_TIMEOUT", "DUPLICATE_WAIT", "NO_DAEMON",
  "OIDC_STATE", "OIDC_NONCE", "OIDC_ISSUER", "OIDC_AUDIENCE", "OIDC_EXPIRED", "OIDC_UNSIGNED",
  "OIDC_UNKNOWN_KEY", "OIDC_BAD_SIGNATURE", "OIDC_CODE_REJECTED", "OIDC_PROVIDER",
  "OIDC_NOT_MAPPED", "BAD_RETURN_URL",
  "JWT_MALFORMED", "JWT_UNSIGNED", "JWT_ISSUER", "JWT_AUDIENCE", "JWT_EXPIRED", "JWT_UNKNOWN_KEY",
  "JWT_BAD_SIGNATURE", "JWT_KEYS",
  "AWAY_IN_PAST", "AWAY_SELF", "AWAY_CHAIN", "UNKNOWN_DELEGATE", "NOT_AWAY", "NOT_DELEGATE",
  "TEAMS_SERVICE_URL", "TEAMS_UNKNOWN_USER",
]);

const define = (code) => {
  const cls = class extends DshqError {};
  cls.code = code;
  return cls;
};

export class BadRequest extends define("BAD_REQUEST") {}
export class AskAborted extends define("ASK_ABORTED") {}
export class EmptyQuestions extends define("EMPTY_QUESTIONS") {}
export class CallerNotLive extends define("CALLER_NOT_LIVE") {}
export class DelegatedCaller extends define("DELEGATED_CALLER") {}
export class BadIntent extends define("BAD_INTENT") {}
export class NoProvider extends define("NO_PROVIDER") {}
export class DuplicateId extends define("DUPLICATE_ID") {}
export class BadAnswer extends define("BAD_ANSWER") {}
export class AskCancelled extends define("ASK_CANCELLED") {}
/** ASK_EXPIRED: nobody answered before the request's ladder expired it. */
export class AskExpired extends define("ASK_EXPIRED") {}
export class DuplicateProvider extends define("DUPLICATE_PROVIDER") {}
export class LeaseExpired extends define("LEASE_EXPIRED") {}
export class NotFound extends define("NOT_FOUND") {}
export class RequestFinal extends define("REQUEST_FINAL") {}
export class ClaimedElsewhere extends define("CLAIMED_ELSEWHERE") {}
export class WrongContext extends define("WRONG_CONTEXT") {}
export class WaitTimeout extends define("WAIT_TIMEOUT") {}
export class AuditBroken extends define("AUDIT_BROKEN") {}
export class DaemonRunning extends define("DAEMON_RUNNING") {}
export class UnsafeRoot extends define("UNSAFE_ROOT") {}
export class Usage extends define("USAGE") {}
export class Store extends define("STORE") {}
export class Io extends define("IO") {}
export class Unauthorized extends define("UNAUTHORIZED") {}
export class Forbidden extends define("FORBIDDEN") {}
export class TooLarge extends define("TOO_LARGE") {}
export class NoRoot extends define("NO_ROOT") {}
export class BadReviewState extends define("BAD_REVIEW_STATE") {}
export class EditNotAllowed extends define("EDIT_NOT_ALLOWED") {}
/** OWN_REQUEST: the asker's own vote on a request with a quorum (never counts). */
export class OwnRequest extends define("OWN_REQUEST") {}
/** NOT_IN_GROUP: a vote from outside a request's quorum group. */
export class NotInGroup extends define("NOT_IN_GROUP") {}
/** ALREADY_VOTED: a reviewer's second vote, for another answer. */
export class AlreadyVoted extends define("ALREADY_VOTED") {}
export class RequestOpen extends define("REQUEST_OPEN") {}
export class ReceiptInvalid extends define("RECEIPT_INVALID") {}
export class ReceiptUntrustedKey extends define("RECEIPT_UNTRUSTED_KEY") {}
export class ReceiptMismatch extends define("RECEIPT_MISMATCH") {}
/** SLACK_BAD_SIGNATURE: a Slack interaction whose signature is missing or wrong. */
export class SlackBadSignature extends define("SLACK_BAD_SIGNATURE") {}
/** SLACK_STALE_REQUEST: a signed Slack interaction outside the five-minute window. */
export class SlackStaleRequest extends define("SLACK_STALE_REQUEST") {}
/** SLACK_UNKNOWN_USER: a Slack user mapped to no dshq reviewer. */
export class SlackUnknownUser extends define("SLACK_UNKNOWN_USER") {}
/** TELEGRAM_BAD_SECRET: an update to the Telegram webhook without its secret token. */
export class TelegramBadSecret extends define("TELEGRAM_BAD_SECRET") {}
/** TELEGRAM_UNKNOWN_USER: a Telegram user listed for no person in [people]. */
export class TelegramUnknownUser extends define("TELEGRAM_UNKNOWN_USER") {}
/** LINK_INVALID: a mail's link not signed by this root, or changed. */
export class LinkInvalid extends define("LINK_INVALID") {}
/** LINK_EXPIRED: a mail's link past its expiry. */
export class LinkExpired extends define("LINK_EXPIRED") {}
/** LINK_USED: a mail's link through which an answer was already sent. */
export class LinkUsed extends define("LINK_USED") {}
/** NO_DAEMON: no `dshq daemon` serves the root the file transport asked in. */
export class NoDaemon extends define("NO_DAEMON") {}
/** OIDC_STATE: a page sign-in whose state is not the one its browser started (or a replay) (the page's sign-in). */
export class OidcState extends define("OIDC_STATE") {}
/** OIDC_NONCE: an ID token whose nonce is not the sign-in's (the page's sign-in). */
export class OidcNonce extends define("OIDC_NONCE") {}
/** OIDC_ISSUER: an ID token from another issuer than the configured provider (the page's sign-in). */
export class OidcIssuer extends define("OIDC_ISSUER") {}
/** OIDC_AUDIENCE: an ID token not meant for dshq's client id (the page's sign-in). */
export class OidcAudience extends define("OIDC_AUDIENCE") {}
/** OIDC_EXPIRED: an ID token past its expiry (the page's sign-in). */
export class OidcExpired extends define("OIDC_EXPIRED") {}
/** OIDC_UNSIGNED: an unsigned ID token (alg none) or one with an algorithm dshq does not allow (the page's sign-in). */
export class OidcUnsigned extends define("OIDC_UNSIGNED") {}
/** OIDC_UNKNOWN_KEY: an ID token signed by a key the provider does not publish (the page's sign-in). */
export class OidcUnknownKey extends define("OIDC_UNKNOWN_KEY") {}
/** OIDC_BAD_SIGNATURE: an ID token whose signature does not verify (the page's sign-in). */
export class OidcBadSignature extends define("OIDC_BAD_SIGNATURE") {}
/** OIDC_CODE_REJECTED: the provider refused the sign-in's code (used already, or the PKCE verifier) (the page's sign-in). */
export class OidcCodeRejected extends define("OIDC_CODE_REJECTED") {}
/** OIDC_PROVIDER: the identity provider cannot be reached, or answered with an error (the page's sign-in). */
export class OidcProvider extends define("OIDC_PROVIDER") {}
/** OIDC_NOT_MAPPED: a person no rule of the config file's [[oidc.rule]] admits (the page's sign-in). */
export class OidcNotMapped extends define("OIDC_NOT_MAPPED") {}
/** BAD_RETURN_URL: a sign-in's return address that is not a path on this site (the page's sign-in). */
export class BadReturnUrl extends define("BAD_RETURN_URL") {}
/** JWT_MALFORMED: a signed token from another party (a chat service's call, an identity provider's access token) that is not a well-formed JWT. */
export class JwtMalformed extends define("JWT_MALFORMED") {}
/** JWT_UNSIGNED: a signed token that is unsigned (alg none) or signed with an algorithm dshq does not allow (only RS256 and ES256). */
export class JwtUnsigned extends define("JWT_UNSIGNED") {}
/** JWT_ISSUER: a signed token issued by another than the configured issuer. */
export class JwtIssuer extends define("JWT_ISSUER") {}
/** JWT_AUDIENCE: a signed token not meant for this audience. */
export class JwtAudience extends define("JWT_AUDIENCE") {}
/** JWT_EXPIRED: a signed token past its expiry, or not valid yet. */
export class JwtExpired extends define("JWT_EXPIRED") {}
/** JWT_UNKNOWN_KEY: a signed token whose key the issuer does not publish (made up, or rotated out). */
export class JwtUnknownKey extends define("JWT_UNKNOWN_KEY") {}
/** JWT_BAD_SIGNATURE: a signed token whose signature does not verify. */
export class JwtBadSignature extends define("JWT_BAD_SIGNATURE") {}
/** JWT_KEYS: the issuer's OpenID metadata or key set cannot be fetched. */
export class JwtKeys extends define("JWT_KEYS") {}
/** AWAY_IN_PAST: an away notice whose end is not in the future (delegation while a reviewer is away). */
export class AwayInPast extends define("AWAY_IN_PAST") {}
/** AWAY_SELF: an away notice naming the person as their own delegate (delegation while a reviewer is away). */
export class AwaySelf extends define("AWAY_SELF") {}
/** AWAY_CHAIN: an away notice that would chain delegations (the delegate is away, or the person is a delegate) (delegation while a reviewer is away). */
export class AwayChain extends define("AWAY_CHAIN") {}
/** UNKNOWN_DELEGATE: an away notice whose delegate is no reviewer the people directory or the web tokens know (delegation while a reviewer is away). */
export class UnknownDelegate extends define("UNKNOWN_DELEGATE") {}
/** NOT_AWAY: an away notice cancelled where the person has none (delegation while a reviewer is away). */
export class NotAway extends define("NOT_AWAY") {}
/** NOT_DELEGATE: an answer for a person whose delegate the caller is not now (delegation while a reviewer is away). */
export class NotDelegate extends define("NOT_DELEGATE") {}
/** TEAMS_SERVICE_URL: a call to the Teams messaging endpoint whose token's serviceUrl claim is not the activity's. */
export class TeamsServiceUrl extends define("TEAMS_SERVICE_URL") {}
/** TEAMS_UNKNOWN_USER: a Teams user whom the people directory does not list (teams:OBJECTID). */
export class TeamsUnknownUser extends define("TEAMS_UNKNOWN_USER") {}

/** BAD_TIMEOUT (dsh 0.2's name): a wait window that is not 1 to 2147483647 ms. */
export class BadTimeout extends define("BAD_TIMEOUT") {}
/** DUPLICATE_WAIT (dsh 0.2's name): a second request, with other content, on one tool call. */
export class DuplicateWait extends define("DUPLICATE_WAIT") {}

/** ASK_ABORTED because the request's own deadline (or timeout) passed: a kind of AskAborted. */
export class Expired extends AskAborted {}

/**
 * A plan review (`requiresApproval`) that did not end approved: `feedback` is the
 * reviewer's words when they declined. The gate fails closed: a decline, a review with no
 * decision, or an edit the guarded function cannot take all throw it.
 */
export class PlanDeclined extends Error {
  constructor(feedback, result, message) {
    super(message ?? feedback ?? "the reviewer declined the plan");
    this.name = "PlanDeclined";
    this.feedback = feedback ?? null;
    this.result = result ?? null;
  }
}

const BY_CODE = new Map(
  [
    BadRequest, AskAborted, EmptyQuestions, CallerNotLive, DelegatedCaller, BadIntent,
    NoProvider, DuplicateId, BadAnswer, AskCancelled, AskExpired, DuplicateProvider, LeaseExpired,
    NotFound, RequestFinal, ClaimedElsewhere, WrongContext, WaitTimeout, AuditBroken,
    DaemonRunning, UnsafeRoot, Usage, Store, Io, Unauthorized, Forbidden, TooLarge, NoRoot,
    BadReviewState, EditNotAllowed, OwnRequest, NotInGroup, AlreadyVoted, RequestOpen, ReceiptInvalid, ReceiptUntrustedKey,
    ReceiptMismatch, SlackBadSignature, SlackStaleRequest, SlackUnknownUser,
    TelegramBadSecret, TelegramUnknownUser,
    LinkInvalid, LinkExpired, LinkUsed, BadTimeout, DuplicateWait, NoDaemon,
    OidcState, OidcNonce, OidcIssuer, OidcAudience, OidcExpired, OidcUnsigned, OidcUnknownKey,
    OidcBadSignature, OidcCodeRejected, OidcProvider, OidcNotMapped, BadReturnUrl,
    JwtMalformed, JwtUnsigned, JwtIssuer, JwtAudience, JwtExpired, JwtUnknownKey, JwtBadSignature,
    JwtKeys,
    AwayInPast, AwaySelf, AwayChain, UnknownDelegate, NotAway, NotDelegate,
    TeamsServiceUrl, TeamsUnknownUser,
  ].map((c) => [c.code, c]),
);

/** The class of a code; an unknown code (a newer dshq) gets DshqError. */
export function errorClass(code) {
  return BY_CODE.get(code) ?? DshqError;
}

function errorFrom(doc, { requestId, outcome, expired } = {}) {
  const code = String(doc?.code ?? "");
  const cls = expired && code === "ASK_ABORTED" ? Expired : errorClass(code);
  return new cls(String(doc?.message ?? code), { code: code || undefined, requestId, outcome });
}

// --- the canonical request and its digest ----------------------------------------------

const withoutNulls = (o) =>
  o && typeof o === "object" && !Array.isArray(o)
    ? Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined))
    : o;

function sortedJson(v) {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(",")}]`;
  if (v && typeof v === "object") {
    const keys = Object.keys(v).filter((k) => v[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedJson(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

/**
 * The canonical JSON of a request: no `id`, `multiSelect` spelled so, the vocabulary's
 * nulls left out (`meta` kept as is), keys sorted (by UTF-16 code unit, which equals code
 * point order outside the astral planes), no whitespace.
 */
export function canonical(request) {
  const req = withoutNulls({ ...request });
  delete req.id;
  if (req.agent && typeof req.agent === "object") req.agent = withoutNulls(req.agent);
  if (Array.isArray(req.questions)) {
    req.questions = req.questions.map((q0) => {
      const q = withoutNulls(q0);
      if (!q || typeof q !== "object" || Array.isArray(q)) return q;
      if ("multi_select" in q && !("multiSelect" in q)) {
        q.multiSelect = q.multi_select;
        delete q.multi_select;
      }
      if (Array.isArray(q.options)) q.options = q.options.map(withoutNulls);
      if (q.intent && typeof q.intent === "object") q.intent = withoutNulls(q.intent);
      return q;
    });
  }
  return sortedJson(req);
}

/** `sha256:HEX` of the canonical request: what its outcome's requestDigest is. */
export function requestDigest(request) {
  return "sha256:" + createHash("sha256").update(canonical(request), "utf8").digest("hex");
}

/** The request id of a caller-given key: `key-` and 32 hex digits of its SHA-256 (as in Python). */
export function idForKey(key) {
  return "key-" + createHash("sha256").update(String(key), "utf8").digest("hex").slice(0, 32);
}

/**
 * The request id of a tool call (a request with `wait`, dsh 0.2's continued question):
 * `call-` and 32 hex digits of the call id's SHA-256, as dshq gives it.
 */
export function idForCall(callId) {
  return "call-" + createHash("sha256").update(String(callId), "utf8").digest("hex").slice(0, 32);
}

// --- building requests ------------------------------------------------------------------

const optionJson = (o) => (typeof o === "string" ? { label: o } : { ...o });

/** A question document; `options` may be labels or `{label, description}`. */
export function question(id, text, { options, multiSelect, header, detail, intent, editable } = {}) {
  const q = { id, question: text };
  if (header !== undefined) q.header = header;
  if (detail !== undefined) q.detail = detail;
  if (options !== undefined) q.options = options.map(optionJson);
  if (multiSelect) q.multiSelect = true;
  if (intent !== undefined) q.intent = { ...intent };
  if (editable !== undefined) q.editable = editable;
  return q;
}

/**
 * A plan-review question: the plan as detail, Approve/Decline, and the plan-review intent.
 * The reviewer may approve the plan as they edited it unless `editable: false`.
 */
export function planReview(plan, { id = "plan", question: text = "Approve this plan?", approve = "Approve", decline = "Decline", header, editable } = {}) {
  return question(id, text, { detail: plan, header, options: [approve, decline], intent: { kind: "plan-review", approve }, editable });
}

/** The request document of `questions` (an array of questions, or a whole request). */
export function buildRequest(questions, { id, key, context, timeout, deadline, requireProvider, meta, agent, wait, quorum, ladder } = {}) {
  const doc = Array.isArray(questions) ? { questions: questions.map((q) => ({ ...q })) } : { ...questions };
  const fields = { context, timeout, deadline, requireProvider, meta, agent, wait, quorum, ladder };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) doc[k] = v;
  let wanted = id ?? (key !== undefined ? idForKey(key) : undefined);
  if (typeof doc.wait?.callId === "string") {
    // A request on a tool call takes the call's id.
    const call = idForCall(doc.wait.callId);
    if ((wanted !== undefined && wanted !== call) || key !== undefined) {
      throw new TypeError(`a request on a tool call takes the call's id (${call}): give no id or key`);
    }
    wanted = call;
  }
  if (wanted !== undefined) {
    if (doc.id !== undefined && doc.id !== null && doc.id !== wanted) {
      throw new TypeError(`the request's id ${JSON.stringify(doc.id)} is not ${JSON.stringify(wanted)}`);
    }
    doc.id = wanted;
  }
  if (!doc.id) throw new TypeError("a request needs an id or a key (so that it can be found again)");
  return doc;
}

// --- results ----------------------------------------------------------------------------

function ticketOf(t) {
  return typeof t === "string" ? { id: t, digest: null, name: null, request: null } : t;
}

// The decision document (docs/protocol.md, "The decision document") as the answer type.
function answered(outcome) {
  const answers = {};
  for (const i of outcome.answer?.answers ?? []) {
    const selected = [...(i.selected ?? [])];
    const custom = i.custom ?? null;
    const parts = [...selected, ...(custom !== null ? [custom] : [])];
    answers[i.id] = {
      id: i.id,
      selected,
      custom,
      edited: i.edited ?? null,
      skipped: selected.length === 0 && custom === null,
      value: custom !== null && selected.length === 0 ? custom : parts.length ? parts.join(", ") : null,
    };
  }
  const edited = {};
  for (const [qid, e] of Object.entries(outcome.edited ?? {})) {
    edited[qid] = { proposed: e.proposed, approved: e.approved, diff: e.diff };
  }
  return {
    id: outcome.id,
    answers,
    decision: outcome.decision ?? null,
    approved: outcome.decision === "approved",
    feedback: outcome.feedback ?? null,
    edited,
    approvers: [...(outcome.approvers ?? [])],
    votes: (outcome.votes ?? []).map((v) => ({ voter: v.voter, person: v.person ?? null, decision: v.decision ?? null, at: v.at, answer: v.answer })),
    decidedBy: outcome.decidedBy ?? "person",
    provider: outcome.provider ?? null,
    digest: outcome.requestDigest ?? null,
    callId: outcome.callId ?? null,
    receipt: outcome.receipt ?? null,
    outcome,
    /** The text approved for question `qid` whose proposal was `proposed`: as edited, else as asked. */
    approvedText(qid, proposed) {
      return edited[qid]?.approved ?? proposed;
    },
  };
}

/**
 * dsh 0.2's `{pending: true, callId}`: the wait window of a request on a tool call closed
 * before an answer. The question stays answerable; its answer comes to the call later
 * (`client.waitForCall(callId)` or `client.wait(pending.ticket)`).
 */
function pendingOf(ticket, callId) {
  return {
    pending: true,
    callId,
    id: ticket.id,
    ticket,
    message:
      "No answer arrived before the wait window closed. This is pending, not a skipped answer, and not " +
      "permission: the question stays answerable. Continue with work that does not depend on it; the " +
      `answer is delivered to call ${callId} (request ${ticket.id}) when it comes.`,
  };
}

/**
 * The approval a plan review's `result` gives for the `plan` asked, or PlanDeclined: a
 * decline (with the reviewer's feedback), a review that ended with no approval, or
 * (`takesEdit: false`) a plan approved as edited that the guarded code cannot take. The
 * one rule every gate of this package applies.
 */
export function approvalOf(result, plan, { questionId = "plan", takesEdit = true } = {}) {
  if (result.decision === "declined") throw new PlanDeclined(result.feedback, result);
  if (!result.approved) throw new PlanDeclined(null, result, "the review of the plan ended without approving it");
  const edit = result.edited[questionId] ?? null;
  if (edit && !takesEdit) {
    throw new PlanDeclined(null, result, "the reviewer approved the plan as they edited it, and the guarded function cannot take an edited plan (wrap it with { editable: true })");
  }
  return { plan: result.approvedText(questionId, plan), edited: edit !== null, diff: edit?.diff ?? null, result };
}

const UNITS = { ms: 0.001, s: 1, sec: 1, m: 60, min: 60, h: 3600, hr: 3600, d: 86400, day: 86400, days: 86400 };

function deadlinePassed(request, outcome) {
  if (!request) return false;
  const finished = Date.parse(outcome.finishedAt ?? "");
  if (Number.isNaN(finished)) return false;
  let deadline = typeof request.deadline === "string" ? Date.parse(request.deadline) : NaN;
  if (Number.isNaN(deadline) && typeof request.timeout === "string") {
    const re = /(\d+)\s*(ms|s|sec|m|min|h|hr|d|day|days)\b/g;
    const created = Date.parse(outcome.createdAt ?? "");
    const parts = [...request.timeout.matchAll(re)];
    if (!Number.isNaN(created) && parts.length && request.timeout.replace(re, "").trim() === "") {
      deadline = created + 1000 * parts.reduce((s, [, n, u]) => s + Number(n) * UNITS[u], 0);
    }
  }
  return !Number.isNaN(deadline) && finished >= deadline;
}

/** The typed result of an outcome document; throws its typed error when it is not an answer. */
export function resultOf(outcome, ticket) {
  if (outcome.status === "answered") return answered(outcome);
  throw errorFrom(outcome.error ?? {}, {
    requestId: outcome.id,
    outcome,
    expired: deadlinePassed(ticket?.request ?? null, outcome),
  });
}

// --- ids --------------------------------------------------------------------------------

// The protocol's id syntax (docs/protocol.md, section 2). A request id becomes a file name
// in the state root and a segment of the API's URLs, so it is checked before either is
// built: an id from an untrusted place (a caller's argument, a saved ticket) can never
// name a file outside the root (`../x`, an absolute path) or another URL (`..`).
const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function checkId(id, what = "request id") {
  if (typeof id === "string" && ID.test(id)) return id;
  throw new BadRequest(
    `${what} ${JSON.stringify(id)} is not an id: a letter or digit, then at most 127 letters, digits, '.', '_' or '-'; nothing was written or sent`,
  );
}

// --- the file transport -----------------------------------------------------------------
//
// A daemon must serve the root: it takes a dropped file from the inbox within moments.
// When the file still waits there after DAEMON_GRACE_MS and no live daemon's pid is in
// ROOT/daemon.pid, waiting throws NoDaemon (and takes the file back, so nothing is asked
// behind the caller's back). A daemon down for a moment after it took the file
// (restarted, killed mid-wait) is no error: the request is in its store.

const FINAL_CODES = new Set(["ASK_CANCELLED", "ASK_ABORTED", "ASK_EXPIRED"]);

/** How long a dropped file may wait in the inbox before the transport asks whether a daemon serves the root. */
export const DAEMON_GRACE_MS = 2000;

async function readJson(path) {
  try {
    const doc = JSON.parse(await readFile(path, "utf8"));
    return doc && typeof doc === "object" && !Array.isArray(doc) ? doc : null;
  } catch {
    return null; // absent, or (never with dshq's atomic writes) not whole yet
  }
}

const isRejection = (o) => o.status === "error" && !FINAL_CODES.has(o.error?.code);

/** Sleep `ms`; when `signal` aborts first, throw its reason. */
async function nap(ms, signal) {
  try {
    await sleep(ms, undefined, signal ? { signal } : undefined);
  } catch (e) {
    signal?.throwIfAborted();
    throw e;
  }
}

async function dropFile(dir, name, data) {
  await mkdir(join(dir, "tmp"), { recursive: true, mode: 0o700 });
  await mkdir(join(dir, "new"), { recursive: true, mode: 0o700 });
  const tmp = join(dir, "tmp", name);
  const f = await open(tmp, "wx", 0o600);
  try {
    await f.writeFile(data);
    await f.sync();
  } finally {
    await f.close();
  }
  await rename(tmp, join(dir, "new", name));
  const d = await open(join(dir, "new"), "r");
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

class FileTransport {
  constructor(root) {
    this.root = root;
  }

  async ownOutcome(t) {
    const o = await readJson(join(this.root, "outbox", `${checkId(t.id)}.json`));
    if (!o) return null;
    if (t.digest && (o.requestDigest !== t.digest || isRejection(o))) return null;
    return o;
  }

  async submit(doc) {
    const ticket = { id: checkId(doc.id), digest: requestDigest(doc), name: null, request: doc };
    if (await this.ownOutcome(ticket)) return ticket;
    const name = `${doc.id}.${process.pid}-${randomBytes(6).toString("hex")}`;
    await dropFile(join(this.root, "inbox"), `${name}.json`, JSON.stringify(doc));
    return { ...ticket, name, dropped: Date.now() };
  }

  /** Whether ROOT/daemon.pid names a live process (a daemon serving the root). */
  async daemonAlive() {
    let pid;
    try {
      pid = Number.parseInt((await readFile(join(this.root, "daemon.pid"), "utf8")).trim(), 10);
    } catch {
      return false;
    }
    if (!Number.isInteger(pid) || pid <= 0) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch (e) {
      return e.code === "EPERM";
    }
  }

  async checkTaken(t) {
    if (!t.name || !t.dropped || Date.now() - t.dropped < DAEMON_GRACE_MS) return;
    const waiting = join(this.root, "inbox", "new", `${t.name}.json`);
    try {
      await stat(waiting);
    } catch {
      return; // taken
    }
    if (await this.daemonAlive()) return;
    if (!(await this.takeBack(t))) return; // a daemon took it just now
    throw new NoDaemon(
      `no dshq daemon serves ${this.root}: the request was not taken from its inbox within ${DAEMON_GRACE_MS / 1000}s (nothing was asked). Start \`dshq daemon --root ${this.root}\`, or ask over HTTP.`,
      { requestId: t.id },
    );
  }

  async poll(t) {
    const o = await this.ownOutcome(t);
    if (o) return o;
    if (t.name) {
      const err = await readJson(join(this.root, "rejected", `${t.name}.error.json`));
      if (err) throw errorFrom(err, { requestId: t.id });
    }
    await this.checkTaken(t);
    return null;
  }

  /** Unlink the ticket's file if it still waits in the inbox: true when it was taken back (never asked). */
  async takeBack(t) {
    if (!t.name) return false;
    try {
      await unlink(join(this.root, "inbox", "new", `${t.name}.json`));
      return true;
    } catch (e) {
      if (e.code === "ENOENT") return false; // taken in (or refused) by the daemon
      throw e;
    }
  }

  async receipt(t) {
    const o = await this.ownOutcome(t);
    return o?.receipt ?? null;
  }

  async abort(t, reason) {
    const id = checkId(t.id);
    const inbox = join(this.root, "inbox");
    await mkdir(join(inbox, "tmp"), { recursive: true, mode: 0o700 });
    const tmp = join(inbox, "tmp", `${id}.abort.${process.pid}-${randomBytes(6).toString("hex")}`);
    await writeFile(tmp, reason ?? "", { mode: 0o600 });
    await rename(tmp, join(inbox, "new", `${id}.abort`));
  }
}

// --- the HTTP transport -----------------------------------------------------------------

const LONG_POLL_SECONDS = 30;

class HttpTransport {
  constructor(url, token) {
    this.url = url.replace(/\/+$/, "");
    Object.defineProperty(this, "token", { value: token, enumerable: false });
  }

  async call(method, path, body, requestId, signal) {
    let resp;
    try {
      resp = await fetch(this.url + path, {
        method,
        signal,
        headers: {
          authorization: `Bearer ${this.token}`,
          accept: "application/json",
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
    } catch (e) {
      signal?.throwIfAborted();
      const err = new Io(`cannot reach ${this.url}: ${e.cause?.message ?? e.message}`, { requestId });
      err.unreachable = true; // down or restarting, not refusing: a wait may try again
      throw err;
    }
    let text;
    try {
      text = await resp.text();
    } catch (e) {
      signal?.throwIfAborted();
      const err = new Io(`lost ${this.url} mid-answer: ${e.cause?.message ?? e.message}`, { requestId });
      err.unreachable = true;
      throw err;
    }
    if (resp.status === 204 || !text) {
      if (!resp.ok) throw new Io(`HTTP ${resp.status} from ${method} ${path}`, { requestId });
      return null;
    }
    let doc;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new Io(`HTTP ${resp.status} from ${method} ${path}: not JSON`, { requestId });
    }
    if (!resp.ok) {
      if (doc?.error) throw errorFrom(doc.error, { requestId });
      throw new Io(`HTTP ${resp.status} from ${method} ${path}`, { requestId });
    }
    return doc;
  }

  path(t, tail) {
    return `/api/v1/requests/${encodeURIComponent(checkId(t.id))}/${tail}`;
  }

  async submit(doc) {
    const asked = await this.call("POST", "/api/v1/requests", doc, doc.id);
    return { id: asked.id, digest: asked.requestDigest, name: null, request: doc };
  }

  async poll(t, wait = 0, signal = undefined) {
    const q = wait >= 1 ? `?wait=${Math.floor(wait)}s` : "";
    const o = await this.call("GET", this.path(t, "outcome") + q, undefined, t.id, signal);
    // A request on a tool call answers "pending" when the wait ends first: no outcome yet.
    if (!o || o.pending === true || (t.digest && o.requestDigest !== t.digest)) return null;
    return o;
  }

  async abort(t, reason) {
    await this.call("POST", this.path(t, "abort"), reason !== undefined ? { reason } : {}, t.id);
  }

  async receipt(t) {
    try {
      return await this.call("GET", this.path(t, "receipt"), undefined, t.id);
    } catch (e) {
      if (e instanceof RequestOpen) return null;
      throw e;
    }
  }
}

// --- the client -------------------------------------------------------------------------

/**
 * A dshq client over the state root's directories (`{root}`) or the HTTP API (`{url, token}`).
 * `poll`: seconds between looks (files); `reconnect`: how long a wait over HTTP keeps trying a
 * server it cannot reach (a daemon restarting) before it throws Io.
 */
export class Client {
  constructor({ root, url, token, poll = 0.2, reconnect = 30 } = {}) {
    if (root === undefined && url === undefined) {
      url = process.env.DSHQ_URL || undefined;
      if (url === undefined) root = process.env.DSHQ_ROOT || undefined;
    }
    if (url !== undefined) {
      token ??= process.env.DSHQ_TOKEN;
      if (!token) throw new TypeError("the HTTP transport needs a token (token or DSHQ_TOKEN)");
      this.transport = new HttpTransport(url, token);
    } else if (root !== undefined) {
      this.transport = new FileTransport(root);
    } else {
      throw new TypeError("name a dshq: root (or DSHQ_ROOT), or url and token (or DSHQ_URL)");
    }
    this.poll = poll;
    this.reconnect = reconnect;
  }

  // One look; over HTTP an unreachable server is looked at again (null) until it has been
  // unreachable for `reconnect` seconds.
  async look(t, wait, unreachable, signal) {
    signal?.throwIfAborted();
    try {
      const o = await this.transport.poll(t, wait, signal);
      unreachable.since = null;
      return o;
    } catch (e) {
      if (!e?.unreachable) throw e;
      unreachable.since ??= Date.now();
      if (Date.now() - unreachable.since > this.reconnect * 1000) throw e;
      await nap(Math.min(500, this.poll * 1000 + 100), signal);
      return null;
    }
  }

  /** The signed receipt of a final request (its outcome file, or the API's), null while it has none. */
  async receipt(ticket) {
    return this.transport.receipt(ticketOf(ticket));
  }

  /** Ask and return at once with the request's ticket (its id and digest). */
  async askNowait(questions, options = {}) {
    return this.transport.submit(buildRequest(questions, options));
  }

  /**
   * Ask and wait for the answer; throws the typed error of any other ending. A request on
   * a tool call (`wait: {callId, timeoutMs}`) waits `waitTimeout`, else its `timeoutMs`,
   * and then returns the pending result instead of throwing WaitTimeout.
   */
  async ask(questions, { waitTimeout, ...options } = {}) {
    const ticket = await this.askNowait(questions, options);
    const wait = ticket.request?.wait;
    const callId = typeof wait?.callId === "string" ? wait.callId : undefined;
    if (callId === undefined) return this.wait(ticket, { timeout: waitTimeout });
    const window = waitTimeout ?? (Number.isInteger(wait.timeoutMs) ? wait.timeoutMs / 1000 : undefined);
    try {
      return await this.wait(ticket, { timeout: window });
    } catch (e) {
      if (e instanceof WaitTimeout) return pendingOf(ticket, callId);
      throw e;
    }
  }

  /** The answer to the question of tool call `callId` (asked with `wait`): a pending ask's late answer. */
  async waitForCall(callId, { timeout, signal } = {}) {
    return this.wait(idForCall(callId), { timeout, signal });
  }

  /** The ticket's outcome document, or null when there is none yet. */
  async outcome(ticket) {
    return this.transport.poll(ticketOf(ticket));
  }

  /**
   * Wait until the request ends: its result, or its typed error. `signal` (an AbortSignal)
   * stops the wait and throws its reason; the request stays open (`abort` ends it).
   */
  async wait(ticket, { timeout, signal } = {}) {
    const t = ticketOf(ticket);
    if (this.transport instanceof HttpTransport) {
      const deadline = timeout === undefined ? null : Date.now() + timeout * 1000;
      const unreachable = { since: null };
      for (;;) {
        const left = deadline === null ? LONG_POLL_SECONDS : Math.max(0, (deadline - Date.now()) / 1000);
        const step = Math.min(LONG_POLL_SECONDS, left);
        const started = Date.now();
        const o = await this.look(t, step, unreachable, signal);
        if (o) return resultOf(o, t);
        if (deadline !== null && Date.now() >= deadline) {
          throw new WaitTimeout(`no outcome for ${t.id} within ${timeout}s`, { requestId: t.id });
        }
        // A long-poll that came back early (another request's outcome under the id) must
        // not turn into a busy loop.
        if (Date.now() - started < (step * 1000) / 2) await nap(this.poll * 1000, signal);
      }
    }
    const [, result] = await this.waitAny([t], { timeout, signal });
    return result;
  }

  /** Wait until the first of `tickets` ends: `[its ticket, its result]`, or its typed error (`signal` as in `wait`). */
  async waitAny(tickets, { timeout, signal } = {}) {
    const ts = [...tickets].map(ticketOf);
    if (!ts.length) throw new TypeError("waitAny needs at least one ticket");
    const deadline = timeout === undefined ? null : Date.now() + timeout * 1000;
    const pause = this.transport instanceof HttpTransport ? Math.max(this.poll, 0.25) : this.poll;
    const unreachable = { since: null };
    for (;;) {
      for (const t of ts) {
        const o = await this.look(t, 0, unreachable, signal);
        if (o) return [t, resultOf(o, t)];
      }
      if (deadline !== null && Date.now() >= deadline) {
        throw new WaitTimeout(`no outcome for any of ${ts.length} requests within ${timeout}s`);
      }
      await nap(pause * 1000, signal);
    }
  }

  /** Abort the request as its asker (it ends ASK_ABORTED). */
  async abort(ticket, reason) {
    await this.transport.abort(ticketOf(ticket), reason);
  }
}

/**
 * Wrap a function so that it runs only after a human approves its plan. With
 * `{ editable: true }` the reviewer may approve the plan as they edit it, and the function
 * is called with the approval as its last argument (`approval.plan` is the plan to carry
 * out, edited or not); without it the reviewer cannot edit the plan (the function could
 * never see the edit). Anything but an approval throws PlanDeclined (a decline with the
 * reviewer's feedback), and the function never runs.
 */
export function requiresApproval(client, fn, { plan, question: text, key, context, timeout, editable = false } = {}) {
  const name = fn.name || "function";
  return async function approved(...args) {
    const p = typeof plan === "function" ? plan(...args) : plan ?? `Run \`${name}\` with:\n\n\`\`\`\n${args.map((a) => JSON.stringify(a)).join(",\n") || "(no arguments)"}\n\`\`\`\n`;
    const q = typeof text === "function" ? text(...args) : text ?? `Approve running ${name}?`;
    const k = key !== undefined ? key(...args) : `${name}\n${p}`;
    const review = planReview(p, { question: q, editable: editable ? undefined : false });
    const result = await client.ask([review], { key: k, context, timeout });
    const approval = approvalOf(result, p, { takesEdit: editable });
    return editable ? fn.apply(this, [...args, approval]) : fn.apply(this, args);
  };
}
