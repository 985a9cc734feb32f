"""``requires_approval``: a plan review before a function runs.

The decorated function asks a plan-review question (the plan as its ``detail``) and runs
only when the reviewer approves; a decline raises :class:`dshq.PlanDeclined` with the
reviewer's feedback, and the function never runs. Works on plain and ``async`` functions.
With ``key=`` (a function of the call's arguments) a restarted agent re-attaches to the
review it already asked instead of asking twice.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, TypeVar, Union, cast

from .client import AsyncClient, Client
from .errors import PlanDeclined
from .types import Answered, PlanReview

__all__ = ["requires_approval"]

F = TypeVar("F", bound=Callable[..., Any])
Text = Union[str, Callable[..., str]]


def _text(t: Optional[Text], args: Any, kwargs: Any) -> Optional[str]:
    return t(*args, **kwargs) if callable(t) else t


def _default_plan(fn: Callable[..., Any], args: Any, kwargs: Any) -> str:
    shown = [repr(a) for a in args] + ["%s=%r" % kv for kv in kwargs.items()]
    return "Run `%s` with:\n\n```\n%s\n```\n" % (fn.__qualname__, ",\n".join(shown) or "(no arguments)")


def _decided(result: Answered) -> None:
    if not result.approved:
        item = next(iter(result.answers.values()), None)
        raise PlanDeclined(item.custom if item is not None else None, result)


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

    ``plan``: the Markdown the reviewer reads (a string, or a function of the call's
    arguments); by default the function's name and arguments. ``question``: the question
    line. ``key``: a function of the arguments giving the re-attach key (by default each
    call is its own review, keyed by the plan text and the function). ``context`` and
    ``timeout`` go into the request. ``client``: a :class:`Client` (or an
    :class:`AsyncClient` for ``async`` functions); by default one from the environment.
    """

    def decorate(fn: F) -> F:
        def request(args: Any, kwargs: Any) -> Any:
            text = _text(plan, args, kwargs) or _default_plan(fn, args, kwargs)
            q = PlanReview(text, question=_text(question, args, kwargs) or "Approve running %s?" % fn.__name__)
            k = key(*args, **kwargs) if key is not None else "%s.%s\n%s" % (fn.__module__, fn.__qualname__, text)
            return [q], {"key": k, "context": context, "timeout": timeout}

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                c = client if isinstance(client, AsyncClient) else AsyncClient(client=client or Client())
                questions, fields = request(args, kwargs)
                _decided(await c.ask(questions, **fields))
                return await fn(*args, **kwargs)

            return cast(F, run_async)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            c = client.sync if isinstance(client, AsyncClient) else client or Client()
            questions, fields = request(args, kwargs)
            _decided(c.ask(questions, **fields))
            return fn(*args, **kwargs)

        return cast(F, run)

    return decorate
