// The client conformance suite's runner for the dsh provider (contrib/dsh), in a real dsh
// context: node runner-dsh.mjs FACE, FACE one of dsh-file, dsh-http. It runs from a folder
// laid out as an installed project (tests/it/dsh.rs's Project), where `dshq`, `dshq-dsh`
// and DeepSeek Harness's packages resolve by name.
//
// The same line protocol as runner.py: one job a line on stdin, {"asked": ID} once the
// request is handed over, then {"decision": D}. Each job is asked through dsh's own
// `ctx.userQuestions.ask()` (a cordis Context with dsh's user-questions service and dshq's
// provider registered), and D is normalized from what dsh's caller gets: the answers from
// dsh's answer items, the plan it runs from the plan item's `edited` (the approved text)
// or the plan as asked, the rest from the decision document the answer carries
// (`answer.dshq`), and an ending from dsh's UserQuestionError code.
import { createInterface } from "node:readline";

import { Context } from "@deepseek-ai/cordis";
import { UserQuestionService } from "@deepseek-ai/dsh-user-questions";
import { idForKey } from "dshq";
import { registerDshqProvider } from "dshq-dsh";

const FACE = process.argv[2];
const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

const ctx = new Context();
await ctx.plugin(UserQuestionService);

function where(job) {
  if (FACE === "dsh-http") return { url: job.url, token: job.token, poll: 0.05 };
  return { root: job.root, poll: 0.02 };
}

/** A dsh answer item's value: the custom text alone, else the labels (and text) joined; null when skipped. */
function value(item) {
  const parts = [...item.selected, ...(item.custom !== undefined ? [item.custom] : [])];
  if (item.custom !== undefined && item.selected.length === 0) return item.custom;
  return parts.length ? parts.join(", ") : null;
}

function normalize(job, answer) {
  const doc = answer.dshq;
  const answers = {};
  for (const item of answer.answers) answers[item.id] = value(item);
  let plan = null;
  if (job.kind === "plan" && doc.decision === "approved") {
    plan = answer.answers.find((i) => i.id === "plan")?.edited ?? job.plan;
  }
  return {
    end: "answered",
    answers,
    decision: doc.decision,
    feedback: doc.feedback,
    plan,
    voters: doc.votes.filter((v) => doc.approvers.includes(v.voter)).map((v) => v.person),
    decidedBy: doc.decidedBy,
    receipt: doc.receipt,
  };
}

async function run(job) {
  // The request's key is the job's id (outside a tool call dsh gives none to key by).
  const dispose = registerDshqProvider(ctx, { ...where(job), context: job.context, key: () => job.id });
  try {
    emit({ asked: idForKey(job.id) });
    // dsh's request has no ladder: the job's questions are all of it.
    const answer = await ctx.userQuestions.ask({ questions: job.request.questions });
    return normalize(job, answer);
  } catch (e) {
    return { end: e?.code || e?.name || String(e), dshq: e?.cause?.code ?? null, message: String(e?.message ?? e) };
  } finally {
    dispose();
  }
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  emit({ decision: await run(JSON.parse(line)) });
}
