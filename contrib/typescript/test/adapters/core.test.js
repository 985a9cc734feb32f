// The adapters' shared core without a daemon: the plan a reviewer reads reads back as the
// same arguments, an edit is read by each argument's type, an edit that cannot be read is
// an error naming the line, and every ending but an approval denies the call.
import assert from "node:assert/strict";
import { test } from "node:test";

import { AskExpired, resultOf } from "dshq";

import { EditUnreadable, callKey, decisionOf, dshQuestions, parseEdited, renderPlan } from "../../adapters/core.js";

const ARGS = [
  { env: "prod", replicas: 3, dry: false, tags: ["a", "b"], limits: { cpu: 2 }, nothing: null },
  { notes: "Roll out v2.\nWatch the error rate.\n", body: "no newline at the end\nsecond", blank: "a\n\nb\n" },
  { quoted: '"already quoted"', spaced: " leading", trailing: "x ", empty: "", pipe: "| not a block", cr: "a\r\nb", twice: "a\n\n" },
  { "odd key: with colon": 1, "": "empty key", "ünï": "ok", "a\nb": "newline in a key" },
  {},
  "a bare string input",
  [1, 2, 3],
];

test("a plan reads back as the arguments it shows", () => {
  for (const args of ARGS) {
    const plan = renderPlan("deploy", args);
    assert.deepEqual(parseEdited(plan, "deploy", args), args, plan);
  }
  assert.equal(renderPlan("deploy", { env: "prod", replicas: 3 }), "Run `deploy` with:\n\nenv: prod\nreplicas: 3\n");
});

test("an edit is read by each argument's type; a removed line removes the argument", () => {
  const args = { env: "prod", replicas: 3, notes: "a\nb\n", dry: true };
  const edited = "Run `deploy` with:\n\nenv: 3\nreplicas: 2\nnotes: |\n  a\n  b\n  c\nextra: [1]\nlabel: staging\n";
  assert.deepEqual(parseEdited(edited, "deploy", args), { env: "3", replicas: 2, notes: "a\nb\nc\n", extra: [1], label: "staging" });
});

test("an edit that cannot be read is an error naming what is wrong", () => {
  const args = { env: "prod", replicas: 3 };
  for (const [text, says] of [
    ["Run `other` with:\n\nenv: prod\n", /first line must stay/],
    ["Run `deploy` with:\n\nenv: prod\nreplicas: two\n", /line 4: the value of "replicas" must stay JSON/],
    ["Run `deploy` with:\n\njust words\n", /line 3 is not `name: value`/],
    ["Run `deploy` with:\n\nenv: a\nenv: b\n", /"env" is given twice/],
    ['Run `deploy` with:\n\nenv: "unterminated\n', /not a JSON string/],
  ]) {
    assert.throws(() => parseEdited(text, "deploy", args), (e) => e instanceof EditUnreadable && says.test(e.message), text);
  }
});

test("questions keep their ids when they are ids, else are numbered", () => {
  const qs = dshQuestions([{ question: "A?" }, { id: "db", question: "B?", multi_select: true, options: ["x", { label: "y", description: "why" }] }, { id: "db", question: "C?" }, { id: "../x", question: "D?" }]);
  assert.deepEqual(qs.map((q) => q.id), ["q1", "db", "q3", "q4"]);
  assert.deepEqual(qs[1].options, [{ label: "x" }, { label: "y", description: "why" }]);
  assert.equal(qs[1].multiSelect, true);
});

test("only an approval allows a call: every other ending denies it, saying why", () => {
  const call = { adapter: "t", run: "r", callId: "c", toolName: "deploy", args: { env: "prod" }, kind: "tool" };
  const doc = (extra) => ({ id: "x", status: "answered", requestDigest: null, createdAt: "", finishedAt: "", answer: { answers: [] }, ...extra });
  const allow = decisionOf(call, "x", { result: resultOf(doc({ decision: "approved" })) });
  assert.equal(allow.behavior, "allow");
  assert.deepEqual(allow.args, { env: "prod" });
  for (const [ending, code] of [
    [{ result: resultOf(doc({ decision: "declined", feedback: "no" })) }, "DECLINED"],
    [{ result: resultOf(doc({ decision: null })) }, "NO_DECISION"],
    [{ error: new AskExpired("nobody answered", { code: "ASK_EXPIRED" }) }, "ASK_EXPIRED"],
    [{ error: new Error("disk on fire") }, "Error"],
    [{ result: resultOf(doc({ decision: "approved", edited: { plan: { proposed: "", approved: "Run `deploy` with:\n\nenv\n", diff: "" } } })) }, "EDIT_UNREADABLE"],
    [{ result: resultOf(doc({ decision: "approved", edited: { plan: { proposed: "", approved: "x", diff: "" } } })) }, "EDIT_UNREADABLE"],
  ]) {
    const d = decisionOf(call, "x", ending);
    assert.equal(d.behavior, "deny", code);
    assert.equal(d.code, code);
    assert.match(d.message, /deploy/);
  }
  const locked = decisionOf({ ...call, editable: false }, "x", { result: resultOf(doc({ decision: "approved", edited: { plan: { proposed: "", approved: "Run `deploy` with:\n\nenv: dev\n", diff: "" } } })) });
  assert.equal(locked.code, "EDIT_NOT_ALLOWED");
  assert.notEqual(callKey("t", "r", "c"), callKey("t", "r\u0000c", ""));
});
