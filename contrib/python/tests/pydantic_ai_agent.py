"""A Pydantic AI agent whose `deploy` tool needs approval, for the adapter's restart tests.

    python pydantic_ai_agent.py start STORE RUN [REQUEST_JSON]   run until the tool call
        pauses the run, print {"paused": [ID, ...]}, then stay alive (to be killed)
    python pydantic_ai_agent.py resume STORE RUN                 wait for the decision,
        resume the run, print {"output", "ran", "seen"}

The model is Pydantic AI's own FunctionModel (no network): it calls `deploy` (or, with the
prompt "ask", the question tool) first, then answers with what the tool returned.
RAN_LOG names a file the tool appends the arguments it ran with to.
"""

import json
import os
import sys
import threading

from pydantic_ai import Agent, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import DeferredToolRequests

import dshq
from dshq.adapters import pydantic_ai as adapter

SEEN = []


def model(messages, info):
    last = messages[-1].parts
    returns = [p for p in last if isinstance(p, ToolReturnPart)]
    if returns:
        SEEN.extend(str(p.content) for p in returns)
        return ModelResponse(parts=[TextPart("the tool said: " + " | ".join(str(p.content) for p in returns))])
    prompt = str(last[-1].content)
    if prompt == "ask":
        questions = [{"question": "Which database?", "header": "Database", "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]
        return ModelResponse(parts=[ToolCallPart("ask_user_question", {"questions": questions}, tool_call_id="call-ask")])
    return ModelResponse(parts=[ToolCallPart("deploy", {"service": "billing", "version": "1.2", "replicas": 2}, tool_call_id="call-1")])


agent = Agent(FunctionModel(model), output_type=[str, DeferredToolRequests], tools=[adapter.question_tool()])


@agent.tool_plain(requires_approval=True)
def deploy(service: str, version: str, replicas: int) -> str:
    """Deploy a service."""
    with open(os.environ["RAN_LOG"], "a") as f:
        f.write(json.dumps({"service": service, "version": version, "replicas": replicas}) + "\n")
    return "deployed %s %s x%d" % (service, version, replicas)


def main() -> int:
    mode, store, run = sys.argv[1:4]
    client = dshq.Client(poll=0.02)
    if mode in ("start", "ask"):
        request = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
        step = adapter.start(agent, "ask" if mode == "ask" else "deploy billing", client=client, store=store,
                             run_id=run, request=request)
        assert not step.done, step
        print(json.dumps({"paused": step.paused.ids}), flush=True)
        threading.Event().wait()
        return 0
    step = adapter.resume(agent, client=client, store=store, run_id=run, timeout=60)
    d = step.decisions[0]
    print(json.dumps({"output": step.result.output, "seen": SEEN, "allowed": d.allowed, "code": d.code,
                      "feedback": d.feedback, "edited": d.edited}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
