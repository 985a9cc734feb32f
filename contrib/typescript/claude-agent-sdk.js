// dshq for the Claude Agent SDK (`@anthropic-ai/claude-agent-sdk` 0.3): Claude's tool
// calls and questions decided by a person through dshq.
//
// Two places in the SDK take the decision, and the gate serves both:
// - `canUseTool` (the permission callback; AskUserQuestion arrives there too): the call
//   waits, in the live session, until the reviewer decides. Allow carries `updatedInput`:
//   the arguments as approved (edited or not), AskUserQuestion's `answers` (question text
//   to answer, several joined with ", "), ExitPlanMode's plan as approved.
// - a `PreToolUse` hook: it waits `wait` seconds, then answers `defer` when nobody has
//   decided yet: a headless run ends there, and resuming the session (`resume: sessionId`,
//   in this process or a later one) runs the hook again for the same call, which finds the
//   decision. The session itself is Claude Code's to keep; the gate keeps nothing.
// A denial's message is what Claude gets as the tool's result. The request of a call is keyed
// by the session and the tool use id.

import { answersByText, decide, requestIdOf, requestOptions } from "./adapters/core.js";

const ADAPTER = "claude-agent-sdk";

/** Claude's question tool and plan tool. */
export const ASK_USER_QUESTION = "AskUserQuestion";
export const EXIT_PLAN_MODE = "ExitPlanMode";

/** The gate between a Claude Agent SDK session and dshq. */
export class ClaudeAgentGate {
  /**
   * `client`: a dshq Client; `session`: the session id (`options.sessionId` of the query;
   * `canUseTool` needs it, the hook reads it from its input); `wait`: seconds the hook waits
   * before deferring (default 0); `context`, `timeout`, `deadline`, `ladder`, `quorum`,
   * `agent`, `meta`: passed to every request.
   */
  constructor({ client, session, wait = 0, ...options }) {
    if (!client) throw new TypeError("ClaudeAgentGate needs a dshq client");
    this.client = client;
    this.session = session;
    this.wait = wait;
    this.options = requestOptions(options);
    /** The last decision of each call, by tool use id. */
    this.decisions = new Map();
    this.canUseTool = this.canUseTool.bind(this);
    this.hook = this.hook.bind(this);
  }

  callOf(session, toolName, input, toolUseId) {
    const kind = toolName === ASK_USER_QUESTION ? "question" : toolName === EXIT_PLAN_MODE ? "plan" : "tool";
    return { adapter: ADAPTER, run: session, callId: toolUseId, toolName, args: input, kind, editable: true };
  }

  /** The dshq request id of a call of `session` (tool use id `toolUseId`). */
  requestId(session, toolUseId) {
    return requestIdOf({ adapter: ADAPTER, run: session, callId: toolUseId });
  }

  /** The permission result of a decision. */
  permission(call, d) {
    if (d.behavior !== "allow") return { behavior: "deny", message: d.message, toolUseID: call.callId };
    return { behavior: "allow", updatedInput: updatedInput(call, d), toolUseID: call.callId };
  }

  /** The SDK's `canUseTool`: waits until the reviewer decides the call. */
  async canUseTool(toolName, input, { signal, toolUseID }) {
    if (typeof this.session !== "string" || !this.session) {
      return { behavior: "deny", message: "dshq cannot ask about this call: the gate was made without the session id (session)" };
    }
    const call = this.callOf(this.session, toolName, input, toolUseID);
    const d = await decide(this.client, call, this.options, { signal });
    this.decisions.set(call.callId, d);
    return this.permission(call, d);
  }

  /** The SDK's `PreToolUse` hook callback: a decision within `wait` seconds, else `defer`. */
  async hook(input, toolUseID, { signal } = {}) {
    if (input?.hook_event_name !== "PreToolUse") return {};
    const id = input.tool_use_id ?? toolUseID;
    const call = this.callOf(input.session_id, input.tool_name, input.tool_input, id);
    const d = await decide(this.client, call, this.options, { timeout: this.wait, signal });
    const out = { hookEventName: "PreToolUse" };
    if (d === null) {
      out.permissionDecision = "defer";
      out.permissionDecisionReason = `Waiting for a reviewer in dshq; resume the session (${input.session_id}) to carry on once they decide.`;
      return { hookSpecificOutput: out };
    }
    this.decisions.set(call.callId, d);
    const p = this.permission(call, d);
    out.permissionDecision = p.behavior;
    if (p.behavior === "allow") out.updatedInput = p.updatedInput;
    else out.permissionDecisionReason = p.message;
    return { hookSpecificOutput: out };
  }

  /** The hook's matcher for `options.hooks.PreToolUse` (`matcher`: which tools; all by default). */
  preToolUse({ matcher, timeout } = {}) {
    return { ...(matcher !== undefined ? { matcher } : {}), hooks: [this.hook], ...(timeout !== undefined ? { timeout } : {}) };
  }
}

// AskUserQuestion's answers: question text to the answer (labels joined with ", ", or the
// person's own text); a skipped question has none.
function updatedInput(call, d) {
  if (call.kind !== "question") return { ...(d.args ?? {}) };
  return { ...(call.args ?? {}), answers: answersByText(call.args, d.answers) };
}
