// dshq for the Vercel AI SDK (`ai` 7): a run's tool approvals and questions answered by a
// person through dshq, across processes.
//
// The AI SDK pauses in the messages: a tool whose `toolApproval` says `user-approval` ends
// the call with a `tool-approval-request` part, and a tool without `execute` (the question
// tool) with a tool call that has no result. `pause(messages)` keeps those messages in
// `DIR/RUN.json` and asks dshq for each pending call; `resume()`, in this process or any
// later one, waits for the decisions and returns the messages with a
// `tool-approval-response` (or the question's `tool-result`) for each, ready for the next
// `generateText`. The reviewer's edited arguments replace the call's input in the message
// history (the SDK runs an approved call with the input found there); a denial's reason
// is the text the model gets as the tool's result.

import { jsonSchema, tool } from "ai";

import { QUESTIONS_SCHEMA, QUESTION_TOOL, QUESTION_TOOL_DESCRIPTION, RunFile, answersResult, askFor, decideAll, requestIdOf, requestOptions } from "./adapters/core.js";

/** The default name of the question tool. */
export { QUESTION_TOOL };

/**
 * A tool the model calls to ask a person questions (dsh's vocabulary). It has no `execute`:
 * the run pauses on its call, and `resume()` gives the answers as its result.
 */
export function askUserQuestionTool({ description = QUESTION_TOOL_DESCRIPTION } = {}) {
  return tool({ description, inputSchema: jsonSchema(QUESTIONS_SCHEMA) });
}

const ADAPTER = "ai-sdk";

/** A run of the AI SDK whose pauses a person decides through dshq. */
export class AiSdkRun {
  /**
   * `client`: a dshq Client; `dir`: where paused runs are kept; `id`: the run (a thread or
   * job id the next process knows too); `questionTools`: the names of question tools;
   * `editable`: whether reviewers may edit arguments (default true); `context`,
   * `timeout`, `deadline`, `ladder`, `quorum`, `agent`, `meta`: passed to every request.
   */
  constructor({ client, dir, id, questionTools = [QUESTION_TOOL], editable = true, ...options }) {
    if (!client) throw new TypeError("AiSdkRun needs a dshq client");
    this.client = client;
    this.id = id;
    this.file = new RunFile(dir, id, ADAPTER);
    this.questionTools = new Set(questionTools);
    this.editable = editable;
    this.options = requestOptions(options);
    /** The decisions the last `resume()` applied, in call order. */
    this.decisions = [];
    /** The dshq request ids the last `pause()` asked (one a pending call). */
    this.requests = [];
  }

  /** The calls of `messages` that wait for a person. */
  pendingCalls(messages) {
    const calls = new Map();
    const requests = [];
    const answered = new Set();
    const responded = new Set();
    for (const m of messages) {
      if (!Array.isArray(m?.content)) continue;
      for (const p of m.content) {
        if (m.role === "assistant" && p.type === "tool-call") calls.set(p.toolCallId, p);
        if (m.role === "assistant" && p.type === "tool-approval-request" && !p.isAutomatic) requests.push(p);
        if (p.type === "tool-approval-response") responded.add(p.approvalId);
        if (p.type === "tool-result") answered.add(p.toolCallId);
      }
    }
    const pending = [];
    for (const r of requests) {
      const c = calls.get(r.toolCallId);
      if (!c || responded.has(r.approvalId) || answered.has(r.toolCallId)) continue;
      pending.push(this.call(c, { approvalId: r.approvalId }));
    }
    for (const c of calls.values()) {
      if (this.questionTools.has(c.toolName) && !answered.has(c.toolCallId) && !pending.some((p) => p.callId === c.toolCallId)) {
        pending.push(this.call(c, { kind: "question" }));
      }
    }
    return pending;
  }

  call(part, { approvalId = null, kind = "tool" } = {}) {
    return { adapter: ADAPTER, run: this.id, callId: part.toolCallId, toolName: part.toolName, args: part.input, kind, approvalId, editable: this.editable !== false };
  }

  /**
   * Keep the run when `messages` (the conversation with the last result's
   * `responseMessages`) end in calls that wait for a person, and ask dshq for each: true
   * when it paused. False when nothing waits (a run kept from before is let go).
   */
  async pause(messages) {
    const pending = this.pendingCalls(messages);
    if (!pending.length) {
      await this.file.remove();
      return false;
    }
    await this.file.save({ messages, pending });
    for (const call of pending) await askFor(this.client, call, this.options);
    this.requests = pending.map(requestIdOf);
    return true;
  }

  /**
   * The paused run's messages with each call decided (waits for the reviewers; `timeout`
   * seconds, then WaitTimeout and the run stays paused), or null when no run is paused.
   */
  async resume({ timeout } = {}) {
    const saved = await this.file.load();
    if (!saved) return null;
    const decisions = await decideAll(this.client, saved.pending, this.options, { timeout });
    this.decisions = decisions;
    const messages = structuredClone(saved.messages);
    const parts = [];
    saved.pending.forEach((call, i) => {
      const d = decisions[i];
      if (call.kind === "question") {
        const output = d.behavior === "allow" ? { type: "json", value: answersResult(d.answers) } : { type: "error-text", value: d.message };
        parts.push({ type: "tool-result", toolCallId: call.callId, toolName: call.toolName, output });
        return;
      }
      if (d.behavior === "allow" && d.edited) applyEdit(messages, call, d.args);
      parts.push({ type: "tool-approval-response", approvalId: call.approvalId, approved: d.behavior === "allow", reason: d.message });
    });
    const last = messages[messages.length - 1];
    if (last?.role === "tool" && Array.isArray(last.content)) last.content.push(...parts);
    else messages.push({ role: "tool", content: parts });
    return messages;
  }

  /** Let the run go (it ended, or is abandoned): nothing is kept for it. */
  async done() {
    await this.file.remove();
  }
}

// The approved call runs with the input its tool-call part has: the edited arguments go
// there (and the approval request's copy of the input before validation goes, so that the
// SDK validates the edited input itself).
function applyEdit(messages, call, args) {
  for (const m of messages) {
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (p.type === "tool-call" && p.toolCallId === call.callId) p.input = args;
      if (p.type === "tool-approval-request" && p.approvalId === call.approvalId) delete p.inputSchemaInput;
    }
  }
}
