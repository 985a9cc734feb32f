// dshq for the OpenAI Agents SDK (`@openai/agents` 0.20): a run's tool approvals and
// questions answered by a person through dshq, across processes.
//
// The SDK pauses a run on a tool with `needsApproval`: the result has `interruptions`, and
// its `state` (a RunState) serializes to JSON that carries its schema version.
// `pause(result)` keeps that JSON in `DIR/RUN.json` (with the schema version beside it, so
// that an SDK that cannot read it says so before anything runs) and asks dshq for each
// interruption; `resume(agent)`, in this process or any later one, restores the RunState,
// waits for the decisions, approves or rejects each interruption (a rejection's message is
// what the model gets as the tool's result) and returns the state for `runner.run(agent,
// state)`. The SDK approves a call as the model made it; the reviewer's edited arguments
// reach the tool through `run.tools([...])`, which wraps each function tool so that an
// approved call runs with the arguments approved. A tool that is not wrapped is asked
// about with editing turned off.

import { RunState, tool } from "@openai/agents-core";

import { QUESTIONS_SCHEMA, QUESTION_TOOL, QUESTION_TOOL_DESCRIPTION, RunFile, answersResult, askFor, decideAll, denialMessage, requestIdOf, requestOptions } from "./adapters/core.js";

const ADAPTER = "openai-agents";
const WRAPPED = Symbol.for("dshq.openai-agents.wrapped");
const QUESTION = Symbol.for("dshq.openai-agents.question");

/** The default name of the question tool. */
export { QUESTION_TOOL };

/**
 * A tool the model calls to ask a person questions (dsh's vocabulary): it needs approval,
 * so the run pauses on it, and `resume()` gives the answers as its result. It must be in
 * `run.tools([...])`.
 */
export function askUserQuestionTool({ name = QUESTION_TOOL, description = QUESTION_TOOL_DESCRIPTION } = {}) {
  const t = tool({
    name,
    description,
    parameters: QUESTIONS_SCHEMA,
    strict: false,
    needsApproval: true,
    execute: async () => {
      throw new Error(`${name} is answered by a person through dshq: put it in run.tools([...]) of an OpenAIAgentsRun`);
    },
  });
  t[QUESTION] = true;
  return t;
}

/** A run of the OpenAI Agents SDK whose interruptions a person decides through dshq. */
export class OpenAIAgentsRun {
  /**
   * `client`: a dshq Client; `dir`: where paused runs are kept; `id`: the run (a thread or
   * job id the next process knows too); `context`, `timeout`, `deadline`, `ladder`,
   * `quorum`, `agent`, `meta`: passed to every request.
   */
  constructor({ client, dir, id, ...options }) {
    if (!client) throw new TypeError("OpenAIAgentsRun needs a dshq client");
    this.client = client;
    this.id = id;
    this.file = new RunFile(dir, id, ADAPTER);
    this.options = requestOptions(options);
    /** The decisions the last `resume()` applied, in call order. */
    this.decisions = [];
    /** The dshq request ids the last `pause()` asked (one a pending call). */
    this.requests = [];
    this.approved = new Map(); // call id -> the decision an approved call runs with
  }

  /**
   * The agent's tools, each function tool wrapped so that a call approved through dshq runs
   * with the arguments the reviewer approved (edited or not), and the question tool returns
   * the answers. Other tools are returned as they are.
   */
  tools(list) {
    return list.map((t) => {
      if (t?.type !== "function" || typeof t.invoke !== "function" || t[WRAPPED]) return t;
      const invoke = t.invoke;
      const run = this;
      const wrapped = {
        ...t,
        async invoke(ctx, input, details) {
          const d = run.approved.get(details?.toolCall?.callId);
          if (t[QUESTION]) {
            if (!d) throw new Error(`${t.name} was not answered through dshq`);
            return JSON.stringify(answersResult(d.answers));
          }
          return invoke.call(this, ctx, d?.edited ? JSON.stringify(d.args) : input, details);
        },
      };
      wrapped[WRAPPED] = true;
      if (t[QUESTION]) wrapped[QUESTION] = true;
      return wrapped;
    });
  }

  callOf(item) {
    const t = item.agent?.tools?.find((x) => x?.name === item.name);
    let args;
    try {
      args = JSON.parse(item.arguments ?? "null");
    } catch {
      args = item.arguments ?? null;
    }
    const callId = item.rawItem?.callId ?? item.rawItem?.id;
    return { adapter: ADAPTER, run: this.id, callId, toolName: item.name, args, kind: t?.[QUESTION] ? "question" : "tool", editable: Boolean(t?.[WRAPPED]) };
  }

  /**
   * Keep the run when `result` was interrupted for approvals, and ask dshq for each: true
   * when it paused. False when it was not (a run kept from before is let go).
   */
  async pause(result) {
    const items = result.interruptions ?? [];
    if (!items.length) {
      await this.file.remove();
      return false;
    }
    const pending = items.map((i) => this.callOf(i));
    const json = result.state.toJSON();
    await this.file.save({ schemaVersion: json.$schemaVersion, state: JSON.stringify(json), pending });
    for (const call of pending) await askFor(this.client, call, this.options);
    this.requests = pending.map(requestIdOf);
    return true;
  }

  /**
   * The paused run's RunState with every interruption approved or rejected as the
   * reviewers decided (waits for them; `timeout` seconds, then WaitTimeout and the run
   * stays paused), or null when no run is paused. `agent` is the run's starting agent, its
   * tools wrapped by `tools()`.
   */
  async resume(agent, { timeout } = {}) {
    const saved = await this.file.load();
    if (!saved) return null;
    let state;
    try {
      state = await RunState.fromString(agent, saved.state);
    } catch (e) {
      throw new Error(`the paused run ${this.id} was saved as RunState schema ${saved.schemaVersion}, and this @openai/agents cannot restore it: ${e.message}`, { cause: e });
    }
    const decisions = await decideAll(this.client, saved.pending, this.options, { timeout });
    this.decisions = decisions;
    const byCall = new Map(saved.pending.map((c, i) => [String(c.callId), decisions[i]]));
    for (const item of state.getInterruptions()) {
      const callId = String(item.rawItem?.callId ?? item.rawItem?.id);
      const d = byCall.get(callId);
      if (d?.behavior === "allow") {
        this.approved.set(callId, d);
        state.approve(item);
      } else {
        state.reject(item, { message: d?.message ?? denialMessage(item.name, "NO_DECISION") });
      }
    }
    return state;
  }

  /** Let the run go (it ended, or is abandoned): nothing is kept for it. */
  async done() {
    await this.file.remove();
  }
}
