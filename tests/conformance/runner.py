"""The client conformance suite's runner for the Python faces (tests/it/conformance.rs).

Usage: runner.py FACE, FACE one of python-file, python-http, langgraph, mcp, pydantic-ai,
openai-agents, crewai (in CrewAI's own venv), claude-agent-sdk.

One job a line on stdin (JSON): {"scenario", "kind" ("ask" or "plan"), "id", "request"
(the whole request document, its id included) or "plan" (the plan text), "context",
"root", "url", "token"}. For each, the runner asks through its face and prints
{"asked": ID} once the request is handed over, then {"decision": D} with D the decision
as the face's own code sees it, normalized:

  {"end": "answered" or the error code, "answers": {QID: value or null},
   "decision", "feedback", "plan" (a plan job: the plan the guarded code ran, or null),
   "voters": [person, ...], "decidedBy", "receipt" (the receipt the face gives, or null)}

The Rust driver plays the reviewer and compares D with the scenario's expected decision.
Nothing here decides anything: every value comes from the package's own types.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any, Dict, Optional

import dshq

FACE = sys.argv[1]


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def normalize(result: dshq.Answered, plan: Optional[str] = None, receipt: Any = None) -> Dict[str, Any]:
    return {
        "end": "answered",
        "answers": {qid: item.value for qid, item in result.answers.items()},
        "decision": result.decision,
        "feedback": result.feedback,
        "plan": plan,
        "voters": [v.person for v in result.votes if v.voter in result.approvers],
        "decidedBy": result.decided_by,
        "receipt": receipt if receipt is not None else result.receipt,
    }


def ended(e: BaseException) -> Dict[str, Any]:
    if isinstance(e, dshq.PlanDeclined):
        d = normalize(e.result) if e.result is not None else {"end": "answered"}
        d["plan"] = None
        return d
    code = getattr(e, "code", None) or type(e).__name__
    return {"end": code, "message": str(e)}


def client_for(job: Dict[str, Any]) -> dshq.Client:
    if FACE == "python-http":
        return dshq.Client(url=job["url"], token=job["token"], poll=0.05, reconnect=30)
    return dshq.Client(root=job["root"], poll=0.02)


def run_client(job: Dict[str, Any]) -> Dict[str, Any]:
    client = client_for(job)
    if job["kind"] == "plan":
        ran: Dict[str, str] = {}

        @dshq.requires_approval(client, plan=job["plan"], key=lambda: job["id"], context=job["context"])
        def guarded(approval: dshq.Approval) -> None:
            ran["plan"] = approval.plan

        emit(asked=dshq.id_for_key(job["id"]))
        guarded()
        ticket = dshq.id_for_key(job["id"])
        result = client.wait(ticket, timeout=5)
        return normalize(result, ran.get("plan"), client.receipt(ticket))
    ticket = client.ask_nowait(job["request"])
    emit(asked=ticket.id)
    result = client.wait(ticket, timeout=90)
    return normalize(result, None, client.receipt(ticket))


def run_langgraph(job: Dict[str, Any]) -> Dict[str, Any]:
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    from dshq.langgraph import approve_plan, ask_human, resume

    client = dshq.Client(root=job["root"], poll=0.02)

    class State(TypedDict, total=False):
        out: Dict[str, Any]

    def node(state: State) -> State:
        try:
            if job["kind"] == "plan":
                approval = approve_plan(client, job["plan"], key=job["id"], id=job["id"], context=job["context"])
                out = normalize(approval.result, approval.plan)
            else:
                result = ask_human(client, job["request"], key=job["id"], id=job["id"])
                out = normalize(result)
        except dshq.PlanDeclined as e:
            out = ended(e)
        except dshq.DshqError as e:
            out = ended(e)
        return {"out": out}

    graph = StateGraph(State)
    graph.add_node("ask", node)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    app = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": job["id"]}}
    app.invoke({}, config)
    emit(asked=job["id"])
    final = resume(app, config, client, timeout=90)
    out = final["out"]
    if out.get("end") == "answered":
        out["receipt"] = client.receipt(job["id"])
    return out


async def run_mcp(job: Dict[str, Any]) -> Dict[str, Any]:
    import mcp.types as types  # noqa: F401
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=os.environ["DSHQ_BIN"],
        args=["--root", job["root"], "mcp"],
        env={k: v for k, v in os.environ.items() if k in ("PATH", "DSHQ_CONFIG", "HOME")} | {"RUST_LOG": "warn"},
    )
    request = dict(job["request"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            r = await s.call_tool("ask_user_question", {**request, "waitSeconds": 0})
            if r.is_error:
                err = (r.structured_content or {}).get("error") or {}
                return {"end": err.get("code"), "message": err.get("message")}
            rid = (r.structured_content or {})["id"]
            emit(asked=rid)
            while True:
                got = await s.call_tool("get_answer", {"id": rid, "waitSeconds": 20})
                st = got.structured_content or {}
                if got.is_error:
                    err = st.get("error") or {}
                    return {"end": err.get("code"), "message": err.get("message")}
                if st.get("status") == "answered":
                    break
    # The MCP result carries the decision document as `outcome`: read it as any asker of
    # the document would, through the package's own type.
    result = dshq.Answered.from_outcome(st["outcome"])
    plan = None
    if job["kind"] == "plan":
        plan = result.approved_text("plan", job["plan"]) if result.approved else None
    return normalize(result, plan)


PLAN_TOOL = "apply_plan"


def request_fields(job: Dict[str, Any]) -> Dict[str, Any]:
    """The job's request members an adapter passes through (context, a ladder)."""
    return {k: v for k, v in job["request"].items() if k not in ("id", "questions")}


def adapter_decision(step: Any, client: dshq.Client, ran: Dict[str, str]) -> Dict[str, Any]:
    """The decision as a tool adapter's own `Decision` gives it."""
    d = step.decisions[0]
    if d.result is None:
        return {"end": d.code, "message": d.message}
    return normalize(d.result, ran.get("plan"), client.receipt(d.call.ticket))


def run_pydantic_ai(job: Dict[str, Any]) -> Dict[str, Any]:
    from pydantic_ai import Agent, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.messages import ToolReturnPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.tools import DeferredToolRequests

    from dshq.adapters import pydantic_ai as adapter

    def model(messages: Any, info: Any) -> Any:
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("done")])
        if job["kind"] == "plan":
            return ModelResponse(parts=[ToolCallPart(PLAN_TOOL, {"plan": job["plan"]}, tool_call_id="call-1")])
        qs = job["request"]["questions"]
        return ModelResponse(parts=[ToolCallPart("ask_user_question", {"questions": qs}, tool_call_id="call-1")])

    ran: Dict[str, str] = {}
    agent = Agent(FunctionModel(model), output_type=[str, DeferredToolRequests], tools=[adapter.question_tool()])

    @agent.tool_plain(requires_approval=True, name=PLAN_TOOL)
    def apply_plan(plan: str) -> str:
        ran["plan"] = plan
        return "applied"

    client = dshq.Client(root=job["root"], poll=0.02)
    store = os.path.join(job["root"], "..", "runs-" + job["id"])
    fields = request_fields(job)
    if job["kind"] == "plan":
        fields["context"] = job["context"]
    step = adapter.start(agent, "go", client=client, store=store, run_id=job["id"], request=fields)
    emit(asked=step.paused.ids[0])
    return adapter_decision(adapter.resume(agent, client=client, store=store, run_id=job["id"], timeout=90), client, ran)


def run_openai_agents(job: Dict[str, Any]) -> Dict[str, Any]:
    from agents import Agent, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from dshq.adapters import openai_agents as adapter

    set_tracing_disabled(True)

    class Scripted(Model):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(input, list) and input[-1].get("type") == "function_call_output":
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                out: Any = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                                 content=[text])
            elif job["kind"] == "plan":
                out = ResponseFunctionToolCall(type="function_call", call_id="call-1", name=PLAN_TOOL, id="f",
                                               arguments=json.dumps({"plan": job["plan"]}))
            else:
                out = ResponseFunctionToolCall(type="function_call", call_id="call-1", name="ask_user_question", id="f",
                                               arguments=json.dumps({"questions": job["request"]["questions"]}))
            return ModelResponse(output=[out], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    ran: Dict[str, str] = {}

    @function_tool(name_override=PLAN_TOOL)
    def apply_plan(plan: str) -> str:
        ran["plan"] = plan
        return "applied"

    agent = Agent(name="conformance", model=Scripted(), tools=[adapter.gate(apply_plan), adapter.question_tool()])
    client = dshq.Client(root=job["root"], poll=0.02)
    store = os.path.join(job["root"], "..", "runs-" + job["id"])
    fields = request_fields(job)
    if job["kind"] == "plan":
        fields["context"] = job["context"]
    step = adapter.start(agent, "go", client=client, store=store, run_id=job["id"], request=fields)
    emit(asked=step.paused.ids[0])
    return adapter_decision(adapter.resume(agent, client=client, store=store, run_id=job["id"], timeout=90), client, ran)


def run_crewai(job: Dict[str, Any]) -> Dict[str, Any]:
    from crewai.flow import Flow, human_feedback, listen, start
    from crewai.flow.persistence import SQLiteFlowPersistence

    from dshq.adapters import crewai as adapter

    client = dshq.Client(root=job["root"], poll=0.02)
    ran: Dict[str, str] = {}

    class Review(Flow):  # type: ignore[misc]
        _skip_auto_memory = True

        @start()
        @human_feedback(message="Carry out this plan?", emit=["approved", "rejected"], llm=adapter.route(),
                        provider=adapter.Feedback(client, context=job["context"]))
        def plan(self) -> str:
            return job["plan"]

        @listen("approved")
        def carry_out(self) -> str:
            ran["plan"] = self.last_human_feedback.output
            return "done"

    persistence = SQLiteFlowPersistence(os.path.join(job["root"], "..", "flows-%s.db" % job["id"]))
    paused = Review(persistence=persistence).kickoff()
    emit(asked=paused.callback_info["dshq"])
    step = adapter.resume(Review, paused.context.flow_id, persistence=persistence, client=client, timeout=90)
    d = step.decisions[0]
    if d.result is None:
        return {"end": d.code, "message": d.message}
    return normalize(d.result, ran.get("plan"), client.receipt(d.call.ticket))


def run_claude_agent_sdk(job: Dict[str, Any]) -> Dict[str, Any]:
    from claude_agent_sdk import PreToolUseHookInput

    from dshq.adapters import claude_agent_sdk as adapter

    client = dshq.Client(root=job["root"], poll=0.02)
    fields = request_fields(job)
    if job["kind"] == "plan":
        # Claude's plan tool: its plan is what the reviewer reads, and edits.
        tool, tool_input = adapter.EXIT_PLAN_MODE, {"plan": job["plan"]}
        fields["context"] = job["context"]
    else:
        tool, tool_input = "AskUserQuestion", {"questions": job["request"]["questions"]}
    hook = adapter.pre_tool_use(client, wait=90, **fields)
    event = PreToolUseHookInput(session_id="conformance", transcript_path="/t.jsonl", cwd="/",
                                hook_event_name="PreToolUse", tool_name=tool, tool_input=tool_input,
                                tool_use_id=job["id"])
    emit(asked=dshq.id_for_key(adapter.call_key(adapter.FRAMEWORK, "conformance", job["id"])))
    o = asyncio.run(hook(event, job["id"], {"signal": None}))["hookSpecificOutput"]
    reason = o.get("permissionDecisionReason") or ""
    # What Claude Code is told, read back as the Rust `hook` face reads it.
    if o["permissionDecision"] == "allow" and job["kind"] == "plan":
        return {"end": "answered", "decision": "approved", "feedback": None, "plan": o["updatedInput"]["plan"]}
    if o["permissionDecision"] == "allow":
        by_text = o["updatedInput"]["answers"]
        return {"end": "answered", "decision": None, "feedback": None,
                "answers": {q["id"]: by_text.get(q["question"]) for q in job["request"]["questions"]}}
    if reason.startswith("The reviewer declined"):
        feedback = reason.split("Their feedback: ", 1)[1] if "Their feedback: " in reason else None
        return {"end": "answered", "decision": "declined", "feedback": feedback, "plan": None}
    # "No one approved the call to `TOOL`, so it did not run (CODE: message)."
    return {"end": reason.split("(", 1)[1].split(":", 1)[0] if "(" in reason else reason}


ADAPTERS = {
    "pydantic-ai": run_pydantic_ai,
    "openai-agents": run_openai_agents,
    "crewai": run_crewai,
    "claude-agent-sdk": run_claude_agent_sdk,
}


def main() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        try:
            if FACE in ("python-file", "python-http"):
                decision = run_client(job)
            elif FACE == "langgraph":
                decision = run_langgraph(job)
            elif FACE == "mcp":
                decision = asyncio.run(run_mcp(job))
            elif FACE in ADAPTERS:
                decision = ADAPTERS[FACE](job)
            else:
                raise SystemExit("unknown face " + FACE)
        except (dshq.DshqError, dshq.PlanDeclined) as e:
            decision = ended(e)
        emit(decision=decision)


if __name__ == "__main__":
    main()
