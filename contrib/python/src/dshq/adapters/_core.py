"""What every framework adapter does the same way, written once.

An adapter turns a framework's pending tool call into a dshq request and the decision back
into what the framework takes. The rules live here; an adapter module is only the glue:

- **The key.** A pending call is asked under the key ``FRAMEWORK:RUN:CALL`` (the run or
  thread id the caller names, and the framework's tool call id), so the id is the same in
  every process: asking again after a restart re-attaches to the same request.
- **The plan.** An approval is a plan review whose plan is the tool's name and arguments
  as a person reads them: one ``name: value`` line an argument in a fenced block, a text
  with line breaks as an indented ``|`` block, anything else as JSON. The reviewer may
  edit the values; :func:`parse_plan` reads the edited block back into arguments (guided
  by the types of the arguments asked), and an edit it cannot read is a denial.
- **The question tool.** A call of a tool that asks the user (its arguments are dsh
  questions) becomes those questions; the answers become the tool's result.
- **The decision.** :func:`decide` maps how the request ended to a :class:`Decision`:
  an approval runs the tool with the approved arguments (as edited), a decline is a denial
  whose message carries the reviewer's feedback to the model, and every other ending
  (cancelled, aborted, expired without a declared default, an error, an answer that is no
  approval) is a denial naming its reason. Nothing else runs a tool: the gate fails closed.
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
from ..errors import DshqError, PlanDeclined, WaitTimeout
from ..types import Answered, PlanReview, Ticket

__all__ = [
    "Paused",
    "Step",
    "Call",
    "Decision",
    "PlanUnreadable",
    "RunStore",
    "ask_call",
    "call_key",
    "decide",
    "parse_plan",
    "questions_of",
    "render_plan",
]

#: The kinds of pending call: a tool that needs approval, and a tool that asks the user.
APPROVAL = "approval"
QUESTION = "question"

#: The default name of the question tool the adapters offer.
QUESTION_TOOL = "ask_user"


def call_key(framework: str, run_id: str, call_id: str) -> str:
    """The re-attach key of a pending call: its request id is ``dshq.id_for_key`` of it."""
    return "%s:%s:%s" % (framework, run_id, call_id)


# --- the plan ------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*):(?: (.*))?\Z")


class PlanUnreadable(ValueError):
    """The reviewer's edit of a tool call's plan is not arguments the adapter can read."""


def _block(text: str) -> List[str]:
    """A text as a ``|`` block: the indicator and the indented lines."""
    if text.endswith("\n") and not text.endswith("\n\n"):
        indicator, body = "|", text[:-1]
    elif text.endswith("\n"):
        indicator, body = "|+", text[:-1]
    else:
        indicator, body = "|-", text
    lines = body.split("\n") if body else []
    return [indicator] + [("  " + line) if line else "" for line in lines]


def _value_lines(value: Any) -> List[str]:
    if isinstance(value, str):
        if value and "\n" not in value and value == value.strip():
            return [value]
        return _block(value)
    return [json.dumps(value, ensure_ascii=False)]


def _fence(body: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    return "`" * max(3, longest + 1)


def render_plan(tool: str, args: Mapping[str, Any]) -> str:
    """The plan a reviewer reads (and may edit) for a call of ``tool`` with ``args``."""
    lines: List[str] = []
    for name, value in args.items():
        if not _NAME.match(str(name)):
            # A name the block cannot carry: shown, and not editable back (parse refuses).
            name = json.dumps(str(name))
        first, *rest = _value_lines(value)
        lines.append("%s: %s" % (name, first))
        lines.extend(rest)
    body = "\n".join(lines)
    fence = _fence(body)
    shown = body if lines else "(no arguments)"
    return (
        "Call the tool `%s` with these arguments (edit a value to run it with yours):\n\n"
        "%s\n%s\n%s\n" % (tool, fence, shown, fence)
    )


def parse_plan(text: str, asked: Mapping[str, Any]) -> Dict[str, Any]:
    """The arguments an edited plan gives. A value of an argument asked as text is read as
    text; any other as JSON. An argument left out is left out; one that was not asked, a
    missing fence or a value that is not JSON raise :class:`PlanUnreadable`."""
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if re.match(r"`{3,}[^`]*\Z", line.strip())), None)
    if start is None:
        raise PlanUnreadable("the edited plan has no fenced block of arguments")
    fence = re.match(r"`+", lines[start].strip()).group(0)  # type: ignore[union-attr]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].strip() == fence), None)
    if end is None:
        raise PlanUnreadable("the edited plan's block of arguments is not closed")
    body = lines[start + 1 : end]
    if [line for line in body if line.strip()] == ["(no arguments)"]:
        return {}
    out: Dict[str, Any] = {}
    i = 0
    while i < len(body):
        line = body[i]
        i += 1
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            raise PlanUnreadable("cannot read the line %r of the edited arguments" % line)
        name, raw = m.group(1), m.group(2) or ""
        if name not in asked:
            raise PlanUnreadable("the edited plan names an argument the call does not have: %r" % name)
        if name in out:
            raise PlanUnreadable("the edited plan gives the argument %r twice" % name)
        if raw.strip() in ("|", "|-", "|+"):
            block: List[str] = []
            while i < len(body) and (body[i].startswith("  ") or not body[i].strip()):
                block.append(body[i][2:] if body[i].startswith("  ") else "")
                i += 1
            indicator = raw.strip()
            if indicator != "|+":
                while block and not block[-1]:
                    block.pop()
            value: Any = "\n".join(block)
            if indicator == "|" or (indicator == "|+" and block):
                value += "\n"
            if not isinstance(asked[name], str):
                value = _json(name, value)
        elif isinstance(asked[name], str):
            value = raw
        else:
            value = _json(name, raw)
        out[name] = value
    return out


def _json(name: str, raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise PlanUnreadable("the edited value of %r is not JSON: %r" % (name, raw)) from None


# --- questions -----------------------------------------------------------------------


def questions_of(args: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The dsh questions a question tool's call asks (``{"questions": [...]}``): each with
    an id (``q1``, ``q2``, ... when the model gave none). dshq checks the rest."""
    raw = args.get("questions")
    if not isinstance(raw, list):
        raise ValueError("a question tool's arguments are {\"questions\": [...]}")
    out: List[Dict[str, Any]] = []
    for n, q in enumerate(raw, 1):
        q = dict(q) if isinstance(q, Mapping) else {"question": str(q)}
        if "multi_select" in q and "multiSelect" not in q:
            q["multiSelect"] = q.pop("multi_select")
        q = {k: v for k, v in q.items() if v is not None}
        q.setdefault("id", "q%d" % n)
        if isinstance(q.get("options"), list):
            q["options"] = [{"label": o} if isinstance(o, str) else dict(o) for o in q["options"]]
        out.append(q)
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
    ``fields`` go into the request (``context``, ``timeout``, ``ladder``, ``quorum``, ...)."""
    args = dict(args)
    if kind == QUESTION:
        questions: List[Any] = questions_of(args)
    else:
        questions = [PlanReview(render_plan(tool, args), question="Allow the call to %s?" % tool, header="Tool call")]
    meta = dict(fields.pop("meta", None) or {})
    meta.setdefault("framework", framework)
    meta.setdefault("tool", tool)
    fields.setdefault("key", call_key(framework, run_id, call_id))
    ticket = client.ask_nowait(questions, meta=meta, **fields)
    return Call(call_id, tool, args, kind, ticket)


# --- deciding ------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """What a pending call's request decided, as the framework takes it.

    ``allowed``: run the tool (an approval; for a question, an answer). ``args``: the
    arguments to run it with (as the reviewer edited them when ``edited``). ``answers``: a
    question's answers by question text, as the model reads them. ``message``: a denial's
    text for the model (the reviewer's feedback, or why the call was not run). ``result``:
    the whole decision document (votes, approvers, ``decided_by``, receipt) when the
    request was answered; ``error`` when it ended without an answer.
    """

    call: Call
    allowed: bool
    args: Optional[Dict[str, Any]] = None
    edited: bool = False
    answers: Optional[Dict[str, Optional[str]]] = None
    message: Optional[str] = None
    result: Optional[Answered] = None
    error: Optional[DshqError] = field(default=None, compare=False)

    @property
    def feedback(self) -> Optional[str]:
        """The reviewer's words on a declined call."""
        return self.result.feedback if self.result is not None else None

    @property
    def code(self) -> Optional[str]:
        """The error code a request without an answer ended with (``ASK_CANCELLED``, ...)."""
        return self.error.code if self.error is not None else None


def _denied(call: Call, message: str, result: Optional[Answered] = None, error: Optional[DshqError] = None) -> Decision:
    return Decision(call, False, message=message, result=result, error=error)


def decide(client: Client, call: Call, *, timeout: Optional[float] = None) -> Decision:
    """Wait for the call's request to end and map it to a :class:`Decision` (failing
    closed). Raises :class:`dshq.WaitTimeout` when ``timeout`` seconds pass first: the
    call is still pending, nothing is decided."""
    try:
        result = client.wait(call.ticket, timeout=timeout)
    except WaitTimeout:
        raise
    except DshqError as e:
        return _denied(call, "No one approved this call, so it did not run (%s)." % e, error=e)
    return decide_result(call, result)


def decide_result(call: Call, result: Answered) -> Decision:
    """The :class:`Decision` an answered request gives (the rule of :func:`decide`)."""
    if call.kind == QUESTION:
        asked = {str(q.get("id")): str(q.get("question")) for q in questions_of(call.args)}
        answers = {asked.get(qid, qid): item.value for qid, item in result.answers.items()}
        return Decision(call, True, answers=answers, result=result)
    proposed = render_plan(call.tool, call.args)
    try:
        approval = approval_of(result, proposed)
    except PlanDeclined as e:
        if result.decision == "declined":
            message = "The reviewer declined this call, so it did not run."
            if e.feedback:
                message += " Their feedback: %s" % e.feedback
            return _denied(call, message, result)
        return _denied(call, "No one approved this call, so it did not run (%s)." % e, result)
    if not approval.edited:
        return Decision(call, True, args=dict(call.args), result=result)
    try:
        args = parse_plan(approval.plan, call.args)
    except PlanUnreadable as e:
        return _denied(call, "The reviewer's edit of this call could not be read, so it did not run (%s)." % e, result)
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
