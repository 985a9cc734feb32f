// Types of dshq/ai-sdk (ai-sdk.js): the Vercel AI SDK adapter.
import type { ModelMessage, Tool } from "ai";

import type { AdapterOptions, CallDecision } from "./adapters/core.js";

export type { CallDecision, RequestOptions } from "./adapters/core.js";

/** The default name of the question tool. */
export declare const QUESTION_TOOL: "ask_user_question";

/** A tool without `execute` the model calls to ask a person (dsh's questions); `resume()` answers it. */
export declare function askUserQuestionTool(options?: { description?: string }): Tool;

/** A run of the AI SDK whose pauses a person decides through dshq. */
export declare class AiSdkRun {
  constructor(options: AdapterOptions & {
    /** Where paused runs are kept (`DIR/ID.json`). */
    dir: string;
    /** The run: an id the next process knows too. */
    id: string;
    /** The names of question tools (default `["ask_user_question"]`). */
    questionTools?: string[];
    /** Whether reviewers may edit a call's arguments (default true). */
    editable?: boolean;
  });
  readonly id: string;
  /** The decisions the last `resume()` applied, in call order. */
  decisions: CallDecision[];
  /** The dshq request ids the last `pause()` asked. */
  requests: string[];
  /** Keep the run and ask for each call of `messages` that waits for a person: true when paused. */
  pause(messages: ModelMessage[]): Promise<boolean>;
  /** The paused run's messages with every call decided (waits), or null when none is paused. */
  resume(options?: { timeout?: number }): Promise<ModelMessage[] | null>;
  /** Let the run go. */
  done(): Promise<void>;
}
