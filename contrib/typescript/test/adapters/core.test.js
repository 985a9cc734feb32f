// The adapters' shared core without a daemon, checked case by case against
// contrib/adapters-vectors.json: the plan a reviewer reads (and the arguments an edit of it
// gives, or why it is refused), the key of a call, the question tool's questions, and what
// the model reads when a call is denied. The Python package's tests check the same file
// (tests/test_adapter_vectors.py), so the two packages cannot drift apart.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { BadRequest, idForKey, resultOf } from "dshq";

import {
  EditUnreadable,
  QUESTION_TOOL,
  QUESTION_TOOL_DESCRIPTION,
  answersByText,
  answersResult,
  callKey,
  decisionOf,
  denialMessage,
  dshQuestions,
  parseEdited,
  renderPlan,
  requestOf,
  reviewQuestion,
} from "../../adapters/core.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../../adapters-vectors.json", import.meta.url), "utf8"));
const nameOf = (c) => c.name ?? c.code ?? c.tool;

describe("the plan a reviewer reads", () => {
  for (const c of VECTORS.render) {
    test(`render: ${nameOf(c)}`, () => {
      assert.equal(renderPlan(c.tool, c.args), c.plan);
      assert.deepEqual(parseEdited(c.plan, c.tool, c.args), c.args, "the plan reads back as the arguments it shows");
    });
  }
  for (const c of VECTORS.review) {
    test(`review question: ${c.tool}`, () => assert.equal(reviewQuestion(c.tool), c.question));
  }
});

describe("the arguments an edit gives", () => {
  for (const c of VECTORS.parse) {
    test(`parse: ${nameOf(c)}`, () => {
      if (c.refused) {
        assert.throws(
          () => parseEdited(c.plan, c.tool, c.args),
          (e) => e instanceof EditUnreadable && assert.deepEqual({ kind: e.kind, reason: e.reason }, c.refused) === undefined,
        );
      } else {
        assert.deepEqual(parseEdited(c.plan, c.tool, c.args), c.gives);
      }
    });
  }
});

test("keys", () => {
  for (const c of VECTORS.keys) {
    const key = callKey(c.adapter, c.run, c.call);
    assert.equal(key, c.key);
    assert.equal(idForKey(key), c.id);
  }
});

test("the same call asks the same request in both packages (so either re-attaches to it)", () => {
  for (const c of VECTORS.requests) {
    const { doc, key } = requestOf({ adapter: c.adapter, run: c.run, callId: c.call, toolName: c.tool, args: c.args, kind: c.kind });
    assert.deepEqual(JSON.parse(JSON.stringify({ id: idForKey(key), ...doc })), c.request);
  }
});

test("what the model reads on a denial", () => {
  for (const c of VECTORS.messages) {
    assert.equal(denialMessage(c.tool, c.code, c.detail, c.kind ?? "tool"), c.message);
  }
});

describe("decisions", () => {
  for (const c of VECTORS.decisions) {
    test(`decision: ${c.name}`, () => {
      const call = { adapter: "t", run: "r", callId: "call-1", toolName: c.tool, args: c.args, kind: c.kind ?? "tool" };
      let d;
      try {
        d = decisionOf(call, "x", { result: resultOf(c.outcome) });
      } catch (error) {
        d = decisionOf(call, "x", { error });
      }
      assert.equal(d.behavior, c.allowed ? "allow" : "deny");
      if (!c.allowed) {
        assert.deepEqual([d.code, d.message], [c.code, c.message]);
      } else if (call.kind === "question") {
        assert.deepEqual(d.answers, c.answers);
        assert.deepEqual(answersResult(d.answers), c.model_reads);
        assert.deepEqual(answersByText(call.args, d.answers), c.by_text);
      } else {
        assert.deepEqual([d.args, d.edited], [c.runs_with, c.edited]);
      }
    });
  }
});

describe("the question tool's questions", () => {
  for (const c of VECTORS.questions) {
    test(`questions: ${c.name}`, () => {
      if (c.refused) {
        assert.throws(() => dshQuestions(c.args), (e) => e instanceof BadRequest && e.message === c.refused);
      } else {
        assert.deepEqual(dshQuestions(c.args), c.questions);
      }
    });
  }
});

test("the question tool", () => {
  assert.deepEqual([QUESTION_TOOL, QUESTION_TOOL_DESCRIPTION], [VECTORS.question_tool.name, VECTORS.question_tool.description]);
});

test("an edit a call cannot take denies it", () => {
  const call = { adapter: "t", run: "r", callId: "c", toolName: "deploy", args: { env: "prod" }, kind: "tool", editable: false };
  const doc = { id: "x", status: "answered", requestDigest: null, createdAt: "", finishedAt: "", answer: { answers: [] }, decision: "approved" };
  const edited = { plan: { proposed: "", approved: renderPlan("deploy", { env: "dev" }), diff: "" } };
  const d = decisionOf(call, "x", { result: resultOf({ ...doc, edited }) });
  assert.deepEqual([d.behavior, d.code, d.message], ["deny", "EDIT_NOT_ALLOWED", denialMessage("deploy", "EDIT_NOT_ALLOWED")]);
});
