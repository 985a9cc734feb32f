// dshq's provider and approval answerer inside a real dsh runtime (DeepSeek Harness's npm
// packages, 0.1.0-rc.8), against the real daemon, answered by `dshq answer` in another
// process. Questions are asked through dsh's own entry points: the model-facing
// ask_user_question tool run by dsh's agent loop (a scripted model makes the call), and
// `ctx.userQuestions.ask()` (as dsh's plan mode does, with the plan-review intent).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Client, idForKey } from "dshq";
import { CODE_MAP, installDshqApproval, registerDshqProvider } from "dshq-dsh";
import { UserQuestionError } from "@deepseek-ai/dsh-user-questions";

import { Host, dshqBin, waitUntil } from "../../typescript/test/helpers.js";
import { DEADLINE_MS, approvals, results, until, world } from "./world.js";

const DB = { id: "db", question: "Which database?", options: [{ label: "Postgres" }, { label: "SQLite" }] };
const askCall = (id, questions) => ({ id, name: "ask_user_question", args: { questions } });
const questionId = (session, call) => idForKey(`dsh/user-questions/${session}/${call}`);
const approvalId = (session, call) => idForKey(`dsh/approval/${session}/${call}`);

function show(host, id) {
  return host.json("show", id);
}

describe("user questions through dshq", () => {
  let host;
  let w;
  let dispose;
  before(async () => {
    host = await new Host().start();
    w = await world();
    dispose = registerDshqProvider(w.ctx, { root: host.root, poll: 0.02 });
  });
  after(async () => {
    dispose?.();
    await w?.dispose();
    await host?.stop();
  });

  test("the ask_user_question tool: a single select answered by `dshq answer`", async () => {
    const { agent } = await w.agent("s-single");
    const answering = host.answer(questionId("s-single", "call-1"), "--select", "SQLite");
    const r = await w.turn(agent, [askCall("call-1", [DB])]);
    await answering;
    assert.equal(r["call-1"].isError, false, r["call-1"].text);
    assert.deepEqual(JSON.parse(r["call-1"].text), { answers: [{ id: "db", selected: ["SQLite"] }] });
    // The request dshq kept says who asked: the dsh agent and its tool call.
    const shown = show(host, questionId("s-single", "call-1"));
    assert.equal(shown.status, "answered");
    assert.deepEqual(shown.meta?.dsh ?? shown.request?.meta?.dsh, { agent: "s-single", callId: "call-1", tool: "ask_user_question" });
  });

  test("a multi-select with custom text, and a skip, in dsh's encoding", async () => {
    const { agent } = await w.agent("s-multi");
    const langs = { id: "langs", question: "Which languages?", multi_select: true, options: [{ label: "Rust" }, { label: "Go" }, { label: "Zig" }] };
    const id = questionId("s-multi", "call-m");
    const answering = (async () => {
      await waitUntil(() => host.status(id) !== null, "the request");
      host.run("answer", id, "--question", "langs", "--select", "Rust", "--select", "Zig", "--custom", "and some C", "--question", "db", "--skip");
    })();
    const r = await w.turn(agent, [askCall("call-m", [langs, DB])]);
    await answering;
    assert.deepEqual(JSON.parse(r["call-m"].text), {
      answers: [
        { id: "langs", selected: ["Rust", "Zig"], custom: "and some C" },
        { id: "db", selected: [] },
      ],
    });
  });

  test("question ids dshq would refuse are carried under ids it takes and given back", async () => {
    const { agent } = await w.agent("s-ids");
    const q = { id: "which db?", question: "Which database?", options: [{ label: "Postgres" }] };
    const answering = host.answer(questionId("s-ids", "call-i"), "--select", "Postgres");
    const r = await w.turn(agent, [askCall("call-i", [q])]);
    await answering;
    assert.deepEqual(JSON.parse(r["call-i"].text), { answers: [{ id: "which db?", selected: ["Postgres"] }] });
  });

  const plan = {
    id: "plan",
    question: "Approve this plan?",
    detail: "1. Add the column\n2. Backfill it\n",
    options: [{ label: "Approve" }, { label: "Keep planning" }],
    intent: { kind: "plan-review", approve: "Approve" },
  };

  test("a plan review approved, and declined with feedback, through ctx.userQuestions.ask()", async () => {
    const key = (name) => idForKey(`dsh/user-questions/once/${name}`);
    // Outside a tool call there is no call to key by: a `key` option gives one.
    const d2 = (dispose(), registerDshqProvider(w.ctx, { root: host.root, poll: 0.02, key: (r) => r.questions[0].header }));
    dispose = d2;
    const approving = host.answer(key("p1"), "--select", "Approve");
    const yes = await w.ctx.userQuestions.ask({ questions: [{ ...plan, header: "dsh/user-questions/once/p1" }] });
    await approving;
    assert.deepEqual(yes, { answers: [{ id: "plan", selected: ["Approve"] }] });
    // Beside dsh's answer, the decision document as the dshq client gives it.
    assert.equal(yes.dshq.decision, "approved");
    assert.equal(yes.dshq.id, key("p1"));
    assert.deepEqual(yes.dshq.edited, {});
    assert.equal(yes.dshq.outcome.status, "answered");

    const declining = host.answer(key("p2"), "--custom", "Backfill in batches of 1000");
    const no = await w.ctx.userQuestions.ask({ questions: [{ ...plan, header: "dsh/user-questions/once/p2" }] });
    await declining;
    assert.deepEqual(no, { answers: [{ id: "plan", selected: [], custom: "Backfill in batches of 1000" }] });
    assert.equal(no.dshq.decision, "declined");
    assert.equal(no.dshq.feedback, "Backfill in batches of 1000");

    // A reviewer's edited plan travels with its item (approved as edited).
    const edited = join(host.base, "edited.md");
    writeFileSync(edited, "1. Add the column\n2. Backfill it in batches\n");
    const editing = host.answer(key("p3"), "--select", "Approve", "--edit", edited);
    const ed = await w.ctx.userQuestions.ask({ questions: [{ ...plan, header: "dsh/user-questions/once/p3" }] });
    await editing;
    // dsh's item carries the decision document's `edited` (the approved text), and the
    // document the proposal, the approved text and the diff.
    assert.deepEqual(ed, { answers: [{ id: "plan", selected: ["Approve"], edited: "1. Add the column\n2. Backfill it in batches\n" }] });
    assert.equal(ed.dshq.decision, "approved");
    assert.deepEqual(ed.dshq.edited.plan.proposed, plan.detail);
    assert.equal(ed.dshq.edited.plan.approved, "1. Add the column\n2. Backfill it in batches\n");
    assert.match(ed.dshq.edited.plan.diff, /\+2\. Backfill it in batches/);
    assert.equal(ed.dshq.approvedText("plan", plan.detail), "1. Add the column\n2. Backfill it in batches\n");
    dispose();
    dispose = registerDshqProvider(w.ctx, { root: host.root, poll: 0.02 });
  });

  test("dsh's own caller checks run before dshq is reached", async () => {
    const before = host.json("list", "--all").length;
    const { agent } = await w.agent("s-parent");
    const stale = { ...agent, id: "s-ghost" };
    await assert.rejects(w.ctx.userQuestions.ask({ questions: [DB], agent: stale }), (e) => e instanceof UserQuestionError && e.code === "CALLER_NOT_LIVE");
    // A child created through the parent agent's own context is owned: no human answers it.
    const child = await agent.ctx.agents.create({ sessionId: "s-child", agentOptions: { provider: "script", model: "scripted" } });
    await assert.rejects(w.ctx.userQuestions.ask({ questions: [DB], agent: child.agent }), (e) => e.code === "DELEGATED_CALLER");
    await assert.rejects(w.ctx.userQuestions.ask({ questions: [] }), (e) => e.code === "EMPTY_QUESTIONS");
    await assert.rejects(
      w.ctx.userQuestions.ask({ questions: [{ ...plan, intent: { kind: "plan-review", approve: "Yes" } }] }),
      (e) => e.code === "BAD_INTENT",
    );
    assert.equal(host.json("list", "--all").length, before, "no dshq request was made");
    await child.dispose();
  });

  test("an abort mid-wait ends the ask ASK_ABORTED and aborts the dshq request", async () => {
    const { agent } = await w.agent("s-abort");
    const id = questionId("s-abort", "call-a");
    const r = await w.turn(agent, [askCall("call-a", [DB])], {
      started: async (a) => {
        await waitUntil(() => host.status(id) === "pending", "the request to wait");
        a.cancel("user");
      },
    });
    await waitUntil(() => host.status(id) === "aborted", "the dshq request to be aborted");
    // The turn was cancelled: dsh records the call as aborted, not answered.
    assert.equal(r["call-a"]?.isError ?? true, true);
    assert.equal(show(host, id).outcome.error.code, "ASK_ABORTED");
  });

  test("dsh's one provider slot: a second provider is DUPLICATE_PROVIDER; disposed, NO_PROVIDER", async () => {
    assert.throws(() => registerDshqProvider(w.ctx, { root: host.root }), (e) => e.code === "DUPLICATE_PROVIDER");
    dispose();
    await assert.rejects(w.ctx.userQuestions.ask({ questions: [DB] }), (e) => e.code === "NO_PROVIDER");
    dispose = registerDshqProvider(w.ctx, { root: host.root, poll: 0.02 });
  });

  test("a reviewer's cancel is ASK_CANCELLED; a request with no reviewer registered is NO_PROVIDER", async () => {
    const { agent } = await w.agent("s-cancel");
    const id = questionId("s-cancel", "call-c");
    const cancelling = (async () => {
      await waitUntil(() => host.status(id) !== null, "the request");
      host.run("cancel", id, "--reason", "not now");
    })();
    const r = await w.turn(agent, [askCall("call-c", [DB])]);
    await cancelling;
    assert.equal(r["call-c"].isError, true);
    assert.match(r["call-c"].text, /not now/);

    const strict = await world();
    const off = registerDshqProvider(strict.ctx, { root: host.root, poll: 0.02, requireProvider: true });
    try {
      await assert.rejects(strict.ctx.userQuestions.ask({ questions: [DB] }), (e) => e.code === "NO_PROVIDER" && e.cause?.code === "NO_PROVIDER");
    } finally {
      off();
      await strict.dispose();
    }
  });
});

describe("over the HTTP API, and a quorum's decision", () => {
  let host;
  let w;
  let off;
  before(async () => {
    host = new Host();
    const config = join(host.base, "config.toml");
    writeFileSync(config, "[quorum.deploys]\napprovals = 2\n");
    await host.start("--listen", "0", "--config", config);
    w = await world();
    off = registerDshqProvider(w.ctx, { url: host.url, token: host.token("asker", "dsh-agent"), poll: 0.02 });
  });
  after(async () => {
    off?.();
    await w?.dispose();
    await host?.stop();
  });

  test("the ask_user_question tool through a daemon's HTTP API", async () => {
    const { agent } = await w.agent("s-http");
    const answering = host.answer(questionId("s-http", "call-h"), "--select", "Postgres");
    const r = await w.turn(agent, [askCall("call-h", [DB])]);
    await answering;
    assert.deepEqual(JSON.parse(r["call-h"].text), { answers: [{ id: "db", selected: ["Postgres"] }] });
  });

  test("a plan review under a two-person rule returns once both approved, naming them", async () => {
    const strict = await world();
    const off2 = registerDshqProvider(strict.ctx, { root: host.root, poll: 0.02, context: "deploys", key: () => "release-plan" });
    try {
      const id = idForKey("release-plan");
      const asking = strict.ctx.userQuestions.ask({
        questions: [{ id: "plan", question: "Ship it?", detail: "1. Tag\n2. Ship\n", options: [{ label: "Ship" }, { label: "Hold" }], intent: { kind: "plan-review", approve: "Ship" } }],
      });
      await waitUntil(() => host.status(id) === "pending", "the plan review");
      host.run("answer", id, "--name", "bob", "--select", "Ship");
      assert.equal(host.status(id), "pending", "one vote of two");
      host.run("answer", id, "--name", "dave", "--select", "Ship");
      const a = await asking;
      assert.deepEqual(a, { answers: [{ id: "plan", selected: ["Ship"] }] });
      assert.equal(a.dshq.decision, "approved");
      assert.deepEqual(a.dshq.approvers, ["provider:bob", "provider:dave"]);
      assert.deepEqual(
        a.dshq.votes.map((v) => [v.voter, v.person, v.decision]),
        [
          ["provider:bob", "bob", "approved"],
          ["provider:dave", "dave", "approved"],
        ],
      );
      assert.equal(a.dshq.decidedBy, "person");
    } finally {
      off2();
      await strict.dispose();
    }
  });
});

describe("no daemon", () => {
  test("an ask is NO_PROVIDER (the client's NO_DAEMON) within seconds, and leaves no request behind", { timeout: DEADLINE_MS }, async () => {
    const host = new Host(); // a root no daemon serves
    const w = await world();
    const off = registerDshqProvider(w.ctx, { root: host.root, poll: 0.02 });
    try {
      const started = Date.now();
      await assert.rejects(w.ctx.userQuestions.ask({ questions: [DB] }), (e) => {
        assert.ok(e instanceof UserQuestionError);
        assert.equal(e.code, "NO_PROVIDER");
        assert.equal(e.cause?.code, "NO_DAEMON");
        assert.match(e.message, /no dshq daemon/);
        return true;
      });
      assert.ok(Date.now() - started < 10_000, "within seconds");
      await host.start();
      assert.deepEqual(host.json("list", "--all"), []);
    } finally {
      off();
      await w.dispose();
      await host.stop();
    }
  });

  test("an approval fails closed: unavailable within seconds, the tool never runs", { timeout: DEADLINE_MS }, async () => {
    const host = new Host();
    const w = await world();
    const off = installDshqApproval(w.ctx, { root: host.root, poll: 0.02 });
    try {
      const { agent } = await w.agent("s-nodaemon");
      const started = Date.now();
      const r = await w.turn(agent, [{ id: "d-1", name: "deploy", args: { target: "prod" } }]);
      assert.ok(Date.now() - started < 10_000, "within seconds");
      assert.deepEqual(approvals(agent), ["unavailable"]);
      assert.equal(r["d-1"].isError, true);
      assert.match(r["d-1"].text, /no approval channel is available/);
      assert.deepEqual(w.deployed, []);
    } finally {
      off();
      await w.dispose();
      await host.stop();
    }
  });
});

describe("tool approval through dshq", () => {
  let host;
  let w;
  let off;
  before(async () => {
    host = await new Host().start();
    w = await world();
    off = installDshqApproval(w.ctx, { root: host.root, poll: 0.02 });
  });
  after(async () => {
    off?.();
    await w?.dispose();
    await host?.stop();
  });

  const deploy = (id, target) => ({ id, name: "deploy", args: { target } });

  test("allowed once by `dshq answer`: the tool runs, the session audits allowed-once", async () => {
    const { agent } = await w.agent("s-allow");
    const id = approvalId("s-allow", "d-1");
    const answering = host.answer(id, "--select", "Allow once");
    const r = await w.turn(agent, [deploy("d-1", "staging")]);
    await answering;
    assert.equal(r["d-1"].isError, false, r["d-1"].text);
    assert.equal(r["d-1"].text, "deployed to staging");
    assert.deepEqual(w.deployed, ["staging"]);
    assert.deepEqual(approvals(agent), ["allowed-once"]);
    // The reviewer saw the tool, its call, the reason and the arguments.
    const q = show(host, id).questions[0];
    assert.equal(q.intent.kind, "plan-review");
    for (const part of ["`deploy`", "d-1", "deploying changes production", '"target": "staging"']) assert.ok(q.detail.includes(part), `${part} in ${q.detail}`);
  });

  test("rejected with feedback: the tool does not run and the model reads why", async () => {
    const { agent } = await w.agent("s-reject");
    const answering = host.answer(approvalId("s-reject", "d-2"), "--custom", "not on a Friday");
    const r = await w.turn(agent, [deploy("d-2", "prod")]);
    await answering;
    assert.equal(r["d-2"].isError, true);
    assert.match(r["d-2"].text, /the user rejected tool "deploy": not on a Friday/);
    assert.deepEqual(approvals(agent), ["rejected"]);
    assert.ok(!w.deployed.includes("prod"));
  });

  test("an edit of the call is refused: dsh's approval cannot carry edited arguments", async () => {
    const { agent } = await w.agent("s-edit");
    const id = approvalId("s-edit", "d-3");
    const turn = w.turn(agent, [deploy("d-3", "prod")]);
    await waitUntil(() => host.status(id) === "pending", "the approval request");
    const edited = join(host.base, "args.md");
    writeFileSync(edited, '{"target": "staging"}\n');
    assert.throws(() => host.run("answer", id, "--select", "Allow once", "--edit", edited), /EDIT_NOT_ALLOWED/);
    host.run("answer", id, "--select", "Reject");
    const r = await turn;
    assert.equal(r["d-3"].isError, true);
    assert.deepEqual(approvals(agent), ["rejected"]);
  });

  test("cancelled by dsh's signal: the dshq request is aborted", async () => {
    const { agent } = await w.agent("s-cancelled");
    const id = approvalId("s-cancelled", "d-4");
    await w.turn(agent, [deploy("d-4", "prod")], {
      started: async (a) => {
        await waitUntil(() => host.status(id) === "pending", "the approval request");
        a.cancel("user");
      },
    });
    assert.deepEqual(approvals(agent), ["cancelled"]);
    await waitUntil(() => host.status(id) === "aborted", "the dshq request to be aborted");
    assert.ok(!w.deployed.includes("prod"));
  });

  test("no answer within the configured wait: passed on, and so unavailable", async () => {
    const impatient = await world();
    const off2 = installDshqApproval(impatient.ctx, { root: host.root, poll: 0.02, wait: 1 });
    try {
      const { agent } = await impatient.agent("s-wait");
      await impatient.turn(agent, [deploy("d-5", "prod")]);
      assert.deepEqual(approvals(agent), ["unavailable"]);
      await waitUntil(() => host.status(approvalId("s-wait", "d-5")) === "aborted", "the request to be aborted");
    } finally {
      off2();
      await impatient.dispose();
    }
  });
});

describe("a dsh process killed mid-question", () => {
  test("started again, it re-attaches: one request, one answer, returned to the new process", async () => {
    const host = await new Host().start();
    const script = fileURLToPath(new URL("./host.js", import.meta.url));
    const id = questionId("s-restart", "call-r");
    const spawnHost = () => {
      const p = spawn(process.execPath, [script, host.root, "s-restart", "call-r"], { stdio: ["ignore", "pipe", "inherit"] });
      const lines = createInterface({ input: p.stdout });
      const seen = [];
      lines.on("line", (l) => seen.push(JSON.parse(l)));
      return { p, seen };
    };
    try {
      const first = spawnHost();
      await waitUntil(() => host.status(id) === "pending", "the first process's question");
      const exited = new Promise((r) => first.p.once("exit", (code, signal) => r(signal)));
      first.p.kill("SIGKILL");
      assert.equal(await exited, "SIGKILL");

      const second = spawnHost();
      await waitUntil(() => second.seen.some((l) => l.waiting), "the second process to wait");
      host.run("answer", id, "--select", "Postgres");
      await waitUntil(() => second.seen.find((l) => l.result), "the second process's answer", DEADLINE_MS);
      const result = second.seen.find((l) => l.result).result;
      assert.deepEqual(JSON.parse(result.text), { answers: [{ id: "db", selected: ["Postgres"] }] });
      const all = host.json("list", "--all");
      assert.equal(all.length, 1, JSON.stringify(all));
      assert.equal(all[0].id, id);
      assert.equal(show(host, id).status, "answered");
      await new Promise((r) => (second.p.exitCode !== null ? r() : second.p.once("exit", r)));
      assert.equal(second.p.exitCode, 0);
    } finally {
      await host.stop();
    }
  });
});

test("the code map names only codes dsh's UserQuestionError uses, or dshq's own", () => {
  const dsh = new Set(["ASK_ABORTED", "ASK_CANCELLED", "NO_PROVIDER", "EMPTY_QUESTIONS", "BAD_INTENT", "CALLER_NOT_LIVE", "DELEGATED_CALLER", "BAD_REQUEST"]);
  for (const v of Object.values(CODE_MAP)) assert.ok(dsh.has(v), v);
  assert.ok(new Client({ root: "/nonexistent" }));
  assert.ok(dshqBin());
});
