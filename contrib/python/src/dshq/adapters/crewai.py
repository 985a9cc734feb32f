"""The CrewAI adapter: a Flow's ``@human_feedback`` step becomes a dshq plan review; the
decision resumes the flow with ``Flow.from_pending(...).resume(...)``, in any process.

:class:`Feedback` is a ``HumanFeedbackProvider``: it asks a plan review of the method's
output (keyed by the flow id and the method; a text output is its ``output`` argument, a
dict output its fields, as :func:`~dshq.adapters.render_plan` shows arguments) and raises
``HumanFeedbackPending``, so CrewAI pauses the flow and keeps it in the flow's
persistence (``SQLiteFlowPersistence``), with the request in the pending context's
``metadata["dshq"]``. The process may then exit. :func:`resume`, in any process with the
same persistence, waits for the decision and resumes the flow:

- approved: routed to the ``approve`` label (the feedback is the label itself), with the
  output the reviewer approved, as edited (``self.last_human_feedback.output``);
- declined: routed to the ``decline`` label, the feedback being the reviewer's words;
- anything else (cancelled, aborted, expired without a default, an error): routed to
  ``decline``, the feedback saying why.

No model routes the answer: the decision names the label. CrewAI asks an LLM to map free
feedback to an ``emit`` label, so the adapter hands it :func:`route` (give
``llm=route()`` to ``@human_feedback``), a ``BaseLLM`` that answers with the label the
decision names, and never anything else: a decline can never be read as an approval.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from crewai.flow.async_feedback import HumanFeedbackPending
from crewai.llms.base_llm import BaseLLM

from ..client import Client
from ._core import Call, Decision, Paused, Step, ask_call, decide

__all__ = ["FRAMEWORK", "Feedback", "resume", "route"]

FRAMEWORK = "crewai"
MARK = "dshq"


class _Route(BaseLLM):
    """The "model" that maps a dshq decision to an emit label: it answers with ``label``
    (set by :func:`resume`), and fails when it has none."""

    label: Optional[str] = None

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        if not self.label:
            raise RuntimeError("dshq.adapters.crewai.route() decides only a flow resumed by dshq.adapters.crewai.resume()")
        return json.dumps({"outcome": self.label})

    def supports_function_calling(self) -> bool:
        return True


def route() -> BaseLLM:
    """The ``llm=`` of a ``@human_feedback`` step that :class:`Feedback` asks about."""
    return _Route(model="dshq-decision", provider="dshq")


class Feedback:
    """A CrewAI ``HumanFeedbackProvider`` asking through dshq.

    ``approve`` and ``decline``: the step's ``emit`` labels an approval and anything else
    route to. ``request``: fields for the request (``context``, ``timeout``, ``ladder``,
    ``quorum``, ...)."""

    def __init__(self, client: Optional[Client] = None, *, approve: str = "approved", decline: str = "rejected",
                 **request: Any) -> None:
        self.client = client
        self.approve = approve
        self.decline = decline
        self.request = request

    def request_feedback(self, context: Any, flow: Any) -> str:
        emit = list(context.emit or [])
        if self.approve not in emit or self.decline not in emit:
            raise ValueError("the step's emit %r must hold %r and %r" % (emit, self.approve, self.decline))
        output = context.method_output
        args: Dict[str, Any] = output if isinstance(output, dict) else {"output": output}
        call = ask_call(self.client or Client(), FRAMEWORK, str(context.flow_id), str(context.method_name),
                        str(context.method_name), args, **self.request)
        # A new dict: the decorator's own metadata is shared by every run of the flow.
        context.metadata = dict(context.metadata or {}, **{MARK: dict(call.to_json(), approve=self.approve,
                                                                        decline=self.decline)})
        raise HumanFeedbackPending(context=context, callback_info={"dshq": call.ticket.id})


def _output_of(d: Decision, original: Any) -> Any:
    if not d.edited or d.args is None:
        return original
    return d.args if isinstance(original, dict) else d.args.get("output", original)


def resume(flow_cls: Any, flow_id: str, *, persistence: Any, client: Optional[Client] = None,
           timeout: Optional[float] = None, **flow_kwargs: Any) -> Step:
    """Wait for the decision on flow ``flow_id``'s pending step and resume it
    (``flow_cls.from_pending(flow_id, persistence)``). Raises ``ValueError`` when the
    flow waits on no dshq request, :class:`dshq.WaitTimeout` when ``timeout`` seconds pass
    first (the flow stays paused). The step's ``result`` is what ``resume`` returned (the
    flow's output, or ``HumanFeedbackPending`` when it paused again)."""
    flow = flow_cls.from_pending(flow_id, persistence, **flow_kwargs)
    ctx = flow.pending_feedback
    mark = (ctx.metadata or {}).get(MARK) if ctx is not None else None
    if not isinstance(mark, dict):
        raise ValueError("flow %r does not wait on a dshq request" % flow_id)
    call = Call.from_json(mark)
    d = decide(client or Client(), call, timeout=timeout)
    label = mark["approve"] if d.allowed else mark["decline"]
    if d.allowed:
        ctx.method_output = _output_of(d, ctx.method_output)
    ctx.llm = _Route(model="dshq-decision", provider="dshq", label=label)
    result = flow.resume(label if d.allowed else (d.message or "denied"))
    paused = None
    if isinstance(result, HumanFeedbackPending):
        paused = Paused(flow_id, [Call.from_json(result.context.metadata[MARK])])
    return Step(None if paused else result, paused, [d])

