// The framework adapters against the real daemon, each with its framework's own offline
// test model (test/adapters/agent.js): a run pauses on a tool that needs approval, the
// process ends (SIGKILL while it waits), `dshq answer` approves with edited arguments from
// another process, a new process resumes and the tool runs with the edited arguments; a
// decline reaches the model as the tool's result with the feedback; an expiry is a denial;
// a question tool is answered. The Claude Agent SDK is driven at its callback and hook
// boundary (a session needs Claude Code's binary and a model).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";

import { Host, waitUntil } from "../helpers.js";

const AGENT = new URL("./agent.js", import.meta.url).pathname;
const FEEDBACK = "Not prod on a Friday: use staging";
const EDITED = { env: "staging", replicas: 2, notes: "Roll out v2.\nWatch the error rate.\nRoll back on errors.\n" };

let host;
before(async () => {
  host = await new Host().start("--context-ladder", "expiring:expireAfter=1s");
});
after(async () => host.stop());

/** An agent process: its JSON lines as they come, and its end. */
function agent(framework, run, mode, { tool = "deploy", context } = {}) {
  const child = spawn(process.execPath, [AGENT, framework, join(host.base, "runs"), run, mode, tool], {
    env: host.env(context ? { AGENT_CONTEXT: context } : {}),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines = [];
  let stderr = "";
  createInterface({ input: child.stdout }).on("line", (l) => lines.push(JSON.parse(l)));
  child.stderr.on("data", (d) => (stderr += d));
  const ended = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return {
    child,
    lines,
    ended,
    get stderr() {
      return stderr;
    },
    line: (key) => waitUntil(() => lines.find((l) => key in l), `the agent's ${key} line (${stderr})`),
    async done() {
      const end = await ended;
      assert.equal(end.code, 0, `the agent failed: ${stderr}`);
      return Object.assign({}, ...lines);
    },
  };
}

/** The plan the reviewer reads, edited as a person would: other values, one more line. */
function editedPlan(id) {
  const plan = host.json("show", id).questions[0].detail;
  assert.match(plan, /^Run `[^`]+` with:\n\n```\nenv: prod\nreplicas: 3\nnotes: \|\n {2}Roll out v2\.\n {2}Watch the error rate\.\n```\n$/);
  const file = join(host.base, `${id}.edited`);
  const edited = plan.replace("env: prod", "env: staging").replace("replicas: 3", "replicas: 2");
  writeFileSync(file, edited.replace(/\n```\n$/, "\n  Roll back on errors.\n```\n"));
  return file;
}

async function pausedId(a) {
  const [id] = (await a.line("paused")).paused;
  await waitUntil(() => host.status(id) === "pending", `request ${id} to be pending`);
  return id;
}

for (const framework of ["ai-sdk", "openai-agents", "claude-agent-sdk"]) {
  describe(framework, () => {
    test("paused, SIGKILLed while waiting, approved as edited from another process: a new process runs the tool with the edited arguments", async () => {
      const run = "edited";
      const first = agent(framework, run, "start");
      const id = await pausedId(first);
      assert.equal(first.child.exitCode, null, "the agent waits for the decision");
      first.child.kill("SIGKILL");
      assert.equal((await first.ended).signal, "SIGKILL");
      assert.equal(first.lines.some((l) => "ran" in l), false, "nothing ran before the approval");
      host.run("answer", id, "--edit", editedPlan(id));
      const out = await agent(framework, run, "resume").done();
      assert.deepEqual(out.ran, EDITED);
      assert.equal(out.decisions[0].behavior, "allow");
      assert.equal(out.decisions[0].edited, true);
    });

    test("a decline reaches the model as the tool's result, with the feedback", async () => {
      const run = "declined";
      const id = await pausedId(agent(framework, run, "start-exit"));
      host.run("answer", id, "--custom", FEEDBACK);
      const out = await agent(framework, run, "resume").done();
      assert.equal(out.ran, undefined, "a declined tool does not run");
      assert.match(JSON.stringify(out.modelSaw), new RegExp(`declined.*Their feedback: ${FEEDBACK}`));
      assert.equal(out.decisions[0].code, "DECLINED");
    });

    test("an expiry without a default is a denial, with its reason", async () => {
      const out = await agent(framework, "expired", "start", { context: "expiring" }).done();
      assert.equal(out.ran, undefined, "an expired request never approves");
      assert.equal(out.decisions[0].behavior, "deny");
      assert.equal(out.decisions[0].code, "ASK_EXPIRED");
      assert.match(JSON.stringify(out.modelSaw), /ASK_EXPIRED/);
    });

    test("the question tool becomes dsh questions; the answers reach the model", async () => {
      const run = "asked";
      const id = await pausedId(agent(framework, run, "start-exit", { tool: "ask" }));
      const shown = host.json("show", id);
      assert.deepEqual(shown.questions.map((q) => q.question), ["Which database?"]);
      host.run("answer", id, "--select", "SQLite");
      const out = await agent(framework, run, "resume", { tool: "ask" }).done();
      if (framework === "claude-agent-sdk") {
        assert.deepEqual(out.ran.answers, { "Which database?": "SQLite" }, "AskUserQuestion's updatedInput carries the answers");
      } else {
        assert.match(JSON.stringify(out.modelSaw), /SQLite/);
        assert.deepEqual(Object.values(out.decisions[0].answers), ["SQLite"]);
      }
    });
  });
}

test("claude-agent-sdk: the PreToolUse hook defers while nobody has decided; the resumed session's hook gets the decision", async () => {
  const first = await agent("claude-agent-sdk", "deferred", "start-exit").done();
  assert.match(first.deferred, /Waiting for a reviewer in dshq/);
  const [id] = first.paused;
  await waitUntil(() => host.status(id) === "pending", "the request");
  host.run("answer", id, "--edit", editedPlan(id));
  const out = await agent("claude-agent-sdk", "deferred", "resume").done();
  assert.deepEqual(out.ran, EDITED);
});
