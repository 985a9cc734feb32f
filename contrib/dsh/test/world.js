// A real dsh runtime for the tests, from DeepSeek Harness's own npm packages: a cordis
// Context with the session store, the model runtime, the system prompt, the tool registry,
// the agent registry and the agent loop, the user-questions and approval services and the
// ask_user_question tool. The only stand-in is the model: a scripted `llm/stream` listener
// (dsh's own waterfall around every model call) that answers each step from a script,
// so no network is used. A `deploy` tool that needs approval (a `tools/pre-execute` ask,
// as a permission plugin would answer) exercises dsh's approval path.
import { Context } from "@deepseek-ai/cordis";
import { AgentRegistry } from "@deepseek-ai/dsh-agent";
import { AgentLoop } from "@deepseek-ai/dsh-agent-loop";
import { LlmRuntime, createUserMessage } from "@deepseek-ai/dsh-llm";
import { SessionId, SessionStore } from "@deepseek-ai/dsh-session";
import { SystemPrompt } from "@deepseek-ai/dsh-system-prompt";
import * as askUser from "@deepseek-ai/dsh-tool-ask-user";
import { ToolRuntime, defineTool } from "@deepseek-ai/dsh-tools";
import { ApprovalService } from "@deepseek-ai/dsh-user-approval";
import { UserQuestionService } from "@deepseek-ai/dsh-user-questions";

export const DEADLINE_MS = 30_000;

async function until(cond, what, limit = DEADLINE_MS) {
  const start = Date.now();
  for (;;) {
    const v = cond();
    if (v) return v;
    if (Date.now() - start > limit) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The chunks of one scripted model step: tool calls, or a closing text. */
async function* step(calls) {
  if (calls.length === 0) {
    yield { type: "block-start", index: 0, blockType: "text" };
    yield { type: "text-delta", index: 0, text: "done" };
    yield { type: "block-end", index: 0, block: { type: "text", text: "done" } };
    yield { type: "finish", reason: { kind: "stop" } };
    return;
  }
  let index = 0;
  for (const { id, name, args } of calls) {
    const json = JSON.stringify(args);
    yield { type: "block-start", index, blockType: "tool-call" };
    yield { type: "tool-call-delta", index, id, name, argumentsDelta: json };
    yield { type: "block-end", index, block: { type: "tool-call", id, name, arguments: json } };
    index += 1;
  }
  yield { type: "finish", reason: { kind: "tool-calls" } };
}

/** A dsh runtime; `deployed` lists the targets the approval-gated tool really ran for. */
export async function world() {
  const ctx = new Context();
  for (const p of [SessionStore, LlmRuntime, SystemPrompt, ToolRuntime, AgentRegistry]) await ctx.plugin(p);
  await ctx.plugin(AgentLoop, {});
  await ctx.plugin(UserQuestionService);
  await ctx.plugin(ApprovalService, {});
  await ctx.plugin(askUser);

  const deployed = [];
  ctx.tools.register(
    defineTool({
      name: "deploy",
      description: "Deploy the service to a target.",
      parameters: { target: { type: "string", required: true } },
      output: { schema: { type: "string" }, render: (_a, v) => [{ type: "text", text: v }] },
      async execute(args) {
        deployed.push(args.target);
        return `deployed to ${args.target}`;
      },
    }),
  );
  ctx.on("tools/pre-execute", (exec, next) =>
    exec.name === "deploy" ? Promise.resolve({ kind: "ask", reason: "deploying changes production" }) : next(),
  );

  // The scripted model: per session, the steps still to play; then it closes the turn.
  const scripts = new Map();
  ctx.on("llm/stream", (options) => step(scripts.get(options.sessionId)?.shift() ?? []));

  return {
    ctx,
    deployed,
    /** A live root agent on session `id` (created through dsh's own factory). */
    async agent(id, setup) {
      const handle = await ctx.agents.create({
        sessionId: SessionId(id),
        agentOptions: { provider: "script", model: "scripted" },
        ...(setup ? { setup } : {}),
      });
      return handle;
    },
    /**
     * One turn of `agent` in which the model makes `calls` (`[{id, name, args}]`) and
     * then says "done". Resolves with the turn's `tool/result` messages by call id.
     */
    async turn(agent, calls, { started } = {}) {
      scripts.set(agent.id, [calls]);
      const before = agent.session.events.filter((e) => e.type === "turn/end").length;
      agent.followup(createUserMessage({ content: [{ type: "text", text: "go" }] }));
      if (started) await started(agent);
      await until(() => agent.session.events.filter((e) => e.type === "turn/end").length > before, "the turn to end");
      return results(agent);
    },
    async dispose() {
      await ctx.fiber.dispose();
    },
  };
}

/** The model-facing tool results of a session, by call id: `{text, isError}`. */
export function results(agent) {
  const out = {};
  for (const e of agent.session.events) {
    if (e.type !== "tool/result") continue;
    for (const block of e.data.message.content) {
      if (block.type !== "tool-result") continue;
      out[block.toolCallId] = {
        text: block.content.map((c) => c.text ?? "").join(""),
        isError: block.isError === true,
      };
    }
  }
  return out;
}

/** The session's approval audit: the `approval/decided` outcomes in order. */
export function approvals(agent) {
  return agent.session.events.filter((e) => e.type === "approval/decided").map((e) => e.data.outcome);
}

export { until };
