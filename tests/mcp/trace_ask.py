"""Where one ask's time goes, stage by stage: the SDK clients of bench_ask.py, traced.

Usage (root, Linux, `perf` with the syscall tracepoints):
    DSHQ_BIN=target/release/dshq python3 tests/mcp/trace_ask.py [SAMPLES]

The same setup as bench_ask.py (one fresh root, its daemon on 127.0.0.1, `dshq mcp` on
stdio, an asker token, the official Python SDK at 2025-11-25), and for each of the HTTP
API (httpx2), MCP over /mcp and MCP over stdio, SAMPLES asks one at a time while
`perf record -k mono` records a few syscalls of the client, the daemon and the stdio
server: each ask is then cut at the syscalls it must make, on one clock (the client's
own timestamps around each call are CLOCK_MONOTONIC too):

  client: call -> request written      the client's work before its write/sendto
  request written -> server read        the kernel and the server's reader waking
  server read -> store job starts       the transport, the dispatch, the tool's checks
                                        (the database thread's futex wait returning)
  job start -> first WAL write          the transaction until its COMMIT (SQLite writes
                                        the WAL at COMMIT). Over HTTP the client writes the
                                        headers and the body apart, and the host checks the
                                        token (a job of its own) once the headers are in:
                                        the cut after the body's read finds the ask's job
  WAL writes -> fdatasync               writing the transaction's WAL frames
  fdatasync                             the commit's sync (synchronous=FULL)
  fdatasync -> audit.head renamed       unlocking, the chain head written and renamed
  renamed -> response written           what follows the commit: the rest of the job,
                                        any further job, the result, the transport
  response written -> client read       the kernel and the client waking
  client read -> call returns           the client's work after its read (parsing,
                                        validation)

Prints p50 and p90 of each stage in milliseconds (the stages of one ask add up to its
total; percentiles of stages do not add up). perf adds a few microseconds to each
traced syscall, so the totals are a little above bench_ask.py's. Not a test.
"""

import bisect
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import anyio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_ask  # noqa: E402
from bench import pct  # noqa: E402

EVENTS = [
    "syscalls:sys_enter_write", "syscalls:sys_enter_writev", "syscalls:sys_enter_sendto",
    "syscalls:sys_exit_read", "syscalls:sys_exit_recvfrom",
    "syscalls:sys_enter_pwrite64", "syscalls:sys_enter_fdatasync", "syscalls:sys_exit_fdatasync",
    "syscalls:sys_exit_rename", "syscalls:sys_exit_futex",
]

STAGES = [
    "client: call -> request written",
    "request written -> server read",
    "server read -> store job starts",
    "job start -> first WAL write",
    "WAL writes -> fdatasync",
    "fdatasync",
    "fdatasync -> audit.head renamed",
    "renamed -> response written",
    "response written -> client read",
    "client read -> call returns",
]


def threads(pid: int) -> dict[int, str]:
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/comm") as f:
            out[int(t)] = f.read().strip()
    return out


def events(path: str) -> list[tuple[float, int, str, dict]]:
    """(time, tid, event, fields) in time order; fields: fd, count (bytes asked to write),
    ret (what a syscall returned)."""
    out = subprocess.run(
        ["perf", "script", "-i", path, "-F", "tid,time,event,trace"],
        check=True, capture_output=True, text=True,
    ).stdout
    evs = []
    for line in out.splitlines():
        head, _, args = line.partition("syscalls:")
        if not args:
            continue
        tid, ts = head.split()[:2]
        name, _, rest = args.partition(":")
        fields = {}
        for part in rest.split(","):
            k, _, v = part.strip().partition(":")
            if v.strip().startswith("0x"):
                fields[k.strip()] = int(v.strip(), 16)
        if name.strip().startswith("sys_exit"):
            v = rest.strip()
            fields["ret"] = int(v, 16) if v.startswith("0x") else -1
        evs.append((float(ts.rstrip(":")), int(tid), name.strip(), fields))
    evs.sort(key=lambda e: e[0])
    return evs


def a_write(e) -> bool:
    """A write that carries a message: not a runtime's 8-byte eventfd wake, not a log line."""
    if e[2] == "sys_enter_writev":
        return e[3].get("fd") != 2
    if e[2] == "sys_enter_write":
        return e[3].get("fd") != 2 and e[3].get("count", 0) != 8
    # (and not an event loop's one-byte wake of itself)
    return e[2] == "sys_enter_sendto" and e[3].get("len", 0) > 8


def a_read(e) -> bool:
    """A read that brought a message in: not a runtime's 8-byte eventfd read, nor an
    event loop's one-byte wake, nor an error (a negative return reads as a huge one)."""
    return e[2] in ("sys_exit_read", "sys_exit_recvfrom") and 8 < e[3].get("ret", -1) < 1 << 32


def cut(evs, calls, client: set[int], server: set[int], db: set[int]):
    """The stages of each call (t0, t1) from the events of its client and server."""
    times = [e[0] for e in evs]
    rows = []
    for t0, t1 in calls:
        inside = evs[bisect.bisect_left(times, t0):bisect.bisect_right(times, t1)]
        mine = [e for e in inside if e[1] in client]
        srv = [e for e in inside if e[1] in server and e[1] not in db]
        dbe = [e for e in inside if e[1] in db]
        sync0 = [e[0] for e in dbe if e[2] == "sys_enter_fdatasync"]
        if not sync0:
            continue
        sync0 = sync0[0]
        sent = [e[0] for e in mine if a_write(e) and e[0] < sync0]
        if not sent:
            continue
        sent = sent[-1]
        got = [e[0] for e in srv if a_read(e) and e[0] > sent]
        job = [e[0] for e in dbe if e[2] == "sys_exit_futex" and got and got[0] < e[0] < sync0]
        wal = [e[0] for e in dbe if e[2] == "sys_enter_pwrite64" and e[0] < sync0]
        sync1 = [e[0] for e in dbe if e[2] == "sys_exit_fdatasync" and e[0] > sync0]
        renamed = [e[0] for e in dbe if e[2] == "sys_exit_rename" and sync1 and e[0] > sync1[0]]
        replies = [e[0] for e in srv if a_write(e) and renamed and e[0] > renamed[0]]
        back = [e[0] for e in mine if a_read(e) and replies and e[0] > replies[0]]
        if not (got and job and wal and sync1 and renamed and replies and back):
            continue
        # The response: the server's last write before the client's read.
        out_at = max(r for r in replies if r < back[0])
        marks = [t0, sent, got[0], job[0], wal[0], sync0, sync1[0], renamed[0], out_at, back[0], t1]
        pages = sum(1 for e in dbe if e[2] == "sys_enter_pwrite64" and e[0] < sync0 and e[3].get("count") == 4096)
        rows.append([b - a for a, b in zip(marks, marks[1:])] + [pages])
    return rows


async def inner(samples: int, out: str) -> None:
    """Under `perf record`: set up, ask, and write down when each call ran and which
    threads are whose."""
    binary = os.environ["DSHQ_BIN"]
    with tempfile.TemporaryDirectory() as d:
        async with contextlib.AsyncExitStack() as stack:
            keep: dict = {}
            clients = await bench_ask.clients_of(stack, "", binary, d, keep)
            named = {name: ask for name, ask in clients}
            chosen = [
                ("HTTP API (httpx2)", named["HTTP API POST /api/v1/requests -> committed"]),
                ("MCP /mcp (Python SDK)", named["MCP /mcp ask_user_question -> committed"]),
                ("MCP stdio (Python SDK)", named["MCP stdio ask_user_question -> committed"]),
            ]
            for n, (_, ask) in enumerate(chosen):
                for i in range(5):
                    await ask(f"t{n}-warm-{i}")
            calls: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in chosen}
            for i in range(samples):
                for n, (name, ask) in enumerate(chosen):
                    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                    await ask(f"t{n}-{i}")
                    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                    calls[name].append((t0 / 1e9, t1 / 1e9))
            # Of the client's work after its read: the SDK validating the result against
            # the tool's output schema (a compiled validator, as call_tool uses).
            session = keep["stdio"]
            r = await session.call_tool("ask_user_question", {**bench_ask.question("t-v"), "waitSeconds": 0})
            validation = []
            for _ in range(200):
                t0 = time.perf_counter()
                await session.validate_tool_result("ask_user_question", r)
                validation.append(time.perf_counter() - t0)
            me = os.getpid()
            kids = subprocess.run(["pgrep", "-P", str(me)], capture_output=True, text=True).stdout.split()
            daemon = stdio = 0
            for k in map(int, kids):
                with open(f"/proc/{k}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                if b"daemon" in argv:
                    daemon = k
                elif b"mcp" in argv:
                    # Two `dshq mcp` run (the minimal client's, then the SDK's): the
                    # SDK's is the one started last.
                    stdio = max(stdio, k)
            with open(out, "w") as f:
                json.dump({"calls": calls, "validation": validation, "client": me, "daemon": threads(daemon), "stdio": threads(stdio)}, f)


def main(samples: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = os.environ.get("DSHQ_TRACE_KEEP") or tmp  # to read perf.data again
        data, out = os.path.join(d, "perf.data"), os.path.join(d, "calls.json")
        subprocess.run(
            ["perf", "record", "-q", "-k", "mono", "-o", data] + [a for e in EVENTS for a in ("-e", e)]
            + ["--", sys.executable, os.path.abspath(__file__), str(samples)],
            env={**os.environ, "DSHQ_TRACE_INNER": out}, check=True,
        )
        with open(out) as f:
            got = json.load(f)
        evs = events(data)
        v = [x * 1000 for x in got["validation"]]
        print(f"the SDK's output-schema validation of one ask_user_question result: p50 {statistics.median(v):.3f} ms, "
              f"p90 {pct(v, 90):.3f} ms", flush=True)
        client = {got["client"]}  # the event loop's thread: the SDK's reads and writes
        for name, calls in got["calls"].items():
            tids = got["stdio"] if "stdio" in name else got["daemon"]
            server = {int(t) for t in tids}
            db = {int(t) for t, c in tids.items() if c in ("dshq-db", "dshq-mcp-db")}
            rows = cut(evs, calls, client, server, db)
            if not rows:
                print(f"\n{name}: no ask could be cut", flush=True)
                continue
            pages = statistics.median(r.pop() for r in rows)
            totals = [sum(r) * 1000 for r in rows]
            print(f"\n{name}: {len(rows)} of {len(calls)} asks cut; total p50 {statistics.median(totals):.3f} ms, "
                  f"p90 {pct(totals, 90):.3f} ms; the commit writes {pages:.0f} WAL pages of 4 KiB", flush=True)
            for s, stage in enumerate(STAGES):
                xs = [r[s] * 1000 for r in rows]
                print(f"  {stage:<36} p50 {statistics.median(xs):7.3f}  p90 {pct(xs, 90):7.3f}", flush=True)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    if os.environ.get("DSHQ_TRACE_INNER"):
        anyio.run(inner, n, os.environ["DSHQ_TRACE_INNER"])
    else:
        main(n)
