"""An OpenAI Agents SDK agent whose `deploy` tool needs approval, for the adapter's
restart tests (the same commands as pydantic_ai_agent.py).

The model is a `Model` subclass, as the SDK's own tests write theirs (no network): it
calls `deploy` (or, with the input "ask", the question tool) first, then answers with
what the tool returned. RAN_LOG names a file the tool appends the arguments it ran with to.
"""

import json
import os
import sys
import threading

from agents import Agent, ModelSettings, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import dshq
from dshq.adapters import openai_agents as adapter

SEEN = []
# The SDK would export traces to its service: never the network here.
set_tracing_disabled(True)


class ScriptedModel(Model):
    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None, **kw):
        items = [input] if isinstance(input, str) else list(input)
        last = items[-1]
        kind = last.get("type") if isinstance(last, dict) else None
        if kind == "function_call_output":
            outputs = [i["output"] for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
            SEEN.extend(str(o) for o in outputs)
            text = "the tool said: " + " | ".join(str(o) for o in outputs)
            msg = ResponseOutputMessage(id="m1", type="message", role="assistant", status="completed",
                                        content=[ResponseOutputText(type="output_text", text=text, annotations=[])])
            return ModelResponse(output=[msg], usage=Usage(), response_id=None)
        content = last if isinstance(last, str) else last.get("content")
        if content == "ask":
            args = {"questions": [{"question": "Which database?", "header": "Database",
                                   "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}
            call = ResponseFunctionToolCall(type="function_call", call_id="call-ask", name="ask_user_question",
                                            arguments=json.dumps(args), id="fc1", status="completed")
        else:
            call = ResponseFunctionToolCall(type="function_call", call_id="call-1", name="deploy", id="fc1",
                                            arguments=json.dumps({"service": "billing", "version": "1.2", "replicas": 2}),
                                            status="completed")
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the tests run without streaming")


@function_tool
def deploy(service: str, version: str, replicas: int) -> str:
    """Deploy a service."""
    with open(os.environ["RAN_LOG"], "a") as f:
        f.write(json.dumps({"service": service, "version": version, "replicas": replicas}) + "\n")
    return "deployed %s %s x%d" % (service, version, replicas)


agent = Agent(name="deployer", model=ScriptedModel(), tools=[adapter.gate(deploy), adapter.question_tool()],
              model_settings=ModelSettings())


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
    print(json.dumps({"output": step.result.final_output, "seen": SEEN, "allowed": d.allowed, "code": d.code,
                      "feedback": d.feedback, "edited": d.edited}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
