// An agent process for the adapters' tests: one framework, its own offline test model, one
// tool that needs approval (`deploy`) and the question tool. It prints JSON lines:
// {paused: [request ids]}, {deferred}, {ran: args} (the tool ran with these arguments),
// {modelSaw: [tool results]} (what the model got back), {final: text}.
//
//   node agent.js FRAMEWORK DIR RUN MODE [TOOL]
//   FRAMEWORK: ai-sdk | openai-agents | claude-agent-sdk
//   MODE: start (run until the pause, then wait for the decision in this process and go on),
//         start-exit (run until the pause and exit), resume (resume the paused run)
//   TOOL: deploy (default) | ask
// dshq is DSHQ_ROOT's; AGENT_CONTEXT names the context the requests are asked in.
import { Client } from "dshq";

const [framework, dir, run, mode, toolName = "deploy"] = process.argv.slice(2);
const client = new Client({ poll: 0.02 });
const context = process.env.AGENT_CONTEXT || undefined;
const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const PROPOSED = { env: "prod", replicas: 3, notes: "Roll out v2.\nWatch the error rate.\n" };
const QUESTIONS = { questions: [{ id: "db", question: "Which database?", options: [{ label: "Postgres" }, { label: "SQLite" }] }] };

async function aiSdk() {
  const { generateText, tool, jsonSchema, isStepCount } = await import("ai");
  const { MockLanguageModelV4 } = await import("ai/test");
  const { AiSdkRun, askUserQuestionTool } = await import("dshq/ai-sdk");
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  // The model calls the tool once; once it has the tool's result it says what it got.
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last.role === "tool") {
        const results = last.content.filter((p) => p.type === "tool-result").map((p) => p.output);
        emit({ modelSaw: results });
        return { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
      }
      const name = toolName === "ask" ? "ask_user_question" : "deploy";
      const input = toolName === "ask" ? QUESTIONS : PROPOSED;
      return { content: [{ type: "tool-call", toolCallId: "call-1", toolName: name, input: JSON.stringify(input) }], finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage, warnings: [] };
    },
  });
  const tools = {
    deploy: tool({
      description: "Deploy a release",
      inputSchema: jsonSchema({ type: "object", properties: { env: { type: "string" }, replicas: { type: "number" }, notes: { type: "string" } }, required: ["env"] }),
      execute: async (args) => {
        emit({ ran: args });
        return `deployed to ${args.env}`;
      },
    }),
    ask_user_question: askUserQuestionTool(),
  };
  const agentRun = new AiSdkRun({ client, dir, id: run, context });
  let messages = mode === "resume" ? await agentRun.resume() : [{ role: "user", content: "Deploy v2" }];
  for (;;) {
    const result = await generateText({ model, tools, toolApproval: { deploy: "user-approval" }, messages, stopWhen: isStepCount(5) });
    messages = [...messages, ...result.responseMessages];
    if (!(await agentRun.pause(messages))) {
      emit({ final: result.text, decisions: agentRun.decisions.map(brief) });
      return;
    }
    emit({ paused: agentRun.requests });
    if (mode === "start-exit") return;
    messages = await agentRun.resume();
  }
}

async function openaiAgents() {
  const { Agent, Runner, Usage, tool, setTracingDisabled } = await import("@openai/agents-core");
  const { OpenAIAgentsRun, askUserQuestionTool } = await import("dshq/openai-agents");
  setTracingDisabled(true);
  // A Model as the SDK's own tests write one: the tool call first, then text once it has
  // the tool's result.
  class OfflineModel {
    async getResponse(request) {
      const input = Array.isArray(request.input) ? request.input : [];
      const results = input.filter((i) => i.type === "function_call_result");
      if (results.length) {
        emit({ modelSaw: results.map((r) => r.output) });
        return { usage: new Usage(), output: [{ type: "message", id: "msg-2", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }] };
      }
      const name = toolName === "ask" ? "ask_user_question" : "deploy";
      const args = toolName === "ask" ? QUESTIONS : PROPOSED;
      return { usage: new Usage(), output: [{ type: "function_call", id: "fc-1", callId: "call-1", name, arguments: JSON.stringify(args), status: "completed" }] };
    }
    async *getStreamedResponse() {
      throw new Error("not streamed in these tests");
    }
  }
  const deploy = tool({
    name: "deploy",
    description: "Deploy a release",
    parameters: { type: "object", properties: { env: { type: "string" }, replicas: { type: "number" }, notes: { type: "string" } }, required: ["env", "replicas", "notes"], additionalProperties: false },
    strict: true,
    needsApproval: true,
    execute: async (args) => {
      emit({ ran: args });
      return `deployed to ${args.env}`;
    },
  });
  const agentRun = new OpenAIAgentsRun({ client, dir, id: run, context });
  const agent = new Agent({ name: "deployer", model: new OfflineModel(), tools: agentRun.tools([deploy, askUserQuestionTool()]) });
  const runner = new Runner({ tracingDisabled: true });
  let result = await runner.run(agent, mode === "resume" ? await agentRun.resume(agent) : "Deploy v2");
  while (await agentRun.pause(result)) {
    emit({ paused: agentRun.requests });
    if (mode === "start-exit") return;
    result = await runner.run(agent, await agentRun.resume(agent));
  }
  emit({ final: result.finalOutput, decisions: agentRun.decisions.map(brief) });
}

// Claude Code runs the session (it needs its binary and a model); the gate is driven here
// as the SDK drives it: the PreToolUse hook (start-exit: it defers; resume: it runs again
// for the same call, as a resumed session does), or canUseTool (start: it waits).
async function claude() {
  const { ClaudeAgentGate } = await import("dshq/claude-agent-sdk");
  const session = `session-${run}`;
  const name = toolName === "ask" ? "AskUserQuestion" : "mcp__ops__deploy";
  const input = toolName === "ask" ? { questions: [{ question: "Which database?", header: "Database", options: [{ label: "Postgres", description: "" }, { label: "SQLite", description: "" }], multiSelect: false }] } : PROPOSED;
  const gate = new ClaudeAgentGate({ client, session, wait: mode === "resume" ? 30 : 0.2, context });
  let verdict;
  if (mode === "start") {
    emit({ paused: [gate.requestId(session, "toolu_1")] });
    const p = await gate.canUseTool(name, input, { signal: new AbortController().signal, toolUseID: "toolu_1", requestId: "r1" });
    verdict = { decision: p.behavior, input: p.behavior === "allow" ? p.updatedInput : undefined, reason: p.behavior === "deny" ? p.message : undefined };
  } else {
    const event = { hook_event_name: "PreToolUse", session_id: session, transcript_path: "/t.jsonl", cwd: dir, tool_name: name, tool_input: input, tool_use_id: "toolu_1" };
    const out = (await gate.hook(event, "toolu_1", { signal: new AbortController().signal })).hookSpecificOutput;
    if (out.permissionDecision === "defer") {
      emit({ deferred: out.permissionDecisionReason, paused: [gate.requestId(session, "toolu_1")] });
      return;
    }
    verdict = { decision: out.permissionDecision, input: out.updatedInput, reason: out.permissionDecisionReason };
  }
  // What Claude Code does with the verdict: run the tool with the updated input, or give
  // the model the reason as the tool's result.
  if (verdict.decision === "allow") emit({ ran: verdict.input });
  else emit({ modelSaw: [verdict.reason] });
  emit({ final: verdict.decision, decisions: [...gate.decisions.values()].map(brief) });
}

function brief(d) {
  return { behavior: d.behavior, code: d.code, edited: d.edited, feedback: d.feedback, message: d.message, answers: d.answers, decidedBy: d.result?.decidedBy ?? null };
}

const run_ = { "ai-sdk": aiSdk, "openai-agents": openaiAgents, "claude-agent-sdk": claude }[framework];
if (!run_) throw new Error(`no framework ${framework}`);
await run_();
