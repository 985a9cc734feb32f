"""The protocol's id syntax (``docs/protocol.md`` section 2), checked before an id becomes
part of a path.

Request ids become file names in the state root (``outbox/ID.json``, ``inbox/new/ID.abort``)
and segments of the API's URLs, so an id is a letter or digit followed by at most 127
letters, digits, ``.``, ``_`` or ``-``, and nothing else: never ``..``, a ``/`` or an
absolute path. The daemon refuses anything else with ``BAD_REQUEST``; the client refuses
it with the same code before it writes a file, reads one or sends a call, so an id from an
untrusted place (a checkpoint, a caller's argument) can never name a file outside the root.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import BadRequest

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def check_id(value: Any, what: str = "request id") -> str:
    """``value`` when it is an id; raises :class:`dshq.BadRequest` (``BAD_REQUEST``) otherwise."""
    if isinstance(value, str) and _ID.match(value):
        return value
    raise BadRequest(
        "%s %r is not an id: a letter or digit, then at most 127 letters, digits, '.', '_' "
        "or '-'; nothing was written or sent" % (what, value)
    )
