// Types of dshq for Node (index.js). Hand-written, checked with `tsc --noEmit`.

/** One choice: the label is shown to the human and returned as the value. */
export interface Option {
  label: string;
  description?: string;
}

/** The plan-review intent: approved exactly when `approve` alone is selected. */
export interface Intent {
  kind: "plan-review";
  approve: string;
}

/** One question of a request (dshq's vocabulary). */
export interface Question {
  id: string;
  question: string;
  detail?: string;
  header?: string;
  options?: Option[];
  multiSelect?: boolean;
  intent?: Intent;
  /** Whether the reviewer may return the detail edited (a plan review: unless false). */
  editable?: boolean;
}

/** M-of-N approval: `approvals` distinct persons must give the same answer. */
export interface Quorum {
  approvals: number;
  group?: string;
  decline?: "veto" | "vote";
}

/** A whole request document. */
export interface Request {
  id?: string;
  context?: string;
  agent?: { id: string; instance: string };
  questions: Question[];
  deadline?: string;
  timeout?: string;
  requireProvider?: boolean;
  meta?: Record<string, unknown>;
  quorum?: Quorum;
  /** The deadline ladder (remindAfter, escalateAfter, escalateTo, expireAfter, onExpire, default). */
  ladder?: Record<string, unknown>;
  /** dsh 0.2's continued question: the tool call and the wait window (the id is the call's). */
  wait?: Wait;
}

/** The tool call a request belongs to, and how long an asker waits before it is pending. */
export interface Wait {
  callId: string;
  /** 1 to 2147483647 (else BAD_TIMEOUT); absent: wait for the answer. */
  timeoutMs?: number;
}

/** The fields `askNowait` and `ask` take beside the questions. */
export interface AskOptions {
  /** A caller-given key; the id is derived from it, so asking again re-attaches. */
  key?: string;
  /** The request id, instead of a key. */
  id?: string;
  context?: string;
  /** e.g. "30m". */
  timeout?: string;
  /** RFC 3339. */
  deadline?: string;
  requireProvider?: boolean;
  meta?: Record<string, unknown>;
  agent?: { id: string; instance: string };
  /** A request on a tool call (dsh 0.2): its id is the call's; `ask` may return Pending. */
  wait?: Wait;
  quorum?: Quorum;
  ladder?: Record<string, unknown>;
}

/** A request that was asked: its id and the digest of what was asked. */
export interface Ticket {
  readonly id: string;
  readonly digest: string | null;
  readonly name: string | null;
  readonly request: Request | null;
}

/** What `wait` and friends take: a ticket, or a bare id (no digest check). */
export type TicketLike = Ticket | string;

/** The answer to one question. */
export interface AnswerItem {
  id: string;
  selected: string[];
  custom: string | null;
  /** The reviewer's version of the question's proposal, when they approved it as edited. */
  edited: string | null;
  /** Nothing selected and no text. */
  skipped: boolean;
  /** The custom text, else the labels (and text) joined by ", "; null when skipped. */
  value: string | null;
}

/** A proposal approved as the reviewer edited it. */
export interface Edited {
  proposed: string;
  approved: string;
  /** The unified diff from proposed to approved. */
  diff: string;
}

/** One vote on a request with a quorum. */
export interface Vote {
  /** The identity that voted (`web:alice`, `provider:bob`). */
  voter: string;
  /** The person it belongs to. */
  person: string | null;
  decision: "approved" | "declined" | null;
  at: string;
  answer: unknown;
}

/** The outcome document, as written to outbox/ID.json (the decision document when answered). */
export interface OutcomeDocument {
  id: string;
  status: "answered" | "error";
  requestDigest: string | null;
  answer?: { answers: { id: string; selected: string[]; custom?: string; edited?: string }[] };
  decision?: "approved" | "declined" | null;
  /** The reviewer's words on a declined plan review. */
  feedback?: string;
  /** The proposals approved as edited, by question id. */
  edited?: Record<string, Edited>;
  /** A quorum's approvers (identities) and every vote. */
  approvers?: string[];
  votes?: { voter: string; person?: string; answer: unknown; decision?: "approved" | "declined"; at: string }[];
  /** "policy" when the asker's declared default was used on expiry. */
  decidedBy?: "policy";
  error?: { name: "UserQuestionError"; code: string; message: string };
  provider?: string | null;
  createdAt: string;
  finishedAt: string;
  /** Extension (dsh 0.2): the tool call of a request asked with `wait`. */
  callId?: string;
  /** Extension: the signed decision receipt (outbox files only; check it with
   * `dshq receipt verify FILE --key PUB`; its shape is contrib/schema/outcome.schema.json's). */
  receipt?: Record<string, unknown>;
}

/** A request that was answered: the decision document (docs/protocol.md) as values. */
export interface Answered {
  id: string;
  answers: Record<string, AnswerItem>;
  decision: "approved" | "declined" | null;
  approved: boolean;
  /** The reviewer's words on a declined plan review. */
  feedback: string | null;
  /** The proposals approved as edited, by question id. */
  edited: Record<string, Edited>;
  approvers: string[];
  votes: Vote[];
  decidedBy: "person" | "policy";
  provider: string | null;
  digest: string | null;
  /** The tool call of a request asked with `wait`. */
  callId: string | null;
  /** The signed receipt, when the outcome carried one (the file transport). */
  receipt: Record<string, unknown> | null;
  outcome: OutcomeDocument;
  /** The text approved for question `qid` whose proposal was `proposed`: as edited, else as asked. */
  approvedText(qid: string, proposed: string): string;
}

/** What a plan review approved: the plan to carry out (as edited when `edited`). */
export interface Approval {
  plan: string;
  edited: boolean;
  diff: string | null;
  result: Answered;
}

/** dsh 0.2's `{pending: true, callId}`: the window closed; the answer comes to the call later. */
export interface Pending {
  readonly pending: true;
  readonly callId: string;
  readonly id: string;
  readonly ticket: Ticket;
  readonly message: string;
}

/** Where the client reaches dshq. */
export type ClientOptions =
  | { root: string; url?: undefined; token?: undefined; poll?: number; reconnect?: number }
  | { url: string; token?: string; root?: undefined; poll?: number; reconnect?: number }
  | { root?: undefined; url?: undefined; token?: undefined; poll?: number; reconnect?: number };

/** A dshq client over the state root's directories or the HTTP API. */
export class Client {
  constructor(options?: ClientOptions);
  /** Seconds between looks for an outcome (files). */
  poll: number;
  /** Seconds a wait over HTTP keeps trying a server it cannot reach. */
  reconnect: number;
  /** The signed receipt of a final request, null while it has none. */
  receipt(ticket: TicketLike): Promise<Record<string, unknown> | null>;
  askNowait(questions: Question[] | Request, options?: AskOptions): Promise<Ticket>;
  ask(questions: Question[] | Request, options: AskOptions & { wait: Wait; waitTimeout?: number }): Promise<Answered | Pending>;
  ask(questions: Question[] | Request, options?: AskOptions & { waitTimeout?: number }): Promise<Answered>;
  /** The answer to the question of tool call `callId` (asked with `wait`). */
  waitForCall(callId: string, options?: WaitOptions): Promise<Answered>;
  outcome(ticket: TicketLike): Promise<OutcomeDocument | null>;
  wait(ticket: TicketLike, options?: WaitOptions): Promise<Answered>;
  waitAny(tickets: Iterable<TicketLike>, options?: WaitOptions): Promise<[Ticket, Answered]>;
  abort(ticket: TicketLike, reason?: string): Promise<void>;
}

/** How long a wait lasts, and what stops it. */
export interface WaitOptions {
  /** Seconds before it throws WaitTimeout (default: until the request ends). */
  timeout?: number;
  /** Stops the wait, throwing the signal's reason; the request stays open (`abort` ends it). */
  signal?: AbortSignal;
}

/** A dshq error: a stable code and a message for people. */
export class DshqError extends Error {
  constructor(message: string, init?: { code?: string; requestId?: string | null; outcome?: OutcomeDocument | null });
  static readonly code?: string;
  readonly code: string;
  readonly requestId: string | null;
  readonly outcome: OutcomeDocument | null;
}
export class BadRequest extends DshqError {}
export class AskAborted extends DshqError {}
export class EmptyQuestions extends DshqError {}
export class CallerNotLive extends DshqError {}
export class DelegatedCaller extends DshqError {}
export class BadIntent extends DshqError {}
export class NoProvider extends DshqError {}
export class DuplicateId extends DshqError {}
export class BadAnswer extends DshqError {}
export class AskCancelled extends DshqError {}
/** ASK_EXPIRED: nobody answered before the request's ladder expired it. */
export class AskExpired extends DshqError {}
export class DuplicateProvider extends DshqError {}
export class LeaseExpired extends DshqError {}
export class NotFound extends DshqError {}
export class RequestFinal extends DshqError {}
export class ClaimedElsewhere extends DshqError {}
export class WrongContext extends DshqError {}
export class WaitTimeout extends DshqError {}
export class AuditBroken extends DshqError {}
export class DaemonRunning extends DshqError {}
export class UnsafeRoot extends DshqError {}
export class Usage extends DshqError {}
export class Store extends DshqError {}
export class Io extends DshqError {}
export class Unauthorized extends DshqError {}
export class Forbidden extends DshqError {}
export class TooLarge extends DshqError {}
export class NoRoot extends DshqError {}
export class BadReviewState extends DshqError {}
export class EditNotAllowed extends DshqError {}
/** OWN_REQUEST: the asker's own vote on a request with a quorum (never counts). */
export class OwnRequest extends DshqError {}
/** NOT_IN_GROUP: a vote from outside a request's quorum group. */
export class NotInGroup extends DshqError {}
/** ALREADY_VOTED: a reviewer's second vote, for another answer (a vote never changes). */
export class AlreadyVoted extends DshqError {}
/** REQUEST_OPEN: a receipt asked of a request that is not final yet. */
export class RequestOpen extends DshqError {}
/** RECEIPT_INVALID: not an intact receipt. */
export class ReceiptInvalid extends DshqError {}
/** RECEIPT_UNTRUSTED_KEY: an intact receipt signed by a key the verifier does not trust. */
export class ReceiptUntrustedKey extends DshqError {}
/** RECEIPT_MISMATCH: an intact receipt of another request. */
export class ReceiptMismatch extends DshqError {}
/** SLACK_BAD_SIGNATURE: a Slack interaction whose signature is missing or wrong. */
export class SlackBadSignature extends DshqError {}
/** SLACK_STALE_REQUEST: a signed Slack interaction outside the five-minute window. */
export class SlackStaleRequest extends DshqError {}
/** SLACK_UNKNOWN_USER: a Slack user mapped to no dshq reviewer. */
export class SlackUnknownUser extends DshqError {}
/** TELEGRAM_BAD_SECRET: an update to the Telegram webhook without its secret token. */
export class TelegramBadSecret extends DshqError {}
/** TELEGRAM_UNKNOWN_USER: a Telegram user listed for no person in [people]. */
export class TelegramUnknownUser extends DshqError {}
/** LINK_INVALID: a mail's link not signed by this root, or changed. */
export class LinkInvalid extends DshqError {}
/** LINK_EXPIRED: a mail's link past its expiry. */
export class LinkExpired extends DshqError {}
/** LINK_USED: a mail's link through which an answer was already sent. */
export class LinkUsed extends DshqError {}
/** BAD_TIMEOUT: a wait window that is not 1 to 2147483647 ms. */
export class BadTimeout extends DshqError {}
/** DUPLICATE_WAIT: a second request, with other content, on one tool call. */
export class DuplicateWait extends DshqError {}
/** NO_DAEMON: no `dshq daemon` serves the root the file transport asked in. */
export class NoDaemon extends DshqError {}
/** OIDC_STATE: a page sign-in whose state is not the one its browser started (or a replay) (the page's sign-in). */
export class OidcState extends DshqError {}
/** OIDC_NONCE: an ID token whose nonce is not the sign-in's (the page's sign-in). */
export class OidcNonce extends DshqError {}
/** OIDC_ISSUER: an ID token from another issuer than the configured provider (the page's sign-in). */
export class OidcIssuer extends DshqError {}
/** OIDC_AUDIENCE: an ID token not meant for dshq's client id (the page's sign-in). */
export class OidcAudience extends DshqError {}
/** OIDC_EXPIRED: an ID token past its expiry (the page's sign-in). */
export class OidcExpired extends DshqError {}
/** OIDC_UNSIGNED: an unsigned ID token (alg none) or one with an algorithm dshq does not allow (the page's sign-in). */
export class OidcUnsigned extends DshqError {}
/** OIDC_UNKNOWN_KEY: an ID token signed by a key the provider does not publish (the page's sign-in). */
export class OidcUnknownKey extends DshqError {}
/** OIDC_BAD_SIGNATURE: an ID token whose signature does not verify (the page's sign-in). */
export class OidcBadSignature extends DshqError {}
/** OIDC_CODE_REJECTED: the provider refused the sign-in's code (used already, or the PKCE verifier) (the page's sign-in). */
export class OidcCodeRejected extends DshqError {}
/** OIDC_PROVIDER: the identity provider cannot be reached, or answered with an error (the page's sign-in). */
export class OidcProvider extends DshqError {}
/** OIDC_NOT_MAPPED: a person no rule of the config file's [[oidc.rule]] admits (the page's sign-in). */
export class OidcNotMapped extends DshqError {}
/** BAD_RETURN_URL: a sign-in's return address that is not a path on this site (the page's sign-in). */
export class BadReturnUrl extends DshqError {}
/** JWT_MALFORMED: a signed token from another party (a chat service's call, an identity provider's access token) that is not a well-formed JWT. */
export class JwtMalformed extends DshqError {}
/** JWT_UNSIGNED: a signed token that is unsigned (alg none) or signed with an algorithm dshq does not allow (only RS256 and ES256). */
export class JwtUnsigned extends DshqError {}
/** JWT_ISSUER: a signed token issued by another than the configured issuer. */
export class JwtIssuer extends DshqError {}
/** JWT_AUDIENCE: a signed token not meant for this audience. */
export class JwtAudience extends DshqError {}
/** JWT_EXPIRED: a signed token past its expiry, or not valid yet. */
export class JwtExpired extends DshqError {}
/** JWT_UNKNOWN_KEY: a signed token whose key the issuer does not publish (made up, or rotated out). */
export class JwtUnknownKey extends DshqError {}
/** JWT_BAD_SIGNATURE: a signed token whose signature does not verify. */
export class JwtBadSignature extends DshqError {}
/** JWT_KEYS: the issuer's OpenID metadata or key set cannot be fetched. */
export class JwtKeys extends DshqError {}
/** AWAY_IN_PAST: an away notice whose end is not in the future (delegation while a reviewer is away). */
export class AwayInPast extends DshqError {}
/** AWAY_SELF: an away notice naming the person as their own delegate (delegation while a reviewer is away). */
export class AwaySelf extends DshqError {}
/** AWAY_CHAIN: an away notice that would chain delegations (the delegate is away, or the person is a delegate) (delegation while a reviewer is away). */
export class AwayChain extends DshqError {}
/** UNKNOWN_DELEGATE: an away notice whose delegate is no reviewer the people directory or the web tokens know (delegation while a reviewer is away). */
export class UnknownDelegate extends DshqError {}
/** NOT_AWAY: an away notice cancelled where the person has none (delegation while a reviewer is away). */
export class NotAway extends DshqError {}
/** NOT_DELEGATE: an answer for a person whose delegate the caller is not now (delegation while a reviewer is away). */
export class NotDelegate extends DshqError {}
/** TEAMS_SERVICE_URL: a call to the Teams messaging endpoint whose token's serviceUrl claim is not the activity's. */
export class TeamsServiceUrl extends DshqError {}
/** TEAMS_UNKNOWN_USER: a Teams user whom the people directory does not list (teams:OBJECTID). */
export class TeamsUnknownUser extends DshqError {}
/** ASK_ABORTED because the request's own deadline passed. */
export class Expired extends AskAborted {}

/** A declined plan review; `feedback` is the reviewer's text. */
export class PlanDeclined extends Error {
  constructor(feedback: string | null, result?: Answered | null, message?: string);
  readonly feedback: string | null;
  readonly result: Answered | null;
}

/** Every stable code, in dshq's order. */
export const CODES: readonly string[];
export function errorClass(code: string): typeof DshqError;
export function canonical(request: Request): string;
export function requestDigest(request: Request): string;
export function idForKey(key: string): string;
/** The request id of a tool call: `call-` and 32 hex digits of its SHA-256. */
export function idForCall(callId: string): string;
export function question(
  id: string,
  text: string,
  options?: { options?: (string | Option)[]; multiSelect?: boolean; header?: string; detail?: string; intent?: Intent; editable?: boolean },
): Question;
export function planReview(
  plan: string,
  options?: { id?: string; question?: string; approve?: string; decline?: string; header?: string; editable?: boolean },
): Question;
/** How long a dropped file may wait in the inbox before the file transport asks whether a daemon serves the root. */
export const DAEMON_GRACE_MS: number;
/** The approval a plan review's result gives for the plan asked; throws PlanDeclined for anything else. */
export function approvalOf(result: Answered, plan: string, options?: { questionId?: string; takesEdit?: boolean }): Approval;
export function buildRequest(questions: Question[] | Request, options?: AskOptions): Request & { id: string };
export function resultOf(outcome: OutcomeDocument, ticket?: Ticket): Answered;

/**
 * Wrap a function so that it runs only after a human approves its plan; with
 * `{ editable: true }` it gets the Approval (the plan as approved, edited or not) as its
 * last argument.
 */
export function requiresApproval<A extends unknown[], R>(
  client: Client,
  fn: (...args: [...A, Approval]) => Promise<R> | R,
  options: {
    plan?: string | ((...args: A) => string);
    question?: string | ((...args: A) => string);
    key?: (...args: A) => string;
    context?: string;
    timeout?: string;
    editable: true;
  },
): (...args: A) => Promise<R>;
export function requiresApproval<A extends unknown[], R>(
  client: Client,
  fn: (...args: A) => Promise<R> | R,
  options?: {
    plan?: string | ((...args: A) => string);
    question?: string | ((...args: A) => string);
    key?: (...args: A) => string;
    context?: string;
    timeout?: string;
    editable?: false;
  },
): (...args: A) => Promise<R>;
