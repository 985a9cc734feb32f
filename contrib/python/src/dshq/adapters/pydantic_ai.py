"""The Pydantic AI adapter: deferred tool calls become dshq requests; the decisions resume
the run with ``DeferredToolResults``, in this process or any later one.

A tool that needs approval (``requires_approval=True``, or one that raises
``ApprovalRequired``) and the question tool :func:`question_tool` (it raises
``CallDeferred(kind="question")``) end a run with ``DeferredToolRequests`` as its output
(the agent's ``output_type`` includes it, as Pydantic AI asks). :func:`start` runs the
agent; when the run ends so, it asks one request a pending call (keyed by
the run and the call id) and keeps the run's message history and the pending calls in a
:class:`~dshq.adapters.RunStore` (Pydantic AI leaves persistence to its caller). The
process may then exit. :func:`resume`, in any process with the same store, waits for the
decisions and runs the agent again with the history and ``DeferredToolResults``:

- approved: ``ToolApproved``, with ``override_args`` the reviewer's edited arguments;
- declined: ``ToolDenied`` whose message (the tool's result the model reads) carries the
  reviewer's feedback;
- anything else (cancelled, aborted, expired without a default, an error): ``ToolDenied``
  saying why; a question that got no answer is a ``ToolFailed`` saying why;
- a question answered: ``{"answers": {ID: ANSWER}}``, as the tool's result.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Union

from pydantic_ai import Tool
from pydantic_ai.exceptions import CallDeferred, ToolFailed
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from typing_extensions import NotRequired, TypedDict

from ..client import Client
from ._core import (
    APPROVAL,
    QUESTION,
    QUESTION_TOOL,
    QUESTION_TOOL_DESCRIPTION,
    Call,
    Decision,
    Paused,
    RunStore,
    Step,
    answers_result,
    ask_call,
    decide_all,
    load_paused,
    pending_calls,
    store_of,
)

__all__ = ["FRAMEWORK", "AskedQuestion", "question_tool", "resume", "results_of", "start"]

FRAMEWORK = "pydantic-ai"

Store = Union[RunStore, "os.PathLike[str]", str]


class AskedOption(TypedDict):
    label: str
    description: NotRequired[str]


class AskedQuestion(TypedDict):
    """One question the model asks the user (dsh's question: options are labels)."""

    question: str
    header: NotRequired[str]
    options: NotRequired[List[AskedOption]]
    multiSelect: NotRequired[bool]


def question_tool(name: str = QUESTION_TOOL) -> Tool[Any]:
    """A tool the model calls to ask the user questions; the run pauses until a person
    answers them through dshq, and the answers (by question id) are its result."""

    def ask_user(questions: List[AskedQuestion]) -> Dict[str, Any]:
        raise CallDeferred(kind="question")

    return Tool(
        ask_user,
        name=name,
        description=QUESTION_TOOL_DESCRIPTION,
    )


def _pause(result: Any, client: Client, store: RunStore, run_id: str, fields: Mapping[str, Any]) -> Optional[Paused]:
    """Ask about every pending call of a run that ended on ``DeferredToolRequests``, and keep
    the run; None when it ended with its output."""
    requests = result.output
    if not isinstance(requests, DeferredToolRequests):
        store.remove(run_id)
        return None
    calls: List[Call] = []
    for part in list(requests.approvals) + list(requests.calls):
        kind = requests.kind(part.tool_call_id)
        if kind == "external":
            raise ValueError(
                "the run waits on the external call %s of %r, which dshq does not answer"
                % (part.tool_call_id, part.tool_name)
            )
        args = requests.validated_args.get(part.tool_call_id) or part.args_as_dict()
        calls.append(
            ask_call(
                client,
                FRAMEWORK,
                run_id,
                part.tool_call_id,
                part.tool_name,
                args,
                kind=APPROVAL if kind == "approval" else QUESTION,
                **dict(fields),
            )
        )
    store.save(
        run_id,
        {
            "framework": FRAMEWORK,
            "messages": ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json"),
            "calls": [c.to_json() for c in calls],
            "fields": dict(fields),
        },
    )
    return Paused(run_id, calls)


def start(
    agent: Any,
    user_prompt: Any = None,
    *,
    client: Client,
    store: Store,
    run_id: str,
    request: Optional[Mapping[str, Any]] = None,
    **run_kwargs: Any,
) -> Step:
    """Run ``agent`` (``agent.run_sync(user_prompt, **run_kwargs)``). When it ends on
    deferred calls, ask about each and keep the run under ``run_id`` in ``store``: the
    :class:`~dshq.adapters.Step` is then paused. ``request``: fields for every request
    (``context``, ``timeout``, ``ladder``, ``quorum``, ``meta``, ...)."""
    s = store_of(store)
    fields = dict(request or {})
    result = agent.run_sync(user_prompt, **run_kwargs)
    paused = _pause(result, client, s, run_id, fields)
    return Step(None if paused else result, paused)


def results_of(decisions: List[Decision]) -> DeferredToolResults:
    """The ``DeferredToolResults`` that apply ``decisions`` (the mapping in the module doc)."""
    out = DeferredToolResults()
    for d in decisions:
        cid = d.call.call_id
        if d.call.kind == QUESTION:
            out.calls[cid] = answers_result(d.answers or {}) if d.allowed else ToolFailed(d.message or "No answer.")
        elif d.allowed:
            out.approvals[cid] = ToolApproved(override_args=d.args if d.edited else None)
        else:
            out.approvals[cid] = ToolDenied(d.message or "The tool call was denied.")
    return out


def resume(
    agent: Any,
    *,
    client: Client,
    store: Store,
    run_id: str,
    timeout: Optional[float] = None,
    **run_kwargs: Any,
) -> Step:
    """Wait for the decisions on run ``run_id``'s pending calls and run ``agent`` on with
    them. Raises ``ValueError`` when ``store`` holds no such paused run, and
    :class:`dshq.WaitTimeout` when ``timeout`` seconds pass first (the run stays paused).
    The run may pause again (another deferred call): the step says so."""
    s = store_of(store)
    doc = load_paused(s, run_id, FRAMEWORK)
    decisions = decide_all(client, pending_calls(doc), timeout=timeout)
    history = ModelMessagesTypeAdapter.validate_python(doc["messages"])
    result = agent.run_sync(message_history=history, deferred_tool_results=results_of(decisions), **run_kwargs)
    paused = _pause(result, client, s, run_id, doc.get("fields") or {})
    return Step(None if paused else result, paused, decisions)
