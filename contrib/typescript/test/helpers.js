// Test helpers: the real dshq binary (DSHQ_BIN, set by tests/it/clients.rs) and real
// daemons on temporary state roots. Conditions are waited on with deadlines, never sleeps.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

export const DEADLINE_MS = 30_000;

export function dshqBin() {
  const bin = process.env.DSHQ_BIN;
  if (!bin) throw new Error("DSHQ_BIN must name the built dshq binary (run through cargo test --test it clients)");
  return bin;
}

export async function waitUntil(cond, what = "a condition", limit = DEADLINE_MS) {
  const start = Date.now();
  let pause = 5;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() - start > limit) throw new Error(`timed out waiting for ${what}`);
    await sleep(pause);
    pause = Math.min(pause * 2, 50);
  }
}

export class Host {
  constructor() {
    this.base = mkdtempSync(join(tmpdir(), "dshq-ts-"));
    this.root = join(this.base, "root");
    this.log = join(this.base, "daemon.log");
    this.daemon = null;
    this.url = null;
  }

  env(extra = {}) {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("DSHQ_")));
    return { ...env, DSHQ_ROOT: this.root, RUST_LOG: "warn", USER: "tester", ...extra };
  }

  run(...args) {
    const p = spawnSync(dshqBin(), args, { env: this.env(), encoding: "utf8", timeout: DEADLINE_MS });
    if (p.status !== 0) throw new Error(`dshq ${args.join(" ")} failed (${p.status}): ${p.stdout} ${p.stderr}`);
    return p.stdout;
  }

  json(...args) {
    return JSON.parse(this.run("--json", ...args));
  }

  status(id) {
    const p = spawnSync(dshqBin(), ["--json", "show", id], { env: this.env(), encoding: "utf8" });
    return p.status === 0 ? JSON.parse(p.stdout).status : null;
  }

  async answer(id, ...flags) {
    await waitUntil(() => this.status(id) !== null, `request ${id} to be accepted`);
    this.run("answer", id, ...flags);
  }

  token(role, name) {
    return this.json("token", "create", "--role", role, "--name", name).token;
  }

  async start(...args) {
    const log = openSync(this.log, "w");
    this.daemon = spawn(dshqBin(), ["daemon", ...args], { env: this.env({ RUST_LOG: "info" }), stdio: ["ignore", "ignore", log] });
    await waitUntil(() => readFileSync(this.log, "utf8").includes("daemon started"), "the daemon to start");
    if (args.includes("--listen")) {
      const m = await waitUntil(() => readFileSync(this.log, "utf8").match(/listening on (\S+)/), "its address");
      this.url = m[1].startsWith("http") ? m[1] : `http://${m[1]}`;
    }
    return this;
  }

  async stop() {
    if (this.daemon && this.daemon.exitCode === null) {
      const done = new Promise((r) => this.daemon.once("exit", r));
      this.daemon.kill("SIGTERM");
      await done;
    }
    rmSync(this.base, { recursive: true, force: true });
  }
}
