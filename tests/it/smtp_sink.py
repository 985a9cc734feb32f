"""A real SMTP server for the email channel's tests (tests/it/email.rs): aiosmtpd's
Controller on 127.0.0.1:PORT. Each mail it accepts is written to DIR as one JSON file
(written under a temporary name, then renamed): the envelope, the raw message, its headers
as parsed by Python's email package (RFC 2047 words decoded), and its text and HTML parts.

--refuse N answers the first N mails with a temporary failure (451), so the test sees the
sender retry. --tls starttls (STARTTLS offered and required before MAIL) or --tls implicit
(TLS from the first byte) with --cert/--key serve TLS; each mail records whether its session
was encrypted. --hold-first keeps the first mail's DATA unanswered for ever (a mail in
flight when the sender is killed), after writing what it got to DIR/held.txt. Prints "ready" once it listens; stops on SIGTERM or when stdin closes.
"""

import argparse
import asyncio
import email
import email.policy
import json
import os
import signal
import ssl
import sys
import threading
import time

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, out, refuse, hold_first=False):
        self.out = out
        self.refuse = refuse
        self.hold = hold_first
        self.n = 0
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        at = time.time()
        with self.lock:
            if self.refuse > 0:
                self.refuse -= 1
                return "451 4.3.0 Try again later (the test's sink refuses)"
            self.n += 1
            n = self.n
        raw = envelope.original_content or envelope.content
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        if self.hold:
            self.hold = False
            held = {"message_id": str(msg["message-id"]), "raw": raw.decode("utf-8", "replace")}
            with open(os.path.join(self.out, ".held.txt"), "w") as f:
                json.dump(held, f)
            os.rename(os.path.join(self.out, ".held.txt"), os.path.join(self.out, "held.txt"))
            await asyncio.Event().wait()
        text = msg.get_body(preferencelist=("plain",))
        html = msg.get_body(preferencelist=("html",))
        doc = {
            "at": at,
            # STARTTLS records its session's TLS; a TLS-only listener has it on the transport.
            "tls": bool(getattr(session, "ssl", None))
            or server.transport.get_extra_info("ssl_object") is not None,
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "raw": raw.decode("utf-8", "replace"),
            "headers": [[k, str(v)] for k, v in msg.items()],
            "subject": str(msg["subject"]),
            "message_id": str(msg["message-id"]),
            # SMTP's CRLF line ends, as the text the reader sees (LF).
            "text": text.get_content().replace("\r\n", "\n") if text is not None else None,
            "html": html.get_content().replace("\r\n", "\n") if html is not None else None,
        }
        tmp = os.path.join(self.out, f".{n:04}.json")
        with open(tmp, "w") as f:
            json.dump(doc, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, os.path.join(self.out, f"{n:04}.json"))
        return "250 2.0.0 OK"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--refuse", type=int, default=0)
    p.add_argument("--tls", choices=["starttls", "implicit"])
    p.add_argument("--hold-first", action="store_true")
    p.add_argument("--cert")
    p.add_argument("--key")
    a = p.parse_args()
    kw = {}
    if a.tls:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(a.cert, a.key)
        if a.tls == "starttls":
            kw = {"tls_context": ctx, "require_starttls": True}
        else:
            kw = {"ssl_context": ctx}
    controller = Controller(
        Sink(a.dir, a.refuse, a.hold_first), hostname="127.0.0.1", port=a.port, **kw
    )
    controller.start()
    print("ready", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    stop.wait()
    controller.stop()


if __name__ == "__main__":
    main()
