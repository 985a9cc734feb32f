"""What every framework adapter does the same way, written once.

An adapter turns a framework's pending tool call into a dshq request and the decision back
into what the framework takes. The rules live here; an adapter module is only the glue:

- **The key.** A pending call is asked under the key :func:`call_key` gives (the
  framework, the run or thread id the caller names, and the framework's tool call id), so
  the id is the same in every process: asking again after a restart re-attaches.
- **The plan.** An approval is a plan review whose plan is the tool's name and arguments
  as a person reads them (``_plan``: :func:`render_plan`, and :func:`parse_plan` reading a
  reviewer's edit back by the types asked; an edit it cannot read is a denial).
- **The question tool.** A call of a tool that asks the user (its arguments are dsh
  questions) becomes those questions (:func:`questions_of`); the answers become the
  tool's result.
- **The decision.** :func:`decide` maps how the request ended to a :class:`Decision`:
  an approval runs the tool with the approved arguments (as edited), a decline is a denial
  whose message carries the reviewer's feedback to the model, and every other ending
  (cancelled, aborted, expired without a declared default, an error, an answer that is no
  approval) is a denial naming its reason (:func:`denial_message`). Nothing else runs a
  tool: the gate fails closed.

These rules are the Node adapters' too (``contrib/typescript/adapters/``): both packages
check ``contrib/adapters-vectors.json``, and docs/guide/adapters.md says them in words.
- **The state.** :class:`RunStore` keeps a paused run (the framework's own serialized
  state and the pending calls) in one JSON file a run, written atomically, for frameworks
  that leave persistence to the caller.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..approval import approval_of
from ..client import Client
from ..errors import BadRequest, DshqError, PlanDeclined, WaitTimeout
from ..types import Answered, PlanReview, Ticket
from ._plan import PlanUnreadable, code_span, dump, parse_plan, render_plan, shown_name

__all__ = [
    "Paused",
    "Step",
    "Call",
    "Decision",
    "PlanUnreadable",
    "RunStore",
    "answers_by_text",
    "answers_of",
    "answers_result",
    "ask_call",
    "call_key",
    "decide",
    "decide_error",
    "decide_result",
    "denial_message",
    "parse_plan",
    "questions_of",
    "render_plan",
    "request_of",
    "review_question",
]

#: The kinds of pending call: a tool that needs approval, a tool that asks the user, and
#: a tool whose argument ``plan`` is itself the plan to review.
APPROVAL = "tool"
QUESTION = "question"
PLAN = "plan"

#: The default name and the description of the question tool the adapters offer; its
#: result is :func:`answers_result`.
QUESTION_TOOL = "ask_user_question"
QUESTION_TOOL_DESCRIPTION = (
    "Ask a person one or more questions and wait for the answers (they may come much later: the run pauses "
    "until then). Give options when the choice is among known answers; the person may also write their own. "
    "The result maps each question id to the answer, or null when the person skipped it."
)


def call_key(framework: str, run_id: str, call_id: str) -> str:
    """The re-attach key of a pending call (its request id is ``dshq.id_for_key`` of it):
    a JSON array, so no run id can run into a call id whatever either holds, and the same
    key the Node adapters give the same call."""
    return dump(["dshq-adapter", framework, str(run_id), str(call_id)])


# --- what the model reads ----------------------------------------------------------------

#: The codes of a denial the adapter decides itself (any other is the code the request
#: ended with: ``ASK_CANCELLED``, ``ASK_ABORTED``, ``ASK_EXPIRED``, ``NO_DAEMON``, ...).
DECLINED = "DECLINED"
NO_DECISION = "NO_DECISION"
EDIT_UNREADABLE = "EDIT_UNREADABLE"
EDIT_NOT_ALLOWED = "EDIT_NOT_ALLOWED"


def denial_message(tool: str, code: str, detail: Optional[str] = None, kind: str = APPROVAL) -> str:
    """What the model reads when a call of ``tool`` is denied with ``code``: ``detail`` is
    the reviewer's feedback (``DECLINED``), the reason an edit could not be read
    (``EDIT_UNREADABLE``) or the message of the code the request ended with."""
    if kind == QUESTION:
        return "No one answered the questions of %s, so carry on without the answers (%s: %s)." % (
            code_span(tool), code, detail)
    what, so = ("the plan", "it was not carried out") if kind == PLAN else ("the call to " + code_span(tool), "it did not run")
    if code == DECLINED:
        return "The reviewer declined %s, so %s." % (what, so) + (" Their feedback: %s" % detail if detail else "")
    if code == NO_DECISION:
        return "No one approved %s, so %s (NO_DECISION: the review ended without an approval)." % (what, so)
    if code == EDIT_UNREADABLE:
        return "The reviewer's edit of %s could not be read, so %s (EDIT_UNREADABLE: %s)." % (what, so, detail)
    if code == EDIT_NOT_ALLOWED:
        return "The reviewer approved %s as edited, and it cannot take an edit, so %s (EDIT_NOT_ALLOWED)." % (what, so)
    return "No one approved %s, so %s (%s: %s)." % (what, so, code, detail)


# --- questions -----------------------------------------------------------------------

_QUESTION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def questions_of(args: Any) -> List[Dict[str, Any]]:
    """The dsh questions a question tool's call asks (``{"questions": [...]}``, dsh's
    vocabulary or Claude's ``AskUserQuestion``, which agrees with it): a text is a
    question; an id is kept when it is an id and not taken, else ``q1``, ``q2``, ... by
    position; ``multi_select`` is spelled ``multiSelect``; fields dshq does not know are
    dropped. Raises :class:`dshq.BadRequest` when there is no question to ask."""
    raw = args.get("questions") if isinstance(args, Mapping) else None
    if not isinstance(raw, list) or not raw:
        raise BadRequest("a question tool's arguments are {\"questions\": [...]}, with at least one question")
    seen: set = set()
    out: List[Dict[str, Any]] = []
    for n, q in enumerate(raw, 1):
        q = {"question": q} if isinstance(q, str) else q
        text = q.get("question") if isinstance(q, Mapping) else None
        if not isinstance(text, str) or not text:
            raise BadRequest("question %d has no text (question)" % n)
        qid = q.get("id")
        if not (isinstance(qid, str) and _QUESTION_ID.match(qid) and qid not in seen):
            qid = "q%d" % n
            while qid in seen:
                qid = "%s-%d" % (qid, n)
        seen.add(qid)
        item: Dict[str, Any] = {"id": qid, "question": text}
        for name in ("header", "detail"):
            if isinstance(q.get(name), str):
                item[name] = q[name]
        if isinstance(q.get("options"), list):
            item["options"] = [_option(n, m, o) for m, o in enumerate(q["options"], 1)]
        if q.get("multiSelect") is True or q.get("multi_select") is True:
            item["multiSelect"] = True
        out.append(item)
    return out


def answers_of(args: Any, result: Answered) -> Dict[str, Optional[str]]:
    """A question tool's answers by question id (``q1``, ... as :func:`questions_of` gave
    them): the labels picked and the person's own words, joined with ", "; None when
    skipped."""
    out: Dict[str, Optional[str]] = {}
    for q in questions_of(args):
        item = result.answers.get(q["id"])
        out[q["id"]] = item.value if item is not None else None
    return out


def answers_result(answers: Mapping[str, Optional[str]]) -> Dict[str, Any]:
    """What the model reads as the question tool's result: ``{"answers": {ID: ANSWER}}``."""
    return {"answers": dict(answers)}


def answers_by_text(args: Any, answers: Mapping[str, Optional[str]]) -> Dict[str, str]:
    """The answers by question text, as Claude's ``AskUserQuestion`` takes them in
    ``updatedInput.answers`` (a skipped question has none)."""
    out: Dict[str, str] = {}
    for q in questions_of(args):
        value = answers.get(q["id"])
        if value is not None:
            out[q["question"]] = value
    return out


def _option(n: int, m: int, o: Any) -> Dict[str, Any]:
    label = o if isinstance(o, str) else o.get("label") if isinstance(o, Mapping) else None
    if not isinstance(label, str):
        raise BadRequest("option %d of question %d has no label" % (m, n))
    out: Dict[str, Any] = {"label": label}
    if isinstance(o, Mapping) and isinstance(o.get("description"), str):
        out["description"] = o["description"]
    return out


# --- asking --------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A pending call as the adapter asked it: what the framework's state names
    (``call_id``, ``tool``, ``args``), its ``kind`` and the dshq ``ticket``."""

    call_id: str
    tool: str
    args: Dict[str, Any]
    kind: str
    ticket: Ticket

    def to_json(self) -> Dict[str, Any]:
        t = self.ticket
        return {
            "callId": self.call_id,
            "tool": self.tool,
            "args": self.args,
            "kind": self.kind,
            "ticket": {"id": t.id, "digest": t.digest, "name": t.name, "request": t.request},
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> "Call":
        t = doc["ticket"]
        # Dropped no later than now, as far as this process can tell.
        ticket = Ticket(str(t["id"]), t.get("digest"), t.get("name"), t.get("request"), time.monotonic())
        return Call(str(doc["callId"]), str(doc["tool"]), dict(doc["args"]), str(doc["kind"]), ticket)


def ask_call(
    client: Client,
    framework: str,
    run_id: str,
    call_id: str,
    tool: str,
    args: Mapping[str, Any],
    *,
    kind: str = APPROVAL,
    **fields: Any,
) -> Call:
    """Ask about one pending call (re-attaching by its key) and return it as a :class:`Call`.
    ``fields`` go into the request (``context``, ``timeout``, ``ladder``, ``quorum``, ...;
    ``meta`` is merged with the call's own)."""
    args = dict(args)
    doc = request_of(framework, run_id, call_id, tool, args, kind, fields.pop("meta", None))
    fields.setdefault("key", call_key(framework, run_id, call_id))
    ticket = client.ask_nowait(doc["questions"], meta=doc["meta"], **fields)
    return Call(call_id, tool, args, kind, ticket)


def request_of(framework: str, run_id: str, call_id: str, tool: str, args: Any, kind: str = APPROVAL,
               meta: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The questions and meta of a call's request (``{"questions": [...], "meta": {...}}``):
    the same the Node adapters ask for the same call, so either re-attaches to it. The meta
    names the call (``agentRun``: the adapter, run, call id and tool) beside ``meta``."""
    if kind == QUESTION:
        questions: List[Any] = questions_of(args)
    elif kind == PLAN:
        questions = [PlanReview(_plan_of(args), header="Plan", question=PLAN_QUESTION, decline="Keep planning").to_json()]
    else:
        questions = [PlanReview(render_plan(tool, args), question=review_question(tool), header="Tool call").to_json()]
    run = {"adapter": framework, "run": str(run_id), "callId": str(call_id), "tool": tool}
    return {"questions": questions, "meta": dict(meta or {}, agentRun=run)}


#: The question of a plan tool's review (Claude's ``ExitPlanMode``: its ``plan`` is the plan).
PLAN_QUESTION = "The agent has a plan and asks to carry it out. Approve it?"


def _plan_of(args: Any) -> str:
    plan = args.get("plan") if isinstance(args, Mapping) else None
    return plan if isinstance(plan, str) else ""


def review_question(tool: str) -> str:
    """The question of a tool call's plan review (plain text: a question is not Markdown)."""
    return "Allow the agent to run %s?" % shown_name(tool)


# --- deciding ------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """What a pending call's request decided, as the framework takes it.

    ``allowed``: run the tool (an approval; for a question, an answer). ``args``: the
    arguments to run it with (as the reviewer edited them when ``edited``). ``answers``: a
    question tool's answers by question id (:func:`answers_of`). ``message``: a denial's
    text for the model (the reviewer's feedback, or why the call was not run). ``code``:
    why it was denied (``DECLINED``, ``NO_DECISION``, ``EDIT_UNREADABLE``, or the code the
    request ended with). ``result``: the whole decision document (votes, approvers,
    ``decided_by``, receipt) when the request was answered; ``error`` when it ended without
    an answer.
    """

    call: Call
    allowed: bool
    args: Optional[Dict[str, Any]] = None
    edited: bool = False
    answers: Optional[Dict[str, Optional[str]]] = None
    message: Optional[str] = None
    result: Optional[Answered] = None
    error: Optional[DshqError] = field(default=None, compare=False)
    code: Optional[str] = None

    @property
    def feedback(self) -> Optional[str]:
        """The reviewer's words on a declined call."""
        return self.result.feedback if self.result is not None else None


def _denied(call: Call, code: str, detail: Optional[str], result: Optional[Answered] = None,
            error: Optional[DshqError] = None) -> Decision:
    message = denial_message(call.tool, code, detail, call.kind)
    return Decision(call, False, message=message, result=result, error=error, code=code)


def decide_error(call: Call, error: DshqError) -> Decision:
    """The denial a request that ended without an answer gives (cancelled, aborted,
    expired without a default, no daemon, ...)."""
    return _denied(call, error.code, error.message, error=error)


def decide(client: Client, call: Call, *, timeout: Optional[float] = None) -> Decision:
    """Wait for the call's request to end and map it to a :class:`Decision` (failing
    closed). Raises :class:`dshq.WaitTimeout` when ``timeout`` seconds pass first: the
    call is still pending, nothing is decided."""
    try:
        result = client.wait(call.ticket, timeout=timeout)
    except WaitTimeout:
        raise
    except DshqError as e:
        return decide_error(call, e)
    return decide_result(call, result)


def decide_result(call: Call, result: Answered) -> Decision:
    """The :class:`Decision` an answered request gives (the rule of :func:`decide`)."""
    if call.kind == QUESTION:
        return Decision(call, True, answers=answers_of(call.args, result), result=result)
    proposed = _plan_of(call.args) if call.kind == PLAN else render_plan(call.tool, call.args)
    try:
        approval = approval_of(result, proposed)
    except PlanDeclined as e:
        if result.decision == "declined":
            return _denied(call, DECLINED, e.feedback, result)
        return _denied(call, NO_DECISION, None, result)
    if not approval.edited:
        return Decision(call, True, args=dict(call.args), result=result)
    if call.kind == PLAN:
        return Decision(call, True, args=dict(call.args, plan=approval.plan), edited=True, result=result)
    try:
        args = parse_plan(approval.plan, call.tool, call.args)
    except PlanUnreadable as e:
        return _denied(call, EDIT_UNREADABLE, e.reason, result)
    return Decision(call, True, args=args, edited=True, result=result)


# --- the run store -------------------------------------------------------------------


class RunStore:
    """Paused runs in a directory the adapter owns: ``DIR/RUN.json`` (the file name is a
    hash of the run id, so any run id is safe), written to a temporary file, fsynced and
    renamed over the old one, so a process killed mid-write leaves the last whole state."""

    def __init__(self, path: "os.PathLike[str] | str") -> None:
        self.path = os.fspath(path)

    def _file(self, run_id: str) -> str:
        return os.path.join(self.path, "run-%s.json" % hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:32])

    def save(self, run_id: str, doc: Mapping[str, Any]) -> None:
        """Keep ``doc`` as the state of run ``run_id``."""
        os.makedirs(self.path, mode=0o700, exist_ok=True)
        data = json.dumps(dict(doc, run=run_id), ensure_ascii=False).encode("utf-8")
        fd, tmp = tempfile.mkstemp(prefix=".run-", dir=self.path)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._file(run_id))
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        dir_fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def load(self, run_id: str) -> Optional[Dict[str, Any]]:
        """The state of run ``run_id``, or None when it is not paused here."""
        try:
            with open(self._file(run_id), encoding="utf-8") as f:
                doc = json.load(f)
        except FileNotFoundError:
            return None
        if not isinstance(doc, dict) or doc.get("run") != run_id:
            raise ValueError("the run store's file for %r does not hold that run" % run_id)
        return doc

    def remove(self, run_id: str) -> None:
        """Forget run ``run_id`` (it finished)."""
        try:
            os.unlink(self._file(run_id))
        except FileNotFoundError:
            pass


def store_of(store: "RunStore | os.PathLike[str] | str") -> RunStore:
    """``store`` as a :class:`RunStore` (a path names one)."""
    return store if isinstance(store, RunStore) else RunStore(store)


def load_paused(store: RunStore, run_id: str, framework: str) -> Dict[str, Any]:
    """The kept state of paused run ``run_id`` of ``framework``, or ``ValueError``."""
    doc = store.load(run_id)
    if doc is None:
        raise ValueError("no paused run %r in %s" % (run_id, store.path))
    if doc.get("framework") != framework:
        raise ValueError("run %r in %s is a %s run, not a %s one" % (run_id, store.path, doc.get("framework"), framework))
    return doc


def pending_calls(doc: Mapping[str, Any]) -> List[Call]:
    """The pending calls of a stored run."""
    return [Call.from_json(c) for c in doc.get("calls") or []]


def decide_all(client: Client, calls: Sequence[Call], *, timeout: Optional[float] = None) -> List[Decision]:
    """Every call's decision, waiting for each (``timeout`` is for all of them together)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    out: List[Decision] = []
    for call in calls:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        out.append(decide(client, call, timeout=left))
    return out


@dataclass(frozen=True)
class Paused:
    """A run that waits on people: its ``run_id`` and the ``calls`` asked (each
    ``call.ticket.id`` is the request a reviewer answers, ``dshq answer ID``)."""

    run_id: str
    calls: List[Call]

    @property
    def ids(self) -> List[str]:
        """The request ids, in the order of the calls."""
        return [c.ticket.id for c in self.calls]


@dataclass(frozen=True)
class Step:
    """What starting or resuming a run gave: the framework's own ``result`` when the run
    finished (None while it waits), ``paused`` when it waits on people (again), and the
    ``decisions`` this step applied (none when it only started)."""

    result: Any = None
    paused: Optional[Paused] = None
    decisions: List[Decision] = field(default_factory=list)

    @property
    def done(self) -> bool:
        """Whether the run finished (it waits on nobody)."""
        return self.paused is None
