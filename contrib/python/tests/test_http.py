"""The HTTP transport with a bearer token against `dshq daemon --listen`, and the asyncio
client over both transports."""

from __future__ import annotations

import asyncio

import pytest

import dshq

DB = [dshq.Question("db", "Which database?", options=["Postgres", "SQLite"])]


def test_http_ask_answer_abort_and_reattach(host_http):
    client = dshq.Client(url=host_http.url, token=host_http.token("asker", "ann"))
    assert "token" not in repr(client) and host_http.url in repr(client)
    ticket = client.ask_nowait(DB, key="http-1", context="default")
    # Asking again is re-attaching: the same id and digest, no second request.
    assert client.ask_nowait(DB, key="http-1", context="default") == ticket
    assert client.outcome(ticket) is None
    host_http.answer(ticket.id, "--select", "Postgres")
    result = client.wait(ticket, timeout=30)
    assert result["db"].selected == ["Postgres"]

    other = client.ask_nowait(DB, key="http-2")
    client.abort(other, "no longer needed")
    with pytest.raises(dshq.AskAborted) as e:
        client.wait(other, timeout=30)
    assert "no longer needed" in e.value.message

    # Refusals come back at once over HTTP, each as its class.
    with pytest.raises(dshq.DuplicateId):
        client.ask_nowait([dshq.Question("db", "Something else?")], key="http-1")
    with pytest.raises(dshq.BadRequest):
        client.ask_nowait({"questions": [{"id": "q", "question": "?", "colour": "red"}]}, key="http-3")
    with pytest.raises(dshq.NotFound):
        client.abort("never-asked")
    with pytest.raises(dshq.WaitTimeout):
        client.wait(client.ask_nowait(DB, key="http-4"), timeout=1.2)
    # An outcome is the ticket's only when its digest is the ticket's.
    with pytest.raises(dshq.WaitTimeout):
        client.wait(dshq.Ticket(ticket.id, "sha256:" + "0" * 64), timeout=1.2)
    assert client.wait(ticket.id, timeout=5)["db"].selected == ["Postgres"]


def test_http_wrong_token_and_wrong_role(host_http):
    with pytest.raises(dshq.Unauthorized):
        dshq.Client(url=host_http.url, token="dshq_not_a_token").ask_nowait(DB, key="x")
    auditor = dshq.Client(url=host_http.url, token=host_http.token("auditor", "audrey"))
    with pytest.raises(dshq.Forbidden):
        auditor.ask_nowait(DB, key="x")
    with pytest.raises(dshq.Io):
        dshq.Client(url="http://127.0.0.1:9", token="t").ask_nowait(DB, key="x")


def test_http_long_poll_is_woken_by_the_answer(host_http):
    client = dshq.Client(url=host_http.url, token=host_http.token("asker", "ann"))
    ticket = client.ask_nowait(DB, key="long-poll")
    import threading

    threading.Thread(target=host_http.answer, args=(ticket.id, "--select", "SQLite"), daemon=True).start()
    assert client.wait(ticket, timeout=60)["db"].selected == ["SQLite"]


@pytest.mark.parametrize("transport", ["file", "http"])
def test_async_client(tmp_path, transport):
    from conftest import Dshq

    host = Dshq(tmp_path).start(*(["--listen", "0"] if transport == "http" else []))
    try:
        if transport == "http":
            client = dshq.AsyncClient(url=host.url, token=host.token("asker", "ann"), poll=0.05)
        else:
            client = dshq.AsyncClient(host.root, poll=0.02)

        async def scenario():
            tickets = [await client.ask_nowait(DB, key="async-%d" % i) for i in range(2)]
            answering = asyncio.create_task(asyncio.to_thread(host.answer, tickets[1].id, "--select", "SQLite"))
            ticket, result = await client.wait_any(tickets, timeout=30)
            await answering
            assert ticket == tickets[1] and result["db"].selected == ["SQLite"]
            await client.abort(tickets[0])
            with pytest.raises(dshq.AskAborted):
                await client.wait(tickets[0], timeout=30)
            answering = asyncio.create_task(
                asyncio.to_thread(host.answer, dshq.id_for_key("async-ask"), "--select", "Postgres")
            )
            result = await client.ask(DB, key="async-ask", wait_timeout=30)
            await answering
            assert result["db"].selected == ["Postgres"]
            with pytest.raises(dshq.WaitTimeout):
                await client.wait(await client.ask_nowait(DB, key="async-late"), timeout=0.3)

            @dshq.requires_approval(client, plan="Drop the cache", key=lambda: "drop-cache")
            async def drop_cache() -> str:
                return "dropped"

            answering = asyncio.create_task(
                asyncio.to_thread(host.answer, dshq.id_for_key("drop-cache"), "--select", "Approve")
            )
            assert await drop_cache() == "dropped"
            await answering

        asyncio.run(scenario())
    finally:
        host.stop()
