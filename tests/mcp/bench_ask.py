"""Ask -> committed at idle, from one run: the HTTP API, MCP over /mcp, MCP over stdio.

Usage: DSHQ_BIN=target/release/dshq python3 tests/mcp/bench_ask.py [SAMPLES] [ROUNDS]
       DSHQ_BIN_BEFORE=/path/to/old/dshq DSHQ_BIN=... (both builds, side by side in one run)

On a fresh temporary root, one daemon (`dshq daemon --listen 127.0.0.1:0`) with an asker
token, and one `dshq mcp` (stdio) on the same root (its own store connection beside the
daemon's). Each client asks one-question requests, one at a time (idle: nothing else
runs), after 5 warm-up asks; the clients take turns in ROUNDS rounds (default 4) of
SAMPLES / ROUNDS asks each, so a change in the machine's load during the run falls on
all of them alike:

1. the HTTP API: `POST /api/v1/requests` on one keep-alive connection (httpx2, which the
   MCP SDK ships), until the 201;
2. MCP over Streamable HTTP: `ask_user_question` with `waitSeconds: 0` on `/mcp`, the
   official Python SDK at 2025-11-25 (one session), until the pending result, which
   comes once the request is committed;
3. MCP over stdio: the same through `dshq mcp`, one session.

Beside them, in the same rounds, what separates the server's cost from the client's and
the disk's:

- the same three asks from a minimal client (the standard library's `http.client` on one
  keep-alive connection, or a line written to `dshq mcp`'s stdin and a line read back):
  what the SDK itself adds is the difference;
- the same minimal clients with a request that touches no store (`ping` over stdio and
  `/mcp`, `GET /healthz` for the API): the transport's own round trip;
- a bare SQLite commit on the same disk (a WAL database next to the root, `synchronous=
  FULL`, one small row a transaction): the floor that every ask's commit pays; and the
  same followed by a small file written and renamed, as dshq's store publishes the chain
  head (`audit.head`) after each commit.

Prints p50/p90/p99/max in milliseconds. Not a test: it asserts nothing about timings.
"""

import contextlib
import http.client
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlsplit

import anyio
import httpx2
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import show  # noqa: E402  (the percentiles, printed as the other bench prints them)

VERSION = "2025-11-25"


def question(rid: str) -> dict:
    return {"id": rid, "questions": [{"id": "q", "question": "Go?", "options": [{"label": "yes"}, {"label": "no"}]}]}


def pending(r: types.CallToolResult) -> None:
    assert r.structured_content and r.structured_content["status"] == "pending", r


def rpc(n: int, method: str, params: dict | None = None) -> dict:
    m = {"jsonrpc": "2.0", "id": n, "method": method}
    if params is not None:
        m["params"] = params
    return m


def call(n: int, rid: str) -> dict:
    return rpc(n, "tools/call", {"name": "ask_user_question", "arguments": {**question(rid), "waitSeconds": 0}})


def raw_pending(reply: dict) -> None:
    assert reply["result"]["structuredContent"]["status"] == "pending", reply


class RawStdio:
    """`dshq mcp` driven by hand: one JSON-RPC line out, lines in until the reply."""

    def __init__(self, binary: str, root: str):
        self.p = subprocess.Popen(
            [binary, "--root", root, "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={"RUST_LOG": "warn"},
        )
        self.n = 0
        init = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        self.request("initialize", init)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, m: dict) -> None:
        self.p.stdin.write(json.dumps(m).encode() + b"\n")
        self.p.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> dict:
        self.n += 1
        return self.exchange(rpc(self.n, method, params))

    def exchange(self, m: dict) -> dict:
        self.send(m)
        while True:
            reply = json.loads(self.p.stdout.readline())
            if reply.get("id") == m["id"]:
                return reply

    def ask(self, rid: str) -> None:
        self.n += 1
        raw_pending(self.exchange(call(self.n, rid)))

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(timeout=30)


class RawHttp:
    """One keep-alive connection from the standard library: the API and `/mcp` by hand."""

    def __init__(self, base: str, token: str):
        u = urlsplit(base)
        self.c = http.client.HTTPConnection(u.hostname, u.port)
        self.auth = {"Authorization": f"Bearer {token}"}
        self.session = None
        self.n = 0

    def post(self, path: str, body: dict, headers: dict) -> tuple[int, dict, bytes]:
        self.c.request("POST", path, body=json.dumps(body), headers={**self.auth, **headers})
        r = self.c.getresponse()
        return r.status, dict(r.getheaders()), r.read()

    def api(self, rid: str) -> None:
        status, _, body = self.post("/api/v1/requests", question(rid), {"Content-Type": "application/json"})
        assert status in (200, 201), (status, body)

    def healthz(self) -> None:
        self.c.request("GET", "/healthz")
        r = self.c.getresponse()
        r.read()
        assert r.status == 200, r.status

    def mcp(self, m: dict) -> dict | None:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            headers |= {"Mcp-Session-Id": self.session, "MCP-Protocol-Version": VERSION}
        status, got, body = self.post("/mcp", m, headers)
        assert status in (200, 202), (status, body)
        self.session = self.session or {k.lower(): v for k, v in got.items()}.get("mcp-session-id")
        # The reply is an SSE stream of one message (a priming event without data may
        # come first), or a plain JSON body.
        for line in body.decode().splitlines():
            if line.startswith("data:") and line[5:].strip():
                return json.loads(line[5:])
        return json.loads(body) if body.strip().startswith(b"{") else None

    def mcp_init(self) -> None:
        init = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        self.n += 1
        assert self.mcp(rpc(self.n, "initialize", init))["result"]
        self.mcp({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def mcp_ask(self, rid: str) -> None:
        self.n += 1
        raw_pending(self.mcp(call(self.n, rid)))

    def mcp_ping(self) -> None:
        self.n += 1
        assert "result" in self.mcp(rpc(self.n, "ping"))


class BareCommit:
    """A WAL database beside the root, synchronous=FULL: one small row a commit."""

    def __init__(self, path: str):
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")

    def commit(self, rid: str) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO t (body) VALUES (?)", (json.dumps(question(rid)),))
        self.db.execute("COMMIT")

    def commit_and_head(self, rid: str) -> None:
        """The commit, then what dshq's store does after each one: the chain head written
        to a temporary file and renamed over `audit.head` (no sync)."""
        self.commit(rid)
        d = os.path.dirname(self.path)
        tmp = os.path.join(d, f".audit.head.{os.getpid()}.tmp")
        with open(tmp, "w") as f:
            f.write(json.dumps({"seq": 1, "hash": "0" * 64}))
        os.rename(tmp, os.path.join(d, "audit.head"))


def start_daemon(stack: contextlib.ExitStack, binary: str, root: str) -> str:
    """A daemon on `root`, stopped when `stack` closes; its base URL."""
    daemon = subprocess.Popen(
        [binary, "--root", root, "daemon", "--listen", "127.0.0.1:0"],
        env={"RUST_LOG": "info", "PATH": os.environ.get("PATH", "")},
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )

    def stop() -> None:
        daemon.terminate()
        daemon.wait(timeout=30)

    stack.callback(stop)
    base = None
    deadline = time.monotonic() + 60
    while base is None and time.monotonic() < deadline:
        line = daemon.stderr.readline()
        if "listening on " in line:
            base = line.split("listening on ")[1].split()[0]
    assert base, "the daemon did not say where it listens"
    # The daemon logs a line per request (its default level): drain it from here on, so
    # a full pipe never blocks the daemon.
    threading.Thread(target=lambda: [None for _ in daemon.stderr], daemon=True).start()
    return base


async def clients_of(
    stack: contextlib.AsyncExitStack, label: str, binary: str, d: str, keep: dict | None = None
) -> list:
    """The clients of one build: a fresh root, its daemon, its stdio server, the SDK
    sessions and the minimal clients, as (name, ask) each. `keep` gets the SDK's stdio
    session, for a caller that looks closer."""
    root = os.path.join(tempfile.mkdtemp(prefix="build-", dir=d), "root")
    made = subprocess.run(
        [binary, "--root", root, "--json", "token", "create", "--role", "asker", "--name", "bench"],
        check=True, capture_output=True, text=True,
    )
    token = json.loads(made.stdout)["token"]
    base = start_daemon(stack.enter_context(contextlib.ExitStack()), binary, root)
    raw = RawHttp(base, token)
    raw.mcp_init()
    raw_stdio = RawStdio(binary, root)
    stack.callback(raw_stdio.close)
    headers = {"Authorization": f"Bearer {token}"}
    http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0)))
    streams = await stack.enter_async_context(streamable_http_client(f"{base}/mcp", http_client=http))
    over_http_session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
    params = StdioServerParameters(command=binary, args=["--root", root, "mcp"], env={"RUST_LOG": "warn"})
    read, write = await stack.enter_async_context(stdio_client(params))
    over_stdio_session = await stack.enter_async_context(ClientSession(read, write))
    if keep is not None:
        keep["stdio"] = over_stdio_session
    for s in (over_http_session, over_stdio_session):
        await s.initialize()
        await s.list_tools()

    async def api(rid: str) -> None:
        r = await http.post(f"{base}/api/v1/requests", json=question(rid))
        assert r.status_code in (200, 201), (r.status_code, r.text)

    async def over_http(rid: str) -> None:
        pending(await over_http_session.call_tool("ask_user_question", {**question(rid), "waitSeconds": 0}))

    async def over_stdio(rid: str) -> None:
        pending(await over_stdio_session.call_tool("ask_user_question", {**question(rid), "waitSeconds": 0}))

    return [
        (f"{label}HTTP API POST /api/v1/requests -> committed", api),
        (f"{label}MCP /mcp ask_user_question -> committed", over_http),
        (f"{label}MCP stdio ask_user_question -> committed", over_stdio),
        (f"{label}minimal client: HTTP API POST -> committed", sync(raw.api)),
        (f"{label}minimal client: /mcp ask_user_question -> committed", sync(raw.mcp_ask)),
        (f"{label}minimal client: stdio ask_user_question -> committed", sync(raw_stdio.ask)),
        (f"{label}minimal client: GET /healthz (no store)", sync(lambda _: raw.healthz())),
        (f"{label}minimal client: /mcp ping (no store)", sync(lambda _: raw.mcp_ping())),
        (f"{label}minimal client: stdio ping (no store)", sync(lambda _: raw_stdio.request("ping"))),
    ]


def sync(f):
    async def run(rid: str) -> None:
        f(rid)

    return run


async def main(samples: int, rounds: int) -> None:
    builds = [("", os.environ["DSHQ_BIN"])]
    if os.environ.get("DSHQ_BIN_BEFORE"):
        builds = [("before: ", os.environ["DSHQ_BIN_BEFORE"]), ("after: ", os.environ["DSHQ_BIN"])]
    with tempfile.TemporaryDirectory() as d:
        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for label, binary in builds:
                clients += await clients_of(stack, label, binary, d)
            bare = BareCommit(os.path.join(d, "bare.db"))
            clients.append(("bare SQLite commit, WAL, synchronous=FULL, same disk", sync(bare.commit)))
            clients.append(("bare SQLite commit + a small file renamed (as audit.head)", sync(bare.commit_and_head)))
            times: dict[str, list[float]] = {name: [] for name, _ in clients}
            for n, (_, ask) in enumerate(clients):
                for i in range(5):
                    await ask(f"c{n}-warm-{i}")
            per_round = max(1, samples // rounds)
            print(f"load average at the start: {os.getloadavg()}", flush=True)
            for r in range(rounds):
                for n, (name, ask) in enumerate(clients):
                    for i in range(per_round):
                        t0 = time.perf_counter()
                        await ask(f"c{n}-{r}-{i}")
                        times[name].append(time.perf_counter() - t0)
            print(f"load average at the end: {os.getloadavg()}", flush=True)
            for name, _ in clients:
                show(name, times[name])


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    anyio.run(main, *(args + [200, 4][len(args):]))
