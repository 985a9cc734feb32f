"""Ask -> committed at idle, from one run: the HTTP API, MCP over /mcp, MCP over stdio.

Usage: DSHQ_BIN=target/release/dshq python3 tests/mcp/bench_ask.py [SAMPLES]

On a fresh temporary root, one daemon (`dshq daemon --listen 127.0.0.1:0`) with an asker
token, and, one after another, each client asking SAMPLES one-question requests, one at a
time (idle: nothing else runs), after 5 warm-up asks:
1. the HTTP API: `POST /api/v1/requests` on one keep-alive connection (httpx2, which the
   MCP SDK ships), until the 201;
2. MCP over Streamable HTTP: `ask_user_question` with `waitSeconds: 0` on `/mcp`, the
   official Python SDK at 2025-11-25 (one session), until the pending result, which
   comes once the request is committed;
3. MCP over stdio: the same through `dshq mcp` on the same root (its own store
   connection beside the daemon's), one session.
Prints p50/p90/p99/max in milliseconds. Not a test: it asserts nothing about timings.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import anyio
import httpx2
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import show  # noqa: E402  (the percentiles, printed as the other bench prints them)


def question(rid: str) -> dict:
    return {"id": rid, "questions": [{"id": "q", "question": "Go?", "options": [{"label": "yes"}, {"label": "no"}]}]}


async def timed(samples: int, prefix: str, ask) -> list[float]:
    for i in range(5):
        await ask(f"{prefix}-warm-{i}")
    out = []
    for i in range(samples):
        t0 = time.perf_counter()
        await ask(f"{prefix}-{i}")
        out.append(time.perf_counter() - t0)
    return out


def pending(r: types.CallToolResult) -> None:
    assert r.structured_content and r.structured_content["status"] == "pending", r


async def main(samples: int) -> None:
    binary = os.environ["DSHQ_BIN"]
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "root")
        made = subprocess.run(
            [binary, "--root", root, "--json", "token", "create", "--role", "asker", "--name", "bench"],
            check=True, capture_output=True, text=True,
        )
        token = json.loads(made.stdout)["token"]
        daemon = subprocess.Popen(
            [binary, "--root", root, "daemon", "--listen", "127.0.0.1:0"],
            env={"RUST_LOG": "info", "PATH": os.environ.get("PATH", "")},
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        )
        try:
            base = None
            deadline = time.monotonic() + 60
            while base is None and time.monotonic() < deadline:
                line = daemon.stderr.readline()
                if "listening on " in line:
                    base = line.split("listening on ")[1].split()[0]
            assert base, "the daemon did not say where it listens"
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0)) as http:

                async def api(rid: str) -> None:
                    r = await http.post(f"{base}/api/v1/requests", json=question(rid))
                    assert r.status_code in (200, 201), (r.status_code, r.text)

                show("HTTP API POST /api/v1/requests -> committed", await timed(samples, "api", api))

                async with streamable_http_client(f"{base}/mcp", http_client=http) as streams:
                    async with ClientSession(streams[0], streams[1]) as s:
                        await s.initialize()
                        await s.list_tools()

                        async def over_http(rid: str) -> None:
                            pending(await s.call_tool("ask_user_question", {**question(rid), "waitSeconds": 0}))

                        show("MCP /mcp ask_user_question -> committed", await timed(samples, "http", over_http))

            params = StdioServerParameters(command=binary, args=["--root", root, "mcp"], env={"RUST_LOG": "warn"})
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    await s.list_tools()

                    async def over_stdio(rid: str) -> None:
                        pending(await s.call_tool("ask_user_question", {**question(rid), "waitSeconds": 0}))

                    show("MCP stdio ask_user_question -> committed", await timed(samples, "stdio", over_stdio))
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 200)
