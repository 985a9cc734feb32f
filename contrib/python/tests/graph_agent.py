"""A LangGraph graph whose node asks a human through dshq, for the restart test.

    python graph_agent.py start CHECKPOINT_DB THREAD   run until the node interrupts, print
                                                       {"interrupted": ID}, then stay alive
    python graph_agent.py resume CHECKPOINT_DB THREAD  wait for the answer, resume with it,
                                                       print the final state

No model: the node asks a fixed question. The checkpointer is SqliteSaver (from
langgraph-checkpoint-sqlite), a real SQLite file, so a new process finds the interrupt.
"""

import json
import sqlite3
import sys
import threading
from typing import TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

import dshq
from dshq.langgraph import ask_human, pending, resume


class State(TypedDict, total=False):
    task: str
    db: str
    done: str


def build(checkpoint_db: str):
    client = dshq.Client(poll=0.02)

    def plan(state: State) -> State:
        return {"task": "deploy the billing service"}

    def choose(state: State) -> State:
        result = ask_human(
            client,
            [dshq.Question("db", "Which database for %s?" % state["task"], options=["Postgres", "SQLite"])],
            key="graph-choose-db-" + state["task"],
        )
        return {"db": result["db"].selected[0]}

    def finish(state: State) -> State:
        return {"done": "%s with %s" % (state["task"], state["db"])}

    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("choose", choose)
    g.add_node("finish", finish)
    g.add_edge(START, "plan")
    g.add_edge("plan", "choose")
    g.add_edge("choose", "finish")
    g.add_edge("finish", END)
    conn = sqlite3.connect(checkpoint_db, check_same_thread=False)
    return g.compile(checkpointer=SqliteSaver(conn)), client


def main() -> int:
    mode, checkpoint_db, thread = sys.argv[1:4]
    graph, client = build(checkpoint_db)
    config = {"configurable": {"thread_id": thread}}
    if mode == "start":
        out = graph.invoke({}, config)
        assert "__interrupt__" in out, out
        [(_, ticket)] = pending(graph, config)
        print(json.dumps({"interrupted": ticket.id}), flush=True)
        threading.Event().wait()  # alive until killed
        return 0
    final = resume(graph, config, client, timeout=60)
    print(json.dumps(final), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
