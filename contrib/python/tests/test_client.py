"""The blocking client over the file transport against a real daemon: ask, answer, abort,
wait_any, a typed error per code class, the plan review decorator."""

from __future__ import annotations

import json
import threading

import pytest

import dshq

DB = [dshq.Question("db", "Which database?", options=["Postgres", "SQLite"])]


def client_of(host) -> dshq.Client:
    return dshq.Client(root=host.root, poll=0.02)


def answer_later(host, request_id: str, *flags: str) -> threading.Thread:
    """Answer from another thread, as a reviewer would, once the request is accepted."""
    t = threading.Thread(target=host.answer, args=(request_id, *flags), daemon=True)
    t.start()
    return t


def test_ask_blocks_until_the_cli_answers(host):
    client = client_of(host)
    rid = dshq.id_for_key("pick-db")
    helper = answer_later(host, rid, "--select", "SQLite")
    result = client.ask(DB, key="pick-db", wait_timeout=30)
    helper.join(30)
    assert isinstance(result, dshq.Answered)
    assert result.id == rid
    assert result["db"].selected == ["SQLite"]
    assert result["db"].value == "SQLite"
    assert result.decision is None and result.provider == "tester"
    assert result.digest == dshq.request_digest(dshq.build_request(DB, key="pick-db"))


def test_ask_nowait_wait_and_a_multi_select_with_custom_text(host):
    client = client_of(host)
    q = dshq.Question("tags", "Which tags?", options=["a", "b", "c"], multi_select=True, header="Tags")
    ticket = client.ask_nowait([q], id="tags-1")
    assert str(ticket) == "tags-1" and ticket.digest.startswith("sha256:")
    host.answer("tags-1", "--select", "a", "--select", "c", "--custom", "and d")
    result = client.wait(ticket, timeout=30)
    assert result["tags"].selected == ["a", "c"]
    assert result["tags"].custom == "and d"
    assert result["tags"].value == "a, c, and d"


def test_abort_ends_the_request_aborted_not_expired(host):
    client = client_of(host)
    ticket = client.ask_nowait(DB, key="to-abort")
    host.accepted(ticket.id)
    client.abort(ticket, "changed my mind")
    with pytest.raises(dshq.AskAborted) as e:
        client.wait(ticket, timeout=30)
    assert type(e.value) is dshq.AskAborted
    assert e.value.code == "ASK_ABORTED" and e.value.request_id == ticket.id
    assert "changed my mind" in e.value.message
    assert host.status(ticket.id) == "aborted"


def test_a_passed_deadline_is_expired(host):
    client = client_of(host)
    with pytest.raises(dshq.Expired) as e:
        client.ask(DB, key="too-late", timeout="1s", wait_timeout=30)
    assert isinstance(e.value, dshq.AskAborted)
    assert e.value.code == "ASK_ABORTED"


def test_wait_any_returns_the_first_answered_and_raises_the_first_cancelled(host):
    client = client_of(host)
    tickets = [client.ask_nowait(DB, key="many-%d" % i) for i in range(3)]
    host.answer(tickets[1].id, "--select", "Postgres")
    ticket, result = client.wait_any(tickets, timeout=30)
    assert ticket == tickets[1]
    assert result["db"].selected == ["Postgres"]
    rest = [tickets[0], tickets[2]]
    host.run("cancel", tickets[2].id, "--reason", "not needed")
    with pytest.raises(dshq.AskCancelled) as e:
        client.wait_any(rest, timeout=30)
    assert e.value.request_id == tickets[2].id
    assert isinstance(e.value, dshq.Cancelled)
    with pytest.raises(dshq.WaitTimeout):
        client.wait_any([tickets[0]], timeout=0.3)


def test_codes_are_the_daemons_own():
    """Every code in dshq's schema has its class here, and nothing else does."""
    import subprocess
    from conftest import dshq_bin

    schema = json.loads(subprocess.run([dshq_bin(), "schema", "outcome"], capture_output=True, text=True, check=True).stdout)
    wire = [v["const"] for v in schema["$defs"]["Code"]["oneOf"]]
    assert list(dshq.CODES) == list(wire)
    for c in dshq.CODES:
        cls = dshq.error_class(c)
        assert issubclass(cls, dshq.DshqError) and cls is not dshq.DshqError and cls.code == c


@pytest.mark.parametrize(
    "request_doc, cls",
    [
        ({"questions": [{"id": "q", "question": "?", "colour": "red"}]}, dshq.BadRequest),
        ({"questions": []}, dshq.EmptyQuestions),
        (
            {"questions": [{"id": "q", "question": "?", "detail": "plan", "options": [{"label": "yes"}],
                            "intent": {"kind": "plan-review", "approve": "no such option"}}]},
            dshq.BadIntent,
        ),
        ({"questions": [{"id": "q", "question": "?"}], "requireProvider": True}, dshq.NoProvider),
        ({"questions": [{"id": "q", "question": "?"}], "agent": {"id": "ghost", "instance": "i1"}}, dshq.CallerNotLive),
    ],
    ids=["bad-request", "empty-questions", "bad-intent", "no-provider", "caller-not-live"],
)
def test_a_rejection_raises_its_own_class(host, request_doc, cls):
    client = client_of(host)
    with pytest.raises(cls) as e:
        client.ask(request_doc, key="rejected-%s" % cls.__name__, wait_timeout=30)
    assert e.value.code == cls.code
    assert e.value.message


def test_another_request_under_the_same_id_is_duplicate_id_and_the_first_outcome_stays(host):
    client = client_of(host)
    first = client.ask_nowait(DB, id="shared")
    host.answer("shared", "--select", "Postgres")
    assert client.wait(first, timeout=30)["db"].selected == ["Postgres"]
    other = [dshq.Question("db", "Which database, really?", options=["MySQL"])]
    with pytest.raises(dshq.DuplicateId):
        client.ask(other, id="shared", wait_timeout=30)
    # The first request's own outcome is still its answer.
    assert client.wait(first, timeout=5)["db"].selected == ["Postgres"]


def test_requires_approval_runs_on_approve_and_never_on_decline(host):
    client = client_of(host)
    ran = []

    @dshq.requires_approval(client, plan=lambda env: "Deploy to **%s**" % env, key=lambda env: "deploy-" + env)
    def deploy(env: str) -> str:
        ran.append(env)
        return "deployed " + env

    helper = answer_later(host, dshq.id_for_key("deploy-staging"), "--select", "Approve")
    assert deploy("staging") == "deployed staging"
    helper.join(30)
    shown = host.json("show", dshq.id_for_key("deploy-staging"))
    assert shown["questions"][0]["detail"] == "Deploy to **staging**"

    helper = answer_later(host, dshq.id_for_key("deploy-prod"), "--custom", "not on a Friday")
    with pytest.raises(dshq.PlanDeclined) as e:
        deploy("prod")
    helper.join(30)
    assert e.value.feedback == "not on a Friday"
    assert ran == ["staging"]


def test_a_wait_with_no_daemon_times_out_and_the_file_waits_for_one(tmp_path):
    from conftest import Dshq

    d = Dshq(tmp_path)
    client = dshq.Client(root=d.root, poll=0.02)
    ticket = client.ask_nowait(DB, key="offline")
    with pytest.raises(dshq.WaitTimeout):
        client.wait(ticket, timeout=0.2)
    d.start()
    try:
        d.answer(ticket.id, "--select", "SQLite")
        assert client.wait(ticket, timeout=30)["db"].selected == ["SQLite"]
    finally:
        d.stop()
