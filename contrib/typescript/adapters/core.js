// What every framework adapter of this package does, written once (dshq/ai-sdk,
// dshq/openai-agents, dshq/claude-agent-sdk are only the glue to their framework):
//
// - a pending tool call becomes a dshq request whose key is the adapter, the run (or
//   session) and the call id, so a process that restarts asks again and re-attaches;
// - the call is shown to the reviewer as a readable plan (`name: value` lines, long text as
//   a block) that the reviewer may edit, and the edit is read back into arguments; a
//   question tool becomes dsh questions; a plan tool's plan is the plan itself;
// - the decision document becomes one CallDecision: allow (with the approved arguments, or
//   the answers) or deny (with the text the model is told). Only an approval allows a call:
//   a decline, a cancel, an abort, an expiry without a declared default, an edit that cannot
//   be read, an error or an unknown answer all deny it, saying why (gates fail closed);
// - an adapter that must keep its framework's state between processes keeps it in one
//   file per run under a directory the application names, written atomically (0600).

import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, unlink } from "node:fs/promises";
import { join } from "node:path";

import { BadRequest, WaitTimeout, idForKey, planReview } from "../index.js";

/** The plan review's question id, approving label and other label. */
export const PLAN_ID = "plan";
export const APPROVE = "Approve";
export const DECLINE = "Decline";

/** The caller-given key of a call: the adapter, the run (or session) and the call id. */
export function callKey(adapter, run, callId) {
  return JSON.stringify(["dshq-adapter", adapter, String(run), String(callId)]);
}

// --- the plan: arguments a person reads and edits ---------------------------------------
//
// `Run \`TOOL\` with:`, a blank line, then one `name: value` line per argument: a string as
// it is (quoted as JSON when it would not read back the same), a string of several lines as
// a block (`name: |`, its lines indented by two spaces; `|-` when it does not end with a
// newline), anything else as compact JSON. An edit is read back by the type each argument
// had: a string stays a string, a number must still be JSON; a new argument is JSON when it
// parses as JSON, else a string; a removed line removes the argument.

const SIMPLE_KEY = /^[A-Za-z_$][A-Za-z0-9_$.-]*$/;
const isPlainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function headOf(toolName, whole) {
  return whole ? `Run \`${toolName}\` with the input:` : `Run \`${toolName}\` with:`;
}

function keyText(k) {
  return SIMPLE_KEY.test(k) ? k : JSON.stringify(k);
}

function valueLines(v) {
  if (typeof v === "string") {
    const plain = v !== "" && !v.includes("\n") && !v.includes("\r") && v.trim() === v && !/^["|]/.test(v);
    if (plain) return [` ${v}`];
    const block = v.includes("\n") && !v.includes("\r") && !v.endsWith("\n\n") && !v.startsWith("\n");
    if (block) {
      const keep = v.endsWith("\n");
      const lines = (keep ? v.slice(0, -1) : v).split("\n");
      return [keep ? " |" : " |-", ...lines.map((l) => (l === "" ? "" : `  ${l}`))];
    }
    return [` ${JSON.stringify(v)}`];
  }
  return [` ${JSON.stringify(v ?? null)}`];
}

/** The plan a reviewer reads for a call of `toolName` with `args`. */
export function renderPlan(toolName, args) {
  const whole = !isPlainObject(args);
  const lines = [headOf(toolName, whole), ""];
  const entries = whole ? [["input", args]] : Object.entries(args);
  for (const [k, v] of entries) {
    const [first, ...rest] = valueLines(v);
    lines.push(`${keyText(k)}:${first}`, ...rest);
  }
  return `${lines.join("\n")}\n`;
}

/** An edited plan that does not read back as arguments. */
export class EditUnreadable extends Error {
  constructor(message) {
    super(message);
    this.name = "EditUnreadable";
  }
}

function splitKey(line, n) {
  if (line.startsWith('"')) {
    for (let i = 1; i < line.length; i++) {
      if (line[i] === "\\") i++;
      else if (line[i] === '"') {
        let key;
        try {
          key = JSON.parse(line.slice(0, i + 1));
        } catch {
          break;
        }
        if (line[i + 1] !== ":") break;
        return [key, line.slice(i + 2)];
      }
    }
    throw new EditUnreadable(`line ${n}: a quoted name must be JSON and be followed by ':'`);
  }
  const at = line.indexOf(":");
  if (at <= 0) throw new EditUnreadable(`line ${n} is not \`name: value\`: ${JSON.stringify(line)}`);
  return [line.slice(0, at), line.slice(at + 1)];
}

function scalar(text, original, known, key, n) {
  if (typeof original === "string" || (!known && text.startsWith('"'))) {
    if (!text.startsWith('"')) return text;
    try {
      const s = JSON.parse(text);
      if (typeof s === "string") return s;
    } catch {
      // fall through
    }
    throw new EditUnreadable(`line ${n}: the value of ${JSON.stringify(key)} starts with '"' and is not a JSON string`);
  }
  try {
    return JSON.parse(text);
  } catch {
    if (!known) return text;
    throw new EditUnreadable(`line ${n}: the value of ${JSON.stringify(key)} must stay JSON (it was ${JSON.stringify(original)}), not ${JSON.stringify(text)}`);
  }
}

/** The arguments an edited plan gives for a call of `toolName` whose arguments were `args`. */
export function parseEdited(text, toolName, args) {
  const whole = !isPlainObject(args);
  const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
  const head = headOf(toolName, whole);
  if (lines[0].trimEnd() !== head) {
    throw new EditUnreadable(`the first line must stay ${JSON.stringify(head)} (the tool cannot change)`);
  }
  const original = whole ? { input: args } : args;
  const out = {};
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === "") continue;
    const [key, rest0] = splitKey(line, i + 1);
    if (Object.hasOwn(out, key)) throw new EditUnreadable(`line ${i + 1}: ${JSON.stringify(key)} is given twice`);
    const rest = rest0.startsWith(" ") ? rest0.slice(1) : rest0;
    const known = Object.hasOwn(original, key);
    if (rest.trimEnd() === "|" || rest.trimEnd() === "|-") {
      const block = [];
      while (i + 1 < lines.length && (lines[i + 1].startsWith("  ") || lines[i + 1] === "")) {
        i++;
        block.push(lines[i].slice(2));
      }
      while (block.length && block[block.length - 1] === "") block.pop();
      out[key] = block.join("\n") + (rest.trimEnd() === "|" ? "\n" : "");
    } else {
      out[key] = scalar(rest.trimEnd(), original[key], known, key, i + 1);
    }
  }
  if (whole) {
    if (!Object.hasOwn(out, "input") || Object.keys(out).length !== 1) {
      throw new EditUnreadable("the edited input must be the one `input:` line");
    }
    return out.input;
  }
  return out;
}

// --- questions ------------------------------------------------------------------------------

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * The dsh questions of a question tool's `questions` (dsh's vocabulary, or Claude's
 * AskUserQuestion, which agrees with it): ids kept when they are ids and unique, else
 * `q1`, `q2`, ... by position.
 */
export function dshQuestions(list) {
  const seen = new Set();
  return (Array.isArray(list) ? list : []).map((q0, i) => {
    const q = isPlainObject(q0) ? q0 : { question: String(q0 ?? "") };
    let id = typeof q.id === "string" && ID.test(q.id) && !seen.has(q.id) ? q.id : `q${i + 1}`;
    while (seen.has(id)) id = `${id}-${i + 1}`;
    seen.add(id);
    const out = { id, question: String(q.question ?? "") };
    if (typeof q.header === "string") out.header = q.header;
    if (typeof q.detail === "string") out.detail = q.detail;
    if (Array.isArray(q.options)) {
      out.options = q.options.map((o) =>
        isPlainObject(o)
          ? { label: String(o.label ?? ""), ...(typeof o.description === "string" ? { description: o.description } : {}) }
          : { label: String(o) },
      );
    }
    if (q.multiSelect === true || q.multi_select === true) out.multiSelect = true;
    return out;
  });
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
    questions = dshQuestions(call.args?.questions);
  } else if (call.kind === "plan") {
    questions = [
      planReview(String(call.args?.plan ?? ""), {
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
        question: `Allow the agent to run \`${call.toolName}\`?`,
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

function denied(call, requestId, code, message, extra = {}) {
  return { callId: call.callId, toolName: call.toolName, requestId, behavior: "deny", args: null, answers: null, edited: false, diff: null, message, feedback: null, code, result: null, ...extra };
}

/**
 * The decision on `call` from its request's ending: `{result}` (the Answered) or
 * `{error}` (anything thrown while asking or waiting).
 */
export function decisionOf(call, requestId, { result, error }) {
  const tool = call.toolName;
  if (!result) {
    const code = error?.code || error?.name || "ERROR";
    const why = `${code}: ${error?.message ?? String(error)}`;
    const message =
      call.kind === "question"
        ? `The user did not answer (${why}). Continue without this answer.`
        : `The call to \`${tool}\` was not approved (${why}); it did not run.`;
    return denied(call, requestId, code, message);
  }
  if (call.kind === "question") {
    const answers = answersOf(result, dshQuestions(call.args?.questions));
    return { ...denied(call, requestId, null, `Answered in dshq request ${requestId}${voters(result)}.`), behavior: "allow", args: call.args, answers, result };
  }
  if (result.decision === "declined") {
    const what = call.kind === "plan" ? "the plan" : `this call to \`${tool}\``;
    const message = result.feedback
      ? `The reviewer declined ${what}. Their feedback: ${result.feedback}`
      : `The reviewer declined ${what} without feedback; it did not run.`;
    return denied(call, requestId, "DECLINED", message, { feedback: result.feedback, result });
  }
  if (!result.approved) {
    return denied(call, requestId, "NO_DECISION", `The review of \`${tool}\` ended without an approval; it did not run.`, { result });
  }
  const edit = result.edited[PLAN_ID] ?? null;
  let args = call.args;
  if (edit && call.kind === "plan") {
    args = { ...(isPlainObject(call.args) ? call.args : {}), plan: edit.approved };
  } else if (edit) {
    if (call.editable === false) {
      return denied(call, requestId, "EDIT_NOT_ALLOWED", `The reviewer edited the arguments of \`${tool}\`, which cannot take edited arguments; it did not run.`, { result });
    }
    try {
      args = parseEdited(edit.approved, tool, call.args);
    } catch (e) {
      if (!(e instanceof EditUnreadable)) throw e;
      return denied(call, requestId, "EDIT_UNREADABLE", `The reviewer's edit of the arguments of \`${tool}\` could not be read (${e.message}); it did not run.`, { result });
    }
  }
  const message = `Approved in dshq request ${requestId}${voters(result)}${edit ? ", as edited" : ""}.`;
  return { ...denied(call, requestId, null, message), behavior: "allow", args, edited: edit !== null, diff: edit?.diff ?? null, result };
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

/** The description of a question tool. */
export const QUESTION_TOOL_DESCRIPTION =
  "Ask a person one or more questions and wait for the answers (they may come much later: the run pauses until then). " +
  "Give options when the choice is among known answers; the person may also write their own. " +
  "The result maps each question id to the answer, or null when the person skipped it.";
