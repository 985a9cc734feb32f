"""The LangGraph adapter with the real langgraph and its SQLite checkpointer: the node
interrupts with a dshq request, the process is killed, a person answers with `dshq
answer`, a new process resumes the graph with Command(resume=...), and the graph ends
with the answer."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import dshq
from conftest import DEADLINE

AGENT = str(Path(__file__).with_name("graph_agent.py"))


def test_interrupt_kill_answer_resume_in_a_new_process(host, tmp_path, python):
    checkpoints = str(tmp_path / "checkpoints.sqlite")
    env = host.env(PYTHONUNBUFFERED="1")
    first = subprocess.Popen([python, AGENT, "start", checkpoints, "t-1"], env=env, stdout=subprocess.PIPE, text=True)
    line = first.stdout.readline()
    assert line, "the graph did not interrupt"
    rid = json.loads(line)["interrupted"]
    assert rid == dshq.id_for_key("graph-choose-db-deploy the billing service")
    host.accepted(rid)
    shown = host.json("show", rid)
    assert shown["questions"][0]["question"] == "Which database for deploy the billing service?"
    first.send_signal(signal.SIGKILL)
    assert first.wait(DEADLINE) == -signal.SIGKILL

    host.run("answer", rid, "--select", "SQLite")

    resumed = subprocess.run(
        [python, AGENT, "resume", checkpoints, "t-1"], env=env, capture_output=True, text=True, timeout=DEADLINE * 2
    )
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads(resumed.stdout)
    assert final == {"task": "deploy the billing service", "db": "SQLite", "done": "deploy the billing service with SQLite"}
    # The resumed node asked again under the same id: still one request, accepted once.
    assert [r["id"] for r in host.requests()] == [rid]
    assert [e["kind"] for e in host.json("events", rid)].count("accepted") == 1


def test_resume_with_a_cancelled_request_raises_in_the_node(host, tmp_path, python):
    checkpoints = str(tmp_path / "checkpoints.sqlite")
    env = host.env(PYTHONUNBUFFERED="1")
    first = subprocess.Popen([python, AGENT, "start", checkpoints, "t-2"], env=env, stdout=subprocess.PIPE, text=True)
    rid = json.loads(first.stdout.readline())["interrupted"]
    first.kill()
    first.wait(DEADLINE)
    host.accepted(rid)
    host.run("cancel", rid, "--reason", "ask someone else")
    resumed = subprocess.run(
        [python, AGENT, "resume", checkpoints, "t-2"], env=env, capture_output=True, text=True, timeout=DEADLINE * 2
    )
    assert resumed.returncode != 0
    assert "AskCancelled" in resumed.stderr and "ask someone else" in resumed.stderr
