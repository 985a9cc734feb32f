// The Node package against the real daemon: ask, answer (the real CLI), abort, waitAny,
// a typed error per code class, re-attaching after the asking process is killed, the
// HTTP transport with a token, and the plan-review wrapper.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import * as dshq from "dshq";
import { Client, idForKey, question } from "dshq";
import { DEADLINE_MS, Host, dshqBin, waitUntil } from "./helpers.js";

const DB = [question("db", "Which database?", { options: ["Postgres", "SQLite"] })];

describe("file transport", () => {
  let host;
  let client;
  before(async () => {
    host = await new Host().start();
    client = new Client({ root: host.root, poll: 0.02 });
  });
  after(() => host.stop());

  test("ask blocks until the CLI answers", async () => {
    const id = idForKey("pick-db");
    const answering = host.answer(id, "--select", "SQLite");
    const result = await client.ask(DB, { key: "pick-db", waitTimeout: 30 });
    await answering;
    assert.equal(result.id, id);
    assert.deepEqual(result.answers.db.selected, ["SQLite"]);
    assert.equal(result.answers.db.value, "SQLite");
    assert.equal(result.decision, null);
    assert.equal(result.digest, dshq.requestDigest(dshq.buildRequest(DB, { key: "pick-db" })));
  });

  test("the same key gives the same id as the Python package", () => {
    // sha256("pick-db") in hex, first 32 digits, computed apart from the package.
    assert.equal(idForKey("x"), "key-2d711642b726b04401627ca9fbac32f5");
  });

  test("abort ends the request ASK_ABORTED", async () => {
    const t = await client.askNowait(DB, { key: "to-abort" });
    await waitUntil(() => host.status(t.id) !== null);
    await client.abort(t, "changed my mind");
    await assert.rejects(client.wait(t, { timeout: 30 }), (e) => {
      assert.ok(e instanceof dshq.AskAborted && !(e instanceof dshq.Expired));
      assert.equal(e.code, "ASK_ABORTED");
      assert.equal(e.requestId, t.id);
      assert.match(e.message, /changed my mind/);
      return true;
    });
  });

  test("a passed deadline is Expired", async () => {
    await assert.rejects(client.ask(DB, { key: "too-late", timeout: "1s", waitTimeout: 30 }), (e) => {
      assert.ok(e instanceof dshq.Expired && e instanceof dshq.AskAborted);
      return true;
    });
  });

  test("waitAny returns the first answered, and throws the first cancelled", async () => {
    const ts = [];
    for (const i of [0, 1, 2]) ts.push(await client.askNowait(DB, { key: `many-${i}` }));
    await host.answer(ts[1].id, "--select", "Postgres");
    const [t, result] = await client.waitAny(ts, { timeout: 30 });
    assert.equal(t.id, ts[1].id);
    assert.deepEqual(result.answers.db.selected, ["Postgres"]);
    host.run("cancel", ts[2].id, "--reason", "not needed");
    await assert.rejects(client.waitAny([ts[0], ts[2]], { timeout: 30 }), (e) => {
      assert.ok(e instanceof dshq.AskCancelled);
      assert.equal(e.requestId, ts[2].id);
      return true;
    });
    await assert.rejects(client.waitAny([ts[0]], { timeout: 0.3 }), dshq.WaitTimeout);
  });

  const rejections = [
    ["BAD_REQUEST", { questions: [{ id: "q", question: "?", colour: "red" }] }],
    ["EMPTY_QUESTIONS", { questions: [] }],
    ["BAD_INTENT", { questions: [{ id: "q", question: "?", detail: "p", options: [{ label: "y" }], intent: { kind: "plan-review", approve: "n" } }] }],
    ["NO_PROVIDER", { questions: [{ id: "q", question: "?" }], requireProvider: true }],
    ["CALLER_NOT_LIVE", { questions: [{ id: "q", question: "?" }], agent: { id: "ghost", instance: "i1" } }],
  ];
  for (const [code, doc] of rejections) {
    test(`a rejection raises its own class: ${code}`, async () => {
      const cls = dshq.errorClass(code);
      await assert.rejects(client.ask(doc, { key: `rejected-${code}`, waitTimeout: 30 }), (e) => {
        assert.ok(e instanceof cls && e instanceof dshq.DshqError, `${e}`);
        assert.equal(e.code, code);
        return true;
      });
    });
  }

  test("another request under a taken id is DuplicateId", async () => {
    const first = await client.askNowait(DB, { id: "shared" });
    await host.answer("shared", "--select", "Postgres");
    await client.wait(first, { timeout: 30 });
    await assert.rejects(client.ask([question("db", "Else?")], { id: "shared", waitTimeout: 30 }), dshq.DuplicateId);
    assert.deepEqual((await client.wait(first, { timeout: 5 })).answers.db.selected, ["Postgres"]);
  });

  test("requiresApproval runs on approve and never on decline", async () => {
    const ran = [];
    const deploy = dshq.requiresApproval(client, async (env) => (ran.push(env), `deployed ${env}`), {
      plan: (env) => `Deploy to **${env}**`,
      key: (env) => `deploy-${env}`,
    });
    const ok = host.answer(idForKey("deploy-staging"), "--select", "Approve");
    assert.equal(await deploy("staging"), "deployed staging");
    await ok;
    const no = host.answer(idForKey("deploy-prod"), "--custom", "not on a Friday");
    await assert.rejects(deploy("prod"), (e) => e instanceof dshq.PlanDeclined && e.feedback === "not on a Friday");
    await no;
    assert.deepEqual(ran, ["staging"]);
  });
});

test("every code of the daemon's schema has its class", () => {
  const schema = JSON.parse(spawnSync(dshqBin(), ["schema", "outcome"], { encoding: "utf8" }).stdout);
  const wire = schema.$defs.Code.oneOf.map((v) => v.const);
  assert.deepEqual([...dshq.CODES], wire);
  for (const c of wire) {
    const cls = dshq.errorClass(c);
    assert.notEqual(cls, dshq.DshqError);
    assert.equal(new cls("m").code, c);
  }
});

function agent(host, env) {
  const p = spawn(process.execPath, [fileURLToPath(new URL("./agent.js", import.meta.url)), "nightly"], { env, stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: p.stdout })[Symbol.asyncIterator]();
  return { p, next: async () => JSON.parse((await lines.next()).value) };
}

for (const transport of ["file", "http"]) {
  test(`a killed agent re-attaches to its question (${transport})`, async () => {
    const host = await new Host().start(...(transport === "http" ? ["--listen", "0"] : []));
    try {
      const env = host.env();
      if (transport === "http") {
        delete env.DSHQ_ROOT;
        env.DSHQ_URL = host.url;
        env.DSHQ_TOKEN = host.token("asker", "nightly");
      }
      const id = idForKey("nightly");
      const first = agent(host, env);
      assert.deepEqual(await first.next(), { asked: id });
      await waitUntil(() => host.status(id) !== null);
      const died = new Promise((r) => first.p.once("exit", (code, sig) => r(sig)));
      first.p.kill("SIGKILL");
      assert.equal(await died, "SIGKILL");

      const second = agent(host, env);
      assert.deepEqual(await second.next(), { asked: id });
      assert.equal(host.status(id), "pending");
      await host.answer(id, "--select", "Postgres");
      assert.deepEqual(await second.next(), { answer: ["Postgres"] });
      assert.deepEqual(host.json("list", "--all").map((r) => r.id), [id]);
    } finally {
      await host.stop();
    }
  });
}

describe("HTTP transport", () => {
  let host;
  before(async () => {
    host = await new Host().start("--listen", "0");
  });
  after(() => host.stop());

  test("ask, answer, abort and refusals with a token", async () => {
    const client = new Client({ url: host.url, token: host.token("asker", "ann") });
    assert.ok(!JSON.stringify(client).includes("dshq_"), "the token is not serialised");
    const t = await client.askNowait(DB, { key: "http-1" });
    assert.deepEqual(await client.askNowait(DB, { key: "http-1" }), t);
    assert.equal(await client.outcome(t), null);
    const answering = host.answer(t.id, "--select", "Postgres");
    assert.deepEqual((await client.wait(t, { timeout: 60 })).answers.db.selected, ["Postgres"]);
    await answering;

    const other = await client.askNowait(DB, { key: "http-2" });
    await client.abort(other, "no longer needed");
    await assert.rejects(client.wait(other, { timeout: 30 }), dshq.AskAborted);
    await assert.rejects(client.askNowait([question("db", "Else?")], { key: "http-1" }), dshq.DuplicateId);
    await assert.rejects(client.abort("never-asked"), dshq.NotFound);
    await assert.rejects(client.wait(await client.askNowait(DB, { key: "http-3" }), { timeout: 1.2 }), dshq.WaitTimeout);
  });

  test("a wrong token, a wrong role, no server", async () => {
    await assert.rejects(new Client({ url: host.url, token: "dshq_nope" }).askNowait(DB, { key: "x" }), dshq.Unauthorized);
    const auditor = new Client({ url: host.url, token: host.token("auditor", "audrey") });
    await assert.rejects(auditor.askNowait(DB, { key: "x" }), dshq.Forbidden);
    await assert.rejects(new Client({ url: "http://127.0.0.1:9", token: "t" }).askNowait(DB, { key: "x" }), dshq.Io);
  });
});

// A wait stops when its signal aborts (a host cancelling the call that waits), with the
// signal's reason and at once (inside a long-poll too), and the request stays open.
for (const transport of ["files", "http"]) {
  test(`a wait's signal stops it at once and leaves the request open (${transport})`, async () => {
    const host = await (transport === "files" ? new Host().start() : new Host().start("--listen", "0"));
    try {
      const client =
        transport === "files" ? new Client({ root: host.root, poll: 0.02 }) : new Client({ url: host.url, token: host.token("asker", "ann") });
      const t = await client.askNowait(DB, { key: `signal-${transport}` });
      await waitUntil(() => host.status(t.id) === "pending");
      const stop = new AbortController();
      const reason = new Error("the caller gave up");
      // Aborted once the wait is under way (over HTTP: inside its 30 s long-poll).
      setTimeout(() => stop.abort(reason), 200);
      const started = Date.now();
      await assert.rejects(client.wait(t, { timeout: 20, signal: stop.signal }), (e) => e === reason);
      assert.ok(Date.now() - started < 5000, `stopped after ${Date.now() - started} ms`);
      assert.equal(host.status(t.id), "pending");
      await assert.rejects(client.wait(t, { timeout: 20, signal: AbortSignal.abort(reason) }), (e) => e === reason);
    } finally {
      await host.stop();
    }
  });
}

void DEADLINE_MS;

// dsh 0.2's continued questions: a request on a tool call whose wait window closes is
// pending (not an error), its late answer is delivered to the call (a fresh client knows
// only the call id), asking again on the call re-attaches; dsh's codes for a bad window and
// a second request on one call. Over files and over HTTP.
for (const transport of ["files", "http"]) {
  describe(`continued questions (${transport})`, () => {
    let host;
    let newClient;
    before(async () => {
      host = new Host();
      if (transport === "files") {
        await host.start();
        newClient = () => new Client({ root: host.root, poll: 0.02 });
      } else {
        await host.start("--listen", "0");
        const token = host.token("asker", "agent");
        newClient = () => new Client({ url: host.url, token, poll: 0.02 });
      }
    });
    after(() => host.stop());

    test("pending when the window closes; the late answer reaches the same call", async () => {
      const client = newClient();
      const callId = `call_ts_${transport}`;
      const pending = await client.ask(DB, { wait: { callId, timeoutMs: 300 } });
      assert.equal(pending.pending, true);
      assert.equal(pending.callId, callId);
      assert.equal(pending.id, dshq.idForCall(callId));
      assert.match(pending.message, /not a skipped answer/);
      assert.equal(host.status(pending.id), "pending");
      await host.answer(pending.id, "--select", "Postgres");
      const late = await newClient().waitForCall(callId, { timeout: 30 });
      assert.deepEqual(late.answers.db.selected, ["Postgres"]);
      assert.equal(late.callId, callId);
      const again = await client.ask(DB, { wait: { callId, timeoutMs: 300 } });
      assert.deepEqual(again.answers.db.selected, ["Postgres"]);
      assert.deepEqual(host.json("list", "--all").map((r) => r.id), [pending.id]);
    });

    test("BAD_TIMEOUT and DUPLICATE_WAIT", async () => {
      const client = newClient();
      for (const bad of [0, 1.5, 2147483648]) {
        await assert.rejects(client.ask(DB, { wait: { callId: "call_bad", timeoutMs: bad }, waitTimeout: 30 }), dshq.BadTimeout);
      }
      const first = await client.askNowait(DB, { wait: { callId: "call_dup" } });
      // Taken in before the second drop: two files of one call in one batch would be
      // judged in whatever order the batch reads them.
      await waitUntil(() => host.status(first.id) !== null);
      const other = [question("db", "Which database, really?", { options: ["Postgres"] })];
      await assert.rejects(client.ask(other, { wait: { callId: "call_dup", timeoutMs: 100 }, waitTimeout: 30 }), dshq.DuplicateWait);
      assert.throws(() => dshq.buildRequest(DB, { id: "mine", wait: { callId: "c" } }), TypeError);
    });
  });
}
