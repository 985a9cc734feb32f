"""Re-attaching: an agent killed while it waits asks again with the same key after its
restart, and finds its own question (not a second one), answered or not; over files and
over HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

import dshq
from conftest import DEADLINE, wait_until

AGENT = str(Path(__file__).with_name("agent.py"))


def spawn(python, env) -> subprocess.Popen:
    return subprocess.Popen([python, AGENT, "nightly-db-choice"], env=env, stdout=subprocess.PIPE, text=True)


def first_line(p: subprocess.Popen) -> dict:
    line = p.stdout.readline()
    assert line, "the agent printed nothing"
    return json.loads(line)


def agent_env(host, transport: str):
    env = host.env()
    env["PYTHONUNBUFFERED"] = "1"
    if transport == "http":
        env.pop("DSHQ_ROOT")
        env["DSHQ_URL"] = host.url
        env["DSHQ_TOKEN"] = host.token("asker", "nightly")
    return env


@pytest.mark.parametrize("transport", ["file", "http"])
def test_a_killed_agent_reattaches_to_its_question(tmp_path, python, transport):
    from conftest import Dshq

    host = Dshq(tmp_path).start(*(["--listen", "0"] if transport == "http" else []))
    try:
        env = agent_env(host, transport)
        rid = dshq.id_for_key("nightly-db-choice")

        # The first run asks, then dies (SIGKILL) while it waits.
        first = spawn(python, env)
        assert first_line(first) == {"asked": rid}
        host.accepted(rid)
        first.send_signal(signal.SIGKILL)
        first.wait(DEADLINE)

        # The restarted run asks again: the same request, still pending.
        second = spawn(python, env)
        assert first_line(second) == {"asked": rid}
        assert host.status(rid) == "pending"
        host.answer(rid, "--select", "Postgres")
        out, _ = second.communicate(timeout=DEADLINE)
        assert json.loads(out) == {"answer": {"db": ["Postgres"]}}
        assert second.returncode == 0

        # A third run after the answer gets it at once, and there is still one request.
        third = subprocess.run([python, AGENT, "nightly-db-choice"], env=env, capture_output=True, text=True, timeout=DEADLINE)
        lines = [json.loads(line) for line in third.stdout.splitlines()]
        assert lines == [{"asked": rid}, {"answer": {"db": ["Postgres"]}}]
        assert [r["id"] for r in host.requests()] == [rid]
        history = host.json("events", rid)
        assert [e["kind"] for e in history].count("accepted") == 1
        if transport == "file":
            # Every file the three runs dropped was taken in; none was rejected.
            wait_until(lambda: not os.listdir(os.path.join(host.root, "inbox", "new")), what="an empty inbox")
            assert not [n for n in os.listdir(os.path.join(host.root, "rejected"))]
    finally:
        host.stop()
