"""The HTTP transport: dshq's API on ``dshq daemon --listen``, with the standard library.

``POST /api/v1/requests`` asks (201 new, 200 the same request again: the re-attach), ``GET
/api/v1/requests/ID/outcome?wait=30s`` long-polls for the outcome (woken by the answer,
204 when the wait ends first), ``POST /api/v1/requests/ID/abort`` aborts. Every call
carries the bearer token (an asker token: ``dshq token create --role asker``); an error
body ``{"error": {code, message}}`` becomes its typed exception. ``urllib`` is enough for
these few JSON calls, so the package needs no third-party client.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Mapping, Optional

from ._id import check_id
from .errors import Io, RequestOpen, error_from
from .types import Ticket

#: The longest wait one long-poll asks for (the API's own bound is 5 minutes).
LONG_POLL_SECONDS = 30


class HttpTransport:
    """Ask through the API at ``url`` (e.g. ``http://127.0.0.1:8700``) with ``token``."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def __repr__(self) -> str:  # never the token
        return "HttpTransport(%r)" % self.url

    def _call(
        self,
        method: str,
        path: str,
        body: Optional[Mapping[str, Any]] = None,
        *,
        request_id: Optional[str] = None,
        wait: float = 0.0,
    ) -> Optional[Dict[str, Any]]:
        data = None if body is None else json.dumps(dict(body), ensure_ascii=False).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout + wait) as resp:
                raw = resp.read()
                if resp.status == 204 or not raw:
                    return None
                doc = json.loads(raw)
                return doc if isinstance(doc, dict) else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                raise Io("HTTP %d from %s %s" % (e.code, method, path), request_id=request_id) from e
            raise error_from(err, request_id=request_id) from e
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            err = Io("cannot reach %s: %s" % (self.url, e), request_id=request_id)
            # The server is down or restarting, not refusing: a wait may try again.
            err.unreachable = True  # type: ignore[attr-defined]
            raise err from e

    def submit(self, doc: Mapping[str, Any]) -> Ticket:
        """Ask request ``doc``; asking the same request again re-attaches to it."""
        asked = self._call("POST", "/api/v1/requests", doc, request_id=str(doc.get("id")))
        assert asked is not None
        return Ticket(str(asked["id"]), str(asked["requestDigest"]), None, doc)

    def _path(self, ticket: Ticket, tail: str) -> str:
        return "/api/v1/requests/%s/%s" % (urllib.parse.quote(check_id(ticket.id), safe=""), tail)

    def poll(self, ticket: Ticket, wait: float = 0.0) -> Optional[Dict[str, Any]]:
        """The outcome, waiting up to ``wait`` seconds for it on the server; None if none."""
        query = "?wait=%ds" % int(wait) if wait >= 1 else ""
        outcome = self._call("GET", self._path(ticket, "outcome") + query, request_id=ticket.id, wait=wait)
        # A request on a tool call answers "pending" when the wait ends first: no outcome yet.
        if outcome is None or outcome.get("pending") is True:
            return None
        if ticket.digest is not None and outcome.get("requestDigest") != ticket.digest:
            return None
        return outcome

    def receipt(self, ticket: Ticket) -> Optional[Dict[str, Any]]:
        """The signed receipt of a final request (None while it is open)."""
        try:
            return self._call("GET", self._path(ticket, "receipt"), request_id=ticket.id)
        except RequestOpen:
            return None

    def abort(self, ticket: Ticket, reason: Optional[str]) -> None:
        """Abort the request as its asker."""
        body = {"reason": reason} if reason is not None else {}
        self._call("POST", self._path(ticket, "abort"), body, request_id=ticket.id)
