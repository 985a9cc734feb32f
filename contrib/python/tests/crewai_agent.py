"""A CrewAI Flow whose plan step needs a person's review, for the adapter's restart tests.

    python crewai_agent.py start PERSISTENCE_DB [REQUEST_JSON]   kick the flow off until
        the step pauses, print {"flow": ID, "paused": [REQUEST_ID]}, then stay alive
    python crewai_agent.py resume PERSISTENCE_DB FLOW_ID         wait for the decision,
        resume the flow, print {"output", "ran", "allowed", ...}

No model: the review routes by the decision's label (dshq.adapters.crewai.route()).
RAN_LOG names a file the approved step appends the plan it carried out to.
"""

import os

# CrewAI's telemetry and tracing would reach its services: never the network here.
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import json  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

from crewai.flow import Flow, human_feedback, listen, start  # noqa: E402
from crewai.flow.async_feedback import HumanFeedbackPending  # noqa: E402
from crewai.flow.persistence import SQLiteFlowPersistence  # noqa: E402

import dshq  # noqa: E402
from dshq.adapters import crewai as adapter  # noqa: E402

client = dshq.Client(poll=0.02)
REQUEST = json.loads(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[1] == "start" else {}


class Upgrade(Flow):
    # No memory: CrewAI's memory store (lancedb) is left out of the slim test install.
    _skip_auto_memory = True

    @start()
    @human_feedback(message="Carry out this plan?", emit=["approved", "rejected"], llm=adapter.route(),
                    provider=adapter.Feedback(client, **REQUEST))
    def plan(self):
        return "1. Drain node a\n2. Upgrade node a\n"

    @listen("approved")
    def carry_out(self):
        plan = self.last_human_feedback.output
        with open(os.environ["RAN_LOG"], "a") as f:
            f.write(json.dumps(plan) + "\n")
        return "done: " + plan

    @listen("rejected")
    def stop(self):
        return "stopped: " + self.last_human_feedback.feedback


def main() -> int:
    mode, db = sys.argv[1:3]
    persistence = SQLiteFlowPersistence(db)
    if mode == "start":
        flow = Upgrade(persistence=persistence)
        out = flow.kickoff()
        assert isinstance(out, HumanFeedbackPending), out
        print(json.dumps({"flow": out.context.flow_id, "paused": [out.callback_info["dshq"]]}), flush=True)
        threading.Event().wait()
        return 0
    step = adapter.resume(Upgrade, sys.argv[3], persistence=persistence, client=client, timeout=60)
    d = step.decisions[0]
    print(json.dumps({"output": step.result, "allowed": d.allowed, "code": d.code, "feedback": d.feedback,
                      "edited": d.edited}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
