// The client conformance suite's runner for the adapters' faces (tests/it/conformance.rs):
//   node conformance.js FRAMEWORK     (ai-sdk, openai-agents or claude-agent-sdk)
//
// The line protocol of tests/conformance/runner.py: one job a line on stdin, {"asked": ID}
// once the run paused on the job's call, then {"decision": D}, normalized from the
// adapter's own CallDecision (its decision document) and the arguments the tool ran with.
// A plan job is a tool call whose argument `plan` is the plan (Claude: ExitPlanMode); an
// ask job is the framework's question tool with the job's questions. Each job is one run of
// the framework's offline test model (frameworks.js), paused and resumed in this process.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

import { Client } from "dshq";

import { FRAMEWORKS } from "./frameworks.js";

const framework = process.argv[2];
const drive = FRAMEWORKS[framework];
if (!drive) throw new Error(`no framework ${framework}`);
const dir = mkdtempSync(join(tmpdir(), `dshq-conformance-${framework}-`));
const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function decide(job) {
  const client = new Client({ root: job.root, poll: 0.02 });
  const call = job.kind === "plan" ? { name: "plan", args: { plan: job.plan } } : { name: "ask", args: { questions: job.request.questions } };
  const events = [];
  await drive({
    client,
    dir,
    run: job.id,
    mode: "start",
    call,
    options: { context: job.context, ladder: job.request.ladder },
    emit: (e) => {
      events.push(e);
      if (e.paused) out({ asked: e.paused[0] });
    },
  });
  const all = Object.assign({}, ...events);
  const d = all.decisions?.[0];
  if (!d) return { end: "no decision", events };
  if (!d.result) return { end: d.code, message: d.message };
  const r = d.result;
  const answers = {};
  if (d.answers) Object.assign(answers, d.answers);
  else for (const [qid, item] of Object.entries(r.answers)) answers[qid] = item.value;
  return {
    end: "answered",
    answers,
    decision: r.decision,
    feedback: r.feedback,
    plan: job.kind === "plan" && all.ran ? all.ran.plan : null,
    voters: r.votes.filter((v) => r.approvers.includes(v.voter)).map((v) => v.person),
    decidedBy: r.decidedBy,
    receipt: r.receipt ?? (await client.receipt(d.requestId)),
    // A denial reaches the model as the tool's result.
    modelSaw: all.modelSaw ?? null,
  };
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  let decision;
  try {
    decision = await decide(JSON.parse(line));
  } catch (e) {
    decision = { end: e?.code || e?.name || String(e), message: String(e?.message ?? e) };
  }
  out({ decision });
}
rmSync(dir, { recursive: true, force: true });
