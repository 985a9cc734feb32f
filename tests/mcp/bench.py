"""Latency of dshq's MCP server over stdio, measured with the official Python SDK.

Usage: DSHQ_BIN=target/release/dshq python3 tests/mcp/bench.py [SAMPLES]

On a fresh temporary root, one `dshq mcp` session:
1. ask -> committed: `ask_user_question` with waitSeconds 0 returns once the request is
   committed (the pending result); the figure is that round trip, as the host sees it.
2. answer -> tool result: `get_answer` waits (waitSeconds 30) while `dshq answer` (a new
   process, as a human at a shell) answers; the figure is from starting that command to
   the tool result arriving. The command's own run (start -> exit, which includes its
   commit and the outcome file) is printed beside it for comparison.
Prints p50/p90/p99/max in milliseconds. Not a test: it asserts nothing about timings.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
import mcp.types as types


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def show(name: str, xs: list[float]) -> None:
    ms = [x * 1000 for x in xs]
    print(
        f"{name}: n={len(ms)} p50={statistics.median(ms):.2f} ms p90={pct(ms, 90):.2f} "
        f"p99={pct(ms, 99):.2f} max={max(ms):.2f}",
        flush=True,
    )


def question(rid: str) -> dict:
    return {"id": rid, "questions": [{"id": "q", "question": "Go?", "options": [{"label": "yes"}, {"label": "no"}]}]}


async def main(samples: int) -> None:
    binary = os.environ["DSHQ_BIN"]
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "root")
        params = StdioServerParameters(command=binary, args=["--root", root, "mcp"], env={"RUST_LOG": "warn"})
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, client_info=types.Implementation(name="bench", version="1")) as s:
                await s.initialize()
                await s.list_tools()
                # Warm up (first open of the store, page cache).
                for i in range(5):
                    await s.call_tool("ask_user_question", {**question(f"warm-{i}"), "waitSeconds": 0})
                committed: list[float] = []
                for i in range(samples):
                    t0 = time.perf_counter()
                    r = await s.call_tool("ask_user_question", {**question(f"c-{i}"), "waitSeconds": 0})
                    committed.append(time.perf_counter() - t0)
                    assert r.structured_content["status"] == "pending", r
                answered: list[float] = []
                cli: list[float] = []
                for i in range(samples):
                    rid = f"c-{i}"
                    out: dict = {}

                    async def wait_for_it() -> None:
                        out["r"] = await s.call_tool("get_answer", {"id": rid, "waitSeconds": 30})
                        out["t"] = time.perf_counter()

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(wait_for_it)
                        # Let the call reach its wait (a bench, not a test: a settle time).
                        await anyio.sleep(0.02)
                        t0 = time.perf_counter()
                        cmd = [binary, "--root", root, "answer", rid, "--question", "q", "--select", "yes", "--name", "bench"]
                        p = await anyio.run_process(cmd, check=True)
                        cli.append(time.perf_counter() - t0)
                    assert out["r"].structured_content["status"] == "answered", out["r"]
                    answered.append(out["t"] - t0)
                show("ask_user_question -> committed (pending result)", committed)
                show("dshq answer started -> tool result", answered)
                show("dshq answer alone (start -> exit)", cli)


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 200)
