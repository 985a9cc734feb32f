// Ids from untrusted places never name a file outside the root, nor another URL: the
// client refuses them with BAD_REQUEST before it builds a path, so nothing is written
// outside the root and an outcome planted at the end of a traversal is never taken. No
// daemon runs: every refusal happens before one would be reached.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";

import * as dshq from "dshq";
import { Client, buildRequest, question, requestDigest } from "dshq";

const DB = [question("db", "Which database?", { options: ["Postgres", "SQLite"] })];
const BAD = ["../../../outside/x", "../x", "..", ".hidden", "a/b", "-rf", "x".repeat(129)];

async function layout() {
  const top = await mkdtemp(join(tmpdir(), "dshq-ids-"));
  const root = join(top, "root");
  const outside = join(top, "outside");
  await mkdir(root);
  await mkdir(outside);
  return { top, root, outside };
}

async function filesUnder(dir) {
  return (await readdir(dir, { recursive: true })).sort();
}

const isBadRequest = (e) => e instanceof dshq.BadRequest && e.code === "BAD_REQUEST";

describe("ids", () => {
  test("a bad request id is refused before any file is written", async () => {
    const { top, root, outside } = await layout();
    const client = new Client({ root, poll: 0.01 });
    const before = await filesUnder(top);
    for (const bad of [...BAD, join(outside, "abs")]) {
      await assert.rejects(client.askNowait(DB, { id: bad }), isBadRequest, bad);
      await assert.rejects(client.abort(bad, "stop"), isBadRequest, bad);
      await assert.rejects(client.outcome(bad), isBadRequest, bad);
      await assert.rejects(client.wait(bad, { timeout: 0.1 }), isBadRequest, bad);
    }
    assert.deepEqual(await filesUnder(top), before, "nothing may be written anywhere");
  });

  test("a planted outcome outside the outbox is never taken", async () => {
    const { root, outside } = await layout();
    const forgedId = "../../outside/forged";
    const doc = buildRequest(DB, { id: forgedId });
    await mkdir(join(root, "outbox"));
    const target = join(root, "outbox", `${forgedId}.json`);
    assert.equal(resolve(target), join(outside, "forged.json"));
    await writeFile(
      target,
      JSON.stringify({
        id: forgedId,
        status: "answered",
        requestDigest: requestDigest(doc),
        answer: { answers: [{ id: "db", selected: ["Postgres"] }] },
        decision: null,
        provider: "attacker",
        createdAt: "2026-01-01T00:00:00Z",
        finishedAt: "2026-01-01T00:00:01Z",
      }),
    );
    const client = new Client({ root, poll: 0.01 });
    await assert.rejects(client.ask(DB, { id: forgedId, waitTimeout: 1 }), isBadRequest);
    const ticket = { id: forgedId, digest: requestDigest(doc), name: null, request: doc };
    await assert.rejects(client.wait(ticket, { timeout: 1 }), isBadRequest);
    assert.deepEqual(await readdir(root), ["outbox"], "no request file was dropped");
  });

  test("the HTTP transport refuses a bad id before it calls", async () => {
    // Port 9 (discard) on loopback: a call would fail with IO, not BAD_REQUEST.
    const client = new Client({ url: "http://127.0.0.1:9", token: "t" });
    for (const bad of ["..", "../admin", "a/b", "%2e%2e"]) {
      await assert.rejects(client.outcome(bad), isBadRequest, bad);
      await assert.rejects(client.abort(bad), isBadRequest, bad);
    }
  });

  test("a good id still works offline", async () => {
    const { root } = await layout();
    const client = new Client({ root });
    const good = `A${"z9._-".repeat(25)}xy`;
    assert.equal(good.length, 128);
    const t = await client.askNowait(DB, { id: good });
    assert.equal(t.id, good);
    const dropped = await readdir(join(root, "inbox", "new"));
    assert.equal(dropped.length, 1);
    assert.ok(dropped[0].startsWith(`${good}.`), dropped[0]);
    await client.abort(good, "done");
    assert.ok((await readdir(join(root, "inbox", "new"))).includes(`${good}.abort`));
  });
});
