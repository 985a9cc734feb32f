"""The LangGraph adapter: a node interrupts with a dshq request; the answer resumes it.

In a node, :func:`ask_human` asks (by key, so asking again is re-attaching) and calls
LangGraph's ``interrupt()`` with the request's id and digest: the graph stops, and its
checkpoint (a durable checkpointer such as ``langgraph-checkpoint-sqlite``'s
``SqliteSaver``) holds the pending request. The process may then exit, or be killed.
Later, any process with the same checkpointer calls :func:`resume`: it finds the graph's
pending dshq interrupts, waits for their outcomes, and invokes the graph with
``Command(resume=...)``. LangGraph runs the node again from its start; :func:`ask_human`
asks again (the same id and content: dshq accepts it once) and ``interrupt()`` now returns
the outcome document, which becomes the node's typed :class:`~dshq.Answered` (or its
typed error). The resume value is the outcome document itself, so the checkpoint holds
plain JSON.

    from dshq.langgraph import ask_human, resume

    def choose(state):
        result = ask_human(client, [dshq.Question("db", "Which database?", options=[...])],
                           key="choose-db-" + state["run"])
        return {"db": result["db"].selected[0]}

:func:`approve_plan` is the gate form: it returns the plan the reviewer approved (edited
or not) or raises :class:`dshq.PlanDeclined`.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from langgraph.types import Command, interrupt

from .approval import Approval, approval_of
from .client import Client, Questions, result_of
from .types import Answered, PlanReview, Ticket

__all__ = ["approve_plan", "ask_human", "pending", "resume"]

#: The key of the interrupt value that marks it as a dshq request.
MARK = "dshq"


def ask_human(client: Client, questions: Questions, *, key: str, **fields: Any) -> Answered:
    """Ask (re-attaching by ``key``) and interrupt the graph until the outcome resumes it.

    Returns the typed result when resumed with an answer; raises the typed error when the
    request ended otherwise. ``fields`` are :meth:`Client.ask_nowait`'s.
    """
    ticket = client.ask_nowait(questions, key=key, **fields)
    # The inbox file's name too (the file transport): the resuming process looks for it
    # there to tell within seconds that no daemon serves the root.
    resumed = interrupt({MARK: {"id": ticket.id, "digest": ticket.digest, "name": ticket.name}})
    return result_of(resumed, ticket)


def approve_plan(
    client: Client, plan: str, *, key: str, question: str = "Approve this plan?", **fields: Any
) -> Approval:
    """A plan review as a gate in a node: interrupt until it is decided, then the
    :class:`~dshq.approval.Approval` (``approval.plan`` is the plan to carry out, as the
    reviewer edited it), or :class:`dshq.PlanDeclined` for anything but an approval."""
    result = ask_human(client, [PlanReview(plan, question=question)], key=key, **fields)
    return approval_of(result, plan)


def pending(graph: Any, config: Mapping[str, Any]) -> List[Tuple[str, Ticket]]:
    """The graph's pending dshq interrupts: ``(interrupt id, ticket)`` pairs."""
    state = graph.get_state(config)
    out: List[Tuple[str, Ticket]] = []
    for it in getattr(state, "interrupts", ()) or ():
        value = getattr(it, "value", None)
        if isinstance(value, dict) and isinstance(value.get(MARK), dict):
            mark = value[MARK]
            # Dropped no later than now, as far as this process can tell.
            ticket = Ticket(str(mark["id"]), mark.get("digest"), mark.get("name"), None, time.monotonic())
            out.append((str(it.id), ticket))
    return out


def resume(
    graph: Any,
    config: Mapping[str, Any],
    client: Client,
    *,
    timeout: Optional[float] = None,
) -> Any:
    """Wait for the outcomes of the graph's pending dshq requests and resume it with them.

    Returns what ``graph.invoke`` returns (the next interrupt, or the final state). Raises
    ``ValueError`` when the graph waits on no dshq request, and :class:`dshq.WaitTimeout`
    when ``timeout`` seconds pass first. An outcome that is an error (cancelled, aborted)
    resumes the graph too: the node's :func:`ask_human` raises it there.
    """
    waiting = pending(graph, config)
    if not waiting:
        raise ValueError("the graph is not interrupted by a dshq request")
    values: Dict[str, Any] = {}
    for interrupt_id, ticket in waiting:
        try:
            client.wait(ticket, timeout=timeout)
        except Exception as e:  # an ending that is an error resumes the node with it
            if getattr(e, "outcome", None) is None:
                raise
        values[interrupt_id] = client.outcome(ticket)
    return graph.invoke(Command(resume=values), config)
