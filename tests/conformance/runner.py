"""The client conformance suite's runner for the Python faces (tests/it/conformance.rs).

Usage: runner.py FACE, FACE one of python-file, python-http, langgraph, mcp.

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
            else:
                raise SystemExit("unknown face " + FACE)
        except (dshq.DshqError, dshq.PlanDeclined) as e:
            decision = ended(e)
        emit(decision=decision)


if __name__ == "__main__":
    main()
