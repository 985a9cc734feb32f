"""The client: ask, wait, wait for the first of several, abort; blocking and ``async``.

A :class:`Client` talks to one dshq through one transport: the state root's directories
(``root=``, the default from ``DSHQ_ROOT``) or the HTTP API (``url=`` and ``token=``, the
defaults from ``DSHQ_URL`` and ``DSHQ_TOKEN``). :class:`AsyncClient` has the same methods
as coroutines. Every outcome goes through :func:`result_of`: an answer becomes
:class:`~dshq.types.Answered`, every other ending its typed exception.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._file import FileTransport
from ._http import LONG_POLL_SECONDS, HttpTransport
from .errors import Io, WaitTimeout, error_from
from ._digest import id_for_call
from .types import Answered, Pending, QuestionLike, Ticket, build_request, deadline_passed

__all__ = ["Client", "AsyncClient", "result_of", "TicketLike"]

TicketLike = Union[Ticket, str]
Questions = Union[Sequence[QuestionLike], Mapping[str, Any]]


def result_of(outcome: Mapping[str, Any], ticket: Optional[Ticket] = None) -> Answered:
    """The typed result of an outcome document; raises its error when it is not an answer.

    ``ASK_ABORTED`` at or after the request's own deadline raises :class:`dshq.Expired`
    (a kind of :class:`dshq.AskAborted`).
    """
    if outcome.get("status") == "answered":
        return Answered.from_outcome(outcome)
    err = outcome.get("error") or {"code": "", "message": "an outcome without an error"}
    request = ticket.request if ticket is not None else None
    raise error_from(
        err,
        request_id=str(outcome.get("id")),
        outcome=outcome,
        expired=deadline_passed(request, outcome),
    )


class Client:
    """A blocking dshq client.

    ``Client(root="/path/to/root")`` uses the inbox and outbox; ``Client(url=..., token=...)``
    the HTTP API of ``dshq daemon --listen``. With neither, ``DSHQ_URL`` + ``DSHQ_TOKEN`` or
    ``DSHQ_ROOT`` from the environment. ``poll`` is how often the file transport looks for
    an outcome (seconds). ``reconnect`` is how long a wait over HTTP keeps trying a server
    it cannot reach (a daemon restarting) before it raises :class:`dshq.Io`.
    """

    def __init__(
        self,
        root: Optional[str] = None,
        *,
        url: Optional[str] = None,
        token: Optional[str] = None,
        poll: float = 0.2,
        reconnect: float = 30.0,
    ) -> None:
        if root is None and url is None:
            url = os.environ.get("DSHQ_URL") or None
            root = None if url else os.environ.get("DSHQ_ROOT") or None
        if url is not None:
            token = token if token is not None else os.environ.get("DSHQ_TOKEN")
            if not token:
                raise ValueError("the HTTP transport needs a token (token= or DSHQ_TOKEN)")
            self.transport: Union[FileTransport, HttpTransport] = HttpTransport(url, token)
        elif root is not None:
            self.transport = FileTransport(root)
        else:
            raise ValueError("name a dshq: root= (or DSHQ_ROOT), or url= and token= (or DSHQ_URL)")
        self.poll = poll
        self.reconnect = reconnect

    def _poll(self, t: Ticket, wait: float = 0.0, unreachable_since: Optional[List[float]] = None) -> Optional[Dict[str, Any]]:
        """One look for the outcome; over HTTP a server that cannot be reached is looked
        at again (None) until it has been unreachable for ``reconnect`` seconds."""
        try:
            if isinstance(self.transport, HttpTransport):
                outcome = self.transport.poll(t, wait=wait)
            else:
                outcome = self.transport.poll(t)
        except Io as e:
            if not getattr(e, "unreachable", False) or unreachable_since is None:
                raise
            if not unreachable_since:
                unreachable_since.append(time.monotonic())
            if time.monotonic() - unreachable_since[0] > self.reconnect:
                raise
            return None
        if unreachable_since:
            unreachable_since.clear()
        return outcome

    def __repr__(self) -> str:
        return "Client(%r)" % self.transport

    # --- asking ----------------------------------------------------------------------

    def ask_nowait(self, questions: Questions, **fields: Any) -> Ticket:
        """Ask and return at once with the request's :class:`Ticket` (its id and digest).

        ``questions``: a list of :class:`~dshq.Question` (or dicts), or a whole request
        document. Keyword fields: ``key`` (a caller-given key the id is derived from, so
        that asking again after a restart re-attaches), or ``id``; ``context``,
        ``timeout`` (``"30m"``), ``deadline`` (RFC 3339), ``require_provider``, ``meta``,
        ``agent``. Raises the typed error when the request is refused at once (HTTP); over
        files a refusal shows when waiting.
        """
        return self.transport.submit(build_request(questions, **fields))

    def ask(
        self, questions: Questions, *, wait_timeout: Optional[float] = None, **fields: Any
    ) -> Union[Answered, Pending]:
        """Ask and block for the answer (see :meth:`ask_nowait` for the arguments).

        Returns the :class:`~dshq.Answered` result; raises :class:`dshq.AskCancelled`,
        :class:`dshq.AskAborted` (:class:`dshq.Expired` when its deadline passed), the
        rejection's class (:class:`dshq.DuplicateId`, ...), or :class:`dshq.WaitTimeout`
        after ``wait_timeout`` seconds.

        A request on a tool call (``wait={"callId": ..., "timeoutMs": ...}``, dsh 0.2's
        continued question) waits ``wait_timeout``, else its ``timeoutMs``, and then
        returns :class:`~dshq.Pending` instead of raising: the answer comes later, to the
        call (:meth:`wait_for_call`).
        """
        ticket = self.ask_nowait(questions, **fields)
        return _continued(ticket, wait_timeout, self.wait)

    def wait_for_call(self, call_id: str, timeout: Optional[float] = None) -> Answered:
        """The answer to the question of tool call ``call_id`` (asked with ``wait``): the
        late answer of a :class:`~dshq.Pending` ask, from this process or a restarted one."""
        return self.wait(Ticket(id_for_call(call_id)), timeout=timeout)

    # --- waiting ---------------------------------------------------------------------

    def outcome(self, ticket: TicketLike, wait: float = 0.0) -> Optional[Dict[str, Any]]:
        """The ticket's outcome document, or None when there is none yet."""
        return self.transport.poll(Ticket.of(ticket), wait)

    def wait(self, ticket: TicketLike, timeout: Optional[float] = None) -> Answered:
        """Block until the request ends; its result, or its typed error."""
        t = Ticket.of(ticket)
        deadline = None if timeout is None else time.monotonic() + timeout
        unreachable: List[float] = []
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            step = LONG_POLL_SECONDS if left is None else max(0.0, min(LONG_POLL_SECONDS, left))
            started = time.monotonic()
            outcome = self._poll(t, step, unreachable)
            if outcome is not None:
                return result_of(outcome, t)
            if left is not None and left <= 0:
                raise WaitTimeout("no outcome for %s within %ss" % (t.id, timeout), request_id=t.id)
            # Files are looked at every `poll`; a long-poll that came back early (another
            # request's outcome under the id) must not turn into a busy loop either.
            if isinstance(self.transport, FileTransport) or time.monotonic() - started < step / 2:
                time.sleep(self.poll if left is None else min(self.poll, max(left, 0.0)))

    def wait_any(
        self, tickets: Iterable[TicketLike], timeout: Optional[float] = None
    ) -> Tuple[Ticket, Answered]:
        """Block until the first of ``tickets`` ends: ``(its ticket, its result)``.

        When that first one ended without an answer, its typed error is raised, with
        ``request_id`` naming it (so the caller can go on waiting for the others).
        """
        ts: List[Ticket] = [Ticket.of(t) for t in tickets]
        if not ts:
            raise ValueError("wait_any needs at least one ticket")
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = self.poll if isinstance(self.transport, FileTransport) else max(self.poll, 0.25)
        unreachable: List[float] = []
        while True:
            for t in ts:
                outcome = self._poll(t, 0.0, unreachable)
                if outcome is not None:
                    return t, result_of(outcome, t)
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout("no outcome for any of %d requests within %ss" % (len(ts), timeout))
            time.sleep(pause)

    def abort(self, ticket: TicketLike, reason: Optional[str] = None) -> None:
        """Abort the request as its asker (it ends ``ASK_ABORTED``)."""
        self.transport.abort(Ticket.of(ticket), reason)

    def receipt(self, ticket: TicketLike) -> Optional[Dict[str, Any]]:
        """The signed receipt of a final request: from its outcome file (the file
        transport), or ``GET /api/v1/requests/ID/receipt`` (HTTP). None while it has none.
        Check it offline with ``dshq receipt verify FILE --key PUB --digest DIGEST``."""
        return self.transport.receipt(Ticket.of(ticket))


class AsyncClient:
    """The same client for ``asyncio``: every method is a coroutine.

    The transports' calls run in worker threads (``asyncio.to_thread``), so the event loop
    never blocks on a file or a socket; waiting sleeps on the loop between looks.
    """

    def __init__(self, root: Optional[str] = None, **kwargs: Any) -> None:
        client = kwargs.pop("client", None)
        self.sync: Client = client if client is not None else Client(root, **kwargs)

    def __repr__(self) -> str:
        return "AsyncClient(%r)" % self.sync.transport

    async def ask_nowait(self, questions: Questions, **fields: Any) -> Ticket:
        """As :meth:`Client.ask_nowait`."""
        return await asyncio.to_thread(self.sync.ask_nowait, questions, **fields)

    async def ask(
        self, questions: Questions, *, wait_timeout: Optional[float] = None, **fields: Any
    ) -> Union[Answered, Pending]:
        """As :meth:`Client.ask` (a request on a tool call may return :class:`~dshq.Pending`)."""
        ticket = await self.ask_nowait(questions, **fields)
        call, window = _window(ticket, wait_timeout)
        try:
            return await self.wait(ticket, timeout=window)
        except WaitTimeout:
            if call is None:
                raise
            return Pending(call, ticket)

    async def wait_for_call(self, call_id: str, timeout: Optional[float] = None) -> Answered:
        """As :meth:`Client.wait_for_call`."""
        return await self.wait(Ticket(id_for_call(call_id)), timeout=timeout)

    async def wait(self, ticket: TicketLike, timeout: Optional[float] = None) -> Answered:
        """As :meth:`Client.wait`."""
        _, result = await self.wait_any([ticket], timeout=timeout)
        return result

    async def wait_any(
        self, tickets: Iterable[TicketLike], timeout: Optional[float] = None
    ) -> Tuple[Ticket, Answered]:
        """As :meth:`Client.wait_any`."""
        ts = [Ticket.of(t) for t in tickets]
        if not ts:
            raise ValueError("wait_any needs at least one ticket")
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        unreachable: List[float] = []
        while True:
            for t in ts:
                outcome = await asyncio.to_thread(self.sync._poll, t, 0.0, unreachable)
                if outcome is not None:
                    return t, result_of(outcome, t)
            if deadline is not None and loop.time() >= deadline:
                raise WaitTimeout("no outcome for any of %d requests within %ss" % (len(ts), timeout))
            await asyncio.sleep(self.sync.poll)

    async def abort(self, ticket: TicketLike, reason: Optional[str] = None) -> None:
        """As :meth:`Client.abort`."""
        await asyncio.to_thread(self.sync.abort, ticket, reason)



def _window(ticket: Ticket, wait_timeout: Optional[float]) -> Tuple[Optional[str], Optional[float]]:
    """The call of a request asked with ``wait`` and how long to wait for its answer."""
    wait = (ticket.request or {}).get("wait")
    if not isinstance(wait, Mapping) or not isinstance(wait.get("callId"), str):
        return None, wait_timeout
    ms = wait.get("timeoutMs")
    window = wait_timeout if wait_timeout is not None else (ms / 1000.0 if isinstance(ms, int) else None)
    return wait["callId"], window


def _continued(ticket: Ticket, wait_timeout: Optional[float], wait: Any) -> Union[Answered, Pending]:
    """Wait for the ticket's answer; a request on a tool call is Pending when its window closes."""
    call, window = _window(ticket, wait_timeout)
    try:
        return wait(ticket, timeout=window)
    except WaitTimeout:
        if call is None:
            raise
        return Pending(call, ticket)
