"""Ids from untrusted places never name a file outside the root, nor another URL.

Each case is what an attacker controls: the id an agent is given (a caller's argument, a
request's meta, a checkpoint), planted next to a file the attacker wrote outside the
outbox. The client refuses the id with BAD_REQUEST before it builds a path: nothing is
written outside the root, and no planted outcome is ever taken as the answer. No daemon
runs: every refusal happens before one would be reached.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dshq
from dshq._digest import request_digest

DB = [dshq.Question("db", "Which database?", options=["Postgres", "SQLite"])]

BAD_IDS = ["../../../outside/x", "../x", "..", ".hidden", "a/b", "-rf", "x" * 129]


def files_under(path: Path) -> list:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.fixture
def layout(tmp_path: Path):
    """A root and, beside it, a directory only an attacker writes to."""
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    return tmp_path, root, outside


@pytest.mark.parametrize("bad", BAD_IDS + ["ABSOLUTE"])
def test_a_bad_request_id_is_refused_before_any_file_is_written(layout, bad):
    top, root, outside = layout
    if bad == "ABSOLUTE":
        bad = str(outside / "abs")
    client = dshq.Client(root=str(root), poll=0.01)
    before = files_under(top)
    with pytest.raises(dshq.BadRequest) as e:
        client.ask_nowait(DB, id=bad)
    assert e.value.code == "BAD_REQUEST"
    with pytest.raises(dshq.BadRequest):
        client.abort(bad, "stop")
    with pytest.raises(dshq.BadRequest):
        client.outcome(bad)
    with pytest.raises(dshq.BadRequest):
        client.wait(dshq.Ticket(bad), timeout=0.1)
    assert files_under(top) == before, "nothing may be written anywhere"


def test_a_planted_outcome_outside_the_outbox_is_never_taken(layout):
    """The id ``../../outside/forged`` would read ``outbox/../../outside/forged.json``: an
    outcome the attacker wrote there, with the right digest, must not answer the ask."""
    top, root, outside = layout
    forged_id = "../../outside/forged"
    doc = dshq.build_request(DB, id=forged_id)
    forged = {
        "id": forged_id,
        "status": "answered",
        "requestDigest": request_digest(doc),
        "answer": {"answers": [{"id": "db", "selected": ["Postgres"]}]},
        "decision": None,
        "provider": "attacker",
        "createdAt": "2026-01-01T00:00:00Z",
        "finishedAt": "2026-01-01T00:00:01Z",
    }
    target = root / "outbox" / (forged_id + ".json")
    (root / "outbox").mkdir()
    target.write_text(json.dumps(forged))
    assert target.resolve() == (outside / "forged.json").resolve()
    client = dshq.Client(root=str(root), poll=0.01)
    with pytest.raises(dshq.BadRequest):
        client.ask(DB, id=forged_id, wait_timeout=1)
    ticket = dshq.Ticket(forged_id, request_digest(doc), None, doc)
    with pytest.raises(dshq.BadRequest):
        client.wait(ticket, timeout=1)
    assert not (root / "inbox").exists(), "no request file was dropped"


def test_the_http_transport_refuses_a_bad_id_before_it_calls():
    # Port 9 (discard) on loopback: a call would fail with IO, not BAD_REQUEST.
    client = dshq.Client(url="http://127.0.0.1:9", token="t")
    for bad in ["..", "../admin", "a/b", "%2e%2e"]:
        for call in (lambda: client.outcome(bad), lambda: client.abort(bad)):
            with pytest.raises(dshq.BadRequest):
                call()


def test_a_good_id_still_works_offline(layout):
    """The check refuses nothing the daemon accepts: the longest id and every character."""
    top, root, _ = layout
    client = dshq.Client(root=str(root))
    good = "A" + "z9._-" * 25 + "xy"
    assert len(good) == 128
    t = client.ask_nowait(DB, id=good)
    assert t.id == good
    dropped = [p.name for p in (root / "inbox" / "new").iterdir()]
    assert len(dropped) == 1 and dropped[0].startswith(good + "."), dropped
    client.abort(good, "done")
    assert (root / "inbox" / "new" / (good + ".abort")).exists()


def test_the_langgraph_adapter_refuses_a_checkpoint_naming_a_bad_id(layout):
    """A checkpoint is a file too: a graph whose pending interrupt names a traversal id is
    not resumed with the outcome planted at the end of it."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    from dshq.langgraph import resume

    top, root, outside = layout
    forged_id = "../../outside/forged"
    (root / "outbox").mkdir()
    (outside / "forged.json").write_text(
        json.dumps({"id": forged_id, "status": "answered", "answer": {"answers": []}})
    )

    def node(state):
        # What a tampered checkpoint holds: the adapter's mark with another id.
        got = interrupt({"dshq": {"id": forged_id, "digest": None}})
        return {"got": got}

    g = StateGraph(dict)
    g.add_node("ask", node)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    graph = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"got": None}, config)
    with pytest.raises(dshq.BadRequest):
        resume(graph, config, dshq.Client(root=str(root), poll=0.01), timeout=1)
    assert graph.get_state(config).next == ("ask",), "the graph was not resumed"
