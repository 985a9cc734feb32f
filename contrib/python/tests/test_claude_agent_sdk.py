"""The Claude Agent SDK adapter with the real claude-agent-sdk's types, at the PreToolUse
hook and can_use_tool boundaries (Claude Code needs a model to run a session): the hook
defers a call nobody decided yet, the process is SIGKILLed, a reviewer approves the call
as edited, a new process runs the hook again (as a resumed session does) and allows the
call with the edited input; a decline reaches Claude as the denial's message with the
feedback; an expiry is a denial; AskUserQuestion's questions become dsh questions and
the answers its updatedInput."""

from __future__ import annotations

import json
from pathlib import Path

import dshq
from dshq.adapters import call_key
from conftest import Agent

AGENT = str(Path(__file__).with_name("claude_agent.py"))


def test_defer_kill_edit_approve_then_the_resumed_hook_allows_the_edited_call(host, python):
    env = host.env(PYTHONUNBUFFERED="1", STAY="1")
    first = Agent(python, AGENT, "hook", "sess-1", "toolu_1", "Bash", "0.3", env=env)
    out = first.line()["hookSpecificOutput"]
    rid = dshq.id_for_key(call_key("claude-agent-sdk", "sess-1", "toolu_1"))
    assert out["permissionDecision"] == "defer" and rid in out["permissionDecisionReason"]
    host.accepted(rid)
    assert "command: rm -rf build/\n" in host.json("show", rid)["questions"][0]["detail"]
    first.kill9()
    host.edit(rid, "command: rm -rf build/", "command: rm -rf build/cache/")
    env["STAY"] = "0"
    again = Agent(python, AGENT, "hook", "sess-1", "toolu_1", "Bash", "30", env=env).finish()["hookSpecificOutput"]
    assert again == {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                     "updatedInput": {"command": "rm -rf build/cache/", "description": "Clean the build directory"}}
    assert [r["id"] for r in host.requests()] == [rid]


def test_a_decline_reaches_claude_with_the_feedback(host, python):
    env = host.env(PYTHONUNBUFFERED="1")
    agent = Agent(python, AGENT, "permit", "toolu_2", "Bash", "30", env=env)
    rid = dshq.id_for_key(call_key("claude-agent-sdk", "run-1", "toolu_2"))
    host.answer(rid, "--custom", "Keep the build; clean only the cache")
    assert agent.finish() == {"behavior": "deny", "interrupt": False, "message":
                              "The reviewer declined the call to `Bash`, so it did not run. Their feedback: "
                              "Keep the build; clean only the cache"}


def test_an_expiry_is_a_denial(host, python):
    env = host.env(PYTHONUNBUFFERED="1")
    out = Agent(python, AGENT, "hook", "sess-3", "toolu_3", "Bash", "30",
                json.dumps({"ladder": {"expireAfter": "1s"}}), env=env).finish()["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert out["permissionDecisionReason"].startswith("No one approved the call to `Bash`, so it did not run (ASK_EXPIRED: ")


def test_ask_user_question_becomes_dsh_questions_and_the_answers_its_input(host, python):
    env = host.env(PYTHONUNBUFFERED="1")
    agent = Agent(python, AGENT, "hook", "sess-4", "toolu_4", "AskUserQuestion", "30", env=env)
    rid = dshq.id_for_key(call_key("claude-agent-sdk", "sess-4", "toolu_4"))
    host.accepted(rid)
    [q] = host.json("show", rid)["questions"]
    assert (q["id"], q["question"], [o["label"] for o in q["options"]]) == ("q1", "Which database?", ["Postgres", "SQLite"])
    host.answer(rid, "--select", "SQLite")
    out = agent.finish()["hookSpecificOutput"]
    assert out["permissionDecision"] == "allow"
    assert out["updatedInput"]["answers"] == {"Which database?": "SQLite"}
    assert out["updatedInput"]["questions"][0]["question"] == "Which database?"
