// Types of the adapters' shared core (adapters/core.js), used by dshq/ai-sdk,
// dshq/openai-agents and dshq/claude-agent-sdk.
import type { Answered, Client, Quorum } from "../index.js";

/** What every adapter passes to each request it asks (as `Client.askNowait` takes them). */
export interface RequestOptions {
  context?: string;
  /** e.g. "30m". */
  timeout?: string;
  /** RFC 3339. */
  deadline?: string;
  /** The deadline ladder (expireAfter, onExpire, default, ...). */
  ladder?: Record<string, unknown>;
  quorum?: Quorum;
  agent?: { id: string; instance: string };
  /** Merged into each request's meta (beside `agentRun`: the adapter, run, call id and tool). */
  meta?: Record<string, unknown>;
}

/** The decision on one tool call, the same for every framework. */
export interface CallDecision {
  callId: string;
  toolName: string;
  /** The dshq request that decided it. */
  requestId: string;
  /** Only an approval (or a question's answer) allows a call. */
  behavior: "allow" | "deny";
  /** The arguments the call runs with (allow): as the reviewer edited them, or as asked. */
  args: unknown;
  /** A question tool's answers by question id (null: skipped). */
  answers: Record<string, string | null> | null;
  /** Whether the reviewer edited the arguments (or the plan). */
  edited: boolean;
  /** The reviewer's change, as a unified diff of the plan. */
  diff: string | null;
  /** What the model is told: a denial's reason (the tool's result), or the approval note. */
  message: string;
  /** The reviewer's words on a decline. */
  feedback: string | null;
  /**
   * Why it was denied: DECLINED, NO_DECISION, EDIT_UNREADABLE, EDIT_NOT_ALLOWED, or the
   * code the request ended with (ASK_EXPIRED, ASK_CANCELLED, ASK_ABORTED, NO_DAEMON, ...).
   */
  code: string | null;
  /** The whole decision document (votes, approvers, decidedBy, receipt) when it was answered. */
  result: Answered | null;
}

/** The options every adapter takes. */
export interface AdapterOptions extends RequestOptions {
  client: Client;
}
