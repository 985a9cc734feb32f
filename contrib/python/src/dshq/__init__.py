"""dshq for Python: ask a human through dshq, the durable human-question queue.

    import dshq
    client = dshq.Client(root="/var/lib/dshq")      # or Client(url=..., token=...)
    result = client.ask([dshq.Question("db", "Which database?", options=["Postgres", "SQLite"])],
                        key="pick-db")
    result["db"].selected                            # ['Postgres']

``ask`` blocks for the outcome; ``ask_nowait`` returns a :class:`Ticket` for ``wait``,
``wait_any`` and ``abort``; :class:`AsyncClient` has the same as coroutines;
:func:`requires_approval` asks a plan review before a function runs (and hands a function
with an ``approval`` parameter the plan as approved, edited or not); ``dshq.langgraph``
interrupts a LangGraph graph until the answer resumes it. Every stable error code is its
own exception class (``dshq.AskCancelled``, ``dshq.BadRequest``, ...).
"""

from ._digest import canonical, id_for_call, id_for_key, request_digest
from .approval import Approval, approval_of, requires_approval
from .client import AsyncClient, Client, result_of
from .errors import *  # noqa: F401,F403 (one class per code)
from .errors import CODES, DshqError, PlanDeclined, error_class
from .types import AnswerItem, Answered, Edited, Option, Pending, PlanReview, Question, Ticket, Vote, build_request

__version__ = "0.1.0"

__all__ = [
    "AnswerItem",
    "Answered",
    "Approval",
    "Edited",
    "Vote",
    "approval_of",
    "AsyncClient",
    "CODES",
    "Client",
    "DshqError",
    "Option",
    "Pending",
    "PlanDeclined",
    "PlanReview",
    "Question",
    "Ticket",
    "build_request",
    "canonical",
    "error_class",
    "id_for_call",
    "id_for_key",
    "request_digest",
    "requires_approval",
    "result_of",
] + [c.__name__ for c in errors._ALL] + ["Expired", "Aborted", "Cancelled"]  # noqa: F405
