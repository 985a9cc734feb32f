"""The file transport: the inbox and outbox directories of a state root, standard library only.

Asking writes the request into ``inbox/tmp/`` under a file name of its own, fsyncs it and
renames it into ``inbox/new/`` (a reader never sees half a file); the outcome is
``outbox/ID.json``, taken only when its ``requestDigest`` is the digest of what was asked,
and ``rejected/NAME.error.json`` is the rejection of the file this process dropped. An
abort is ``inbox/new/ID.abort`` holding the reason. No daemon call, no socket.

A daemon must serve the root (``dshq daemon``): it takes the file from the inbox within
moments. When the file is still there after :data:`DAEMON_GRACE` seconds and no live
daemon's pid is in ``ROOT/daemon.pid``, waiting raises :class:`dshq.NoDaemon` (and the file
is taken back, so nothing is asked behind the caller's back); a daemon that is down for a
moment *after* taking the file (restarted, killed mid-wait) is no error: the request is in
its store, and the outcome comes when it runs again.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any, Dict, Mapping, Optional

from ._id import check_id
from .errors import NoDaemon, error_from
from .types import Ticket

#: How long a dropped file may wait in the inbox before the transport asks whether a
#: daemon serves the root at all (a daemon takes a file within milliseconds).
DAEMON_GRACE = 2.0

# The name this transport drops a request under: ``ID.PID-RANDOM`` (see ``submit``).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.[0-9]+-[0-9a-f]{12}\Z")


def _dropped_name(ticket: Ticket) -> Optional[str]:
    """The ticket's inbox file name when it is one this transport makes: a name from an
    untrusted place (a checkpoint) never becomes a path otherwise."""
    name = ticket.name
    return name if isinstance(name, str) and _NAME.match(name) else None

# The error codes an accepted request ends with; any other error outcome is the
# rejection of some input (protocol section 8, rule 5).
_FINAL_CODES = ("ASK_CANCELLED", "ASK_ABORTED", "ASK_EXPIRED")


def _read_json(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (FileNotFoundError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def is_rejection(outcome: Mapping[str, Any]) -> bool:
    """Whether an error outcome is the rejection of an input, not the end of a request."""
    if outcome.get("status") != "error":
        return False
    return (outcome.get("error") or {}).get("code") not in _FINAL_CODES


def _drop(directory: str, name: str, data: bytes) -> None:
    """Write ``directory/tmp/name``, fsync, rename to ``directory/new/name``, fsync the dir."""
    tmp = os.path.join(directory, "tmp", name)
    new = os.path.join(directory, "new", name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, new)
    dirfd = os.open(os.path.dirname(new), os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)


class FileTransport:
    """Ask through the directories of the state root ``root``."""

    def __init__(self, root: str) -> None:
        self.root = os.fspath(root)

    def __repr__(self) -> str:
        return "FileTransport(%r)" % self.root

    def _inbox(self) -> str:
        inbox = os.path.join(self.root, "inbox")
        for sub in ("tmp", "new"):
            os.makedirs(os.path.join(inbox, sub), mode=0o700, exist_ok=True)
        return inbox

    def submit(self, doc: Mapping[str, Any]) -> Ticket:
        """Drop request ``doc`` (which has its id); return its ticket at once.

        When the outbox already holds this request's own outcome (an agent that asked,
        died and asks again after the answer came), nothing is dropped.
        """
        ticket = Ticket.for_request(doc)
        check_id(doc.get("id"))
        if self._own_outcome(ticket) is not None:
            return ticket
        name = "%s.%d-%s" % (ticket.id, os.getpid(), os.urandom(6).hex())
        data = json.dumps(dict(doc), ensure_ascii=False).encode("utf-8")
        _drop(self._inbox(), name + ".json", data)
        return Ticket(ticket.id, ticket.digest, name, doc, time.monotonic())

    def daemon_alive(self) -> bool:
        """Whether ``ROOT/daemon.pid`` names a live process (a daemon serving the root)."""
        try:
            with open(os.path.join(self.root, "daemon.pid"), encoding="ascii") as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return pid > 0

    def _check_taken(self, ticket: Ticket) -> None:
        """Raise :class:`NoDaemon` when the ticket's file still waits in the inbox after
        :data:`DAEMON_GRACE` seconds and no daemon serves the root (taking the file back)."""
        name = _dropped_name(ticket)
        if name is None or ticket.dropped is None:
            return
        if time.monotonic() - ticket.dropped < DAEMON_GRACE:
            return
        waiting = os.path.join(self.root, "inbox", "new", name + ".json")
        if not os.path.exists(waiting) or self.daemon_alive():
            return
        try:
            os.unlink(waiting)
        except FileNotFoundError:
            return  # a daemon took it just now
        raise NoDaemon(
            "no dshq daemon serves %s: the request was not taken from its inbox within %ss "
            "(nothing was asked). Start `dshq daemon --root %s`, or ask over HTTP."
            % (self.root, DAEMON_GRACE, self.root),
            request_id=ticket.id,
        )

    def _own_outcome(self, ticket: Ticket) -> Optional[Dict[str, Any]]:
        outcome = _read_json(os.path.join(self.root, "outbox", check_id(ticket.id) + ".json"))
        if outcome is None:
            return None
        if ticket.digest is not None and outcome.get("requestDigest") != ticket.digest:
            # Another request's (an earlier attempt under the id): keep waiting.
            return None
        if ticket.digest is not None and is_rejection(outcome):
            return None
        return outcome

    def poll(self, ticket: Ticket, wait: float = 0.0) -> Optional[Dict[str, Any]]:
        """The ticket's outcome document if it is there, else None. Raises the rejection of
        the file this ticket dropped (``DUPLICATE_ID``, ``BAD_REQUEST``, ...) as its error."""
        outcome = self._own_outcome(ticket)
        if outcome is not None:
            return outcome
        name = _dropped_name(ticket)
        if name is not None:
            error = _read_json(os.path.join(self.root, "rejected", name + ".error.json"))
            if error is not None:
                raise error_from(error, request_id=ticket.id)
        self._check_taken(ticket)
        return None

    def receipt(self, ticket: Ticket) -> Optional[Dict[str, Any]]:
        """The receipt the request's outcome file carries (None while it has none)."""
        outcome = self._own_outcome(ticket)
        return None if outcome is None else outcome.get("receipt")

    def abort(self, ticket: Ticket, reason: Optional[str]) -> None:
        """Drop ``ID.abort`` (holding ``reason``): the daemon aborts the request."""
        name = "%s.abort.%d-%s" % (check_id(ticket.id), os.getpid(), os.urandom(6).hex())
        inbox = self._inbox()
        tmp = os.path.join(inbox, "tmp", name)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(reason or "")
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, os.path.join(inbox, "new", ticket.id + ".abort"))
