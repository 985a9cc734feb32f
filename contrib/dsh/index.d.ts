// Types of dshq-dsh (index.js). Hand-written, checked with `tsc --noEmit` against dsh's own
// declarations (the 0.1.0-rc.8 line).
import type { Context } from "@deepseek-ai/cordis";
import type {
  AskUserQuestionAnswer,
  AskUserQuestionAnswerItem,
  AskUserQuestionRequest,
  UserQuestionError,
} from "@deepseek-ai/dsh-user-questions";
import type { ApprovalRequest } from "@deepseek-ai/dsh-user-approval";
import type { Answered, Client, Request } from "dshq";

/** Where dshq is and how the waits behave (both seams). */
export interface DshqOptions {
  /** A dshq client; else one is made from `root`, or `url` and `token` (else DSHQ_ROOT / DSHQ_URL). */
  client?: Client;
  root?: string;
  url?: string;
  token?: string;
  /** The dshq context the requests go to (default "default"). */
  context?: string;
  /** Seconds between looks for an outcome (default 0.2). */
  poll?: number;
  /** dshq's own request timeout (e.g. "30m"): the request ends ASK_ABORTED when it passes. */
  timeout?: string;
}

/** The tool call a provider's ask runs in (from dsh's `tools/execute`), when it runs in one. */
export interface DshCall {
  callId: string;
  name: string;
  agent?: { id: string };
}

export interface ProviderOptions extends DshqOptions {
  /** Seconds to wait for an answer before the ask is aborted and ends NO_PROVIDER (default: no limit). */
  wait?: number;
  /** Refuse at once (NO_PROVIDER) when no reviewer holds the context's lease (default false: wait in the queue). */
  requireProvider?: boolean;
  /**
   * The key of a request (the same key re-attaches to the same dshq request). Default: the
   * agent and the tool call, `dsh/user-questions/AGENT/CALL`; outside a tool call, none
   * (each ask is a new request).
   */
  key?: (request: AskUserQuestionRequest, call: DshCall | undefined) => string | undefined;
}

export interface ApprovalOptions extends DshqOptions {
  /** Seconds to wait for a reviewer before passing the request on (default 600). */
  wait?: number;
  /** With no daemon or no answer in time: pass on to the next answerer ("next", default) or answer "unavailable". */
  onUnavailable?: "next" | "unavailable";
}

/** dsh's answer item, and the decision document's `edited`: the text the reviewer approved, when they edited the proposal. */
export type DshqAnswerItem = AskUserQuestionAnswerItem & {
  edited?: string;
};

/** dsh's answer, as dsh encodes it, and (not enumerable) the decision document as the dshq client gives it. */
export interface DshqAnswer extends AskUserQuestionAnswer {
  answers: DshqAnswerItem[];
  readonly dshq: Answered;
}

/** Register dshq as `ctx.userQuestions`' provider; returns the disposer. */
export function registerDshqProvider(ctx: Context, options?: ProviderOptions): () => void;

/** Answer dsh's approval requests through dshq; returns the disposer. */
export function installDshqApproval(ctx: Context, options?: ApprovalOptions): () => void;

/** The tool call the current code runs in, when it runs in one. */
export function currentCall(): DshCall | undefined;

/** dshq code → the UserQuestionError code a dsh caller meets. */
export const CODE_MAP: Readonly<Record<string, string>>;
export function dshCode(code: string): string;
export function toUserQuestionError(err: unknown): UserQuestionError;
export function requestOf(
  request: AskUserQuestionRequest,
  options?: { call?: DshCall; context?: string; timeout?: string; requireProvider?: boolean },
): Request;
export function answerOf(result: Answered, request?: Request): DshqAnswer;
export function approvalRequestOf(req: ApprovalRequest, options?: { context?: string; timeout?: string }): Request;
