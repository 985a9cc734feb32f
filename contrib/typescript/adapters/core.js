// What every framework adapter of this package does, written once (dshq/ai-sdk,
// dshq/openai-agents, dshq/claude-agent-sdk are only the glue to their framework):
//
// - a pending tool call becomes a dshq request whose key is the adapter, the run (or
//   session) and the call id, so a process that restarts asks again and re-attaches;
// - the call is shown to the reviewer as a readable plan (adapters/plan.js) that the
//   reviewer may edit, and the edit is read back into arguments; a question tool becomes
//   dsh questions; a plan tool's plan is the plan itself;
// - the decision document becomes one CallDecision: allow (with the approved arguments, or
//   the answers) or deny (with the text the model is told). Only an approval allows a call:
//   a decline, a cancel, an abort, an expiry without a declared default, an edit that cannot
//   be read, an error or an unknown answer all deny it, saying why (gates fail closed);
// - an adapter that must keep its framework's state between processes keeps it in one
//   file per run under a directory the application names, written atomically (0600).
//
// These rules are the Python adapters' too (dshq.adapters._core): both packages check
// contrib/adapters-vectors.json, and docs/guide/adapters.md says them in words.

import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, unlink } from "node:fs/promises";
import { join } from "node:path";

import { BadRequest, WaitTimeout, idForKey, planReview } from "../index.js";
import { EditUnreadable, codeSpan, dump, parseEdited, renderPlan, shownName } from "./plan.js";

export { EditUnreadable, parseEdited, renderPlan };

const isPlainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** The plan review's question id, approving label and other label. */
export const PLAN_ID = "plan";
export const APPROVE = "Approve";
export const DECLINE = "Decline";

/**
 * The caller-given key of a call: a JSON array of the adapter, the run (or session) and the
 * call id, so no id can run into another whatever it holds, and the same key the Python
 * adapters give the same call.
 */
export function callKey(adapter, run, callId) {
  return dump(["dshq-adapter", adapter, String(run), String(callId)]);
}

// --- what the model reads -------------------------------------------------------------------

/**
 * What the model reads when a call of `toolName` is denied with `code` (DECLINED,
 * NO_DECISION, EDIT_UNREADABLE, EDIT_NOT_ALLOWED, or the code the request ended with):
 * `detail` is the reviewer's feedback, the reason an edit could not be read, or the message
 * of the code the request ended with. `kind`: the call's (`tool`, `plan` or `question`).
 */
export function denialMessage(toolName, code, detail, kind = "tool") {
  if (kind === "question") {
    return `No one answered the questions of ${codeSpan(toolName)}, so carry on without the answers (${code}: ${detail}).`;
  }
  const [what, so] = kind === "plan" ? ["the plan", "it was not carried out"] : [`the call to ${codeSpan(toolName)}`, "it did not run"];
  switch (code) {
    case "DECLINED":
      return `The reviewer declined ${what}, so ${so}.${detail ? ` Their feedback: ${detail}` : ""}`;
    case "NO_DECISION":
      return `No one approved ${what}, so ${so} (NO_DECISION: the review ended without an approval).`;
    case "EDIT_UNREADABLE":
      return `The reviewer's edit of ${what} could not be read, so ${so} (EDIT_UNREADABLE: ${detail}).`;
    case "EDIT_NOT_ALLOWED":
      return `The reviewer approved ${what} as edited, and it cannot take an edit, so ${so} (EDIT_NOT_ALLOWED).`;
    default:
      return `No one approved ${what}, so ${so} (${code}: ${detail}).`;
  }
}

/** The question of a tool call's plan review (plain text: a question is not Markdown). */
export function reviewQuestion(toolName) {
  return `Allow the agent to run ${shownName(toolName)}?`;
}

// --- questions ------------------------------------------------------------------------------

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const QUESTIONS = 'a question tool\'s arguments are {"questions": [...]}, with at least one question';

/**
 * The dsh questions a question tool's call asks (`args.questions`: dsh's vocabulary, or
 * Claude's AskUserQuestion, which agrees with it): a text is a question; an id is kept when
 * it is an id and not taken, else `q1`, `q2`, ... by position; `multi_select` is spelled
 * `multiSelect`; fields dshq does not know are dropped. Throws BadRequest when there is no
 * question to ask.
 */
export function dshQuestions(args) {
  const list = isPlainObject(args) ? args.questions : undefined;
  if (!Array.isArray(list) || !list.length) throw new BadRequest(QUESTIONS);
  const seen = new Set();
  return list.map((q0, i) => {
    const n = i + 1;
    const q = typeof q0 === "string" ? { question: q0 } : q0;
    const text = isPlainObject(q) ? q.question : undefined;
    if (typeof text !== "string" || !text) throw new BadRequest(`question ${n} has no text (question)`);
    let id = q.id;
    if (!(typeof id === "string" && ID.test(id) && !seen.has(id))) {
      id = `q${n}`;
      while (seen.has(id)) id = `${id}-${n}`;
    }
    seen.add(id);
    const out = { id, question: text };
    for (const name of ["header", "detail"]) if (typeof q[name] === "string") out[name] = q[name];
    if (Array.isArray(q.options)) out.options = q.options.map((o, j) => optionOf(n, j + 1, o));
    if (q.multiSelect === true || q.multi_select === true) out.multiSelect = true;
    return out;
  });
}

/**
 * The answers by question text, as Claude's AskUserQuestion takes them in
 * `updatedInput.answers` (`answers`: by question id; a skipped question has none).
 */
export function answersByText(args, answers) {
  const out = {};
  for (const q of dshQuestions(args)) {
    const value = answers?.[q.id];
    if (value !== null && value !== undefined) out[q.question] = value;
  }
  return out;
}

/** What the model reads as the question tool's result: `{answers: {ID: ANSWER}}`. */
export function answersResult(answers) {
  return { answers: { ...answers } };
}

function optionOf(n, m, o) {
  const label = typeof o === "string" ? o : isPlainObject(o) ? o.label : undefined;
  if (typeof label !== "string") throw new BadRequest(`option ${m} of question ${n} has no label`);
  const out = { label };
  if (isPlainObject(o) && typeof o.description === "string") out.description = o.description;
  return out;
}

// --- calls, requests and decisions ----------------------------------------------------------

/**
 * The request of a call. `call`: `{adapter, run, callId, toolName, args, kind}` with kind
 * `tool` (a plan of the arguments; `editable` unless false), `plan` (the plan is
 * `args.plan`, as Claude's ExitPlanMode gives it) or `question` (`args.questions`).
 */
export function requestOf(call, options = {}) {
  const { context, timeout, deadline, ladder, quorum, agent, meta } = options;
  let questions;
  if (call.kind === "question") {
    questions = dshQuestions(call.args);
  } else if (call.kind === "plan") {
    questions = [
      planReview(typeof call.args?.plan === "string" ? call.args.plan : "", {
        id: PLAN_ID,
        header: "Plan",
        question: "The agent has a plan and asks to carry it out. Approve it?",
        approve: APPROVE,
        decline: "Keep planning",
      }),
    ];
  } else {
    questions = [
      planReview(renderPlan(call.toolName, call.args), {
        id: PLAN_ID,
        header: "Tool call",
        question: reviewQuestion(call.toolName),
        approve: APPROVE,
        decline: DECLINE,
        editable: call.editable === false ? false : undefined,
      }),
    ];
  }
  const doc = { questions };
  const fields = { context, timeout, deadline, ladder, quorum, agent };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) doc[k] = v;
  doc.meta = { ...(meta ?? {}), agentRun: { adapter: call.adapter, run: String(call.run), callId: String(call.callId), tool: call.toolName } };
  return { doc, key: callKey(call.adapter, call.run, call.callId) };
}

/** The dshq request id of a call. */
export function requestIdOf(call) {
  return idForKey(callKey(call.adapter, call.run, call.callId));
}

/** Ask for a call (again: the same key and content re-attach to the request). */
export async function askFor(client, call, options) {
  const { doc, key } = requestOf(call, options);
  return client.askNowait(doc, { key });
}

function voters(result) {
  const who = result.approvers.length ? result.approvers : result.provider ? [result.provider] : [];
  return who.length ? ` by ${who.join(", ")}` : "";
}

function answersOf(result, questions) {
  const out = {};
  for (const q of questions) out[q.id] = result.answers[q.id]?.value ?? null;
  return out;
}

function denied(call, requestId, code, detail, extra = {}) {
  const message = denialMessage(call.toolName, code, detail, call.kind);
  return { callId: call.callId, toolName: call.toolName, requestId, behavior: "deny", args: null, answers: null, edited: false, diff: null, message, feedback: null, code, result: null, ...extra };
}

function allowed(call, requestId, message, extra) {
  return { ...denied(call, requestId, null, null), behavior: "allow", message, ...extra };
}

/**
 * The decision on `call` from its request's ending: `{result}` (the Answered) or
 * `{error}` (anything thrown while asking or waiting).
 */
export function decisionOf(call, requestId, { result, error }) {
  if (!result) return denied(call, requestId, error?.code || error?.name || "ERROR", error?.message ?? String(error));
  if (call.kind === "question") {
    const answers = answersOf(result, dshQuestions(call.args));
    return allowed(call, requestId, `Answered in dshq request ${requestId}${voters(result)}.`, { args: call.args, answers, result });
  }
  if (result.decision === "declined") {
    return denied(call, requestId, "DECLINED", result.feedback, { feedback: result.feedback, result });
  }
  if (!result.approved) return denied(call, requestId, "NO_DECISION", null, { result });
  const edit = result.edited[PLAN_ID] ?? null;
  let args = call.args;
  if (edit && call.kind === "plan") {
    args = { ...(isPlainObject(call.args) ? call.args : {}), plan: edit.approved };
  } else if (edit) {
    if (call.editable === false) return denied(call, requestId, "EDIT_NOT_ALLOWED", null, { result });
    try {
      args = parseEdited(edit.approved, call.toolName, call.args);
    } catch (e) {
      if (!(e instanceof EditUnreadable)) throw e;
      return denied(call, requestId, "EDIT_UNREADABLE", e.reason, { result });
    }
  }
  const message = `Approved in dshq request ${requestId}${voters(result)}${edit ? ", as edited" : ""}.`;
  return allowed(call, requestId, message, { args, edited: edit !== null, diff: edit?.diff ?? null, result });
}

/**
 * Ask for `call` (or re-attach) and wait for its decision; null when `timeout` (seconds)
 * passes first, the request still open. Any other failure is a denial saying why.
 */
export async function decide(client, call, options = {}, { timeout, signal } = {}) {
  const requestId = requestIdOf(call);
  let ticket;
  try {
    ticket = await askFor(client, call, options);
    const wait = client.wait(ticket, { timeout });
    const result = signal ? await abortable(wait, signal) : await wait;
    return decisionOf(call, requestId, { result });
  } catch (e) {
    if (e instanceof WaitTimeout) return null;
    if (e?.name === "AbortError" && ticket) {
      await client.abort(ticket, "the agent's run was aborted while it waited").catch(() => {});
    }
    return decisionOf(call, requestId, { error: e });
  }
}

function abortable(promise, signal) {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const stop = () => reject(abortError(signal));
    signal.addEventListener("abort", stop, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", stop));
  });
}

function abortError(signal) {
  const e = new Error(`the agent's run was aborted${signal.reason ? `: ${signal.reason}` : ""}`);
  e.name = "AbortError";
  e.code = "ABORTED";
  return e;
}

/** Decide every call (in parallel); WaitTimeout when any is still open after `timeout`. */
export async function decideAll(client, calls, options, { timeout } = {}) {
  const decisions = await Promise.all(calls.map((c) => decide(client, c, options, { timeout })));
  const open = calls.filter((_, i) => decisions[i] === null);
  if (open.length) {
    throw new WaitTimeout(`${open.length} of ${calls.length} calls are still waiting for a reviewer after ${timeout}s (the run stays paused)`);
  }
  return decisions;
}

// --- a run's saved state --------------------------------------------------------------------

const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Where an adapter keeps a paused run: `DIR/RUN.json`, one file per run, written atomically. */
export class RunFile {
  constructor(dir, run, adapter) {
    if (typeof dir !== "string" || !dir) throw new TypeError("name the directory the paused runs are kept in (dir)");
    if (typeof run !== "string" || !RUN_ID.test(run)) {
      throw new BadRequest(`run id ${JSON.stringify(run)} is not an id: a letter or digit, then at most 127 letters, digits, '.', '_' or '-'`);
    }
    this.dir = dir;
    this.run = run;
    this.adapter = adapter;
    this.path = join(dir, `${run}.json`);
  }

  /** The saved state, or null when the run is not paused. */
  async load() {
    let text;
    try {
      text = await readFile(this.path, "utf8");
    } catch (e) {
      if (e.code === "ENOENT") return null;
      throw e;
    }
    const doc = JSON.parse(text);
    if (doc?.adapter !== this.adapter || doc?.run !== this.run) {
      throw new BadRequest(`${this.path} is not a paused ${this.adapter} run ${this.run} (it names ${doc?.adapter} run ${doc?.run})`);
    }
    return doc;
  }

  async save(doc) {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const tmp = join(this.dir, `.${this.run}.${process.pid}-${randomBytes(6).toString("hex")}.tmp`);
    const f = await open(tmp, "wx", 0o600);
    try {
      await f.writeFile(JSON.stringify({ adapter: this.adapter, run: this.run, savedAt: new Date().toISOString(), ...doc }));
      await f.sync();
    } finally {
      await f.close();
    }
    await rename(tmp, this.path);
  }

  async remove() {
    await unlink(this.path).catch((e) => {
      if (e.code !== "ENOENT") throw e;
    });
  }
}

/** The request options an adapter passes through (the rest of its options are its own). */
export function requestOptions({ context, timeout, deadline, ladder, quorum, agent, meta } = {}) {
  return { context, timeout, deadline, ladder, quorum, agent, meta };
}

/** The JSON Schema of a question tool's input: dsh's questions. */
export const QUESTIONS_SCHEMA = Object.freeze({
  type: "object",
  properties: {
    questions: {
      type: "array",
      minItems: 1,
      description: "The questions for a person; they are answered later, by a reviewer.",
      items: {
        type: "object",
        properties: {
          id: { type: "string", description: "A short id for the answer (q1, q2, ... when left out)" },
          question: { type: "string" },
          header: { type: "string", description: "A very short label" },
          detail: { type: "string", description: "More context for the person" },
          options: {
            type: "array",
            items: { type: "object", properties: { label: { type: "string" }, description: { type: "string" } }, required: ["label"] },
          },
          multiSelect: { type: "boolean" },
        },
        required: ["question"],
      },
    },
  },
  required: ["questions"],
});

/** The default name of the question tool the adapters offer. */
export const QUESTION_TOOL = "ask_user_question";

/** The description of a question tool. */
export const QUESTION_TOOL_DESCRIPTION =
  "Ask a person one or more questions and wait for the answers (they may come much later: the run pauses until then). " +
  "Give options when the choice is among known answers; the person may also write their own. " +
  "The result maps each question id to the answer, or null when the person skipped it.";
