"""The vocabulary as Python types: what an agent asks and what it gets back.

Field names follow dshq's JSON vocabulary (``docs/protocol.md``, section 2); ``to_json``
writes exactly that JSON, so anything the daemon accepts can be written with these types,
and a plain ``dict`` works wherever a type does.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ._digest import id_for_call, id_for_key, request_digest

__all__ = [
    "Option",
    "Question",
    "PlanReview",
    "Ticket",
    "AnswerItem",
    "Answered",
    "Edited",
    "Vote",
    "build_request",
]


@dataclass(frozen=True)
class Option:
    """One choice: ``label`` is shown to the human and returned as the value."""

    label: str
    description: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"label": self.label}
        if self.description is not None:
            out["description"] = self.description
        return out


OptionLike = Union[Option, str, Mapping[str, Any]]


def _option_json(o: OptionLike) -> Dict[str, Any]:
    if isinstance(o, Option):
        return o.to_json()
    if isinstance(o, str):
        return {"label": o}
    return dict(o)


@dataclass(frozen=True)
class Question:
    """One question. ``options`` may be labels, :class:`Option` values or dicts; none means
    free text only. ``detail`` is supporting text (for a plan review: the plan)."""

    id: str
    question: str
    options: Optional[Sequence[OptionLike]] = None
    multi_select: bool = False
    header: Optional[str] = None
    detail: Optional[str] = None
    intent: Optional[Mapping[str, Any]] = None
    #: Whether the reviewer may return the ``detail`` edited (a plan review: unless False;
    #: a free-text question: only when True).
    editable: Optional[bool] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"id": self.id, "question": self.question}
        if self.header is not None:
            out["header"] = self.header
        if self.detail is not None:
            out["detail"] = self.detail
        if self.options is not None:
            out["options"] = [_option_json(o) for o in self.options]
        if self.multi_select:
            out["multiSelect"] = True
        if self.intent is not None:
            out["intent"] = dict(self.intent)
        if self.editable is not None:
            out["editable"] = self.editable
        return out


def PlanReview(
    plan: str,
    *,
    id: str = "plan",
    question: str = "Approve this plan?",
    approve: str = "Approve",
    decline: str = "Decline",
    header: Optional[str] = None,
    editable: Optional[bool] = None,
) -> Question:
    """A plan-review question: the plan as ``detail``, two options, and the intent that
    makes dshq record the decision (approved exactly when ``approve`` alone is selected).
    The reviewer may approve the plan as they edited it unless ``editable=False``."""
    return Question(
        id=id,
        question=question,
        detail=plan,
        header=header,
        options=[approve, decline],
        intent={"kind": "plan-review", "approve": approve},
        editable=editable,
    )


QuestionLike = Union[Question, Mapping[str, Any]]


def build_request(
    questions: Union[Sequence[QuestionLike], Mapping[str, Any]],
    *,
    id: Optional[str] = None,
    key: Optional[str] = None,
    context: Optional[str] = None,
    timeout: Optional[str] = None,
    deadline: Optional[str] = None,
    require_provider: Optional[bool] = None,
    meta: Optional[Mapping[str, Any]] = None,
    agent: Optional[Mapping[str, str]] = None,
    wait: Optional[Mapping[str, Any]] = None,
    quorum: Optional[Mapping[str, Any]] = None,
    ladder: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The request document: ``questions`` is a list of questions or a whole request dict.

    The id is ``id``, else the one derived from ``key`` (see :func:`dshq.id_for_key`), else
    the document's own; one of them is required, since a request without an id could never
    be found again after a restart. A request on a tool call (``wait={"callId": ...,
    "timeoutMs": ...}``, dsh 0.2's continued question) takes the call's id
    (:func:`dshq.id_for_call`).
    """
    if isinstance(questions, Mapping):
        doc: Dict[str, Any] = dict(questions)
    else:
        doc = {"questions": [q.to_json() if isinstance(q, Question) else dict(q) for q in questions]}
    for name, value in (
        ("context", context),
        ("timeout", timeout),
        ("deadline", deadline),
        ("requireProvider", require_provider),
        ("meta", dict(meta) if meta is not None else None),
        ("agent", dict(agent) if agent is not None else None),
        ("wait", dict(wait) if wait is not None else None),
        ("quorum", dict(quorum) if quorum is not None else None),
        ("ladder", dict(ladder) if ladder is not None else None),
    ):
        if value is not None:
            doc[name] = value
    wanted = id if id is not None else (id_for_key(key) if key is not None else None)
    if isinstance(doc.get("wait"), Mapping) and isinstance(doc["wait"].get("callId"), str):
        call = id_for_call(doc["wait"]["callId"])
        if wanted not in (None, call) or key is not None:
            raise ValueError("a request on a tool call takes the call's id (%s): give no id or key" % call)
        wanted = call
    if wanted is not None:
        if doc.get("id") not in (None, wanted):
            raise ValueError("the request's id %r is not %r" % (doc["id"], wanted))
        doc["id"] = wanted
    if not doc.get("id"):
        raise ValueError("a request needs an id or a key (so that it can be found again)")
    return doc


@dataclass(frozen=True)
class Ticket:
    """A request that was asked: its ``id`` and the ``digest`` of what was asked.

    ``str(ticket)`` is the id. ``wait()`` takes the outcome under the id only when its
    ``requestDigest`` is this digest; a ticket made from a bare id (``Ticket(id)``) takes
    whatever outcome the id has.
    """

    id: str
    digest: Optional[str] = None
    #: The inbox file name the file transport dropped (its rejection would be
    #: ``rejected/NAME.error.json``); None over HTTP.
    name: Optional[str] = None
    #: The request document, kept to tell an expiry from an abort.
    request: Optional[Mapping[str, Any]] = field(default=None, compare=False, repr=False)
    #: When the file transport dropped it (``time.monotonic()``), to tell within seconds
    #: that no daemon takes it.
    dropped: Optional[float] = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return self.id

    @staticmethod
    def of(x: Union["Ticket", str]) -> "Ticket":
        """``x`` as a ticket (a bare id becomes one without a digest)."""
        return x if isinstance(x, Ticket) else Ticket(str(x))

    @staticmethod
    def for_request(doc: Mapping[str, Any], name: Optional[str] = None) -> "Ticket":
        """The ticket of request document ``doc``."""
        return Ticket(str(doc["id"]), request_digest(doc), name, doc)


@dataclass(frozen=True)
class AnswerItem:
    """The answer to one question: the labels ``selected``, the free text ``custom``, and
    ``edited``, the reviewer's version of the question's proposal when they approved it as
    edited."""

    id: str
    selected: List[str]
    custom: Optional[str] = None
    edited: Optional[str] = None

    @property
    def skipped(self) -> bool:
        """Whether the human skipped this question (nothing selected, no text)."""
        return not self.selected and self.custom is None

    @property
    def value(self) -> Optional[str]:
        """One string for the answer: the custom text, else the labels joined by ", "."""
        if self.custom is not None and not self.selected:
            return self.custom
        parts = list(self.selected) + ([self.custom] if self.custom is not None else [])
        return ", ".join(parts) if parts else None


@dataclass(frozen=True)
class Edited:
    """A proposal the reviewer approved as they edited it: what was ``proposed``, what was
    ``approved``, and the unified ``diff`` between them."""

    proposed: str
    approved: str
    diff: str


@dataclass(frozen=True)
class Vote:
    """One vote on a request with a quorum: the ``voter`` identity (``web:alice``), the
    ``person`` it belongs to, the ``decision`` its answer makes, and when (``at``)."""

    voter: str
    person: Optional[str]
    decision: Optional[str]
    at: str
    answer: Dict[str, Any] = field(compare=False, repr=False, default_factory=dict)


@dataclass(frozen=True)
class Answered:
    """A request that was answered: the decision document (docs/protocol.md, "The decision
    document") as Python values.

    ``result["db"]`` is the :class:`AnswerItem` of question ``db``. ``decision`` is
    ``"approved"`` or ``"declined"`` for a single plan-review question, else None;
    ``feedback`` the reviewer's words on a declined plan; ``edited`` the proposals approved
    as edited, by question id; ``votes`` and ``approvers`` a quorum's; ``decided_by`` is
    ``"person"``, or ``"policy"`` when the asker's declared default was used on expiry;
    ``receipt`` the signed receipt when the outcome carried one (the file transport).
    """

    id: str
    answers: Dict[str, AnswerItem]
    decision: Optional[str]
    provider: Optional[str]
    digest: Optional[str]
    outcome: Dict[str, Any] = field(compare=False, repr=False)
    #: The tool call of a request asked with ``wait`` (the call its answer is delivered to).
    call_id: Optional[str] = None
    feedback: Optional[str] = None
    edited: Dict[str, Edited] = field(default_factory=dict)
    approvers: List[str] = field(default_factory=list)
    votes: List[Vote] = field(default_factory=list)
    decided_by: str = "person"
    receipt: Optional[Dict[str, Any]] = field(default=None, compare=False, repr=False)

    def __getitem__(self, question_id: str) -> AnswerItem:
        return self.answers[question_id]

    @property
    def approved(self) -> bool:
        """Whether a plan review was approved."""
        return self.decision == "approved"

    def approved_text(self, question_id: str, proposed: str) -> str:
        """The text the reviewer approved for question ``question_id`` whose proposal (its
        ``detail``) was ``proposed``: as they edited it, else the proposal as asked."""
        e = self.edited.get(question_id)
        return e.approved if e is not None else proposed

    @staticmethod
    def from_outcome(outcome: Mapping[str, Any]) -> "Answered":
        """The typed form of an ``answered`` outcome document."""
        items = (outcome.get("answer") or {}).get("answers") or []
        answers = {
            str(i["id"]): AnswerItem(str(i["id"]), list(i.get("selected") or []), i.get("custom"), i.get("edited"))
            for i in items
        }
        edited = {
            str(q): Edited(str(e.get("proposed", "")), str(e.get("approved", "")), str(e.get("diff", "")))
            for q, e in (outcome.get("edited") or {}).items()
        }
        votes = [
            Vote(str(v.get("voter")), v.get("person"), v.get("decision"), str(v.get("at", "")), dict(v.get("answer") or {}))
            for v in outcome.get("votes") or []
        ]
        return Answered(
            id=str(outcome.get("id")),
            answers=answers,
            decision=outcome.get("decision"),
            provider=outcome.get("provider"),
            digest=outcome.get("requestDigest"),
            outcome=dict(outcome),
            call_id=outcome.get("callId"),
            feedback=outcome.get("feedback"),
            edited=edited,
            approvers=list(outcome.get("approvers") or []),
            votes=votes,
            decided_by=str(outcome.get("decidedBy") or "person"),
            receipt=outcome.get("receipt"),
        )


@dataclass(frozen=True)
class Pending:
    """dsh 0.2's ``{pending: true, callId}``: the wait window of a request on a tool call
    closed before an answer. Not a skip and not a refusal: the question stays answerable,
    and its answer is delivered to the call later (``client.wait_for_call(call_id)``, or
    ``client.wait(pending.ticket)``); asking again on the call re-attaches, never asks twice.
    """

    call_id: str
    ticket: "Ticket"
    pending: bool = True

    @property
    def id(self) -> str:
        """The request id (the call's)."""
        return self.ticket.id

    @property
    def message(self) -> str:
        """What to tell a model: what pending means and how the answer comes."""
        return (
            "No answer arrived before the wait window closed. This is pending, not a skipped "
            "answer, and not permission: the question stays answerable. Continue with work that "
            "does not depend on it; the answer is delivered to call %s (request %s) when it comes."
            % (self.call_id, self.ticket.id)
        )


_DURATION = re.compile(r"(\d+)\s*(ms|s|sec|m|min|h|hr|d|day|days)\b")
_UNIT = {"ms": 0.001, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600,
         "d": 86400, "day": 86400, "days": 86400}


def _parse_time(s: Any) -> Optional[_dt.datetime]:
    if not isinstance(s, str):
        return None
    try:
        return _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None


def deadline_passed(request: Optional[Mapping[str, Any]], outcome: Mapping[str, Any]) -> bool:
    """Whether an ``ASK_ABORTED`` outcome came at or after the request's own deadline
    (``deadline``, or ``timeout`` after ``createdAt``): an expiry rather than an abort.
    Only the common duration forms are read (``90s``, ``30m``, ``1h 30m``); anything else
    counts as no deadline, and the error stays a plain ``AskAborted``."""
    if not request:
        return False
    finished = _parse_time(outcome.get("finishedAt"))
    if finished is None:
        return False
    deadline = _parse_time(request.get("deadline"))
    timeout = request.get("timeout")
    if deadline is None and isinstance(timeout, str):
        created = _parse_time(outcome.get("createdAt"))
        parts = _DURATION.findall(timeout)
        if created is not None and parts and _DURATION.sub("", timeout).strip() == "":
            seconds = sum(int(n) * _UNIT[u] for n, u in parts)
            deadline = created + _dt.timedelta(seconds=seconds)
    return deadline is not None and finished >= deadline
