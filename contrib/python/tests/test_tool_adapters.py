"""The tool-call adapters, each with its framework's own offline model: Pydantic AI
(pydantic-ai-slim, `FunctionModel`) and the OpenAI Agents SDK (openai-agents, a `Model`
subclass). The same story for both: a run pauses on a tool that needs approval, the
process is SIGKILLed, a reviewer approves with `dshq answer --edit`, a new process resumes
and the tool runs with the edited arguments; a decline reaches the model as the tool's
result; an expiry is a denial; the question tool asks dsh questions."""

from __future__ import annotations

import json
from pathlib import Path

import dshq
from dshq.adapters import call_key
import pytest

from conftest import Agent

HERE = Path(__file__).parent


@pytest.fixture(params=["pydantic-ai", "openai-agents"])
def framework(request):
    return request.param


def script(framework):
    return str(HERE / ("%s_agent.py" % framework.replace("-", "_")))


def env_for(host, tmp_path):
    return host.env(PYTHONUNBUFFERED="1", RAN_LOG=str(tmp_path / "ran.jsonl"))


def ran(tmp_path):
    p = tmp_path / "ran.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def test_pause_kill_edit_approve_resume_runs_the_edited_call(framework, host, tmp_path, python):
    env = env_for(host, tmp_path)
    store = str(tmp_path / "runs")
    first = Agent(python, script(framework), "start", store, "run-1", env=env)
    [rid] = first.line()["paused"]
    assert rid == dshq.id_for_key(call_key(framework, "run-1", "call-1"))
    host.accepted(rid)
    shown = host.json("show", rid)["questions"][0]
    # The reviewer reads the call as a plan, not a JSON dump.
    assert shown["detail"].startswith("Run `deploy` with:\n\n```\n")
    assert "service: billing\nversion: 1.2\nreplicas: 2\n" in shown["detail"]
    first.kill9()
    assert ran(tmp_path) == []

    host.edit(rid, "version: 1.2\nreplicas: 2", "version: 1.3\nreplicas: 3")

    done = Agent(python, script(framework), "resume", store, "run-1", env=env).finish()
    assert ran(tmp_path) == [{"service": "billing", "version": "1.3", "replicas": 3}]
    assert done["allowed"] and done["edited"]
    assert done["output"] == "the tool said: deployed billing 1.3 x3"
    # One request, asked once, though two processes ran the run.
    assert [r["id"] for r in host.requests()] == [rid]


def test_a_decline_reaches_the_model_as_the_tools_result(framework, host, tmp_path, python):
    env = env_for(host, tmp_path)
    store = str(tmp_path / "runs")
    first = Agent(python, script(framework), "start", store, "run-2", env=env)
    [rid] = first.line()["paused"]
    first.kill9()
    host.answer(rid, "--custom", "Not on a Friday: wait for Monday")
    done = Agent(python, script(framework), "resume", store, "run-2", env=env).finish()
    assert ran(tmp_path) == []
    assert not done["allowed"] and done["feedback"] == "Not on a Friday: wait for Monday"
    [seen] = done["seen"]
    assert seen == "The reviewer declined the call to `deploy`, so it did not run. Their feedback: Not on a Friday: wait for Monday"


def test_an_expiry_is_a_denial(framework, host, tmp_path, python):
    env = env_for(host, tmp_path)
    store = str(tmp_path / "runs")
    first = Agent(python, script(framework), "start", store, "run-3", json.dumps({"ladder": {"expireAfter": "1s"}}), env=env)
    [rid] = first.line()["paused"]
    first.proc.kill()
    done = Agent(python, script(framework), "resume", store, "run-3", env=env).finish()
    assert ran(tmp_path) == []
    assert not done["allowed"] and done["code"] == "ASK_EXPIRED"
    [seen] = done["seen"]
    assert seen.startswith("No one approved the call to `deploy`, so it did not run (ASK_EXPIRED: ")


def test_the_question_tool_asks_dsh_questions(framework, host, tmp_path, python):
    env = env_for(host, tmp_path)
    store = str(tmp_path / "runs")
    first = Agent(python, script(framework), "ask", store, "run-4", env=env)
    [rid] = first.line()["paused"]
    first.kill9()
    host.accepted(rid)
    q = host.json("show", rid)["questions"][0]
    assert (q["id"], q["question"], [o["label"] for o in q["options"]]) == ("q1", "Which database?", ["Postgres", "SQLite"])
    host.answer(rid, "--select", "SQLite")
    done = Agent(python, script(framework), "resume", store, "run-4", env=env).finish()
    # The model reads {"answers": {ID: ANSWER}}: Pydantic AI is handed the dict, the OpenAI
    # Agents SDK its JSON.
    result = {"answers": {"q1": "SQLite"}}
    assert done["seen"] == [str(result) if framework == "pydantic-ai" else json.dumps(result, separators=(",", ":"))]
