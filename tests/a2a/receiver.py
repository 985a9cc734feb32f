"""A push-notification receiver for tests/it/a2a.rs: a client's webhook, checking each
notification as A2A 1.0 tells a receiver to and as the official SDKs send it.

- The credentials: `Authorization: Bearer SECRET` (the configuration's `authentication`)
  and `X-A2A-Notification-Token: TOKEN` (its `token`), each compared in constant time;
  a notification that fails either is refused with 401 and reported unverified.
- The body: a `StreamResponse`, parsed strictly by the SDK's own protobuf type (an unknown
  member fails), whose task is one this receiver expects (A2A_EXPECT, comma-separated ids).

Env: RECEIVER_TOKEN, RECEIVER_SECRET, A2A_EXPECT. Prints {"step": "listening", "url"}
first, then one {"step": "push", "verified", "why"?, "body"?} line per notification.
Exit status 3: the SDK did not import.
"""

import hmac
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    from a2a.types import StreamResponse
    from google.protobuf import json_format
except ImportError as e:
    print(json.dumps({"step": "missing", "error": str(e)}), flush=True)
    sys.exit(3)

TOKEN = os.environ["RECEIVER_TOKEN"]
SECRET = os.environ["RECEIVER_SECRET"]
EXPECT = set(filter(None, os.environ.get("A2A_EXPECT", "").split(",")))


def same(a, b):
    return hmac.compare_digest((a or "").encode(), b.encode())


class Hook(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        why = None
        body = None
        if not same(self.headers.get("authorization"), f"Bearer {SECRET}"):
            why = "authorization"
        elif not same(self.headers.get("x-a2a-notification-token"), TOKEN):
            why = "token"
        else:
            try:
                body = json.loads(raw)
                parsed = json_format.ParseDict(body, StreamResponse())
                task_id = parsed.task.id if parsed.HasField("task") else None
                if EXPECT and task_id not in EXPECT:
                    why = f"unexpected task {task_id!r}"
            except Exception as e:  # a malformed notification is reported, not fatal
                why = f"body: {e}"
        print(
            json.dumps(
                {
                    "step": "push",
                    "verified": why is None,
                    "why": why,
                    "contentType": self.headers.get("content-type"),
                    "body": body,
                }
            ),
            flush=True,
        )
        self.send_response(200 if why is None else 401)
        self.send_header("content-length", "0")
        self.end_headers()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    host, port = server.server_address
    print(json.dumps({"step": "listening", "url": f"http://{host}:{port}/hook"}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
