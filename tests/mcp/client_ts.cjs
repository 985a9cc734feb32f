// A real third-party MCP client for dshq's MCP server: the official TypeScript SDK
// (`@modelcontextprotocol/sdk`, pinned in contrib/test/package.json), beside the Python
// SDK's tests/mcp/client.py.
//
// Usage: node client_ts.cjs SCENARIO   (the packages are found through NODE_PATH)
//
// The transport comes from the environment, as for client.py:
//   MCP_TRANSPORT=stdio  spawns DSHQ_BIN --root DSHQ_ROOT mcp [MCP_ARGS (a JSON list)]
//   MCP_TRANSPORT=http   connects to MCP_URL with the bearer token MCP_TOKEN (and the
//                        asking agent MCP_AGENT, a JSON {id, instance}, as headers)
// The answering human is the real CLI: DSHQ_BIN --root DSHQ_ROOT answer ...
//
// Each step prints one JSON line {"step": NAME, ...}; the Rust test (tests/it/mcp_ts.rs)
// reads them. A step that goes wrong throws, so the script exits non-zero.

"use strict";

const { execFileSync } = require("node:child_process");

let sdk;
try {
  sdk = {
    Client: require("@modelcontextprotocol/sdk/client/index.js").Client,
    StdioClientTransport: require("@modelcontextprotocol/sdk/client/stdio.js").StdioClientTransport,
    StreamableHTTPClientTransport: require("@modelcontextprotocol/sdk/client/streamableHttp.js")
      .StreamableHTTPClientTransport,
    types: require("@modelcontextprotocol/sdk/types.js"),
    z: require("zod"),
  };
} catch (e) {
  // The Rust test turns this into "install the pinned packages".
  console.log(JSON.stringify({ step: "import", error: String(e) }));
  process.exit(3);
}

const TASKS = "io.modelcontextprotocol/tasks";

function emit(step, fields) {
  console.log(JSON.stringify({ step, ...fields }));
}

function dshq(...args) {
  return execFileSync(process.env.DSHQ_BIN, ["--root", process.env.DSHQ_ROOT, ...args], {
    encoding: "utf8",
  });
}

function view(r) {
  const text = (r.content || [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");
  return { isError: !!r.isError, structured: r.structuredContent ?? null, text };
}

function question(rid, extra) {
  return {
    id: rid,
    questions: [
      {
        id: "color",
        question: "Which colour for the logo?",
        header: "Logo",
        options: [{ label: "Blue", description: "calm" }, { label: "Red" }],
      },
    ],
    ...extra,
  };
}

/** A connected client over the transport the environment names. */
async function connect(onElicit) {
  const capabilities = onElicit ? { elicitation: { form: {} } } : {};
  const client = new sdk.Client({ name: "dshq-ts-client", version: "1.0" }, { capabilities });
  if (onElicit) {
    client.setRequestHandler(sdk.types.ElicitRequestSchema, onElicit);
  }
  let transport;
  if ((process.env.MCP_TRANSPORT || "stdio") === "stdio") {
    transport = new sdk.StdioClientTransport({
      command: process.env.DSHQ_BIN,
      args: ["--root", process.env.DSHQ_ROOT, "mcp", ...JSON.parse(process.env.MCP_ARGS || "[]")],
      env: { PATH: process.env.PATH || "", RUST_LOG: "warn" },
      stderr: "inherit",
    });
  } else {
    const headers = { Authorization: `Bearer ${process.env.MCP_TOKEN}` };
    if (process.env.MCP_AGENT) {
      const agent = JSON.parse(process.env.MCP_AGENT);
      headers["Dshq-Agent-Id"] = agent.id;
      headers["Dshq-Agent-Instance"] = agent.instance;
    }
    transport = new sdk.StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
      requestInit: { headers },
    });
  }
  await client.connect(transport);
  return client;
}

/** tools/call as a raw request: the result unvalidated (a task is not a CallToolResult). */
async function rawCall(client, name, args, asTask) {
  const params = { name, arguments: args };
  if (asTask) {
    params._meta = { "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } } };
  }
  return client.request({ method: "tools/call", params }, sdk.z.looseObject({}));
}

const scenarios = {
  /** The asker's flows: list, pending, an error with its code, get_answer after a CLI
   * answer, and a task only when the request asks for one. */
  async asker() {
    const rid = process.env.MCP_RID;
    const c = await connect();
    const listed = await c.listTools();
    emit("tools", {
      tools: Object.fromEntries(
        listed.tools.map((t) => [t.name, { input: t.inputSchema, output: t.outputSchema }]),
      ),
    });
    // callTool validates structuredContent against the tool's output schema (errors too).
    const pending = await c.callTool({
      name: "ask_user_question",
      arguments: question(rid, { waitSeconds: 0 }),
    });
    emit("pending", view(pending));
    const missing = await c.callTool({ name: "get_answer", arguments: { id: "no-such-request" } });
    emit("not-found", view(missing));
    const bad = await c.callTool({
      name: "ask_user_question",
      arguments: { questions: [{ id: "q", question: "Which?", multi_select: true }] },
    });
    emit("bad", view(bad));
    dshq("--json", "answer", rid, "--name", "cli-human", "--question", "color", "--select", "Blue");
    const got = await c.callTool({ name: "get_answer", arguments: { id: rid, waitSeconds: 30 } });
    emit("get", view(got));
    const plain = await rawCall(c, "ask_user_question", question(`${rid}-plain`, { waitSeconds: 0 }), false);
    emit("plain", { result: plain });
    const task = await rawCall(c, "ask_user_question", question(`${rid}-task`), true);
    emit("task", { result: task });
    await c.close();
  },

  /** A delegated agent asks: DELEGATED_CALLER, with its instruction. */
  async delegated() {
    const c = await connect();
    const r = await c.callTool({
      name: "ask_user_question",
      arguments: question(process.env.MCP_RID, { waitSeconds: 0 }),
    });
    emit("ask", view(r));
    await c.close();
  },

  /** The human at this client answers context `rev` through elicitation forms. */
  async review() {
    const forms = [];
    const c = await connect(async (req) => {
      const { message, requestedSchema } = req.params;
      forms.push({ message, properties: Object.keys(requestedSchema.properties || {}).sort() });
      if (message.includes("ts-single")) return { action: "accept", content: { choice: "Red" } };
      if (message.includes("ts-multi")) return { action: "accept", content: { choices: ["A", "C"] } };
      if (message.includes("ts-plan")) return { action: "accept", content: { decision: "Approve" } };
      return { action: "decline" };
    });
    const r = await c.callTool({ name: "review_questions", arguments: { context: "rev" } });
    emit("review", { forms, ...view(r) });
    await c.close();
  },
};

const run = scenarios[process.argv[2]];
if (!run) {
  console.error(`no scenario ${process.argv[2]}: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
run().then(
  () => process.exit(0),
  (e) => {
    console.error(e && e.stack ? e.stack : String(e));
    process.exit(1);
  },
);
