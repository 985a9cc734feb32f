// An agent process for the adapters' tests: one framework's run (frameworks.js) with a
// `deploy` call (or the question tool), its events as JSON lines on stdout.
//
//   node agent.js FRAMEWORK DIR RUN MODE [deploy|ask]
// dshq is DSHQ_ROOT's; AGENT_CONTEXT names the context the requests are asked in.
import { Client } from "dshq";

import { FRAMEWORKS } from "./frameworks.js";

const [framework, dir, run, mode, tool = "deploy"] = process.argv.slice(2);
const PROPOSED = { env: "prod", replicas: 3, notes: "Roll out v2.\nWatch the error rate.\n" };
const QUESTIONS = { questions: [{ id: "db", question: "Which database?", options: [{ label: "Postgres" }, { label: "SQLite" }] }] };
const call = tool === "ask" ? { name: "ask", args: QUESTIONS } : { name: framework === "claude-agent-sdk" ? "mcp__ops__deploy" : "deploy", args: PROPOSED };
const emit = (o) => process.stdout.write(`${JSON.stringify(o, (k, v) => (k === "result" ? v && { decidedBy: v.decidedBy } : v))}\n`);

await FRAMEWORKS[framework]({
  client: new Client({ poll: 0.02 }),
  dir,
  run,
  mode,
  call,
  options: { context: process.env.AGENT_CONTEXT || undefined },
  emit,
  cwd: dir,
});
