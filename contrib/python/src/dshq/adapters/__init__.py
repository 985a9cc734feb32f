"""Adapters for agent frameworks: a tool call that needs a person becomes a dshq request,
and the decision resumes the run, in this process or another one.

- ``dshq.adapters.pydantic_ai``: Pydantic AI's deferred tools (``requires_approval``,
  ``CallDeferred``) and ``DeferredToolResults``.
- ``dshq.adapters.openai_agents``: the OpenAI Agents SDK's ``needs_approval`` tools,
  ``result.interruptions`` and ``RunState``.
- ``dshq.adapters.crewai``: CrewAI Flows' ``@human_feedback`` with a provider that pauses
  the flow, and ``Flow.from_pending(...).resume(...)``.
- ``dshq.adapters.claude_agent_sdk``: the Claude Agent SDK's ``can_use_tool`` callback and
  a ``PreToolUse`` hook that defers the call until the answer is there.

Each imports its framework only when imported itself (the package keeps no dependency:
``pip install 'dshq[pydantic-ai]'`` and so on). The rules they share (the request's key,
the plan the reviewer reads, the decision and its mapping, failing closed) are in
``dshq.adapters._core`` (the plan's text in ``dshq.adapters._plan``), and they are the
Node adapters' rules too: docs/guide/adapters.md says them, and both packages check the
cases in contrib/adapters-vectors.json.
"""

from ._core import Call, Decision, Paused, RunStore, Step, call_key, denial_message, questions_of
from ._plan import PlanUnreadable, parse_plan, render_plan

__all__ = [
    "Call",
    "Decision",
    "Paused",
    "PlanUnreadable",
    "RunStore",
    "Step",
    "call_key",
    "denial_message",
    "parse_plan",
    "questions_of",
    "render_plan",
]
