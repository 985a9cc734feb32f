"""The Claude Agent SDK adapter at its boundaries, as Claude Code would call it, with the
SDK's own types (Claude Code needs a model to run a session, so the CLI is not run).

    python claude_agent.py hook SESSION TOOL_USE_ID TOOL WAIT [REQUEST_JSON]
        call the PreToolUse hook with a PreToolUseHookInput, print its output; with
        STAY=1 stay alive afterwards (to be killed, as a deferring session ends)
    python claude_agent.py permit TOOL_USE_ID TOOL WAIT
        call the can_use_tool callback with a ToolPermissionContext, print the
        PermissionResult

TOOL is "Bash" (input {"command", "description"}) or "AskUserQuestion".
"""

import asyncio
import dataclasses
import json
import os
import sys
import threading

from claude_agent_sdk import (
    ClaudeAgentOptions,
    PermissionResultAllow,
    PermissionResultDeny,
    PreToolUseHookInput,
    ToolPermissionContext,
)

import dshq
from dshq.adapters import claude_agent_sdk as adapter

INPUTS = {
    "Bash": {"command": "rm -rf build/", "description": "Clean the build directory"},
    "AskUserQuestion": {"questions": [{"question": "Which database?", "header": "Database", "multiSelect": False,
                                       "options": [{"label": "Postgres", "description": "the server"},
                                                   {"label": "SQLite", "description": "a file"}]}]},
}


def main() -> int:
    client = dshq.Client(poll=0.02)
    mode = sys.argv[1]
    if mode == "hook":
        session, tool_use_id, tool, wait = sys.argv[2:6]
        request = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
        options = ClaudeAgentOptions(hooks=adapter.hooks(client, wait=float(wait), **request))
        [matcher] = options.hooks["PreToolUse"]
        event = PreToolUseHookInput(session_id=session, transcript_path="/t.jsonl", cwd="/", permission_mode="default",
                                    hook_event_name="PreToolUse", tool_name=tool, tool_input=INPUTS[tool],
                                    tool_use_id=tool_use_id)
        out = asyncio.run(matcher.hooks[0](event, tool_use_id, {"signal": None}))
        print(json.dumps(out), flush=True)
        if os.environ.get("STAY") == "1":
            threading.Event().wait()
        return 0
    tool_use_id, tool, wait = sys.argv[2:5]
    callback = adapter.can_use_tool(client, run_id="run-1", timeout=float(wait))
    result = asyncio.run(callback(tool, INPUTS[tool], ToolPermissionContext(tool_use_id=tool_use_id)))
    assert isinstance(result, (PermissionResultAllow, PermissionResultDeny)), result
    print(json.dumps(dataclasses.asdict(result)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
