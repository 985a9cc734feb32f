// Compiled with `tsc --noEmit` (never run): the declarations describe a usable API.
import {
  AskAborted,
  AskCancelled,
  Client,
  DshqError,
  Expired,
  PlanDeclined,
  idForCall,
  idForKey,
  planReview,
  question,
  NoDaemon,
  approvalOf,
  requiresApproval,
  type Answered,
  type Approval,
  type Ticket,
} from "dshq";

export async function example(): Promise<string> {
  const client = new Client({ root: "/var/lib/dshq", poll: 0.1 });
  const http = new Client({ url: "http://127.0.0.1:8700", token: "t" });
  const ticket: Ticket = await client.askNowait([question("db", "Which database?", { options: ["Postgres", "SQLite"] })], {
    key: "pick-db",
    timeout: "30m",
  });
  const [first, result]: [Ticket, Answered] = await client.waitAny([ticket, "other-id"], { timeout: 60 });
  const selected: string[] = result.answers["db"].selected;
  const value: string | null = result.answers["db"].value;
  await http.abort(first, "not needed");
  try {
    await client.wait(idForKey("pick-db"));
  } catch (e) {
    if (e instanceof Expired || e instanceof AskAborted || e instanceof AskCancelled) return e.code;
    if (e instanceof DshqError) return `${e.code}: ${e.message} (${e.requestId ?? "?"})`;
  }
  const deploy = requiresApproval(client, async (env: string) => `deployed ${env}`, {
    plan: (env) => `Deploy to ${env}`,
    key: (env) => `deploy-${env}`,
  });
  // The gate that takes an edited plan: the approval comes last.
  const ship = requiresApproval(client, async (env: string, approval: Approval) => `${env}: ${approval.plan}`, {
    plan: (env) => `Ship ${env}`,
    editable: true,
  });
  const shipped: string = await ship("prod");
  const feedback: string | null = result.feedback;
  const diff: string | undefined = result.edited["plan"]?.diff;
  const persons: (string | null)[] = result.votes.map((v) => v.person);
  const plan: string = approvalOf(result, "# Plan").plan + result.approvedText("plan", "# Plan");
  const receipt = await client.receipt(ticket);
  if (receipt === null && result.decidedBy === "policy") throw new NoDaemon("never");
  try {
    return (await deploy("staging")) + selected.join(",") + (value ?? "") + shipped + feedback + diff + persons + plan;
  } catch (e) {
    if (e instanceof PlanDeclined) return e.feedback ?? "declined";
    throw e;
  }
}

export const review = planReview("# Plan", { approve: "Ship it" });

// dsh 0.2's continued questions: a request on a tool call may come back pending.
export async function continued(client: Client): Promise<string> {
  const r = await client.ask([question("db", "Which database?")], { wait: { callId: "call_1", timeoutMs: 120_000 } });
  if ("pending" in r) {
    const late = await client.waitForCall(r.callId);
    return `${r.id} later: ${late.callId ?? ""} ${late.answers.db.value ?? ""} ${idForCall(r.callId)}`;
  }
  return r.answers.db.value ?? "";
}
