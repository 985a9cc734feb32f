// An A2A client of dshq through the official JavaScript SDK (@a2a-js/sdk, pinned in
// contrib/test/package.json), beside tests/a2a/client.py (the same steps, the same
// output), for tests/it/a2a.rs.
//
// Usage: node client.cjs STEP [ARGS]   (the packages are found through NODE_PATH)
// The agent's base URL is A2A_URL, the asker token A2A_TOKEN; the token rides on every
// call through the SDK's authenticating fetch. Each step prints one JSON line
// {"step": NAME, ...}. Exit status 3: the SDK did not load.

"use strict";

let sdk, client;
try {
  sdk = require("@a2a-js/sdk");
  client = require("@a2a-js/sdk/client");
} catch (e) {
  console.log(JSON.stringify({ step: "missing", error: String(e) }));
  process.exit(3);
}

const URL_ = process.env.A2A_URL;
const TOKEN = process.env.A2A_TOKEN;
const DEADLINE_MS = Number(process.env.A2A_DEADLINE || "60") * 1000;

function out(step, kv = {}) {
  console.log(JSON.stringify({ step, ...kv }));
}

// A StreamResponse-like value the SDK yields, as the wire's JSON.
function wire(ev) {
  if (ev && ev.payload && ev.payload.$case) {
    return sdk.StreamResponse.toJSON(ev);
  }
  if (ev && ev.status && ev.id !== undefined) {
    return { task: sdk.Task.toJSON(ev) };
  }
  return ev;
}

async function make({ polling }) {
  const fetchImpl = client.createAuthenticatingFetchWithRetry(fetch, {
    headers: async () => ({ Authorization: `Bearer ${TOKEN}` }),
    shouldRetryWithHeaders: async () => undefined,
  });
  const options = client.ClientFactoryOptions.createFrom(client.ClientFactoryOptions.default, {
    transports: [new client.JsonRpcTransportFactory({ fetchImpl })],
    clientConfig: { polling },
  });
  const factory = new client.ClientFactory(options);
  return factory.createFromUrl(URL_);
}

function request(rid, push) {
  const wireReq = {
    message: {
      messageId: `m-${rid}`,
      role: "ROLE_USER",
      parts: [
        {
          data: {
            id: rid,
            questions: [
              {
                id: "db",
                question: "Which database?",
                options: [{ label: "Postgres" }, { label: "SQLite" }],
              },
            ],
          },
        },
      ],
    },
  };
  // Set here: the client's `polling` option applies only when the request leaves
  // returnImmediately unset, and fromJSON sets it (false).
  wireReq.configuration = { returnImmediately: true };
  if (push) wireReq.configuration.taskPushNotificationConfig = push;
  return sdk.SendMessageRequest.fromJSON(wireReq);
}

function errorOf(e) {
  return { kind: e.constructor.name, data: e.data ?? null, message: String(e.message) };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function ask(rid, push) {
  const c = await make({ polling: true });
  const task = await c.sendMessage(request(rid, push));
  out("asked", { event: wire(task) });
}

async function poll(rid) {
  const c = await make({ polling: true });
  const end = Date.now() + DEADLINE_MS;
  let polls = 0;
  while (Date.now() < end) {
    const task = await c.getTask(sdk.GetTaskRequest.fromJSON({ id: rid }));
    polls += 1;
    const j = sdk.Task.toJSON(task);
    if (!["TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"].includes(j.status.state)) {
      out("polled", { task: j, polls });
      return;
    }
    await sleep(200);
  }
  out("timeout", { polls });
}

async function stream(rid) {
  const c = await make({ polling: false });
  for await (const ev of c.sendMessageStream(request(rid))) {
    out("event", { event: wire(ev) });
  }
  out("closed");
}

async function subscribe(rid) {
  const end = Date.now() + DEADLINE_MS;
  let drops = 0;
  while (Date.now() < end) {
    try {
      const c = await make({ polling: false });
      for await (const ev of c.resubscribeTask(sdk.SubscribeToTaskRequest.fromJSON({ id: rid }))) {
        const j = wire(ev);
        out("event", { event: j, drops });
        const st = j.statusUpdate && j.statusUpdate.status && j.statusUpdate.status.state;
        if (st && st !== "TASK_STATE_WORKING") {
          out("final", { drops });
          return;
        }
      }
      drops += 1;
    } catch (e) {
      drops += 1;
      out("dropped", { error: e.constructor.name });
    }
    await sleep(100);
  }
  out("timeout", { drops });
}

async function cancel(rid) {
  await ask(rid);
  const c = await make({ polling: true });
  const task = await c.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: rid }));
  out("cancelled", { task: sdk.Task.toJSON(task) });
  try {
    await c.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: rid }));
    out("cancelled-again");
  } catch (e) {
    out("not-cancelable", errorOf(e));
  }
}

async function text(rid) {
  const c = await make({ polling: true });
  const task = await c.sendMessage(
    sdk.SendMessageRequest.fromJSON({
      message: { messageId: rid, role: "ROLE_USER", parts: [{ text: "Ship it tonight?" }] },
    }),
  );
  out("asked", { event: wire(task) });
}

async function bad() {
  const c = await make({ polling: true });
  try {
    const r = await c.sendMessage(
      sdk.SendMessageRequest.fromJSON({
        message: { messageId: "m-bad", role: "ROLE_USER", parts: [{ data: { questions: [] } }] },
      }),
    );
    out("accepted", { event: wire(r) });
  } catch (e) {
    out("error", errorOf(e));
  }
  try {
    await c.getTask(sdk.GetTaskRequest.fromJSON({ id: "no-such-task" }));
  } catch (e) {
    out("not-found", errorOf(e));
  }
}

async function main() {
  const [step, ...args] = process.argv.slice(2);
  switch (step) {
    case "ask": {
      const push =
        args.length === 4
          ? {
              url: args[1],
              token: args[2],
              authentication: { scheme: "Bearer", credentials: args[3] },
            }
          : undefined;
      return ask(args[0], push);
    }
    case "poll":
      return poll(args[0]);
    case "stream":
      return stream(args[0]);
    case "subscribe":
      return subscribe(args[0]);
    case "cancel":
      return cancel(args[0]);
    case "text":
      return text(args[0]);
    case "bad":
      return bad();
    default:
      throw new Error(`no step ${step}`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
