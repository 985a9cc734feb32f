// An agent process for the restart test: ask with a key, print the answer as JSON lines.
//   node agent.js KEY     (the dshq from DSHQ_ROOT, or DSHQ_URL + DSHQ_TOKEN)
import { Client, question } from "dshq";

const client = new Client({ poll: 0.02 });
const ticket = await client.askNowait([question("db", "Which database?", { options: ["Postgres", "SQLite"] })], {
  key: process.argv[2],
});
process.stdout.write(JSON.stringify({ asked: ticket.id }) + "\n");
const result = await client.wait(ticket);
process.stdout.write(JSON.stringify({ answer: result.answers.db.selected }) + "\n");
