// dshq for DeepSeek Harness (dsh): dsh's two human seams answered through dshq.
//
// - `registerDshqProvider(ctx, options)` holds dsh's one user-questions provider slot
//   (`ctx.userQuestions.registerProvider`): every `ask()` becomes a durable dshq request
//   and its answer comes back in dsh's own `AskUserQuestionAnswer` encoding.
// - `installDshqApproval(ctx, options)` is an answerer on dsh's approval chain
//   (`'approval/request'`): a tool call's permission becomes a dshq plan review.
//
// Plain ESM on the dshq Node client (`dshq`), types in index.d.ts. dsh hands a provider
// the questions, the agent and a signal, but not the tool call that asked; a
// `tools/execute` wrapper (dsh's around-dispatch extension point) keeps the running call in
// an AsyncLocalStorage so the provider can key its request by agent and call. A dsh process
// restarted mid-question that runs the same call again re-attaches to the same request.

import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

import { AskCancelled, Client, DshqError, PlanDeclined, WaitTimeout, approvalOf } from "dshq";
import { UserQuestionError } from "@deepseek-ai/dsh-user-questions";

// --- codes ------------------------------------------------------------------------------

/**
 * The `UserQuestionError` code a dsh caller meets for each dshq code that can end an ask.
 * dsh 0.1 names few failures; a model acts on them: NO_PROVIDER (nobody is there to answer:
 * carry on without the human), ASK_ABORTED (this side gave up), ASK_CANCELLED (the human
 * cancelled). A dshq code dsh has no word for keeps its dshq name; the dshq error is the
 * `cause` either way.
 */
export const CODE_MAP = Object.freeze({
  ASK_ABORTED: "ASK_ABORTED",
  ASK_CANCELLED: "ASK_CANCELLED",
  ASK_EXPIRED: "NO_PROVIDER",
  NO_PROVIDER: "NO_PROVIDER",
  NO_DAEMON: "NO_PROVIDER",
  WAIT_TIMEOUT: "NO_PROVIDER",
  IO: "NO_PROVIDER",
  NO_ROOT: "NO_PROVIDER",
  STORE: "NO_PROVIDER",
  UNSAFE_ROOT: "NO_PROVIDER",
  UNAUTHORIZED: "NO_PROVIDER",
  FORBIDDEN: "NO_PROVIDER",
  EMPTY_QUESTIONS: "EMPTY_QUESTIONS",
  BAD_INTENT: "BAD_INTENT",
  CALLER_NOT_LIVE: "CALLER_NOT_LIVE",
  DELEGATED_CALLER: "DELEGATED_CALLER",
  TOO_LARGE: "BAD_REQUEST",
});

/** The dsh code of a dshq code (CODE_MAP, else the dshq code itself). */
export function dshCode(code) {
  return CODE_MAP[code] ?? code;
}

/** A `UserQuestionError` for any failure met while asking through dshq. */
export function toUserQuestionError(err) {
  if (err instanceof UserQuestionError) return err;
  if (err instanceof DshqError) {
    return new UserQuestionError(`${err.message} (dshq ${err.code})`, dshCode(err.code), { cause: err });
  }
  return new UserQuestionError(`dshq cannot be reached: ${err?.message ?? err}`, "NO_PROVIDER", { cause: err });
}

const aborted = () => new UserQuestionError("ask_user_question was aborted before the user answered", "ASK_ABORTED");

// --- the running tool call ----------------------------------------------------------------

const calls = new AsyncLocalStorage();

/** Keep the running tool call (agent, call id, tool name) where the provider can read it. */
function trackCalls(ctx) {
  return ctx.on("tools/execute", (exec, next) =>
    calls.run({ callId: exec.callId, name: exec.name, agent: exec.agent }, next),
  );
}

/** The tool call the current code runs in, when it runs in one. */
export function currentCall() {
  return calls.getStore();
}

// --- asking dshq and waiting ------------------------------------------------------------

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function clientOf(options) {
  const poll = seconds(options.poll, "poll") ?? 0.2;
  if (options.client) return options.client;
  const { root, url, token } = options;
  return new Client({ root, url, token, poll });
}

function seconds(v, what) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !(v > 0) || !Number.isFinite(v)) throw new TypeError(`${what} must be a positive number of seconds`);
  return v;
}

/** Both signals: dsh's (the asker gave up) and the disposer's (the provider went away). */
function either(a, b) {
  return a ? AbortSignal.any([a, b]) : b;
}

/** How long, after aborting a request nobody answered in time, an answer that crossed the abort is looked for. */
const LAST_LOOK_SECONDS = 5;

/**
 * Ask dshq `request` under `key` and wait for its decision: the client's `Answered` (the
 * decision document), or the client's typed error of any other ending (NoDaemon when no
 * daemon serves a file root), or a UserQuestionError when dsh's `signal` aborts, the
 * disposer `released` the provider, or nobody answered within `wait` seconds.
 */
async function settle(client, request, { key, signal, released, wait }) {
  if (signal?.aborted) throw aborted();
  const ticket = await client.askNowait(request, { key });
  try {
    return await client.wait(ticket, { timeout: wait, signal: either(signal, released) });
  } catch (e) {
    if (signal?.aborted) {
      await client.abort(ticket, "dsh aborted the question").catch(() => {});
      throw aborted();
    }
    if (released.aborted) {
      throw new UserQuestionError(
        `the dshq provider was disposed while question ${ticket.id} waited (the request stays open; a provider registered again re-attaches to it)`,
        "NO_PROVIDER",
      );
    }
    if (!(e instanceof WaitTimeout) || wait === undefined) throw e;
    await client.abort(ticket, `nobody answered within ${wait}s`).catch(() => {});
    // An answer that crossed the abort wins; otherwise the request ends aborted.
    const late = await client.wait(ticket, { timeout: LAST_LOOK_SECONDS }).catch(() => null);
    if (late) return late;
    throw new UserQuestionError(`no reviewer answered through dshq within ${wait}s (request ${ticket.id} was aborted)`, "NO_PROVIDER");
  }
}

/** The common options of the provider and the approval answerer. */
function common(options) {
  return {
    client: clientOf(options),
    context: options.context,
    timeout: options.timeout,
  };
}

function agentId(agent) {
  return agent?.id ?? agent?.session?.id;
}

// --- questions: dsh → dshq → dsh ----------------------------------------------------------

/** dsh question ids as dshq ids: kept when dshq takes them, else `qN` (mapped back on answer). */
function questionIds(questions) {
  const taken = new Set(questions.map((q) => q.id).filter((id) => typeof id === "string" && ID.test(id)));
  const used = new Set();
  return questions.map((q, i) => {
    if (typeof q.id === "string" && ID.test(q.id) && !used.has(q.id)) {
      used.add(q.id);
      return q.id;
    }
    let id = `q${i + 1}`;
    while (taken.has(id) || used.has(id)) id = `${id}_`;
    used.add(id);
    return id;
  });
}

const defined = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** The dshq request of a dsh `AskUserQuestionRequest` (deterministic: asked again, it is the same request). */
export function requestOf(request, { call, context, timeout, requireProvider } = {}) {
  const ids = questionIds(request.questions);
  const renamed = {};
  const questions = request.questions.map((q, i) => {
    if (ids[i] !== q.id) renamed[ids[i]] = q.id;
    return defined({
      id: ids[i],
      question: q.question,
      detail: q.detail,
      header: q.header,
      options: q.options?.map((o) => defined({ label: o.label, description: o.description })),
      multiSelect: q.multiSelect,
      intent: q.intent ? { kind: q.intent.kind, approve: q.intent.approve } : undefined,
    });
  });
  const dsh = defined({
    agent: agentId(request.agent ?? call?.agent),
    callId: call?.callId,
    tool: call?.name,
    questionIds: Object.keys(renamed).length ? renamed : undefined,
  });
  return defined({ questions, context, timeout, requireProvider: requireProvider || undefined, meta: { dsh } });
}

/**
 * dsh's `AskUserQuestionAnswer` of a dshq decision (the client's `Answered`), in question
 * order under dsh's own question ids. Each item is the decision document's answer item:
 * `{id, selected, custom?}` as dsh encodes it, and `edited` (the text the reviewer
 * approved) when they approved a proposal as edited. The whole decision document rides
 * along as `answer.dshq` (not enumerable, so the answer compares and serializes as dsh's).
 */
export function answerOf(result, request) {
  const back = request?.meta?.dsh?.questionIds ?? {};
  const ids = request?.questions?.map((q) => q.id) ?? Object.keys(result.answers);
  const answers = ids
    .filter((id) => result.answers[id] !== undefined)
    .map((id) => {
      const a = result.answers[id];
      const item = { id: back[id] ?? id, selected: [...a.selected] };
      if (a.custom !== null) item.custom = a.custom;
      if (a.edited !== null) item.edited = a.edited;
      return item;
    });
  const answer = { answers };
  Object.defineProperty(answer, "dshq", { value: result, enumerable: false });
  return answer;
}

/**
 * Register dshq as the provider of `ctx.userQuestions` (dsh's one provider slot: a second
 * provider is DUPLICATE_PROVIDER). Returns the disposer: it unregisters the provider, stops
 * the waits of this process (they end NO_PROVIDER) and leaves their dshq requests open, so a
 * provider registered again, here or in a restarted process, re-attaches to them.
 */
export function registerDshqProvider(ctx, options = {}) {
  const o = common(options);
  const wait = seconds(options.wait, "wait");
  const requireProvider = options.requireProvider === true;
  const keyOf =
    options.key ??
    ((request, call) => {
      const agent = agentId(request.agent ?? call?.agent);
      return call?.callId !== undefined ? `dsh/user-questions/${agent ?? "-"}/${call.callId}` : undefined;
    });
  const released = new AbortController();
  const untrack = trackCalls(ctx);
  const provider = {
    async ask(request) {
      const call = currentCall();
      const doc = requestOf(request, { call, context: o.context, timeout: o.timeout, requireProvider });
      const key = keyOf(request, call) ?? `dsh/user-questions/once/${randomUUID()}`;
      try {
        return answerOf(await settle(o.client, doc, { key, signal: request.signal, released: released.signal, wait }), doc);
      } catch (e) {
        throw toUserQuestionError(e);
      }
    },
  };
  let unregister;
  try {
    unregister = ctx.userQuestions.registerProvider(provider);
  } catch (e) {
    untrack();
    throw e;
  }
  return () => {
    released.abort();
    untrack();
    unregister();
  };
}

// --- approval -----------------------------------------------------------------------------

const ALLOW = "Allow once";
const REJECT = "Reject";

function argumentsOf(req) {
  if (req.callId === undefined) return undefined;
  const events = req.agent?.session?.events ?? [];
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const e = events[i];
    if (e.type === "tool/call" && e.data?.callId === req.callId) return e.data.arguments;
  }
  return undefined;
}

function fence(text) {
  let f = "```";
  while (text.includes(f)) f += "`";
  return `${f}json\n${text}\n${f}`;
}

/** The dshq plan review of a dsh approval request: the tool, its call, the reason, readable. */
export function approvalRequestOf(req, { context, timeout } = {}) {
  const args = argumentsOf(req);
  let pretty = args;
  try {
    if (typeof args === "string") pretty = JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    // arguments the model wrote are shown as written
  }
  const lines = [`The agent wants to run the tool \`${req.toolName}\`.`, ""];
  if (req.reason !== undefined) lines.push(`Why it asks: ${req.reason}`, "");
  lines.push(`Agent: ${agentId(req.agent) ?? "(none)"}`);
  if (req.callId !== undefined) lines.push(`Tool call: ${req.callId}`);
  if (pretty !== undefined) lines.push("", "Arguments:", "", fence(String(pretty)));
  lines.push("", "Allow once runs this one call; a reviewer cannot change its arguments here (reject with feedback instead).");
  return defined({
    questions: [
      {
        id: "approval",
        header: "Tool approval",
        question: `Allow \`${req.toolName}\` to run once?`,
        detail: lines.join("\n"),
        options: [{ label: ALLOW, description: "Run this call, once" }, { label: REJECT, description: "Do not run it (say why)" }],
        intent: { kind: "plan-review", approve: ALLOW },
        // dsh's approval outcome cannot carry edited arguments: an edit is refused.
        editable: false,
      },
    ],
    context,
    timeout,
    meta: { dsh: defined({ agent: agentId(req.agent), callId: req.callId, tool: req.toolName, approval: true }) },
  });
}

/**
 * Answer dsh's approval requests (`ctx.approval`) through dshq. `allowed-once` only on an
 * approval; `rejected` on a decline (its feedback becomes the denied call's result) or a
 * reviewer's cancel; `cancelled` when dsh's signal aborts (the dshq request is aborted).
 * With no daemon, or no answer within `wait` (default 600 s), the request is passed on
 * (`next()`, which ends `unavailable` when nothing else claims it), or answered
 * `unavailable` with `onUnavailable: "unavailable"`. Returns the disposer.
 */
export function installDshqApproval(ctx, options = {}) {
  const o = common(options);
  const wait = seconds(options.wait, "wait") ?? 600;
  const onUnavailable = options.onUnavailable ?? "next";
  if (onUnavailable !== "next" && onUnavailable !== "unavailable") {
    throw new TypeError('onUnavailable must be "next" or "unavailable"');
  }
  const released = new AbortController();
  const feedback = new Map(); // "agent\ncall" → the reviewer's reason
  const offRequest = ctx.on("approval/request", async (req, next) => {
    const doc = approvalRequestOf(req, { context: o.context, timeout: o.timeout });
    const agent = agentId(req.agent);
    const key = req.callId !== undefined ? `dsh/approval/${agent ?? "-"}/${req.callId}` : `dsh/approval/once/${randomUUID()}`;
    const remember = (why) => {
      if (req.callId !== undefined) feedback.set(`${agent}\n${req.callId}`, why);
    };
    let result;
    try {
      result = await settle(o.client, doc, { key, signal: req.signal, released: released.signal, wait });
    } catch (e) {
      if (req.signal?.aborted) return "cancelled";
      if (e instanceof AskCancelled) {
        remember(`the reviewer cancelled the request: ${e.message}`);
        return "rejected";
      }
      // No daemon (NO_DAEMON), no answer in time, an expired request, an unreachable API.
      return onUnavailable === "next" ? next() : "unavailable";
    }
    // The gates' one rule (the TypeScript client's): allowed only on an approval of the
    // call as asked; a decline, a review with no decision or an edit is a refusal.
    try {
      approvalOf(result, doc.questions[0].detail, { questionId: "approval", takesEdit: false });
      return "allowed-once";
    } catch (e) {
      if (!(e instanceof PlanDeclined)) throw e;
      const chose = result.answers.approval?.selected?.[0];
      remember(e.feedback ?? (chose !== undefined ? `the reviewer chose ${JSON.stringify(chose)}` : e.message));
      return "rejected";
    }
  });
  // dsh's outcome is one word; the reviewer's reason reaches the model as the result of
  // the call it denied.
  const offPost = ctx.on("tools/post-execute", (exec, result, next) => {
    const k = `${agentId(exec.agent)}\n${exec.callId}`;
    const why = feedback.get(k);
    if (why === undefined || !result.isError) return next();
    feedback.delete(k);
    return Promise.resolve({ kind: "block", feedback: [{ type: "text", text: `Error: the user rejected tool "${exec.name}": ${why}` }] });
  });
  return () => {
    released.abort();
    offRequest();
    offPost();
    feedback.clear();
  };
}
