"""The adapters' shared rules, checked case by case against contrib/adapters-vectors.json:
the plan a reviewer reads (and the arguments an edit of it gives, or why it is refused),
the key of a call, the question tool's questions, and what the model reads when a call is
denied. The Node package's tests check the same file (test/adapters/core.test.js), so the
two packages cannot drift apart. No daemon runs: these are the rules alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

import dshq
from dshq._digest import id_for_key
from dshq.adapters import _core
from dshq.adapters._core import (
    Call,
    answers_by_text,
    answers_result,
    call_key,
    decide_error,
    decide_result,
    denial_message,
    questions_of,
    request_of,
)
from dshq.adapters._plan import PlanUnreadable, parse_plan, render_plan
from dshq.client import result_of
from dshq.types import build_request

VECTORS: Dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[2] / "adapters-vectors.json").read_text(encoding="utf-8")
)


def named(cases: Any) -> Any:
    return pytest.mark.parametrize("case", cases, ids=[c.get("name") or c.get("code") or c["tool"] for c in cases])


@named(VECTORS["render"])
def test_render(case: Dict[str, Any]) -> None:
    assert render_plan(case["tool"], case["args"]) == case["plan"]


@named(VECTORS["render"])
def test_a_plan_reads_back_as_the_arguments_it_shows(case: Dict[str, Any]) -> None:
    assert parse_plan(case["plan"], case["tool"], case["args"]) == case["args"]


@named(VECTORS["parse"])
def test_parse(case: Dict[str, Any]) -> None:
    if "refused" in case:
        with pytest.raises(PlanUnreadable) as e:
            parse_plan(case["plan"], case["tool"], case["args"])
        assert {"kind": e.value.kind, "reason": e.value.reason} == case["refused"]
    else:
        assert parse_plan(case["plan"], case["tool"], case["args"]) == case["gives"]


@named(VECTORS["review"])
def test_review_question(case: Dict[str, Any]) -> None:
    assert _core.review_question(case["tool"]) == case["question"]


@pytest.mark.parametrize("case", VECTORS["keys"], ids=lambda c: c["key"])
def test_key(case: Dict[str, Any]) -> None:
    key = call_key(case["adapter"], case["run"], case["call"])
    assert key == case["key"]
    assert id_for_key(key) == case["id"]


@pytest.mark.parametrize("case", VECTORS["requests"], ids=lambda c: c["tool"])
def test_request(case: Dict[str, Any]) -> None:
    """The same call asks the same request in both packages (so either re-attaches to it)."""
    doc = request_of(case["adapter"], case["run"], case["call"], case["tool"], case["args"], case["kind"])
    key = call_key(case["adapter"], case["run"], case["call"])
    assert build_request(doc["questions"], key=key, meta=doc["meta"]) == case["request"]


@named(VECTORS["messages"])
def test_message(case: Dict[str, Any]) -> None:
    kind = case.get("kind", _core.APPROVAL)
    assert denial_message(case["tool"], case["code"], case["detail"], kind) == case["message"]


@named(VECTORS["decisions"])
def test_decision(case: Dict[str, Any]) -> None:
    call = Call("call-1", case["tool"], case["args"], case.get("kind", _core.APPROVAL), dshq.Ticket("x"))
    try:
        d = decide_result(call, result_of(case["outcome"]))
    except dshq.DshqError as e:
        d = decide_error(call, e)
    assert d.allowed == case["allowed"]
    if not d.allowed:
        assert (d.code, d.message) == (case["code"], case["message"])
    elif call.kind == _core.QUESTION:
        assert d.answers == case["answers"]
        assert answers_result(d.answers) == case["model_reads"]
        assert answers_by_text(call.args, d.answers) == case["by_text"]
    else:
        assert (d.args, d.edited) == (case["runs_with"], case["edited"])


def test_question_tool() -> None:
    assert (_core.QUESTION_TOOL, _core.QUESTION_TOOL_DESCRIPTION) == (
        VECTORS["question_tool"]["name"], VECTORS["question_tool"]["description"])


@named(VECTORS["questions"])
def test_questions(case: Dict[str, Any]) -> None:
    if "refused" in case:
        with pytest.raises(dshq.BadRequest) as e:
            questions_of(case["args"])
        assert e.value.message == case["refused"]
    else:
        assert questions_of(case["args"]) == case["questions"]


def test_the_guide_shows_a_plan_as_it_is_rendered() -> None:
    [case] = [c for c in VECTORS["render"] if c["name"] == "the guide's example"]
    guide = (Path(__file__).resolve().parents[3] / "docs" / "guide" / "adapters.md").read_text(encoding="utf-8")
    # In a <pre> block, its fences spelled as entities (a line of backticks would end the
    # page's own fenced blocks).
    assert "<pre>\n%s</pre>\n" % case["plan"].replace("```", "&#96;&#96;&#96;") in guide
