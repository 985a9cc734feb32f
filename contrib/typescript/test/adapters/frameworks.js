// One agent run per framework, with the framework's own offline test model, for the
// adapters' tests (agent.js) and the client conformance suite (conformance.js). The model
// calls one tool once, then, once it has the tool's result, reports what it got; the tool
// reports the arguments it ran with. Events go to `emit`:
// {paused: [request ids]}, {deferred: reason}, {ran: args}, {modelSaw: [tool results]},
// {final: text, decisions}.
//
// `call`: `{name, args}`; the name `ask` is the framework's question tool (`args.questions`),
// `plan` its plan tool (`args.plan`), anything else a tool that needs approval.
// `mode`: `start` (run until the pause, wait for the decision in this process, go on),
// `start-exit` (run until the pause, then return), `resume` (resume the paused run).
// Claude Code runs a Claude Agent SDK session (its binary and a model): the gate is driven
// as the SDK drives it, `canUseTool` in `start` (it waits), the `PreToolUse` hook otherwise
// (it defers after 0.2 s in `start-exit`; in `resume` it runs again for the same call, as a
// resumed session does, and waits).

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const ANY_OBJECT = { type: "object", properties: {}, additionalProperties: true };

async function aiSdk({ client, dir, run, mode, call, options, emit }) {
  const { generateText, tool, jsonSchema, isStepCount } = await import("ai");
  const { MockLanguageModelV4 } = await import("ai/test");
  const { AiSdkRun, askUserQuestionTool, QUESTION_TOOL } = await import("dshq/ai-sdk");
  const name = call.name === "ask" ? QUESTION_TOOL : call.name === "plan" ? "apply_plan" : call.name;
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last.role === "tool") {
        emit({ modelSaw: last.content.filter((p) => p.type === "tool-result").map((p) => p.output) });
        return { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
      }
      return { content: [{ type: "tool-call", toolCallId: "call-1", toolName: name, input: JSON.stringify(call.args) }], finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage, warnings: [] };
    },
  });
  const tools = { [QUESTION_TOOL]: askUserQuestionTool() };
  if (name !== QUESTION_TOOL) {
    tools[name] = tool({ description: "Carry out the change", inputSchema: jsonSchema(ANY_OBJECT), execute: async (args) => (emit({ ran: args }), "done as asked") });
  }
  const agentRun = new AiSdkRun({ client, dir, id: run, ...options });
  let messages = mode === "resume" ? await agentRun.resume() : [{ role: "user", content: "Go" }];
  for (;;) {
    const result = await generateText({ model, tools, toolApproval: { [name]: "user-approval", [QUESTION_TOOL]: "not-applicable" }, messages, stopWhen: isStepCount(5) });
    messages = [...messages, ...result.responseMessages];
    if (!(await agentRun.pause(messages))) return emit({ final: result.text, decisions: agentRun.decisions });
    emit({ paused: agentRun.requests });
    if (mode === "start-exit") return;
    messages = await agentRun.resume();
  }
}

async function openaiAgents({ client, dir, run, mode, call, options, emit }) {
  const { Agent, Runner, Usage, tool, setTracingDisabled } = await import("@openai/agents-core");
  const { OpenAIAgentsRun, askUserQuestionTool, QUESTION_TOOL } = await import("dshq/openai-agents");
  setTracingDisabled(true);
  const name = call.name === "ask" ? QUESTION_TOOL : call.name === "plan" ? "apply_plan" : call.name;
  // A Model as the SDK's own tests write one.
  class OfflineModel {
    async getResponse(request) {
      const results = (Array.isArray(request.input) ? request.input : []).filter((i) => i.type === "function_call_result");
      if (results.length) {
        emit({ modelSaw: results.map((r) => r.output) });
        return { usage: new Usage(), output: [{ type: "message", id: "msg-2", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }] };
      }
      return { usage: new Usage(), output: [{ type: "function_call", id: "fc-1", callId: "call-1", name, arguments: JSON.stringify(call.args), status: "completed" }] };
    }
    async *getStreamedResponse() {
      throw new Error("not streamed in these tests");
    }
  }
  const work = tool({ name: name === QUESTION_TOOL ? "unused" : name, description: "Carry out the change", parameters: ANY_OBJECT, strict: false, needsApproval: true, execute: async (args) => (emit({ ran: args }), "done as asked") });
  const agentRun = new OpenAIAgentsRun({ client, dir, id: run, ...options });
  const agent = new Agent({ name: "worker", model: new OfflineModel(), tools: agentRun.tools([work, askUserQuestionTool()]) });
  const runner = new Runner({ tracingDisabled: true });
  let result = await runner.run(agent, mode === "resume" ? await agentRun.resume(agent) : "Go");
  while (await agentRun.pause(result)) {
    emit({ paused: agentRun.requests });
    if (mode === "start-exit") return;
    result = await runner.run(agent, await agentRun.resume(agent));
  }
  emit({ final: result.finalOutput, decisions: agentRun.decisions });
}

async function claude({ client, run, mode, call, options, emit, cwd = "/" }) {
  const { ClaudeAgentGate, ASK_USER_QUESTION, EXIT_PLAN_MODE } = await import("dshq/claude-agent-sdk");
  const session = `session-${run}`;
  const name = call.name === "ask" ? ASK_USER_QUESTION : call.name === "plan" ? EXIT_PLAN_MODE : call.name;
  const input =
    call.name === "ask"
      ? { questions: call.args.questions.map((q) => ({ question: q.question, header: q.header ?? "", options: (q.options ?? []).map((o) => ({ label: o.label, description: o.description ?? "" })), multiSelect: q.multiSelect === true })) }
      : call.args;
  const gate = new ClaudeAgentGate({ client, session, wait: mode === "resume" ? 90 : 0.2, ...options });
  let verdict;
  if (mode === "start") {
    emit({ paused: [gate.requestId(session, "toolu_1")] });
    const p = await gate.canUseTool(name, input, { signal: new AbortController().signal, toolUseID: "toolu_1", requestId: "r1" });
    verdict = { decision: p.behavior, input: p.updatedInput, reason: p.message };
  } else {
    const event = { hook_event_name: "PreToolUse", session_id: session, transcript_path: "/t.jsonl", cwd, tool_name: name, tool_input: input, tool_use_id: "toolu_1" };
    const out = (await gate.hook(event, "toolu_1", { signal: new AbortController().signal })).hookSpecificOutput;
    if (out.permissionDecision === "defer") return emit({ deferred: out.permissionDecisionReason, paused: [gate.requestId(session, "toolu_1")] });
    verdict = { decision: out.permissionDecision, input: out.updatedInput, reason: out.permissionDecisionReason };
  }
  // What Claude Code does with the verdict: the tool runs with the updated input, or the
  // model gets the reason as the tool's result.
  if (verdict.decision === "allow") emit({ ran: verdict.input });
  else emit({ modelSaw: [verdict.reason] });
  emit({ final: verdict.decision, decisions: [...gate.decisions.values()] });
}

/** The framework runs by name. */
export const FRAMEWORKS = { "ai-sdk": aiSdk, "openai-agents": openaiAgents, "claude-agent-sdk": claude };
