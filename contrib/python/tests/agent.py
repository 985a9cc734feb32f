"""An agent process for the restart tests: ask with a key, print the answer as JSON.

    python agent.py KEY          (the dshq from DSHQ_ROOT, or DSHQ_URL + DSHQ_TOKEN)

Prints {"asked": ID} as soon as it has asked, then {"answer": {...}} or {"error": CODE}.
"""

import json
import sys

import dshq


def main() -> int:
    key = sys.argv[1]
    client = dshq.Client(poll=0.02)
    question = [dshq.Question("db", "Which database?", options=["Postgres", "SQLite"])]
    ticket = client.ask_nowait(question, key=key)
    print(json.dumps({"asked": ticket.id}), flush=True)
    try:
        result = client.wait(ticket)
    except dshq.DshqError as e:
        print(json.dumps({"error": e.code}), flush=True)
        return 1
    print(json.dumps({"answer": {k: v.selected for k, v in result.answers.items()}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
