#!/usr/bin/env python3
"""Ask a human through dshq with the Python standard library only.

    DSHQ_ROOT=/path/to/root python3 ask.py ID [request.json]

Writes the request into the inbox atomically (tmp/, fsync, rename into new/), waits for
outbox/ID.json, and prints what the human decided. Exit status: 0 answered, 1 ended
without an answer (cancelled, aborted, rejected), 3 timed out.
"""

import json
import os
import sys
import time


def ask(root, request_id, request, timeout=3600.0, poll=0.2):
    """Drop `request` (a dict) as request `request_id`; return the outcome document."""
    tmp = os.path.join(root, "inbox", "tmp", request_id + ".json")
    new = os.path.join(root, "inbox", "new", request_id + ".json")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(request, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, new)
    dirfd = os.open(os.path.dirname(new), os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)

    outcome_path = os.path.join(root, "outbox", request_id + ".json")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(outcome_path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
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
    request.pop("id", None)

    outcome = ask(root, request_id, request, timeout=float(os.environ.get("ASK_TIMEOUT", "3600")))
    if outcome is None:
        print("ask.py: no outcome for %s" % request_id, file=sys.stderr)
        return 3
    print(json.dumps(outcome, indent=2))
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
