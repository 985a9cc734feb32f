// The client conformance suite's runner for the TypeScript package's faces
// (tests/it/conformance.rs): node runner.mjs FACE, FACE one of ts-file, ts-http.
//
// The same line protocol as runner.py: one job a line on stdin, {"asked": ID} once the
// request is handed over, then {"decision": D}, D normalized from the package's own
// Answered (or its typed error) exactly as runner.py does.
import { createInterface } from "node:readline";
import * as dshq from "../../contrib/typescript/index.js";

const FACE = process.argv[2];
const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

function normalize(result, plan = null, receipt = null) {
  const answers = {};
  for (const [qid, item] of Object.entries(result.answers)) answers[qid] = item.value;
  return {
    end: "answered",
    answers,
    decision: result.decision,
    feedback: result.feedback,
    plan,
    voters: result.votes.filter((v) => result.approvers.includes(v.voter)).map((v) => v.person),
    decidedBy: result.decidedBy,
    receipt: receipt ?? result.receipt,
  };
}

function ended(e) {
  if (e instanceof dshq.PlanDeclined) return { ...(e.result ? normalize(e.result) : { end: "answered" }), plan: null };
  return { end: e?.code || e?.name || String(e), message: String(e?.message ?? e) };
}

function clientFor(job) {
  if (FACE === "ts-http") return new dshq.Client({ url: job.url, token: job.token, poll: 0.05, reconnect: 30 });
  return new dshq.Client({ root: job.root, poll: 0.02 });
}

async function run(job) {
  const client = clientFor(job);
  if (job.kind === "plan") {
    const ran = {};
    const guarded = dshq.requiresApproval(
      client,
      async (approval) => {
        ran.plan = approval.plan;
      },
      { plan: job.plan, key: () => job.id, context: job.context, editable: true },
    );
    const id = dshq.idForKey(job.id);
    emit({ asked: id });
    await guarded();
    const result = await client.wait(id, { timeout: 5 });
    return normalize(result, ran.plan ?? null, await client.receipt(id));
  }
  const ticket = await client.askNowait(job.request);
  emit({ asked: ticket.id });
  const result = await client.wait(ticket, { timeout: 90 });
  return normalize(result, null, await client.receipt(ticket));
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const job = JSON.parse(line);
  let decision;
  try {
    decision = await run(job);
  } catch (e) {
    decision = ended(e);
  }
  emit({ decision });
}
