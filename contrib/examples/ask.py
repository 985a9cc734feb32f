#!/usr/bin/env python3
"""Ask a human through dshq with the Python standard library only.

    DSHQ_ROOT=/path/to/root python3 ask.py ID [request.json]

Writes the request into the inbox atomically (tmp/, fsync, rename into new/) under a file
name of its own, waits for the outcome of *this* request, and prints what the human
decided. Exit status: 0 answered, 1 ended without an answer (cancelled, aborted,
rejected, or the id is taken by another request), 3 timed out.

An id can be reused with different content: dshq rejects that (DUPLICATE_ID) and the
earlier request's outcome stays in outbox/ID.json. So the outcome is taken as the answer
only when its `requestDigest` is the digest of what this script asked; and the rejection
of the file it dropped (rejected/NAME.error.json) is reported as such.
"""

import hashlib
import json
import os
import sys
import time

# Fields of the vocabulary whose null means "absent" (the canonical form leaves them out).
_QUESTION_ALIAS = {"multi_select": "multiSelect"}


def _without_nulls(obj):
    return {k: v for k, v in obj.items() if v is not None} if isinstance(obj, dict) else obj


def canonical(request):
    """The canonical form of a request (see dshq's docs/protocol.md, section 8).

    The request without its `id`, `multi_select` spelled `multiSelect`, fields given as
    null left out (except inside `meta`, kept as is), keys sorted, no whitespace, UTF-8.
    Numbers: dshq keeps them as written, and this script writes the request the way
    Python prints it (1.10 becomes 1.1), so the two agree; NaN and infinities are not JSON.
    """
    req = _without_nulls(dict(request))
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


def request_digest(request):
    """`sha256:HEX` of the canonical request: what the outcome's `requestDigest` must be."""
    return "sha256:" + hashlib.sha256(canonical(request).encode("utf-8")).hexdigest()


class NotItsOutcome(Exception):
    """The request was not accepted: `error` is dshq's error for the file we dropped."""

    def __init__(self, error, foreign=None):
        super().__init__(error.get("code"))
        self.error = error
        self.foreign = foreign


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        # Absent, or (never with dshq's atomic writes) not whole yet: look again later.
        return None


# The error codes an accepted request can end with; every other error outcome is the
# rejection of some input, which for our own file shows as rejected/NAME.error.json.
_FINAL_CODES = ("ASK_CANCELLED", "ASK_ABORTED", "ASK_EXPIRED")


def _is_rejection(outcome):
    """Whether `outcome` is the rejection of an input rather than the end of a request.

    An earlier attempt with the same content (rejected NO_PROVIDER, say) left one with our
    digest: it is not the outcome of the file we dropped, so it is never taken as ours.
    """
    if outcome.get("status") != "error":
        return False
    return (outcome.get("error") or {}).get("code") not in _FINAL_CODES


def ask(root, request_id, request, timeout=3600.0, poll=0.2):
    """Drop `request` (a dict) as request `request_id`; return its outcome document.

    Returns None on timeout; raises NotItsOutcome when the file was rejected (including
    DUPLICATE_ID: the id answers another request).
    """
    request = dict(request)
    request["id"] = request_id
    digest = request_digest(request)
    # A name of our own, so rejected/NAME.error.json can only be about this file.
    name = "%s.%d-%s" % (request_id, os.getpid(), os.urandom(6).hex())
    tmp = os.path.join(root, "inbox", "tmp", name + ".json")
    new = os.path.join(root, "inbox", "new", name + ".json")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(request, f, ensure_ascii=False)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, new)
    dirfd = os.open(os.path.dirname(new), os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)

    outcome_path = os.path.join(root, "outbox", request_id + ".json")
    rejected_path = os.path.join(root, "rejected", name + ".error.json")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        outcome = _read_json(outcome_path)
        if (
            outcome is not None
            and outcome.get("requestDigest") == digest
            and not _is_rejection(outcome)
        ):
            return outcome
        error = _read_json(rejected_path)
        if error is not None:
            raise NotItsOutcome(error, foreign=outcome)
        # No outcome, or one that answers another request (an earlier attempt's, to be
        # replaced once ours is accepted): keep waiting.
        time.sleep(poll)
    return None


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.environ.get("DSHQ_ROOT")
    if not root:
        print("ask.py: set DSHQ_ROOT to the dshq state root", file=sys.stderr)
        return 2
    request_id = sys.argv[1]
    if len(sys.argv) > 2:
        with open(sys.argv[2], encoding="utf-8") as f:
            request = json.load(f)
    else:
        request = json.load(sys.stdin)
    if not isinstance(request, dict):
        print("ask.py: the request must be a JSON object", file=sys.stderr)
        return 2
    if request.get("id", request_id) != request_id:
        print("ask.py: the request's id %r is not %r" % (request["id"], request_id), file=sys.stderr)
        return 2

    try:
        outcome = ask(root, request_id, request, timeout=float(os.environ.get("ASK_TIMEOUT", "3600")))
    except NotItsOutcome as e:
        print(json.dumps(e.error, indent=2))
        print("not accepted: %s: %s" % (e.error.get("code"), e.error.get("message")), file=sys.stderr)
        if e.foreign is not None:
            print(
                "outbox/%s.json answers another request with this id (not this one's outcome)"
                % request_id,
                file=sys.stderr,
            )
        return 1
    if outcome is None:
        print("ask.py: no outcome for %s" % request_id, file=sys.stderr)
        return 3
    print(json.dumps(outcome, indent=2, ensure_ascii=False))
    if outcome["status"] != "answered":
        err = outcome["error"]
        print("ended without an answer: %s: %s" % (err["code"], err["message"]), file=sys.stderr)
        return 1
    if outcome.get("decision") is not None:
        # A plan review: approved exactly when the approve label alone was selected.
        item = outcome["answer"]["answers"][0]
        if outcome["decision"] == "approved":
            print("plan approved", file=sys.stderr)
        else:
            print("plan declined; feedback: %s" % (item.get("custom") or "(none)"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
