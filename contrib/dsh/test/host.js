// A dsh process for the restart test: a real dsh runtime with dshq's provider, one agent
// on session SESSION whose model calls ask_user_question as call CALL. It prints JSON
// lines: {"waiting": true} when the turn starts, then {"result": {text, isError}}.
//   node host.js ROOT SESSION CALL
import { registerDshqProvider } from "dshq-dsh";

import { world } from "./world.js";

const [root, session, call] = process.argv.slice(2);
const w = await world();
const off = registerDshqProvider(w.ctx, { root, poll: 0.02 });
const { agent } = await w.agent(session);
const db = { id: "db", question: "Which database?", options: [{ label: "Postgres" }, { label: "SQLite" }] };
const turn = w.turn(agent, [{ id: call, name: "ask_user_question", args: { questions: [db] } }]);
process.stdout.write(JSON.stringify({ waiting: true }) + "\n");
const r = await turn;
process.stdout.write(JSON.stringify({ result: r[call] }) + "\n");
off();
await w.dispose();
