"""The Claude Agent SDK adapter: a tool call Claude makes becomes a dshq request, at the
SDK's two permission boundaries.

- :func:`hooks` gives ``ClaudeAgentOptions(hooks=...)`` a ``PreToolUse`` hook. It asks
  (keyed by the session and the tool use id) and waits up to ``wait`` seconds. With a
  decision it answers ``allow`` with ``updatedInput`` (the arguments as the reviewer
  approved them, edited or not; for ``AskUserQuestion`` the tool's input plus the
  ``answers`` by question text) or ``deny`` with the reason the model reads (the
  reviewer's feedback, or why nobody approved). Without one yet it answers ``defer``: the
  session ends with the call in ``ResultMessage.deferred_tool_use``, and any later
  process resumes the session (``ClaudeAgentOptions(resume=SESSION, hooks=hooks(...))``,
  after :func:`wait_deferred`): Claude Code runs the hook again on the same call, which
  finds the decision under the same key.
- :func:`can_use_tool` is the ``can_use_tool`` callback: it asks and waits for the
  decision (``PermissionResultAllow(updated_input=...)`` or ``PermissionResultDeny``).
  It cannot defer (Claude Code waits on it): a wait that runs out is a denial.

Claude Code itself (the CLI the SDK drives) needs a model to run a session; the tests run
the adapter at these boundaries with the SDK's own types.
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional

from claude_agent_sdk import HookMatcher, PermissionResultAllow, PermissionResultDeny, ToolPermissionContext

from ..client import Client
from ..errors import WaitTimeout
from .._digest import id_for_key
from ..types import Ticket
from ._core import APPROVAL, PLAN, QUESTION, Call, Decision, answers_by_text, ask_call, call_key, decide, decide_error

__all__ = ["EXIT_PLAN_MODE", "FRAMEWORK", "QUESTION_TOOLS", "can_use_tool", "hooks", "pre_tool_use", "wait_deferred"]

FRAMEWORK = "claude-agent-sdk"

#: Claude Code's tools that ask the user (their input is dsh's questions), and its plan
#: tool (its ``plan`` is the plan the reviewer reads).
QUESTION_TOOLS = ("AskUserQuestion",)
EXIT_PLAN_MODE = "ExitPlanMode"


def _kind(tool: str) -> str:
    return QUESTION if tool in QUESTION_TOOLS else PLAN if tool == EXIT_PLAN_MODE else APPROVAL


def _ask(client: Client, run: str, tool_use_id: str, tool: str, args: Dict[str, Any], request: Dict[str, Any]) -> Call:
    return ask_call(client, FRAMEWORK, run, tool_use_id, tool, args, kind=_kind(tool), **request)


def _input_of(d: Decision) -> Dict[str, Any]:
    """The tool input an allowed decision gives."""
    if d.call.kind == QUESTION:
        return dict(d.call.args, answers=answers_by_text(d.call.args, d.answers or {}))
    return dict(d.args or {})


def pre_tool_use(client: Optional[Client] = None, *, wait: float = 20.0, **request: Any) -> Any:
    """The ``PreToolUse`` hook callback (see the module doc). ``request``: fields for each
    request (``context``, ``timeout``, ``ladder``, ...)."""

    async def hook(input_data: Dict[str, Any], tool_use_id: Optional[str], context: Any) -> Dict[str, Any]:
        c = client or Client()
        tuid = str(input_data.get("tool_use_id") or tool_use_id or "")
        if not tuid:
            return _out("deny", "dshq could not ask: the hook event names no tool use id")
        call = await asyncio.to_thread(_ask, c, str(input_data.get("session_id") or ""), tuid,
                                       str(input_data.get("tool_name")), dict(input_data.get("tool_input") or {}),
                                       dict(request))
        try:
            d = await asyncio.to_thread(decide, c, call, timeout=wait)
        except WaitTimeout:
            return _out("defer", "Waiting for a person to decide (dshq request %s); resume the session once "
                                 "they have." % call.ticket.id)
        if d.allowed:
            return _out("allow", None, _input_of(d))
        return _out("deny", d.message)

    return hook


def _out(decision: str, reason: Optional[str], updated: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    o: Dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": decision}
    if reason:
        o["permissionDecisionReason"] = reason
    if updated is not None:
        o["updatedInput"] = updated
    return {"hookSpecificOutput": o}


def hooks(client: Optional[Client] = None, *, matcher: Optional[str] = None, wait: float = 20.0,
          **request: Any) -> Dict[str, List[HookMatcher]]:
    """``ClaudeAgentOptions(hooks=...)`` with the dshq ``PreToolUse`` hook on the tools
    ``matcher`` names (all by default)."""
    return {"PreToolUse": [HookMatcher(matcher=matcher, hooks=[pre_tool_use(client, wait=wait, **request)])]}


def can_use_tool(client: Optional[Client] = None, *, run_id: str = "", timeout: Optional[float] = None,
                 **request: Any) -> Any:
    """The ``can_use_tool`` callback (see the module doc): ``run_id`` joins the key (the
    callback is told no session), ``timeout`` bounds the wait (then a denial)."""

    async def callback(tool_name: str, tool_input: Dict[str, Any], context: ToolPermissionContext) -> Any:
        c = client or Client()
        call = await asyncio.to_thread(_ask, c, run_id, str(context.tool_use_id or ""), tool_name,
                                       dict(tool_input), dict(request))
        try:
            d = await asyncio.to_thread(decide, c, call, timeout=timeout)
        except WaitTimeout as e:
            return PermissionResultDeny(message=decide_error(call, e).message or "")
        if d.allowed:
            return PermissionResultAllow(updated_input=_input_of(d))
        return PermissionResultDeny(message=d.message or "denied")

    return callback


def wait_deferred(client: Client, result: Any, *, timeout: Optional[float] = None) -> Decision:
    """Wait for the decision on the call a session deferred (``result`` is its
    ``ResultMessage``): then resume the session with the same :func:`hooks`."""
    deferred = getattr(result, "deferred_tool_use", None)
    if deferred is None:
        raise ValueError("the session deferred no tool call")
    name, args = str(deferred.name), dict(deferred.input)
    # By id alone: the hook asked it with its own request fields.
    ticket = Ticket(id_for_key(call_key(FRAMEWORK, str(result.session_id), str(deferred.id))))
    call = Call(str(deferred.id), name, args, _kind(name), ticket)
    return decide(client, call, timeout=timeout)
