// Compiled by `tsc --noEmit` (never run): the declarations against dsh's own types.
import { Context } from "@deepseek-ai/cordis";
import type { AskUserQuestionAnswer } from "@deepseek-ai/dsh-user-questions";
import { Client } from "dshq";
import { installDshqApproval, registerDshqProvider, type DshqAnswer } from "dshq-dsh";

declare const ctx: Context;
const dispose: () => void = registerDshqProvider(ctx, {
  client: new Client({ root: "/var/lib/dshq" }),
  wait: 600,
  key: (request, call) => (call ? `${request.agent?.id}/${call.callId}` : undefined),
});
dispose();
installDshqApproval(ctx, { url: "http://127.0.0.1:7777", token: "t", onUnavailable: "unavailable" })();

async function asked(): Promise<AskUserQuestionAnswer> {
  const a = (await ctx.userQuestions.ask({ questions: [{ id: "q", question: "?" }] })) as DshqAnswer;
  const decided: "approved" | "declined" | null = a.dshq.decision;
  const plan: string | undefined = a.answers[0]?.edited ?? a.dshq.edited.plan?.approved;
  const persons: (string | null)[] = a.dshq.votes.map((v) => v.person);
  void decided;
  void plan;
  void persons;
  return a;
}
void asked;
