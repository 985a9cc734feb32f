"""A real third-party MCP client for dshq's MCP server: the official Python SDK (`mcp`).

Usage: client.py SCENARIO

The transport comes from the environment:
  MCP_TRANSPORT=stdio  spawns DSHQ_BIN --root DSHQ_ROOT mcp [MCP_ARGS (a JSON list)]
  MCP_TRANSPORT=http   connects to MCP_URL with the bearer token MCP_TOKEN
The revision comes from MCP_MODE: unset (or "legacy") is the handshake-era client
(`initialize`, 2025-11-25); "2026-07-28" is the SDK's stateless client at that revision
(`Client(mode="2026-07-28")`: no handshake, every request carrying its revision, client
info and capabilities in `_meta`).
The answering human is the real CLI: DSHQ_BIN --root DSHQ_ROOT answer ...

Each step prints one JSON line {"step": NAME, ...} on stdout; the Rust test
(tests/it/mcp.rs) reads them, and checks the outcome files and the event log itself.
A step that goes wrong raises, so the script exits non-zero with the traceback.
"""

import json
import os
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import pydantic

try:
    import mcp.types as types
    from mcp.client.client import Client
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
except ImportError as e:  # the Rust test turns this into "pip install mcp==..."
    print(json.dumps({"step": "import", "error": str(e)}))
    sys.exit(3)

TASKS = "io.modelcontextprotocol/tasks"
CLIENT_NAME = "dshq-test-client"
DEADLINE = 60.0
MODE = os.environ.get("MCP_MODE", "legacy")
CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"


def emit(step: str, **fields: Any) -> None:
    print(json.dumps({"step": step, **fields}), flush=True)


def dshq(*args: str) -> subprocess.CompletedProcess:
    """The real CLI on the same root."""
    cmd = [os.environ["DSHQ_BIN"], "--root", os.environ["DSHQ_ROOT"], *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def request_exists(rid: str) -> bool:
    return dshq("--json", "show", rid).returncode == 0


async def wait_until(cond, what: str) -> None:
    """Wait for a condition with a deadline (no fixed sleeps)."""
    start = time.monotonic()
    pause = 0.01
    while not cond():
        if time.monotonic() - start > DEADLINE:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(pause)
        pause = min(pause * 2, 0.2)


def answer_from_cli(rid: str, *flags: str) -> None:
    r = dshq("--json", "answer", rid, "--name", "cli-human", *flags)
    if r.returncode != 0:
        raise AssertionError(f"dshq answer failed: {r.stdout} {r.stderr}")


def result_view(r: types.CallToolResult) -> dict:
    text = "".join(c.text for c in r.content if getattr(c, "type", "") == "text")
    return {"isError": bool(r.is_error), "structured": r.structured_content, "text": text}


@asynccontextmanager
async def connect(elicitation=None, extensions=None, whole=False):
    """A session over the transport the environment names (at 2026-07-28 with `whole`,
    the SDK's `Client` itself, which drives `input_required` results through the
    callbacks)."""
    info = types.Implementation(name=CLIENT_NAME, version="1.0")
    kwargs: dict[str, Any] = {"client_info": info}
    if elicitation is not None:
        kwargs["elicitation_callback"] = elicitation
    if extensions is not None:
        kwargs["extensions"] = extensions
    transport = os.environ.get("MCP_TRANSPORT", "stdio")
    if transport == "stdio":
        params = StdioServerParameters(
            command=os.environ["DSHQ_BIN"],
            args=["--root", os.environ["DSHQ_ROOT"], "mcp", *json.loads(os.environ.get("MCP_ARGS", "[]"))],
            env={"RUST_LOG": os.environ.get("RUST_LOG", "warn"), "PATH": os.environ.get("PATH", "")},
        )
        if MODE != "legacy":
            async with modern(params, kwargs, whole) as session:
                yield session
            return
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, **kwargs) as session:
                await session.initialize()
                yield session
    else:
        import httpx2

        headers = {"Authorization": f"Bearer {os.environ['MCP_TOKEN']}"}
        if os.environ.get("MCP_AGENT"):
            # The asking agent is the host's configuration (headers), never a tool argument.
            agent = json.loads(os.environ["MCP_AGENT"])
            headers["Dshq-Agent-Id"] = agent["id"]
            headers["Dshq-Agent-Instance"] = agent["instance"]
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(90.0)) as http:
            if MODE != "legacy":
                async with modern(streamable_http_client(os.environ["MCP_URL"], http_client=http), kwargs, whole) as session:
                    yield session
                return
            async with streamable_http_client(os.environ["MCP_URL"], http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write, **kwargs) as session:
                    await session.initialize()
                    yield session


@asynccontextmanager
async def modern(server, kwargs: dict, whole: bool = False):
    """The SDK's client pinned at MODE (2026-07-28): no handshake. The tasks extension is
    not a session property at that revision, so it is declared per request (`raw`)."""
    kwargs = {k: v for k, v in kwargs.items() if k != "extensions"}
    async with Client(server, mode=MODE, cache=None, **kwargs) as c:
        yield c if whole else c.session


def question(rid: str, **extra: Any) -> dict:
    q = {
        "id": "color",
        "question": "Which colour for the logo?",
        "options": [{"label": "Blue", "description": "calm"}, {"label": "Red"}],
    }
    return {"id": rid, "questions": [q], **extra}


# --- scenarios -------------------------------------------------------------------------


async def tools() -> None:
    async with connect() as s:
        listed = await s.list_tools()
        emit(
            "tools",
            tools={t.name: {"input": t.input_schema, "output": t.output_schema} for t in listed.tools},
            protocol=s.protocol_version if hasattr(s, "protocol_version") else None,
        )


async def ask_answer() -> None:
    """Ask, answer from the CLI while the tool waits, get the answers."""
    rid = os.environ["MCP_RID"]
    async with connect() as s:
        out: dict = {}

        async def call() -> None:
            out["r"] = await s.call_tool("ask_user_question", question(rid, waitSeconds=45))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await wait_until(lambda: request_exists(rid), f"request {rid} in the store")
            answer_from_cli(rid, "--question", "color", "--select", "Blue")
        emit("ask", **result_view(out["r"]))
        got = await s.call_tool("get_answer", {"id": rid})
        emit("get", **result_view(got))


async def pending() -> None:
    """Ask with a short wait: pending; answer; then get_answer."""
    rid = os.environ["MCP_RID"]
    async with connect() as s:
        r = await s.call_tool("ask_user_question", question(rid, waitSeconds=0))
        emit("ask", **result_view(r))
        answer_from_cli(rid, "--question", "color", "--custom", "green, actually")
        got = await s.call_tool("get_answer", {"id": rid, "waitSeconds": 30})
        emit("get", **result_view(got))


async def continued() -> None:
    """dsh 0.2's continued question: ask on a tool call with a short window (pending, with
    the call), answer from the CLI, collect the late answer, ask on the call again."""
    call = os.environ["MCP_CALL"]
    doc = question("unused", wait={"callId": call, "timeoutMs": 300})
    del doc["id"]
    async with connect() as s:
        r = await s.call_tool("ask_user_question", doc)
        emit("ask", **result_view(r))
        rid = r.structured_content["id"]
        answer_from_cli(rid, "--question", "color", "--select", "Red")
        got = await s.call_tool("get_answer", {"id": rid, "waitSeconds": 30})
        emit("get", **result_view(got))
        again = await s.call_tool("ask_user_question", doc)
        emit("again", **result_view(again))


async def quorum_get() -> None:
    """get_answer on a request with a quorum: its votes while pending."""
    rid = os.environ["MCP_RID"]
    async with connect() as s:
        got = await s.call_tool("get_answer", {"id": rid})
        emit("get", **result_view(got))


async def abort() -> None:
    rid = os.environ["MCP_RID"]
    async with connect() as s:
        r = await s.call_tool("ask_user_question", question(rid, waitSeconds=0))
        emit("ask", **result_view(r))
        a = await s.call_tool("abort_question", {"id": rid, "reason": "no longer needed"})
        emit("abort", **result_view(a))
        got = await s.call_tool("get_answer", {"id": rid})
        emit("get", **result_view(got))


async def calls() -> None:
    """Call each tool of MCP_CALLS (a JSON list of [tool, arguments]) in one session, in
    order; each result is one step, "call-N"."""
    async with connect() as s:
        for i, (tool, arguments) in enumerate(json.loads(os.environ["MCP_CALLS"])):
            r = await s.call_tool(tool, arguments)
            emit("call-%d" % i, **result_view(r))


async def delegated() -> None:
    """Ask as a delegated agent (the server's --agent, or the MCP_AGENT headers)."""
    rid = os.environ["MCP_RID"]
    async with connect() as s:
        r = await s.call_tool("ask_user_question", question(rid, waitSeconds=0))
        emit("ask", **result_view(r))


# Tasks (the io.modelcontextprotocol/tasks extension): the SDK carries the types of
# the handshake-era tasks only, so the extension's shapes are declared here.
class TaskWire(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", populate_by_name=True)
    taskId: str
    status: str
    statusMessage: str | None = None
    result: dict | None = None
    error: dict | None = None
    pollIntervalMs: int | None = None


class CreatedTask(TaskWire):
    """The task fields at the top level, with resultType "task"."""

    resultType: Literal["task"]


class TaskParams(types.RequestParams):
    taskId: str


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams


class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams


class Ack(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")


async def get_task(s: ClientSession, tid: str) -> TaskWire:
    if MODE == "legacy":
        return await s.send_request(GetTask(params=TaskParams(taskId=tid)), TaskWire)
    return TaskWire.model_validate(await raw(s, "tasks/get", {"taskId": tid}, True))


async def cancel_task(s: ClientSession, tid: str) -> None:
    if MODE == "legacy":
        await s.send_request(CancelTask(params=TaskParams(taskId=tid)), Ack)
    else:
        await raw(s, "tasks/cancel", {"taskId": tid}, True)


# A request asks for a task by declaring the extension in its own capabilities.
TASK_META = {CAPS_KEY: {"extensions": {TASKS: {}}}}


async def raw(s: ClientSession, method: str, params: dict, as_task: bool) -> dict:
    """A request through the SDK's own JSON-RPC dispatcher (the same session and
    transport), unvalidated: the SDK has no tasks client at either revision, and
    validates a tools/call result as a CallToolResult, which a task result is not.

    Handshake era: the request's `_meta` declares only the tasks extension. At 2026-07-28
    the session's own stamp (revision, client info, capabilities) goes first, as on every
    request it sends, and the tasks extension is added to those capabilities."""
    data: dict[str, Any] = {"method": method, "params": dict(params)}
    if MODE == "legacy":
        if as_task:
            data["params"]["_meta"] = TASK_META
        return await s._dispatcher.send_raw_request(method, data["params"], {})
    opts: dict[str, Any] = {}
    s._stamp(data, opts)
    if "taskId" in params:
        # The 2026 HTTP wire names a task method's task in a header (the SDK stamps the
        # methods it knows; the extension's are not among them). Task ids are request
        # ids, plain ASCII, so no header encoding is needed.
        opts.setdefault("headers", {})["Mcp-Name"] = params["taskId"]
    if as_task:
        meta = data["params"]["_meta"]
        caps = dict(meta.get(CAPS_KEY) or {})
        caps["extensions"] = {**(caps.get("extensions") or {}), TASKS: {}}
        meta[CAPS_KEY] = caps
    return await s._dispatcher.send_raw_request(method, data["params"], opts)


async def ask_raw(s: ClientSession, arguments: dict, as_task: bool) -> dict:
    """tools/call of ask_user_question, as a task or not."""
    return await raw(s, "tools/call", {"name": "ask_user_question", "arguments": arguments}, as_task)


async def ask_as_task(s: ClientSession, arguments: dict) -> CreatedTask:
    """tools/call answered with a task."""
    return CreatedTask.model_validate(await ask_raw(s, arguments, True))


async def task_start() -> None:
    """Ask as a task: it returns at once; the task is the request. Also: cancel one."""
    rid = os.environ["MCP_RID"]
    async with connect(extensions={TASKS: {}}) as s:
        # Declared at initialize but not in the request: the usual result, no task.
        plain = await ask_raw(s, question(f"{rid}-plain", waitSeconds=0), False)
        emit("plain", result=plain)
        created = await ask_as_task(s, question(rid))
        emit("created", task=created.model_dump())
        t = await get_task(s, created.taskId)
        emit("status", task=t.model_dump())
        other = f"{rid}-cancelled"
        c2 = await ask_as_task(s, question(other))
        await cancel_task(s, c2.taskId)
        emit("cancelled", task=(await get_task(s, c2.taskId)).model_dump())


async def task_poll() -> None:
    """After a restart of the server: the task is found by its id; answer; poll to completion."""
    rid = os.environ["MCP_RID"]
    async with connect(extensions={TASKS: {}}) as s:
        t = await get_task(s, rid)
        emit("after-restart", task=t.model_dump())
        answer_from_cli(rid, "--question", "color", "--select", "Red")
        polls = 0
        start = time.monotonic()
        while t.status == "working":
            if time.monotonic() - start > DEADLINE:
                raise AssertionError("the task did not complete")
            await anyio.sleep((t.pollIntervalMs or 1000) / 1000 / 4)
            t = await get_task(s, rid)
            polls += 1
        emit("done", task=t.model_dump(), polls=polls)


async def task_failed() -> None:
    """Ask as a task; the human cancels it from the CLI: the task fails with the code."""
    rid = os.environ["MCP_RID"]
    async with connect(extensions={TASKS: {}}) as s:
        created = await ask_as_task(s, question(rid))
        r = dshq("cancel", rid, "--reason", "not now")
        if r.returncode != 0:
            raise AssertionError(f"dshq cancel failed: {r.stdout} {r.stderr}")
        t = await get_task(s, created.taskId)
        start = time.monotonic()
        while t.status == "working":
            if time.monotonic() - start > DEADLINE:
                raise AssertionError("the task did not end")
            await anyio.sleep((t.pollIntervalMs or 1000) / 1000 / 4)
            t = await get_task(s, rid)
        emit("failed", task=t.model_dump())


def elicitation_handler(seen: list):
    """The human: picks options, types Other, declines a plan with feedback, cancels; twice
    sends a form that cannot stand (an empty one, Approve with feedback) and, shown it
    again with the reason, corrects it."""

    async def handle(context, params) -> types.ElicitResult:
        msg = params.message
        schema = params.requested_schema
        props = schema.get("properties", {}) if isinstance(schema, dict) else schema.properties
        seen.append({"message": msg, "properties": sorted(props)})
        again = msg.startswith("Not taken:")
        if "rev-single" in msg:
            # First an empty form (no answer: shown again, with the reason), then a choice.
            content = {"choice": "Blue"} if again else {}
            return types.ElicitResult(action="accept", content=content)
        if "rev-multi" in msg:
            return types.ElicitResult(action="accept", content={"choices": ["A", "C"], "other": "and D"})
        if "rev-other" in msg:
            return types.ElicitResult(action="accept", content={"other": "Purple"})
        if "rev-skip" in msg:
            return types.ElicitResult(action="decline")
        if "rev-approve" in msg:
            return types.ElicitResult(action="accept", content={"decision": "Approve"})
        if "rev-plan" in msg:
            decline = [o["const"] for o in props["decision"]["oneOf"] if o["const"].startswith("Decline")]
            # First Approve with feedback (refused: feedback goes with Decline), then Decline.
            choice = decline[-1] if again else "Approve"
            return types.ElicitResult(
                action="accept", content={"decision": choice, "feedback": "split step 2"}
            )
        return types.ElicitResult(action="cancel")

    return handle


async def review() -> None:
    seen: list = []
    async with connect(elicitation=elicitation_handler(seen)) as s:
        r = await s.call_tool("review_questions", {"context": "rev"})
        emit("review", forms=seen, **result_view(r))


async def review_vanish() -> None:
    """The client process dies while a form is open."""

    async def handle(context, params):
        print(json.dumps({"step": "form", "message": params.message}), flush=True)
        os._exit(0)

    async with connect(elicitation=handle) as s:
        await s.call_tool("review_questions", {"context": "rev"})


async def review_walk_away() -> None:
    """The human never answers the form (the server was started with a short --form-timeout)."""

    async def handle(context, params):
        await anyio.sleep_forever()

    async with connect(elicitation=handle) as s:
        r = await s.call_tool("review_questions", {"context": "rev"})
        emit("review", **result_view(r))


async def review_no_elicitation() -> None:
    async with connect() as s:
        r = await s.call_tool("review_questions", {"context": "rev"})
        emit("review", **result_view(r))
        r = await s.call_tool("review_next", {"context": "rev"})
        emit("review-next", **result_view(r))


async def review_next() -> None:
    """2026-07-28: review_next until the human stops, each call one request; the SDK's
    Client answers each input_required result through the elicitation handler and
    retries with the requestState."""
    seen: list = []
    async with connect(elicitation=elicitation_handler(seen), whole=True) as c:
        calls = []
        while len(calls) < 20:
            r = await c.call_tool("review_next", {"context": "rev"})
            calls.append(result_view(r))
            st = r.structured_content or {}
            if r.is_error or st.get("stopped") or not st.get("reviewed"):
                break
        emit("review", forms=seen, calls=calls)


async def review_next_url() -> None:
    """2026-07-28 over /mcp: a request of two questions is no flat form, so review_next
    asks in URL mode for its page; the human answers it elsewhere (here: the CLI, as the
    page would), accepts, and the SDK's Client retries."""
    seen: list = []

    async def handle(context, params) -> types.ElicitResult:
        seen.append({"mode": params.mode, "url": getattr(params, "url", None), "message": params.message,
                     "leases": json.loads(dshq("--json", "provider", "status", "--context", "rev").stdout)})
        answer_from_cli("rev-batch", "--question", "a", "--select", "Yes", "--question", "b", "--select", "No")
        return types.ElicitResult(action="accept")

    async with connect(elicitation=handle, whole=True) as c:
        r = await c.call_tool("review_next", {"context": "rev"})
        emit("review", forms=seen, **result_view(r))


async def review_next_loop(c, context: str = "rev") -> list:
    """review_next until the human stops or nothing is reviewed (at most 20 calls)."""
    calls = []
    while len(calls) < 20:
        r = await c.call_tool("review_next", {"context": context})
        calls.append(result_view(r))
        st = r.structured_content or {}
        if r.is_error or st.get("stopped") or not st.get("reviewed"):
            break
    return calls


def leases(context: str = "rev") -> list:
    return json.loads(dshq("--json", "provider", "status", "--context", context).stdout)


async def answer_on_page(url: str, fields: list) -> str:
    """The human on dshq's page at `url` (the address the server named), as a browser
    tab: log in with the reviewer's token, open the request (with the page's live stream,
    as the tab keeps it), confirm the form, send it, close the tab, and wait until the
    host lets go of the context (the page's lease, released once the last tab has left).
    Returns the request's page as it was shown."""
    import html
    import re
    from urllib.parse import urlsplit

    import httpx2

    parts = urlsplit(url)
    base = f"{parts.scheme}://{parts.netloc}"

    def field(body: str, name: str) -> str:
        m = re.search(f'name="{name}" value="([^"]*)"', body)
        if not m:
            raise AssertionError(f"no {name} field in {body[:2000]}")
        return html.unescape(m.group(1))

    def cookie(r, name: str) -> str:
        for v in r.headers.get_list("set-cookie"):
            if v.startswith(f"{name}="):
                return v.split(";")[0]
        raise AssertionError(f"no {name} cookie: {r.headers}")

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(60.0), follow_redirects=False) as h:
        form = await h.get(f"{base}/login")
        login = await h.post(f"{base}/login", data={"csrf": field(form.text, "csrf"), "token": os.environ["MCP_TOKEN"]},
                             headers={"Cookie": cookie(form, "dshq_login")})
        if login.status_code != 303:
            raise AssertionError(f"login: {login.status_code} {login.text[:500]}")
        jar = {"Cookie": cookie(login, "dshq_session")}
        context = "rev"
        async with h.stream("GET", f"{base}/live?context={context}", headers=jar) as live:
            lines = live.aiter_lines()
            first = await anext(lines)
            if first.strip() != "event: ready":
                raise AssertionError(f"the page stream said {first!r}")
            page = await h.get(url, headers=jar)
            if page.status_code != 200:
                raise AssertionError(f"{url}: {page.status_code} {page.text[:500]}")
            csrf = field(page.text, "csrf")
            summary = await h.post(f"{url}/confirm", data={"csrf": csrf, **dict(fields)}, headers=jar)
            if "Send this answer?" not in summary.text:
                raise AssertionError(f"confirm: {summary.status_code} {summary.text[:2000]}")
            sent = await h.post(f"{url}/answer", data={"csrf": csrf, "answer": field(summary.text, "answer")},
                                headers=jar)
            if sent.status_code != 303:
                raise AssertionError(f"send: {sent.status_code} {sent.text[:2000]}")
    # The tab is closed: the host releases the context's lease after its grace.
    await wait_until(lambda: all(not l["live"] for l in leases(context)), "the page's lease to be released")
    return page.text


async def review_next_page() -> None:
    """2026-07-28 over /mcp: plans too long for a form go to the page (URL mode). The
    human accepts the first as soon as the page is named, before answering it (as a client
    that accepts on opening a URL does): the page is asked for again, and then approved
    there; the second is declined with feedback on the page; the third is cancelled."""
    seen: list = []

    async def handle(context, params) -> types.ElicitResult:
        url = getattr(params, "url", None)
        seen.append({"mode": params.mode, "url": url, "message": params.message, "leases": leases()})
        if params.mode != "url":
            return types.ElicitResult(action="cancel")
        rid = url.rsplit("/", 1)[1]
        if rid == "rev-long-approve":
            if not params.message.startswith("Not taken:"):
                return types.ElicitResult(action="accept")
            page = await answer_on_page(url, [("q0", "o0")])
            seen[-1]["pageShowsThePlan"] = "END-OF-PLAN" in page and "Step 1 of the plan" in page
            return types.ElicitResult(action="accept")
        if rid == "rev-long-decline":
            await answer_on_page(url, [("q0", "decline"), ("q0.other", "split step 2")])
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="cancel")

    async with connect(elicitation=handle, whole=True) as c:
        calls = await review_next_loop(c)
        emit("review", forms=seen, calls=calls, leases=leases(), cancelled=shown("rev-long-cancel"))


async def review_next_elsewhere() -> None:
    """2026-07-28 over stdio, where no page address is known: a batch and a long plan
    cannot be shown; the request behind them is reviewed through its form, and the next
    call names where the two can be answered."""
    seen: list = []
    async with connect(elicitation=elicitation_handler(seen), whole=True) as c:
        calls = await review_next_loop(c)
        emit("review", forms=seen, calls=calls, leases=leases(),
             batch=shown("rev-batch"), long=shown("rev-long"))


async def review_next_first() -> None:
    """2026-07-28: the first round of a review only (the form is shown, the review holds the
    lease and the claim), then the client leaves; the test stops the server."""
    async with connect(elicitation=elicitation_handler([])) as s:
        first = await s.call_tool("review_next", {"context": "rev"}, allow_input_required=True)
        emit("first", kind=type(first).__name__, leases=leases(), shown=shown("rev-single"))


async def review_next_abandoned() -> None:
    """2026-07-28 against a server with a short --form-timeout: the client takes the
    form and never comes back in time; the review ends by itself and releases its lease;
    the late retry is refused."""
    async with connect(elicitation=elicitation_handler([])) as s:
        first = await s.call_tool("review_next", {"context": "rev"}, allow_input_required=True)
        held = json.loads(dshq("--json", "provider", "status", "--context", "rev").stdout)

        def released() -> bool:
            leases = json.loads(dshq("--json", "provider", "status", "--context", "rev").stdout)
            return all(not l["live"] for l in leases)

        await wait_until(released, "the abandoned review's lease to be released")
        after = shown("rev-single")
        blue = {"answer": types.ElicitResult(action="accept", content={"choice": "Blue"})}
        late = await s.call_tool("review_next", {"context": "rev"}, input_responses=blue,
                                 request_state=first.request_state, allow_input_required=True)
        emit("abandoned", held=held, after=after, late_after=shown("rev-single"), **result_view(late))


def shown(rid: str) -> dict:
    """The request's status and its number of events, from the real CLI."""
    status = json.loads(dshq("--json", "show", rid).stdout)["status"]
    events = json.loads(dshq("--json", "events", rid).stdout)
    return {"status": status, "events": len(events)}


def state_payload(state: str) -> dict:
    """What a signed state says: anyone can read it (it is signed, not encrypted). The
    SDK's codec: `rs1.BODY.TAG`, BODY = 8 bytes of expiry, then the JSON."""
    import base64

    body = state.split(".")[1]
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    return json.loads(raw[8:])


def altered(state: str) -> str:
    """The state with one character of its signed body changed."""
    i = len(state) // 2
    return state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1 :]


async def review_next_state() -> None:
    """2026-07-28, driving the rounds by hand: a tampered requestState, then the real one,
    then the real one again (a replay, with another answer) and another caller's."""
    async with connect(elicitation=elicitation_handler([])) as s:
        first = await s.call_tool("review_next", {"context": "rev"}, allow_input_required=True)
        req = first.input_requests["answer"]
        emit("first", kind=type(first).__name__, mode=req.params.mode, message=req.params.message,
             schema=req.params.requested_schema if isinstance(req.params.requested_schema, dict)
             else req.params.requested_schema.model_dump(by_alias=True, exclude_none=True),
             state=first.request_state, payload=state_payload(first.request_state),
             leases=json.loads(dshq("--json", "provider", "status", "--context", "rev").stdout))
        blue = {"answer": types.ElicitResult(action="accept", content={"choice": "Blue"})}
        red = {"answer": types.ElicitResult(action="accept", content={"choice": "Red"})}
        before = shown("rev-single")
        bad = await s.call_tool("review_next", {"context": "rev"}, input_responses=red,
                                request_state=altered(first.request_state), allow_input_required=True)
        emit("tampered", before=before, after=shown("rev-single"), **result_view(bad))
        foreign = await s.call_tool("review_next", {"context": "other"}, input_responses=red,
                                    request_state=first.request_state, allow_input_required=True)
        emit("other-call", after=shown("rev-single"), **result_view(foreign))
        ok = await s.call_tool("review_next", {"context": "rev"}, input_responses=blue,
                               request_state=first.request_state, allow_input_required=True)
        emit("answered", after=shown("rev-single"), **result_view(ok))
        again = await s.call_tool("review_next", {"context": "rev"}, input_responses=red,
                                  request_state=first.request_state, allow_input_required=True)
        emit("replayed", after=shown("rev-single"), **result_view(again))


SCENARIOS = {
    "review-next": review_next,
    "review-next-state": review_next_state,
    "review-next-url": review_next_url,
    "review-next-page": review_next_page,
    "review-next-elsewhere": review_next_elsewhere,
    "review-next-abandoned": review_next_abandoned,
    "review-next-first": review_next_first,
    "tools": tools,
    "ask-answer": ask_answer,
    "pending": pending,
    "continued": continued,
    "quorum_get": quorum_get,
    "abort": abort,
    "delegated": delegated,
    "calls": calls,
    "task-start": task_start,
    "task-poll": task_poll,
    "task-failed": task_failed,
    "review": review,
    "review-no-elicitation": review_no_elicitation,
    "review-vanish": review_vanish,
    "review-walk-away": review_walk_away,
}

if __name__ == "__main__":
    anyio.run(SCENARIOS[sys.argv[1]])
