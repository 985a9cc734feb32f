// Types of dshq/claude-agent-sdk (claude-agent-sdk.js): the Claude Agent SDK adapter.
import type { CanUseTool, HookCallback, HookCallbackMatcher } from "@anthropic-ai/claude-agent-sdk";

import type { AdapterOptions, CallDecision } from "./adapters/core.js";

export type { CallDecision, RequestOptions } from "./adapters/core.js";

export declare const ASK_USER_QUESTION: "AskUserQuestion";
export declare const EXIT_PLAN_MODE: "ExitPlanMode";

/** The gate between a Claude Agent SDK session and dshq: `canUseTool` and a `PreToolUse` hook. */
export declare class ClaudeAgentGate {
  constructor(options: AdapterOptions & {
    /** The session id (the query's `sessionId`): `canUseTool` needs it; the hook reads its input's. */
    session?: string;
    /** Seconds the hook waits for a decision before it answers `defer` (default 0). */
    wait?: number;
  });
  /** The last decision of each call, by tool use id. */
  decisions: Map<string, CallDecision>;
  /** For `options.canUseTool`: waits until the reviewer decides. */
  canUseTool: CanUseTool;
  /** The `PreToolUse` hook callback: the decision within `wait` seconds, else `defer`. */
  hook: HookCallback;
  /** For `options.hooks.PreToolUse`: the hook, for the tools `matcher` names (all by default). */
  preToolUse(options?: { matcher?: string; timeout?: number }): HookCallbackMatcher;
  /** The dshq request id of a call of `session` (its tool use id). */
  requestId(session: string, toolUseId: string): string;
}
