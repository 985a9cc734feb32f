// Types of dshq/openai-agents (openai-agents.js): the OpenAI Agents SDK adapter.
import type { Agent, FunctionTool, RunState, Tool } from "@openai/agents-core";

import type { AdapterOptions, CallDecision } from "./adapters/core.js";

export type { CallDecision, RequestOptions } from "./adapters/core.js";

/** The default name of the question tool. */
export declare const QUESTION_TOOL: "ask_user_question";

/** A tool the model calls to ask a person (dsh's questions): it needs approval; `resume()` answers it. */
export declare function askUserQuestionTool(options?: { name?: string; description?: string }): FunctionTool<any, any, string>;

/** A run of the OpenAI Agents SDK whose interruptions a person decides through dshq. */
export declare class OpenAIAgentsRun {
  constructor(options: AdapterOptions & {
    /** Where paused runs are kept (`DIR/ID.json`: the RunState's JSON and its schema version). */
    dir: string;
    /** The run: an id the next process knows too. */
    id: string;
  });
  readonly id: string;
  /** The decisions the last `resume()` applied, in call order. */
  decisions: CallDecision[];
  /** The dshq request ids the last `pause()` asked. */
  requests: string[];
  /** The tools, each function tool wrapped to run with the arguments the reviewer approved. */
  tools<T extends Tool<any>>(tools: T[]): T[];
  /** Keep the run and ask for each of `result.interruptions`: true when paused. */
  pause(result: { interruptions?: unknown[]; state: RunState<any, any> }): Promise<boolean>;
  /** The paused run's state with every interruption approved or rejected (waits), or null when none is paused. */
  resume<TAgent extends Agent<any, any>>(agent: TAgent, options?: { timeout?: number }): Promise<RunState<any, TAgent> | null>;
  /** Let the run go. */
  done(): Promise<void>;
}
