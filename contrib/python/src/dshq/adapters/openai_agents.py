"""The OpenAI Agents SDK adapter: a run's tool approvals become dshq requests; the
decisions resume the ``RunState``, in this process or any later one.

:func:`gate` marks a function tool as needing approval (``needs_approval=True``) and makes
it run with the arguments the reviewer approved; :func:`question_tool` is a tool the model
calls to ask the user dsh questions. :func:`start` runs the agent; when the run stops on
``result.interruptions``, it asks one request an interruption (keyed by
the run and the call id) and keeps ``result.to_state().to_json()`` (with its
``$schemaVersion``) and the pending calls in a :class:`~dshq.adapters.RunStore`. The
process may then exit. :func:`resume`, in any process with the same store and agent,
waits for the decisions, restores the ``RunState`` and runs it on:

- approved: ``state.approve(item)``; the gated tool runs with the reviewer's edited
  arguments (the SDK's approval takes no arguments, so the gate applies them, and the
  SDK's own parsing of the tool's input checks them);
- declined: ``state.reject(item, rejection_message=...)``, the reviewer's feedback being
  the tool's result the model reads;
- anything else (cancelled, aborted, expired without a default, an error): a rejection
  saying why;
- a question answered: approved, and the question tool returns ``{"answers": {ID:
  ANSWER}}`` (as JSON); a question without an answer is rejected saying why.

A gated tool runs only on a dshq approval of its own call: called without one (approved
some other way), it does not run and says so to the model.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Union

from agents import Runner
from agents.exceptions import UserError
from agents.run_state import CURRENT_SCHEMA_VERSION, RunState
from agents.tool import FunctionTool, function_tool
from agents.tool_context import ToolContext

from ..client import Client
from ._core import (
    APPROVAL,
    NO_DECISION,
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
    denial_message,
    dump,
    load_paused,
    pending_calls,
    store_of,
)

__all__ = ["FRAMEWORK", "gate", "question_tool", "resume", "start"]

FRAMEWORK = "openai-agents"

Store = Union[RunStore, "os.PathLike[str]", str]

# The decisions being applied by `resume`, by call id: the gated tools read theirs here.
_DECIDED: contextvars.ContextVar[Dict[str, Decision]] = contextvars.ContextVar("dshq_decided", default={})

_ASKS = "dshq_kind"


def _decision(ctx: ToolContext[Any]) -> Optional[Decision]:
    return _DECIDED.get().get(ctx.tool_call_id)


def gate(tool: FunctionTool) -> FunctionTool:
    """``tool`` needing a person's approval through dshq, run with the arguments they
    approved (edited or not)."""
    invoke = tool.on_invoke_tool

    async def on_invoke(ctx: ToolContext[Any], input: str) -> Any:
        d = _decision(ctx)
        if d is None or not d.allowed or d.call.kind != APPROVAL:
            return denial_message(tool.name, NO_DECISION)
        return await invoke(ctx, json.dumps(d.args) if d.edited else input)

    gated = dataclasses.replace(tool, needs_approval=True, on_invoke_tool=on_invoke)
    setattr(gated, _ASKS, APPROVAL)
    return gated


def question_tool(name: str = QUESTION_TOOL) -> FunctionTool:
    """A tool the model calls to ask the user questions (dsh questions); the run pauses
    until a person answers them through dshq, and the answers are its result."""

    async def ask_user(questions: List[Dict[str, Any]]) -> Any:  # pragma: no cover - replaced below
        raise NotImplementedError

    tool = function_tool(
        ask_user,
        name_override=name,
        description_override=QUESTION_TOOL_DESCRIPTION,
        strict_mode=False,
    )

    async def on_invoke(ctx: ToolContext[Any], input: str) -> Any:
        d = _decision(ctx)
        if d is None or not d.allowed or d.call.kind != QUESTION:
            return "No answer came through dshq."
        return dump(answers_result(d.answers or {}))

    asked = dataclasses.replace(tool, needs_approval=True, on_invoke_tool=on_invoke)
    setattr(asked, _ASKS, QUESTION)
    return asked


def _kind_of(agent: Any, name: Optional[str]) -> Optional[str]:
    for t in getattr(agent, "tools", None) or []:
        if getattr(t, "name", None) == name:
            return getattr(t, _ASKS, None)
    return None


def _pause(result: Any, agent: Any, client: Client, store: RunStore, run_id: str, fields: Mapping[str, Any]) -> Optional[Paused]:
    if not result.interruptions:
        store.remove(run_id)
        return None
    calls: List[Call] = []
    for item in result.interruptions:
        raw = item.raw_item
        call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
        arguments = raw.get("arguments") if isinstance(raw, dict) else getattr(raw, "arguments", None)
        kind = _kind_of(getattr(item, "agent", None) or agent, item.tool_name)
        if kind is None or not call_id:
            raise ValueError(
                "the run waits on an approval of %r, which is no tool of dshq's (wrap it with gate())" % item.tool_name
            )
        args = json.loads(arguments or "{}")
        calls.append(ask_call(client, FRAMEWORK, run_id, str(call_id), str(item.tool_name), args, kind=kind, **dict(fields)))
    state = result.to_state().to_json()
    store.save(
        run_id,
        {
            "framework": FRAMEWORK,
            "schemaVersion": state.get("$schemaVersion", CURRENT_SCHEMA_VERSION),
            "state": state,
            "calls": [c.to_json() for c in calls],
            "fields": dict(fields),
        },
    )
    return Paused(run_id, calls)


def start(
    agent: Any,
    input: Any,
    *,
    client: Client,
    store: Store,
    run_id: str,
    request: Optional[Mapping[str, Any]] = None,
    **run_kwargs: Any,
) -> Step:
    """Run ``agent`` (``Runner.run_sync(agent, input, **run_kwargs)``). When it stops on
    approvals, ask about each and keep the run under ``run_id`` in ``store``.
    ``request``: fields for every request (``context``, ``timeout``, ``ladder``, ...)."""
    s = store_of(store)
    fields = dict(request or {})
    result = Runner.run_sync(agent, input, **run_kwargs)
    paused = _pause(result, agent, client, s, run_id, fields)
    return Step(None if paused else result, paused)


def resume(
    agent: Any,
    *,
    client: Client,
    store: Store,
    run_id: str,
    timeout: Optional[float] = None,
    **run_kwargs: Any,
) -> Step:
    """Wait for the decisions on run ``run_id``'s approvals and run it on from its
    ``RunState``. Raises ``ValueError`` when ``store`` holds no such paused run (or a state
    this SDK cannot read: the stored schema version is named), and
    :class:`dshq.WaitTimeout` when ``timeout`` seconds pass first."""
    s = store_of(store)
    doc = load_paused(s, run_id, FRAMEWORK)
    decisions = decide_all(client, pending_calls(doc), timeout=timeout)
    try:
        state = asyncio.run(RunState.from_json(agent, doc["state"]))
    except UserError as e:
        raise ValueError(
            "run %r was kept as RunState schema %s, which this SDK (schema %s) cannot read: %s"
            % (run_id, doc.get("schemaVersion"), CURRENT_SCHEMA_VERSION, e)
        ) from e
    by_call = {d.call.call_id: d for d in decisions}
    for item in state.get_interruptions():
        raw = item.raw_item
        call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
        d = by_call.get(str(call_id))
        if d is not None and d.allowed:
            state.approve(item)
        else:
            state.reject(item, rejection_message=d.message if d is not None else denial_message(str(item.tool_name), NO_DECISION))
    token = _DECIDED.set(by_call)
    try:
        result = Runner.run_sync(agent, state, **run_kwargs)
    finally:
        _DECIDED.reset(token)
    paused = _pause(result, agent, client, s, run_id, doc.get("fields") or {})
    return Step(None if paused else result, paused, decisions)
