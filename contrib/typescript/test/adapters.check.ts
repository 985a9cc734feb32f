// Compiled with `tsc --noEmit` (never run): the adapters' declarations fit the frameworks'
// own types (the AI SDK's messages and tools, the OpenAI Agents SDK's Agent, tools and
// RunState, the Claude Agent SDK's Options: canUseTool and PreToolUse hooks).
import { generateText, tool, jsonSchema, type ModelMessage } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { Agent, Runner, tool as agentTool } from "@openai/agents-core";
import type { Options, PermissionResult, PreToolUseHookInput, SyncHookJSONOutput } from "@anthropic-ai/claude-agent-sdk";

import { Client } from "dshq";
import { AiSdkRun, askUserQuestionTool, type CallDecision } from "dshq/ai-sdk";
import { OpenAIAgentsRun, askUserQuestionTool as agentsQuestionTool } from "dshq/openai-agents";
import { ClaudeAgentGate } from "dshq/claude-agent-sdk";

const client = new Client({ root: "/var/lib/dshq" });

export async function aiSdk(): Promise<string> {
  const run = new AiSdkRun({ client, dir: "runs", id: "run-42", context: "deploys", timeout: "30m" });
  const tools = {
    deploy: tool({ description: "Deploy", inputSchema: jsonSchema<{ env: string }>({ type: "object", properties: { env: { type: "string" } } }), execute: async ({ env }) => env }),
    ask_user_question: askUserQuestionTool(),
  };
  let messages: ModelMessage[] = (await run.resume({ timeout: 60 })) ?? [{ role: "user", content: "Deploy" }];
  const result = await generateText({ model: new MockLanguageModelV4(), tools, toolApproval: { deploy: "user-approval" }, messages });
  messages = [...messages, ...result.responseMessages];
  if (await run.pause(messages)) return run.requests.join(",");
  const d: CallDecision | undefined = run.decisions[0];
  await run.done();
  return `${d?.behavior}: ${d?.message} ${d?.result?.decidedBy ?? ""} ${String(d?.result?.receipt)}`;
}

export async function openaiAgents(): Promise<unknown> {
  const run = new OpenAIAgentsRun({ client, dir: "runs", id: "run-42", quorum: { approvals: 2 } });
  const deploy = agentTool({ name: "deploy", description: "Deploy", parameters: { type: "object", properties: { env: { type: "string" } }, required: ["env"], additionalProperties: false }, strict: true, needsApproval: true, execute: async () => "ok" });
  const agent = new Agent({ name: "deployer", tools: run.tools([deploy, agentsQuestionTool()]) });
  const runner = new Runner();
  let result = await runner.run(agent, (await run.resume(agent)) ?? "Deploy");
  while (await run.pause(result)) result = await runner.run(agent, (await run.resume(agent))!);
  return result.finalOutput;
}

export function claude(): Options {
  const gate = new ClaudeAgentGate({ client, session: "5f0c...", wait: 20, ladder: { expireAfter: "1h" } });
  const direct: Promise<PermissionResult | null> = gate.canUseTool("Bash", { command: "ls" }, { signal: new AbortController().signal, toolUseID: "toolu_1", requestId: "r" });
  const input: PreToolUseHookInput = { hook_event_name: "PreToolUse", session_id: "s", transcript_path: "/t", cwd: "/", tool_name: "Bash", tool_input: {}, tool_use_id: "toolu_1" };
  const out: Promise<unknown> = gate.hook(input, "toolu_1", { signal: new AbortController().signal });
  const sync: SyncHookJSONOutput = { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "defer" } };
  void direct, out, sync;
  return { sessionId: "5f0c...", canUseTool: gate.canUseTool, hooks: { PreToolUse: [gate.preToolUse({ matcher: "Bash|Write" })] } };
}
