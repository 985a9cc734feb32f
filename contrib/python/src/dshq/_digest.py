"""The canonical form of a request and its digest (dshq's docs/protocol.md, section 8).

The outcome document carries ``requestDigest``: the SHA-256 of the canonical request it
answers. An asker takes an outcome as its own only when that digest is the digest of what
it asked, because an id can be reused (``DUPLICATE_ID``) and a rejected input's error can
sit under the same id. This is the same rule as ``contrib/examples/ask.py``, which stays a
standalone copy on purpose (it is the no-install example).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, Mapping

_QUESTION_ALIAS = {"multi_select": "multiSelect"}


def _without_nulls(obj: Any) -> Any:
    return {k: v for k, v in obj.items() if v is not None} if isinstance(obj, dict) else obj


def canonical(request: Mapping[str, Any]) -> str:
    """The canonical JSON text of ``request``: no ``id``, ``multiSelect`` spelled so, the
    vocabulary's nulls left out (``meta`` kept as is), keys sorted, no whitespace."""
    req: Dict[str, Any] = _without_nulls(dict(request))
    req.pop("id", None)
    if isinstance(req.get("agent"), dict):
        req["agent"] = _without_nulls(req["agent"])
    if isinstance(req.get("questions"), list):
        questions = []
        for q in req["questions"]:
            q = _without_nulls(q)
            if isinstance(q, dict):
                for alias, name in _QUESTION_ALIAS.items():
                    if alias in q and name not in q:
                        q[name] = q.pop(alias)
                if isinstance(q.get("options"), list):
                    q["options"] = [_without_nulls(o) for o in q["options"]]
                if isinstance(q.get("intent"), dict):
                    q["intent"] = _without_nulls(q["intent"])
            questions.append(q)
        req["questions"] = questions
    return json.dumps(req, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_digest(request: Mapping[str, Any]) -> str:
    """``sha256:HEX`` of the canonical request: what its outcome's ``requestDigest`` is."""
    return "sha256:" + hashlib.sha256(canonical(request).encode("utf-8")).hexdigest()


def id_for_key(key: str) -> str:
    """The request id of a caller-given key: ``key-`` and 32 hex digits of its SHA-256.

    Deterministic, so an agent that restarts and asks again with the same key asks under
    the same id and re-attaches to its question; within dshq's id charset whatever the key
    holds. The TypeScript package computes the same id from the same key.
    """
    return "key-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def id_for_call(call_id: str) -> str:
    """The request id of a tool call (a request with ``wait``): ``call-`` and 32 hex digits
    of the call id's SHA-256, as dshq gives it; so the answer to a call is found from the
    call id alone, after a restart too."""
    return "call-" + hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:32]
