"""An A2A client of dshq through the official Python SDK (a2a-sdk), for tests/it/a2a.rs.

Usage: client.py STEP [ARGS]; the agent's base URL is A2A_URL, the asker token A2A_TOKEN.
The client reads the agent card and authenticates as the card's security scheme says
(the SDK's AuthInterceptor with a CredentialService), as an application would.
Each step prints one JSON line per thing it saw, {"step": NAME, ...}.

  ask ID [PUSH_URL PUSH_TOKEN PUSH_SECRET]   send a request (returnImmediately), optionally
                                             with a webhook; print the task
  poll ID                                    GetTask until the task is final; print it
  stream ID                                  send by SendStreamingMessage; print each event
  subscribe ID                               SubscribeToTask until final, subscribing again
                                             when the stream drops (a restarted daemon)
  cancel ID                                  ask, then CancelTask; print the task
  text ID                                    ask with a text part only; print the task
  bad                                        send a request with no questions; print the error
Exit status 3: the SDK did not import.
"""

import asyncio
import json
import os
import sys
import time

try:
    import httpx
    from a2a.client import (
        A2AClientError,
        AuthInterceptor,
        ClientCallContext,
        ClientConfig,
        ClientFactory,
        CredentialService,
    )
    from a2a.types import (
        CancelTaskRequest,
        GetTaskRequest,
        Message,
        SendMessageRequest,
        SubscribeToTaskRequest,
        TaskPushNotificationConfig,
    )
    from a2a.utils.errors import A2AError
    from google.protobuf import json_format
except ImportError as e:  # the test says what to install
    print(json.dumps({"step": "missing", "error": str(e)}))
    sys.exit(3)

URL = os.environ["A2A_URL"]
TOKEN = os.environ["A2A_TOKEN"]
DEADLINE = float(os.environ.get("A2A_DEADLINE", "60"))


class Token(CredentialService):
    """The asker token, for whatever scheme the card names."""

    async def get_credentials(self, scheme, context):
        return TOKEN


def out(step, **kv):
    print(json.dumps({"step": step, **kv}), flush=True)


def as_dict(m):
    return json_format.MessageToDict(m)


def request(rid, push=None):
    body = {
        "id": rid,
        "questions": [
            {
                "id": "db",
                "question": "Which database?",
                "options": [{"label": "Postgres"}, {"label": "SQLite"}],
            }
        ],
    }
    msg = json_format.ParseDict(
        {"messageId": f"m-{rid}", "role": "ROLE_USER", "parts": [{"data": body}]},
        Message(),
    )
    req = SendMessageRequest(message=msg)
    if push:
        req.configuration.task_push_notification_config.CopyFrom(push)
    return req


async def client(streaming=False, polling=True):
    cfg = ClientConfig(streaming=streaming, polling=polling)
    factory = ClientFactory(cfg)
    return await factory.create_from_url(URL, interceptors=[AuthInterceptor(Token())])


async def ask(rid, push=None):
    c = await client()
    async for ev in c.send_message(request(rid, push)):
        out("asked", event=as_dict(ev))
    await c.close()


async def poll(rid):
    c = await client()
    end = time.monotonic() + DEADLINE
    polls = 0
    while time.monotonic() < end:
        task = await c.get_task(GetTaskRequest(id=rid))
        polls += 1
        state = as_dict(task)["status"]["state"]
        if state not in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"):
            out("polled", task=as_dict(task), polls=polls)
            await c.close()
            return
        await asyncio.sleep(0.2)
    out("timeout", polls=polls)
    await c.close()


async def stream(rid):
    c = await client(streaming=True, polling=False)
    async for ev in c.send_message(request(rid)):
        out("event", event=as_dict(ev))
    out("closed")
    await c.close()


async def subscribe(rid):
    end = time.monotonic() + DEADLINE
    drops = 0
    while time.monotonic() < end:
        try:
            c = await client(streaming=True, polling=False)
            async for ev in c.subscribe(SubscribeToTaskRequest(id=rid)):
                out("event", event=as_dict(ev), drops=drops)
                d = as_dict(ev)
                st = d.get("statusUpdate", {}).get("status", {}).get("state")
                if st and st != "TASK_STATE_WORKING":
                    out("final", drops=drops)
                    await c.close()
                    return
            drops += 1
        except (A2AClientError, A2AError, httpx.HTTPError, OSError) as e:
            drops += 1
            out("dropped", error=type(e).__name__)
        await asyncio.sleep(0.1)
    out("timeout", drops=drops)


async def cancel(rid):
    await ask(rid)
    c = await client()
    task = await c.cancel_task(CancelTaskRequest(id=rid))
    out("cancelled", task=as_dict(task))
    try:
        await c.cancel_task(CancelTaskRequest(id=rid))
        out("cancelled-again")
    except A2AError as e:
        out("not-cancelable", kind=type(e).__name__, data=e.data, message=str(e))
    await c.close()


async def text(rid):
    c = await client()
    msg = json_format.ParseDict(
        {"messageId": rid, "role": "ROLE_USER", "parts": [{"text": "Ship it tonight?"}]},
        Message(),
    )
    async for ev in c.send_message(SendMessageRequest(message=msg)):
        out("asked", event=as_dict(ev))
    await c.close()


async def bad():
    c = await client()
    msg = json_format.ParseDict(
        {"messageId": "m-bad", "role": "ROLE_USER", "parts": [{"data": {"questions": []}}]},
        Message(),
    )
    try:
        async for ev in c.send_message(SendMessageRequest(message=msg)):
            out("accepted", event=as_dict(ev))
    except A2AError as e:
        out("error", kind=type(e).__name__, data=e.data, message=str(e))
    try:
        await c.get_task(GetTaskRequest(id="no-such-task"))
    except A2AError as e:
        out("not-found", kind=type(e).__name__, data=e.data)
    await c.close()


def main():
    step, args = sys.argv[1], sys.argv[2:]
    if step == "ask":
        push = None
        if len(args) == 4:
            push = json_format.ParseDict(
                {
                    "url": args[1],
                    "token": args[2],
                    "authentication": {"scheme": "Bearer", "credentials": args[3]},
                },
                TaskPushNotificationConfig(),
            )
        asyncio.run(ask(args[0], push))
    elif step == "poll":
        asyncio.run(poll(args[0]))
    elif step == "stream":
        asyncio.run(stream(args[0]))
    elif step == "subscribe":
        asyncio.run(subscribe(args[0]))
    elif step == "cancel":
        asyncio.run(cancel(args[0]))
    elif step == "text":
        asyncio.run(text(args[0]))
    elif step == "bad":
        asyncio.run(bad())
    else:
        sys.exit(f"no step {step}")


if __name__ == "__main__":
    main()
