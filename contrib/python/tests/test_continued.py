"""dsh 0.2's continued questions through the Python package, against a real daemon: a
request on a tool call whose wait window closes returns Pending (not an error), the late
answer is delivered to that call (from a new client too), and asking again on the call
re-attaches instead of asking twice; dsh's codes for a bad window and a second request on
one call. Over the file transport and over HTTP."""

from __future__ import annotations

import pytest

import dshq

DB = [dshq.Question("db", "Which database?", options=["Postgres", "SQLite"])]


@pytest.fixture(params=["files", "http"])
def setup(request, tmp_path):
    from conftest import Dshq

    host = Dshq(tmp_path)
    if request.param == "files":
        host.start()
        new_client = lambda: dshq.Client(root=host.root, poll=0.02)  # noqa: E731
    else:
        host.start("--listen", "0")
        token = host.token("asker", "agent")
        new_client = lambda: dshq.Client(url=host.url, token=token, poll=0.02)  # noqa: E731
    yield host, new_client
    host.stop()


def test_a_timed_ask_is_pending_then_the_late_answer_reaches_the_call(setup):
    host, new_client = setup
    client = new_client()
    call = "call_py_1"
    pending = client.ask(DB, wait={"callId": call, "timeoutMs": 300})
    assert isinstance(pending, dshq.Pending), pending
    assert pending.pending is True and pending.call_id == call
    assert pending.id == dshq.id_for_call(call)
    assert "not a skipped answer" in pending.message
    assert host.status(pending.id) == "pending"  # still answerable

    host.answer(pending.id, "--select", "SQLite")
    # The late answer, delivered to the call (a fresh client knows only the call id).
    late = new_client().wait_for_call(call, timeout=30)
    assert late["db"].selected == ["SQLite"]
    assert late.call_id == call

    # Asking again on the call re-attaches: the answer, and still one request.
    again = client.ask(DB, wait={"callId": call, "timeoutMs": 300})
    assert isinstance(again, dshq.Answered) and again["db"].selected == ["SQLite"]
    assert [r["id"] for r in host.requests()] == [pending.id]


def test_dsh_codes_for_a_bad_window_and_a_second_request_on_one_call(setup):
    host, new_client = setup
    client = new_client()
    for bad in (0, 2_147_483_648, 1.5):
        with pytest.raises(dshq.BadTimeout):
            client.ask(DB, wait={"callId": "call_bad", "timeoutMs": bad}, wait_timeout=30)
    first = client.ask_nowait(DB, wait={"callId": "call_dup"})
    # Taken in before the second drop: two files of one call in one batch would be judged
    # in whatever order the batch reads them.
    host.accepted(first.id)
    other = [dshq.Question("db", "Which database, really?", options=["Postgres"])]
    with pytest.raises(dshq.DuplicateWait):
        client.ask(other, wait={"callId": "call_dup", "timeoutMs": 100}, wait_timeout=30)
    with pytest.raises(ValueError):
        dshq.build_request(DB, id="mine", wait={"callId": "c"})
