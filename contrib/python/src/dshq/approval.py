"""``requires_approval``: a plan review before a function runs, and the plan it may run.

The decorated function asks a plan-review question (the plan as its ``detail``) and runs
only when the reviewer approves; a decline raises :class:`dshq.PlanDeclined` with the
reviewer's feedback, and the function never runs. A function with an ``approval``
parameter is handed the :class:`Approval`: the plan as the reviewer approved it, edited or
not, which is what it must carry out; a function without one is asked about with
``editable=False`` (the reviewer cannot edit a plan the function could never see), and an
edited approval that reaches it anyway is refused. The gate fails closed: anything but an
approval raises. Works on plain and ``async`` functions. With ``key=`` (a function of the
call's arguments) a restarted agent re-attaches to the review it already asked instead of
asking twice.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar, Union, cast

from .client import AsyncClient, Client
from .errors import PlanDeclined
from .types import Answered, PlanReview

__all__ = ["Approval", "approval_of", "requires_approval"]

F = TypeVar("F", bound=Callable[..., Any])
Text = Union[str, Callable[..., str]]


@dataclass(frozen=True)
class Approval:
    """What the reviewer approved: the ``plan`` to carry out (as they edited it when
    ``edited``, with the ``diff`` of the edit), and the whole decision (``result``)."""

    plan: str
    edited: bool
    diff: Optional[str]
    result: Answered


def approval_of(result: Answered, plan: str, *, question_id: str = "plan", takes_edit: bool = True) -> Approval:
    """The approval a plan review's ``result`` gives for the ``plan`` asked, or
    :class:`dshq.PlanDeclined`: a decline (with the reviewer's feedback), a review that
    ended with no approval, or (``takes_edit=False``) a plan approved as edited that the
    guarded code cannot take. The one rule every Python gate applies."""
    if result.decision == "declined":
        raise PlanDeclined(result.feedback, result)
    if not result.approved:
        raise PlanDeclined(None, result, "the review of the plan ended without approving it")
    edit = result.edited.get(question_id)
    if edit is not None and not takes_edit:
        raise PlanDeclined(
            None,
            result,
            "the reviewer approved the plan as they edited it, and the guarded function cannot "
            "take an edited plan (give it an `approval` parameter)",
        )
    return Approval(result.approved_text(question_id, plan), edit is not None, edit.diff if edit else None, result)


def _text(t: Optional[Text], args: Any, kwargs: Any) -> Optional[str]:
    return t(*args, **kwargs) if callable(t) else t


def _default_plan(fn: Callable[..., Any], args: Any, kwargs: Any) -> str:
    shown = [repr(a) for a in args] + ["%s=%r" % kv for kv in kwargs.items()]
    return "Run `%s` with:\n\n```\n%s\n```\n" % (fn.__qualname__, ",\n".join(shown) or "(no arguments)")


def _takes_approval(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "approval" in params


def requires_approval(
    client: Optional[Union[Client, AsyncClient]] = None,
    *,
    plan: Optional[Text] = None,
    question: Optional[Text] = None,
    key: Optional[Callable[..., str]] = None,
    context: Optional[str] = None,
    timeout: Optional[str] = None,
) -> Callable[[F], F]:
    """Decorate a function so that it runs only after a human approves its plan.

    A function with an ``approval`` parameter is called with ``approval=`` the
    :class:`Approval` (``approval.plan`` is the plan to carry out, as the reviewer edited
    it); a function without one runs only a plan approved unedited.

    ``plan``: the Markdown the reviewer reads (a string, or a function of the call's
    arguments); by default the function's name and arguments. ``question``: the question
    line. ``key``: a function of the arguments giving the re-attach key (by default each
    call is its own review, keyed by the plan text and the function). ``context`` and
    ``timeout`` go into the request. ``client``: a :class:`Client` (or an
    :class:`AsyncClient` for ``async`` functions); by default one from the environment.
    """

    def decorate(fn: F) -> F:
        takes = _takes_approval(fn)

        def request(args: Any, kwargs: Any) -> Any:
            text = _text(plan, args, kwargs) or _default_plan(fn, args, kwargs)
            q = PlanReview(
                text,
                question=_text(question, args, kwargs) or "Approve running %s?" % fn.__name__,
                editable=None if takes else False,
            )
            k = key(*args, **kwargs) if key is not None else "%s.%s\n%s" % (fn.__module__, fn.__qualname__, text)
            return text, [q], {"key": k, "context": context, "timeout": timeout}

        def call_kwargs(approval: Approval, kwargs: Any) -> Any:
            return dict(kwargs, approval=approval) if takes else kwargs

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                c = client if isinstance(client, AsyncClient) else AsyncClient(client=client or Client())
                text, questions, fields = request(args, kwargs)
                approval = approval_of(await c.ask(questions, **fields), text, takes_edit=takes)
                return await fn(*args, **call_kwargs(approval, kwargs))

            return cast(F, run_async)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            c = client.sync if isinstance(client, AsyncClient) else client or Client()
            text, questions, fields = request(args, kwargs)
            approval = approval_of(c.ask(questions, **fields), text, takes_edit=takes)
            return fn(*args, **call_kwargs(approval, kwargs))

        return cast(F, run)

    return decorate
