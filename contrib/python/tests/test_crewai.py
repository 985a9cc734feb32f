"""The CrewAI adapter with the real crewai (its Flow, @human_feedback and
SQLiteFlowPersistence): a flow pauses on a step that needs review, the process is
SIGKILLed, a reviewer approves the plan as edited, a new process resumes and the approved
step carries out the edited plan; a decline reaches the decline listener with the feedback;
an expiry is a denial. No model: the decision names the route."""

from __future__ import annotations

import json
from pathlib import Path

import dshq
from dshq.adapters import call_key
from conftest import Agent

AGENT = str(Path(__file__).with_name("crewai_agent.py"))


def env_for(host, tmp_path):
    return host.env(PYTHONUNBUFFERED="1", RAN_LOG=str(tmp_path / "ran.jsonl"))


def ran(tmp_path):
    p = tmp_path / "ran.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def paused(python, db, env, *request):
    first = Agent(python, AGENT, "start", db, *request, env=env)
    line = first.line()
    return first, line["flow"], line["paused"][0]


def test_pause_kill_edit_approve_resume_carries_out_the_edited_plan(host, tmp_path, python):
    env, db = env_for(host, tmp_path), str(tmp_path / "flows.db")
    first, flow, rid = paused(python, db, env)
    assert rid == dshq.id_for_key(call_key("crewai", flow, "plan"))
    host.accepted(rid)
    assert "output: |\n  1. Drain node a\n  2. Upgrade node a\n" in host.json("show", rid)["questions"][0]["detail"]
    first.kill9()
    host.edit(rid, "  2. Upgrade node a\n", "  2. Back up node a\n  3. Upgrade node a\n")
    done = Agent(python, AGENT, "resume", db, flow, env=env).finish()
    plan = "1. Drain node a\n2. Back up node a\n3. Upgrade node a\n"
    assert ran(tmp_path) == [plan]
    assert done["allowed"] and done["edited"] and done["output"] == "done: " + plan


def test_a_decline_reaches_the_flow_with_the_feedback(host, tmp_path, python):
    env, db = env_for(host, tmp_path), str(tmp_path / "flows.db")
    first, flow, rid = paused(python, db, env)
    first.kill9()
    host.answer(rid, "--custom", "Not on a Friday")
    done = Agent(python, AGENT, "resume", db, flow, env=env).finish()
    assert ran(tmp_path) == []
    assert done["output"] == "stopped: The reviewer declined the call to `plan`, so it did not run. Their feedback: Not on a Friday"


def test_an_expiry_is_a_denial(host, tmp_path, python):
    env, db = env_for(host, tmp_path), str(tmp_path / "flows.db")
    first, flow, rid = paused(python, db, env, json.dumps({"ladder": {"expireAfter": "1s"}}))
    first.proc.kill()
    done = Agent(python, AGENT, "resume", db, flow, env=env).finish()
    assert ran(tmp_path) == []
    assert done["code"] == "ASK_EXPIRED" and done["output"].startswith("stopped: No one approved the call to `plan`, so it did not run (ASK_EXPIRED: ")
