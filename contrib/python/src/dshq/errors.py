"""One exception class per stable dshq error code.

dshq's error codes (``docs/protocol.md``) are its API for programs: every code is a class
here, a subclass of :class:`DshqError`, so an agent catches exactly the failures it can act
on (``except dshq.AskCancelled``) and lets the others through. ``CODES`` is the list the
tests compare with the daemon's own schema, so a code added to dshq cannot be missing here.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple, Type

__all__ = [
    "DshqError",
    "CODES",
    "error_class",
    "error_from",
    "Expired",
    "Aborted",
    "Cancelled",
    "PlanDeclined",
    "BadRequest",
    "AskAborted",
    "EmptyQuestions",
    "CallerNotLive",
    "DelegatedCaller",
    "BadIntent",
    "NoProvider",
    "DuplicateId",
    "BadAnswer",
    "AskCancelled",
    "AskExpired",
    "DuplicateProvider",
    "LeaseExpired",
    "NotFound",
    "RequestFinal",
    "ClaimedElsewhere",
    "WrongContext",
    "WaitTimeout",
    "AuditBroken",
    "DaemonRunning",
    "UnsafeRoot",
    "Usage",
    "Store",
    "Io",
    "Unauthorized",
    "Forbidden",
    "TooLarge",
    "NoRoot",
    "BadReviewState",
    "EditNotAllowed",
    "OwnRequest",
    "NotInGroup",
    "AlreadyVoted",
    "RequestOpen",
    "ReceiptInvalid",
    "ReceiptUntrustedKey",
    "ReceiptMismatch",
    "SlackBadSignature",
    "SlackStaleRequest",
    "SlackUnknownUser",
    "TelegramBadSecret",
    "TelegramUnknownUser",
    "LinkInvalid",
    "LinkExpired",
    "LinkUsed",
    "BadTimeout",
    "DuplicateWait",
    "NoDaemon",
    "OidcState",
    "OidcNonce",
    "OidcIssuer",
    "OidcAudience",
    "OidcExpired",
    "OidcUnsigned",
    "OidcUnknownKey",
    "OidcBadSignature",
    "OidcCodeRejected",
    "OidcProvider",
    "OidcNotMapped",
    "BadReturnUrl",
    "JwtMalformed",
    "JwtUnsigned",
    "JwtIssuer",
    "JwtAudience",
    "JwtExpired",
    "JwtUnknownKey",
    "JwtBadSignature",
    "JwtKeys",
    "AwayInPast",
    "AwaySelf",
    "AwayChain",
    "UnknownDelegate",
    "NotAway",
    "NotDelegate",
    "TeamsServiceUrl",
    "TeamsUnknownUser",
]


class DshqError(Exception):
    """A dshq error: ``code`` (stable, e.g. ``"BAD_REQUEST"``) and ``message`` (for people).

    ``request_id`` names the request it is about when there is one, and ``outcome`` holds the
    outcome document when the error is how a request ended (cancelled, aborted).
    """

    code: str = ""

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        request_id: Optional[str] = None,
        outcome: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.request_id = request_id
        self.outcome = dict(outcome) if outcome is not None else None

    def __str__(self) -> str:
        return "%s: %s" % (self.code, self.message)


# One class per code, in dshq's own order (src/protocol/error.rs).

class BadRequest(DshqError):
    """``BAD_REQUEST``: Malformed input: not JSON, wrong type, unknown or missing field, bad id, size."""

    code = "BAD_REQUEST"


class AskAborted(DshqError):
    """``ASK_ABORTED``: The request was aborted by the asker, or its deadline passed."""

    code = "ASK_ABORTED"


class EmptyQuestions(DshqError):
    """``EMPTY_QUESTIONS``: The request has no questions."""

    code = "EMPTY_QUESTIONS"


class CallerNotLive(DshqError):
    """``CALLER_NOT_LIVE``: The asking agent is not a live registry instance."""

    code = "CALLER_NOT_LIVE"


class DelegatedCaller(DshqError):
    """``DELEGATED_CALLER``: The asking agent is owned by another agent (it has no human answerer)."""

    code = "DELEGATED_CALLER"


class BadIntent(DshqError):
    """``BAD_INTENT``: An intent that names no option of its question, or that has no detail."""

    code = "BAD_INTENT"


class NoProvider(DshqError):
    """``NO_PROVIDER``: requireProvider was set and no provider lease is live in the context."""

    code = "NO_PROVIDER"


class DuplicateId(DshqError):
    """``DUPLICATE_ID``: The request id exists already with different content."""

    code = "DUPLICATE_ID"


class BadAnswer(DshqError):
    """``BAD_ANSWER``: An answer that breaks one of the answer rules."""

    code = "BAD_ANSWER"


class AskCancelled(DshqError):
    """``ASK_CANCELLED``: The human (provider side) cancelled the request."""

    code = "ASK_CANCELLED"


class AskExpired(DshqError):
    """``ASK_EXPIRED``: Nobody answered: the request's ladder expired it (``ladder.expireAfter``)."""

    code = "ASK_EXPIRED"


class DuplicateProvider(DshqError):
    """``DUPLICATE_PROVIDER``: A live provider lease already exists in the context."""

    code = "DUPLICATE_PROVIDER"


class LeaseExpired(DshqError):
    """``LEASE_EXPIRED``: The lease is not the live one of its context."""

    code = "LEASE_EXPIRED"


class NotFound(DshqError):
    """``NOT_FOUND``: No request (or agent) with that id."""

    code = "NOT_FOUND"


class RequestFinal(DshqError):
    """``REQUEST_FINAL``: The request is already in a final state."""

    code = "REQUEST_FINAL"


class ClaimedElsewhere(DshqError):
    """``CLAIMED_ELSEWHERE``: The request is claimed by another lease."""

    code = "CLAIMED_ELSEWHERE"


class WrongContext(DshqError):
    """``WRONG_CONTEXT``: The lease answers for another context than the request's."""

    code = "WRONG_CONTEXT"


class WaitTimeout(DshqError):
    """``WAIT_TIMEOUT``: Waiting for an outcome ran past its timeout."""

    code = "WAIT_TIMEOUT"


class AuditBroken(DshqError):
    """``AUDIT_BROKEN``: The event log's hash chain does not verify."""

    code = "AUDIT_BROKEN"


class DaemonRunning(DshqError):
    """``DAEMON_RUNNING``: Another daemon already runs on this state root."""

    code = "DAEMON_RUNNING"


class UnsafeRoot(DshqError):
    """``UNSAFE_ROOT``: The state root can be changed by someone other than its user."""

    code = "UNSAFE_ROOT"


class Usage(DshqError):
    """``USAGE``: Bad flags, or a command that needs a terminal ran without one."""

    code = "USAGE"


class Store(DshqError):
    """``STORE``: The database failed."""

    code = "STORE"


class Io(DshqError):
    """``IO``: A file-system or network operation failed."""

    code = "IO"


class Unauthorized(DshqError):
    """``UNAUTHORIZED``: An HTTP call without a valid bearer token."""

    code = "UNAUTHORIZED"


class Forbidden(DshqError):
    """``FORBIDDEN``: An HTTP call whose token's role or context may not take that action."""

    code = "FORBIDDEN"


class TooLarge(DshqError):
    """``TOO_LARGE``: An HTTP request body over the size limit."""

    code = "TOO_LARGE"


class NoRoot(DshqError):
    """``NO_ROOT``: A read command named a state root that does not exist."""

    code = "NO_ROOT"


class BadReviewState(DshqError):
    """``BAD_REVIEW_STATE``: An MCP ``requestState`` forged, altered, expired, another
    caller's, or used already."""

    code = "BAD_REVIEW_STATE"


class OwnRequest(DshqError):
    """``OWN_REQUEST``: The asker's own vote on a request with a quorum (never counts)."""

    code = "OWN_REQUEST"


class NotInGroup(DshqError):
    """``NOT_IN_GROUP``: A vote from outside a request's quorum group."""

    code = "NOT_IN_GROUP"


class AlreadyVoted(DshqError):
    """``ALREADY_VOTED``: A reviewer's second vote, for another answer."""

    code = "ALREADY_VOTED"


class EditNotAllowed(DshqError):
    """``EDIT_NOT_ALLOWED``: An answer gives an edited text where no edit is allowed (a
    decline, or a question that is not editable)."""

    code = "EDIT_NOT_ALLOWED"


class RequestOpen(DshqError):
    """``REQUEST_OPEN``: A receipt was asked of a request that is still open (pending or
    claimed); it has one once it is final."""

    code = "REQUEST_OPEN"


class ReceiptInvalid(DshqError):
    """``RECEIPT_INVALID``: Not an intact receipt: never one, or changed after it was
    signed."""

    code = "RECEIPT_INVALID"


class ReceiptUntrustedKey(DshqError):
    """``RECEIPT_UNTRUSTED_KEY``: An intact receipt signed by a key the verifier was not
    given."""

    code = "RECEIPT_UNTRUSTED_KEY"


class ReceiptMismatch(DshqError):
    """``RECEIPT_MISMATCH``: An intact receipt of another request than the one named, or
    in an outcome file that says something else than the receipt signed."""

    code = "RECEIPT_MISMATCH"


class SlackBadSignature(DshqError):
    """``SLACK_BAD_SIGNATURE``: A request to the Slack interactions endpoint whose
    ``X-Slack-Signature`` is missing or does not match."""

    code = "SLACK_BAD_SIGNATURE"


class SlackStaleRequest(DshqError):
    """``SLACK_STALE_REQUEST``: A signed request to the Slack interactions endpoint whose
    timestamp is outside Slack's five-minute window."""

    code = "SLACK_STALE_REQUEST"


class SlackUnknownUser(DshqError):
    """``SLACK_UNKNOWN_USER``: A Slack user the config file maps to no dshq reviewer
    pressed a button; nothing was recorded."""

    code = "SLACK_UNKNOWN_USER"


class TelegramBadSecret(DshqError):
    """``TELEGRAM_BAD_SECRET``: An update posted to the Telegram webhook without the
    webhook's secret token in ``X-Telegram-Bot-Api-Secret-Token``."""

    code = "TELEGRAM_BAD_SECRET"


class TelegramUnknownUser(DshqError):
    """``TELEGRAM_UNKNOWN_USER``: A Telegram user whom the config file's ``[people]``
    lists for no person pressed a button; nothing was recorded."""

    code = "TELEGRAM_UNKNOWN_USER"
class LinkInvalid(DshqError):
    """``LINK_INVALID``: A mail's link that is not one this root signed, or that was
    changed."""

    code = "LINK_INVALID"


class LinkExpired(DshqError):
    """``LINK_EXPIRED``: A mail's link past its expiry."""

    code = "LINK_EXPIRED"


class LinkUsed(DshqError):
    """``LINK_USED``: A mail's link through which an answer was already sent."""

    code = "LINK_USED"


class BadTimeout(DshqError):
    """``BAD_TIMEOUT`` (dsh 0.2's name): a wait window (``wait.timeoutMs``) that is not a
    whole number of milliseconds from 1 to 2147483647."""

    code = "BAD_TIMEOUT"


class DuplicateWait(DshqError):
    """``DUPLICATE_WAIT`` (dsh 0.2's name): a second request, with other content, on a tool
    call that already has one."""

    code = "DUPLICATE_WAIT"
class NoDaemon(DshqError):
    """``NO_DAEMON``: no ``dshq daemon`` serves the root the file transport asked in (its
    request was not taken from the inbox, and no live daemon's pid is in
    ``ROOT/daemon.pid``). Start one (``dshq daemon --root ROOT``), or ask over HTTP."""

    code = "NO_DAEMON"


class OidcState(DshqError):
    """``OIDC_STATE`` (the page's sign-in): a page sign-in whose state is not the one its
    browser started (or a replay)."""

    code = "OIDC_STATE"


class OidcNonce(DshqError):
    """``OIDC_NONCE`` (the page's sign-in): an ID token whose nonce is not the sign-in's."""

    code = "OIDC_NONCE"


class OidcIssuer(DshqError):
    """``OIDC_ISSUER`` (the page's sign-in): an ID token from another issuer than the
    configured provider."""

    code = "OIDC_ISSUER"


class OidcAudience(DshqError):
    """``OIDC_AUDIENCE`` (the page's sign-in): an ID token not meant for dshq's client id."""

    code = "OIDC_AUDIENCE"


class OidcExpired(DshqError):
    """``OIDC_EXPIRED`` (the page's sign-in): an ID token past its expiry."""

    code = "OIDC_EXPIRED"


class OidcUnsigned(DshqError):
    """``OIDC_UNSIGNED`` (the page's sign-in): an unsigned ID token (alg none) or one with
    an algorithm dshq does not allow."""

    code = "OIDC_UNSIGNED"


class OidcUnknownKey(DshqError):
    """``OIDC_UNKNOWN_KEY`` (the page's sign-in): an ID token signed by a key the provider
    does not publish."""

    code = "OIDC_UNKNOWN_KEY"


class OidcBadSignature(DshqError):
    """``OIDC_BAD_SIGNATURE`` (the page's sign-in): an ID token whose signature does not
    verify."""

    code = "OIDC_BAD_SIGNATURE"


class OidcCodeRejected(DshqError):
    """``OIDC_CODE_REJECTED`` (the page's sign-in): the provider refused the sign-in's code
    (used already, or the PKCE verifier)."""

    code = "OIDC_CODE_REJECTED"


class OidcProvider(DshqError):
    """``OIDC_PROVIDER`` (the page's sign-in): the identity provider cannot be reached, or
    answered with an error."""

    code = "OIDC_PROVIDER"


class OidcNotMapped(DshqError):
    """``OIDC_NOT_MAPPED`` (the page's sign-in): a person no rule of the config file's
    [[oidc.rule]] admits."""

    code = "OIDC_NOT_MAPPED"


class BadReturnUrl(DshqError):
    """``BAD_RETURN_URL`` (the page's sign-in): a sign-in's return address that is not a
    path on this site."""

    code = "BAD_RETURN_URL"


class JwtMalformed(DshqError):
    """``JWT_MALFORMED``: a signed token from another party (a chat service's call, an
    identity provider's access token) that is not a well-formed JWT."""

    code = "JWT_MALFORMED"


class JwtUnsigned(DshqError):
    """``JWT_UNSIGNED``: a signed token that is unsigned (alg none) or signed with an
    algorithm dshq does not allow (only RS256 and ES256)."""

    code = "JWT_UNSIGNED"


class JwtIssuer(DshqError):
    """``JWT_ISSUER``: a signed token issued by another than the configured issuer."""

    code = "JWT_ISSUER"


class JwtAudience(DshqError):
    """``JWT_AUDIENCE``: a signed token not meant for this audience."""

    code = "JWT_AUDIENCE"


class JwtExpired(DshqError):
    """``JWT_EXPIRED``: a signed token past its expiry, or not valid yet."""

    code = "JWT_EXPIRED"


class JwtUnknownKey(DshqError):
    """``JWT_UNKNOWN_KEY``: a signed token whose key the issuer does not publish (made
    up, or rotated out)."""

    code = "JWT_UNKNOWN_KEY"


class JwtBadSignature(DshqError):
    """``JWT_BAD_SIGNATURE``: a signed token whose signature does not verify."""

    code = "JWT_BAD_SIGNATURE"


class JwtKeys(DshqError):
    """``JWT_KEYS``: the issuer's OpenID metadata or key set cannot be fetched."""

    code = "JWT_KEYS"
class AwayInPast(DshqError):
    """``AWAY_IN_PAST`` (delegation while a reviewer is away): an away notice whose end is not in the future."""

    code = "AWAY_IN_PAST"


class AwaySelf(DshqError):
    """``AWAY_SELF`` (delegation while a reviewer is away): an away notice naming the person as their own delegate."""

    code = "AWAY_SELF"


class AwayChain(DshqError):
    """``AWAY_CHAIN`` (delegation while a reviewer is away): an away notice that would chain delegations (the delegate is away, or the person is a delegate)."""

    code = "AWAY_CHAIN"


class UnknownDelegate(DshqError):
    """``UNKNOWN_DELEGATE`` (delegation while a reviewer is away): an away notice whose delegate is no reviewer the people directory or the web tokens know."""

    code = "UNKNOWN_DELEGATE"


class NotAway(DshqError):
    """``NOT_AWAY`` (delegation while a reviewer is away): an away notice cancelled where the person has none."""

    code = "NOT_AWAY"


class NotDelegate(DshqError):
    """``NOT_DELEGATE`` (delegation while a reviewer is away): an answer for a person whose delegate the caller is not now."""

    code = "NOT_DELEGATE"


class TeamsServiceUrl(DshqError):
    """``TEAMS_SERVICE_URL``: a call to the Teams messaging endpoint whose token's
    serviceUrl claim is not the activity's."""

    code = "TEAMS_SERVICE_URL"


class TeamsUnknownUser(DshqError):
    """``TEAMS_UNKNOWN_USER``: a Teams user whom the people directory does not list
    (teams:OBJECTID)."""

    code = "TEAMS_UNKNOWN_USER"


_ALL: Tuple[Type[DshqError], ...] = (
    BadRequest,
    AskAborted,
    EmptyQuestions,
    CallerNotLive,
    DelegatedCaller,
    BadIntent,
    NoProvider,
    DuplicateId,
    BadAnswer,
    AskCancelled,
    AskExpired,
    DuplicateProvider,
    LeaseExpired,
    NotFound,
    RequestFinal,
    ClaimedElsewhere,
    WrongContext,
    WaitTimeout,
    AuditBroken,
    DaemonRunning,
    UnsafeRoot,
    Usage,
    Store,
    Io,
    Unauthorized,
    Forbidden,
    TooLarge,
    NoRoot,
    BadReviewState,
    EditNotAllowed,
    OwnRequest,
    NotInGroup,
    AlreadyVoted,
    RequestOpen,
    ReceiptInvalid,
    ReceiptUntrustedKey,
    ReceiptMismatch,
    SlackBadSignature,
    SlackStaleRequest,
    SlackUnknownUser,
    TelegramBadSecret,
    TelegramUnknownUser,
    LinkInvalid,
    LinkExpired,
    LinkUsed,
    BadTimeout,
    DuplicateWait,
    NoDaemon,
    OidcState,
    OidcNonce,
    OidcIssuer,
    OidcAudience,
    OidcExpired,
    OidcUnsigned,
    OidcUnknownKey,
    OidcBadSignature,
    OidcCodeRejected,
    OidcProvider,
    OidcNotMapped,
    BadReturnUrl,
    JwtMalformed,
    JwtUnsigned,
    JwtIssuer,
    JwtAudience,
    JwtExpired,
    JwtUnknownKey,
    JwtBadSignature,
    JwtKeys,
    AwayInPast,
    AwaySelf,
    AwayChain,
    UnknownDelegate,
    NotAway,
    NotDelegate,
    TeamsServiceUrl,
    TeamsUnknownUser,
)

#: Every stable code dshq reports, in its own order.
CODES: Tuple[str, ...] = tuple(c.code for c in _ALL)

_BY_CODE: Dict[str, Type[DshqError]] = {c.code: c for c in _ALL}


class Expired(AskAborted):
    """``ASK_ABORTED`` because the request's deadline (or timeout) passed, not the asker.

    A subclass of :class:`AskAborted`, so ``except dshq.AskAborted`` catches both.
    """


#: Short names for the two ways a request ends without an answer.
Aborted = AskAborted
Cancelled = AskCancelled


class PlanDeclined(Exception):
    """A plan review (``requires_approval``, ``dshq.langgraph.approve_plan``) did not end
    approved: ``feedback`` is the reviewer's words when they declined, and ``result`` the
    :class:`~dshq.Answered` decision. The gate fails closed: anything but an approval
    (a decline, a review with no decision, an edit the guarded code cannot take) raises it."""

    def __init__(self, feedback: Optional[str], result: Any = None, message: Optional[str] = None) -> None:
        super().__init__(message or feedback or "the reviewer declined the plan")
        self.feedback = feedback
        self.result = result


def error_class(code: str) -> Type[DshqError]:
    """The class of ``code``; an unknown code (a newer dshq) gets :class:`DshqError`."""
    return _BY_CODE.get(code, DshqError)


def error_from(
    doc: Mapping[str, Any],
    *,
    request_id: Optional[str] = None,
    outcome: Optional[Mapping[str, Any]] = None,
    expired: bool = False,
) -> DshqError:
    """The exception for a ``UserQuestionError`` document ``{name, code, message}``."""
    code = str(doc.get("code") or "")
    message = str(doc.get("message") or code)
    cls: Type[DshqError] = Expired if expired and code == "ASK_ABORTED" else error_class(code)
    return cls(message, code=code or None, request_id=request_id, outcome=outcome)
